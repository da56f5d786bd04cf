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

// cvt f32 to f16 or bf16 as the PTX ISA defines its modifiers: .rn to nearest even (the
// compiler's _Float16 cast; bfloat16 by rounding the float's bits), .rz the largest magnitude not
// above |v| (f16 by searching the codes; bfloat16 by truncating the bits); .relu: negative to +0;
// .satfinite: infinities and overflows to the largest finite value; NaN the canonical 0x7fff.
uint32_t Narrow(float v, bool bf, bool rz, bool relu, bool satfinite) {
  if (std::isnan(v)) return 0x7fff;
  if (relu && v < 0) v = 0;
  const uint32_t sign = std::signbit(v) ? 0x8000 : 0, inf = bf ? 0x7f80 : 0x7c00;
  uint32_t r;
  if (std::isinf(v)) {
    r = sign | inf;
  } else if (!rz) {
    r = bf ? Bf16(v) : Half(v);
  } else if (bf) {
    r = std::bit_cast<uint32_t>(v) >> 16;
  } else {
    uint32_t best = 0;  // magnitudes ascend with the code
    for (uint32_t c = 0; c < 0x7c00; ++c) {
      if (static_cast<double>(std::bit_cast<_Float16>(static_cast<uint16_t>(c))) <= std::fabs(v)) best = c;
    }
    r = sign | best;
  }
  if (satfinite && (r & 0x7fff) == inf) r = sign | (inf - 1);
  return r;
}

// tf32 .rna: the float's bits rounded at bit 13 to nearest, ties away from zero (adding half a
// unit to the magnitude), the low 13 bits zero; NaN canonical; .satfinite: no infinity.
uint32_t Tf32Rna(float v, bool satfinite) {
  const uint32_t u = std::bit_cast<uint32_t>(v), mag = u & 0x7fffffffu, sign = u & 0x80000000u;
  if (mag > 0x7f800000u) return 0x7fffffffu;
  uint32_t r = mag == 0x7f800000u ? mag : (mag + 0x1000u) & 0xffffe000u;
  if (satfinite && r >= 0x7f800000u) r = 0x7f7fe000u;
  return sign | r;
}

REFERENCE(half_ext, cvt_relu_satfinite) {
  for (unsigned t = 0; t < 64; ++t) {
    const float a = Spread(in[t], 10, t), b = Spread(in[t + 64], -20, t), c = Spread(in[t + 128], 120, t);
    uint32_t* o = &out[t * 10];
    o[0] = Narrow(a, false, false, true, false) | Narrow(c, true, true, true, true) << 16;
    o[1] = Narrow(a, false, false, false, true) | Narrow(c, true, false, false, true) << 16;
    o[2] = Narrow(a, false, false, true, false) << 16 | Narrow(b, false, false, true, false);
    o[3] = Narrow(c, true, true, false, true) << 16 | Narrow(b, true, true, false, true);
    o[4] = Narrow(a, false, true, false, false) << 16 | Narrow(b, false, true, false, false);
    o[5] = Tf32Rna(c, false);
    o[6] = Tf32Rna(c, true);
    o[7] = Tf32Rna(b, false);
    o[8] = std::bit_cast<uint32_t>(a);
    o[9] = std::bit_cast<uint32_t>(c);
  }
}

}  // namespace
}  // namespace gpuwasm::conformance
