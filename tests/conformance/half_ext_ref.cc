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

// fp8 by search: every finite code's value, the nearest to v (a tie to the code with an even
// mantissa), beyond the largest finite value that value (.satfinite). Not the device's algorithm.
double Fp8Value(uint32_t code, bool e5m2) {
  const int mbits = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7;
  const int e = (code & 0x7f) >> mbits, m = code & ((1 << mbits) - 1);
  const double mag = e == 0 ? std::ldexp(m, 1 - bias - mbits) : std::ldexp((1 << mbits) | m, e - bias - mbits);
  return (code & 0x80) ? -mag : mag;
}
bool Fp8Finite(uint32_t code, bool e5m2) {
  const uint32_t c = code & 0x7f;
  return e5m2 ? c < 0x7c : c != 0x7f;
}
uint32_t Fp8(float v, bool e5m2) {
  uint32_t best = 0;
  double best_err = INFINITY;
  for (uint32_t c = 0; c < 256; ++c) {
    if (!Fp8Finite(c, e5m2) || (c & 0x80) != (std::signbit(v) ? 0x80u : 0u)) continue;  // v's sign, -0 too
    const double err = std::fabs(Fp8Value(c, e5m2) - v);
    if (err < best_err || (err == best_err && (c & 1) == 0)) best = c, best_err = err;
  }
  return best;
}
uint32_t HalfOf(double v) { return std::bit_cast<uint16_t>(static_cast<_Float16>(v)); }

REFERENCE(half_ext, fp8_pairs) {
  for (unsigned t = 0; t < 64; ++t) {
    float x = static_cast<float>(static_cast<int32_t>(in[t])) / 4194304.0f;
    const float y = static_cast<float>(static_cast<int32_t>(in[t + 64])) / 67108864.0f;
    if (t >= 56) x = static_cast<float>(static_cast<int32_t>(in[t])) / 1024.0f;
    const uint32_t a = Fp8(y, false) << 8 | Fp8(x, false), b = Fp8(y, true) << 8 | Fp8(x, true);
    out[t * 3] = a | b << 16;
    out[t * 3 + 1] = HalfOf(Fp8Value(a & 0xff, false)) | HalfOf(Fp8Value(a >> 8, false)) << 16;
    out[t * 3 + 2] = HalfOf(Fp8Value(b & 0xff, true)) | HalfOf(Fp8Value(b >> 8, true)) << 16;
  }
}

REFERENCE(half_ext, vector_atomics) {
  float x = 0;
  for (unsigned t = 0; t < 128; ++t) x += static_cast<float>(in[t] & 7) * 0.25f;
  const float v[8] = {x, 128.0f, 0, 0, x, -x, 2 * x, 64.0f};
  for (int i = 0; i < 8; ++i) out[i] = std::bit_cast<uint32_t>(v[i]);
}

}  // namespace
}  // namespace gpuwasm::conformance
