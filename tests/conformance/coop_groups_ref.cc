// References of tests/conformance/coop_groups.cu.
#include "reference.h"

namespace gpuwasm::conformance {
namespace {

REFERENCE(coop_groups, tile64_tree) {
  for (unsigned b = 0; b < 2; ++b) {
    for (unsigned tile = 0; tile < 2; ++tile) {
      uint32_t sum = 0;
      for (unsigned r = 0; r < 64; ++r) sum += in[b * 128 + tile * 64 + r] & 0xffff;
      for (unsigned r = 0; r < 64; ++r) out[b * 128 + tile * 64 + r] = sum ^ (r << 24) ^ (64u << 18);
    }
  }
}

REFERENCE(coop_groups, tile32_shfl_reduce) {
  for (unsigned w = 0; w < 3; ++w) {
    std::vector<uint32_t> v(32);
    for (unsigned l = 0; l < 32; ++l) v[l] = in[w * 32 + l] & 0xfffff;
    for (unsigned off = 16; off > 0; off /= 2) {
      auto o = ShflDown(v, off);
      for (unsigned l = 0; l < 32; ++l) v[l] += o[l];
    }
    for (unsigned l = 0; l < 32; ++l) out[w * 32 + l] = l == 0 ? v[0] : w;
  }
}

}  // namespace
}  // namespace gpuwasm::conformance
