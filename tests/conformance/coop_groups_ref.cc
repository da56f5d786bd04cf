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

// cp.async copies: the data as plain loads would see it; a zero fill of z bytes keeps the word's
// low 4 - z bytes (little-endian).
REFERENCE(coop_groups, async_copies) {
  for (unsigned b = 0; b < 2; ++b) {
    const unsigned base = b * 256;
    auto s = [&](unsigned i) { return in[base + i]; };
    auto whole = [&](unsigned i) { return in[2048 + base + i]; };
    uint32_t* o = &out[b * 256];
    for (unsigned t = 0; t < 64; ++t) {
      const unsigned zfill = (t % 3) * 2;
      o[t] = s(255 - t) ^ whole(t);
      o[64 + t] = zfill == 0 ? in[base + 1024 + t] : zfill == 2 ? in[base + 1024 + t] & 0xffffu : 0;
      o[128 + t] = s(t * 4 + 1) + whole(255 - t);
      o[192 + t] = whole(t * 4 + 3);
    }
  }
}

}  // namespace
}  // namespace gpuwasm::conformance
