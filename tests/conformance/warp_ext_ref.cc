// References of tests/conformance/warp_ext.cu.
#include <algorithm>

#include "reference.h"

namespace gpuwasm::conformance {
namespace {

REFERENCE(warp_ext, redux_ops) {
  for (unsigned w = 0; w < 2; ++w) {
    const uint32_t* v = &in[w * 32];
    uint32_t add = 0, mx = 0, band = ~0u, bor = 0, odd_xor = 0, even_count = 0;
    int32_t mn = INT32_MAX;
    for (unsigned l = 0; l < 32; ++l) {
      add += v[l] & 0xffff;
      mn = std::min(mn, static_cast<int32_t>(v[l]));
      mx = std::max(mx, v[l]);
      band &= v[l] | 0x0f0f0f0fu;
      bor |= v[l] & 0x11111111u;
      if (v[l] & 1)
        odd_xor ^= v[l];
      else
        ++even_count;
    }
    for (unsigned l = 0; l < 32; ++l) {
      uint32_t* o = &out[(w * 32 + l) * 6];
      o[0] = add;
      o[1] = static_cast<uint32_t>(mn);
      o[2] = mx;
      o[3] = band;
      o[4] = bor;
      o[5] = (v[l] & 1) ? odd_xor : even_count;  // the lanes of each side of the branch
    }
  }
}

REFERENCE(warp_ext, match_any_all) {
  for (unsigned w = 0; w < 2; ++w) {
    for (unsigned l = 0; l < 32; ++l) {
      const unsigned t = w * 32 + l;
      uint32_t any32 = 0, any64 = 0;
      for (unsigned k = 0; k < 32; ++k) {
        const unsigned u = w * 32 + k;
        any32 |= static_cast<uint32_t>((in[u] & 3) == (in[t] & 3)) << k;
        const uint64_t a = (uint64_t{in[u + 64] & 1} << 40) | (in[u] & 3);
        const uint64_t b = (uint64_t{in[t + 64] & 1} << 40) | (in[t] & 3);
        any64 |= static_cast<uint32_t>(a == b) << k;
      }
      out[t * 4] = any32;
      out[t * 4 + 1] = any64;
      out[t * 4 + 2] = w == 0 ? 0xffffffffu : 0;  // warp 0 holds 7 everywhere; warp 1 alternates
      out[t * 4 + 3] = w == 0 ? 1 : 0;
    }
  }
}

}  // namespace
}  // namespace gpuwasm::conformance
