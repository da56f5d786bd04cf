// References of tests/conformance/warp_regroup.cu.
#include "reference.h"

namespace gpuwasm::conformance {
namespace {

REFERENCE(warp_regroup, loop_once_more_then_shfl) {
  std::vector<uint32_t> v(32, 0);
  for (unsigned l = 0; l < 32; ++l) {
    for (unsigned j = l; j < 35; j += 32) v[l] += in[j] & 0xff;
  }
  for (unsigned off = 16; off > 0; off >>= 1) {
    auto o = ShflDown(v, off);
    for (unsigned l = 0; l < 32; ++l) v[l] += o[l];
  }
  for (unsigned l = 0; l < 32; ++l) out[l] = v[l];
  out[32] = v[0];
}

REFERENCE(warp_regroup, syncwarp_tree) {
  uint32_t s[32];
  for (unsigned l = 0; l < 32; ++l) s[l] = l;
  for (unsigned off = 16; off > 0; off >>= 1) {
    for (unsigned l = 0; l < off; ++l) s[l] += s[l + off];  // lanes below off read lanes at or above it
  }
  for (unsigned l = 0; l < 32; ++l) out[l] = s[l];
}

REFERENCE(warp_regroup, warp_size_generic) {
  for (unsigned b = 0; b < 2; ++b) {
    for (unsigned w = 0; w < 3; ++w) {
      std::vector<uint32_t> v(32);
      for (unsigned l = 0; l < 32; ++l) v[l] = in[b * 96 + w * 32 + l] & 0xffff;
      for (unsigned off = 16; off > 0; off /= 2) {
        auto o = ShflXor(v, off);
        for (unsigned l = 0; l < 32; ++l) v[l] += o[l];
      }
      for (unsigned l = 0; l < 32; ++l) out[b * 96 + w * 32 + l] = v[l] + (l << 24);
      out[192 + b * 4 + w] = 32;
    }
  }
}

REFERENCE(warp_regroup, divergent_depth_then_ballot) {
  for (unsigned w = 0; w < 2; ++w) {
    std::vector<uint32_t> v(32);
    uint32_t ballot = 0;
    for (unsigned l = 0; l < 32; ++l) {
      const uint32_t x = in[w * 32 + l];
      v[l] = x;
      for (uint32_t k = 0; k < (x & 7); ++k) v[l] = v[l] * 3 + k;
      ballot |= (v[l] & 1) << l;
    }
    for (unsigned l = 0; l < 32; ++l) out[w * 32 + l] = ballot ^ v[(l + 5) & 31];
  }
}

REFERENCE(warp_regroup, threadfence_two_pass) {
  uint32_t total = 0;
  for (unsigned b = 0; b < 8; ++b) {
    uint32_t s = 0;
    for (unsigned t = 0; t < 64; ++t) s += in[b * 64 + t] & 0xfff;
    out[b] = s;
    total += s;
  }
  out[8] = total;
}

}  // namespace
}  // namespace gpuwasm::conformance
