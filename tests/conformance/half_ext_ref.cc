// References of tests/conformance/half_ext.cu: halves from the compiler's _Float16, bfloat16 by
// rounding a float's bits to nearest even (no NaN arises here), sin/cos from the C library.
#include <bit>
#include <cmath>

#include "reference.h"

namespace gpuwasm::conformance {
namespace {

uint32_t Half(float f) { return std::bit_cast<uint16_t>(static_cast<_Float16>(f)); }
uint32_t Bf16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  return (u + 0x7fffu + ((u >> 16) & 1)) >> 16;
}

REFERENCE(half_ext, pack_halves) {
  for (unsigned t = 0; t < 64; ++t) {
    const float a = static_cast<float>(static_cast<int32_t>(in[t])) / 65536.0f;
    const float b = static_cast<float>(static_cast<int32_t>(in[t + 64])) / 1048576.0f;
    out[t * 2] = Half(b) << 16 | Half(a);  // __half2{x = a, y = b}: x is the lower half
    out[t * 2 + 1] = Bf16(b) << 16 | Bf16(a);
  }
}

REFERENCE(half_ext, half_atomics) {
  float x = 0, y = 0;
  for (unsigned t = 0; t < 128; ++t) {
    x += static_cast<float>(in[t] & 7) * 0.25f;
    y += static_cast<float>(in[t] & 1);
  }
  out[0] = Half(x);
  out[1] = Half(2 * x) << 16 | Half(x);
  out[2] = Bf16(y);
  out[3] = Bf16(-y) << 16 | Bf16(y);
}

REFERENCE(half_ext, double_sin_cos) {
  for (unsigned t = 0; t < 64; ++t) {
    const double m = static_cast<double>(in[t] >> 8) / 16777216.0;
    const int e = static_cast<int>(in[t + 64] % 1000) - 10;
    double x = std::ldexp(m, t < 16 ? e % 8 : t < 48 ? e % 64 : e);
    if (t & 1) x = -x;
    const uint64_t s = std::bit_cast<uint64_t>(std::sin(x)), c = std::bit_cast<uint64_t>(std::cos(x));
    out[t * 4] = static_cast<uint32_t>(s);
    out[t * 4 + 1] = static_cast<uint32_t>(s >> 32);
    out[t * 4 + 2] = static_cast<uint32_t>(c);
    out[t * 4 + 3] = static_cast<uint32_t>(c >> 32);
  }
}

}  // namespace
}  // namespace gpuwasm::conformance
