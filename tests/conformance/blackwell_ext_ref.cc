// References of tests/conformance/blackwell_ext.cu, written from the PTX ISA's definitions of the
// formats: every conversion to a narrow format by searching its codes for the nearest value (ties
// to the even code), not by the device's algorithm.
#include <bit>
#include <cmath>

#include "reference.h"

namespace gpuwasm::conformance {
namespace {

struct Format {
  int ebits, mbits, bias;
  uint32_t max_code;  // the largest finite magnitude
  int nan;            // NaN's code, -1: none
};
constexpr Format kE2M1{2, 1, 1, 0x7, -1}, kE2M3{2, 3, 1, 0x1f, -1}, kE3M2{3, 2, 3, 0x1f, -1};
constexpr Format kE4M3{4, 3, 7, 0x7e, 0x7f}, kE5M2{5, 2, 15, 0x7b, 0x7f};

// A code's value: sign, exponent field (0: subnormal), mantissa. NaN codes are handled by callers.
double Value(uint32_t code, const Format& f) {
  const int e = static_cast<int>(code >> f.mbits) & ((1 << f.ebits) - 1), m = code & ((1u << f.mbits) - 1);
  const double mag =
      e == 0 ? std::ldexp(m, 1 - f.bias - f.mbits) : std::ldexp((1 << f.mbits) | m, e - f.bias - f.mbits);
  return (code >> (f.ebits + f.mbits) & 1) ? -mag : mag;
}

// .rn.satfinite (.relu): the nearest finite code of v's sign; NaN to the NaN code, or the positive
// largest value in formats without one; .relu: negative values to +0.
uint32_t Encode(double v, const Format& f, bool relu) {
  if (std::isnan(v)) return f.nan >= 0 ? static_cast<uint32_t>(f.nan) : f.max_code;
  if (relu && v < 0) return 0;
  const double a = std::fabs(v);
  uint32_t best = f.max_code;  // infinities: .satfinite
  double best_err = INFINITY;
  for (uint32_t c = 0; c <= f.max_code; ++c) {
    const double err = std::fabs(Value(c, f) - a);
    if (std::isfinite(a) && (err < best_err || (err == best_err && (c & 1) == 0))) best = c, best_err = err;
  }
  return (std::signbit(v) ? 1u << (f.ebits + f.mbits) : 0u) | best;
}

uint32_t HalfBits(double v) { return std::bit_cast<uint16_t>(static_cast<_Float16>(v)); }

// To f16 (exact for these formats): NaN the canonical 0x7fff; .relu: negative values to +0.
uint32_t DecodeToHalf(uint32_t code, const Format& f, bool relu) {
  if (f.nan >= 0 && (code & 0x7f) == static_cast<uint32_t>(f.nan)) return 0x7fff;
  if (&f == &kE5M2 && (code & 0x7f) > 0x7b) return (code & 0x7f) == 0x7c ? (code & 0x80 ? 0xfc00 : 0x7c00) : 0x7fff;
  const double v = Value(code, f);
  return HalfBits(relu && v < 0 ? 0.0 : v);
}

// ue8m0: code c is 2^(c - 127), 0xff NaN. .rz: the largest value not above |v| (code 0 below it),
// .rp: the smallest not below (0xff past 2^127); .satfinite: 0xfe for infinities and overflows.
uint32_t Ue8m0(double v, bool rp, bool satfinite) {
  if (std::isnan(v)) return 0xff;
  const double a = std::fabs(v);
  uint32_t code;
  if (std::isinf(a)) {
    code = 0xff;
  } else if (!rp) {
    code = 0;
    for (uint32_t c = 0; c < 255; ++c) {
      if (std::ldexp(1.0, static_cast<int>(c) - 127) <= a) code = c;
    }
  } else {
    code = 0xff;
    for (int c = 254; c >= 0; --c) {
      if (std::ldexp(1.0, c - 127) >= a) code = static_cast<uint32_t>(c);
    }
  }
  return satfinite && code == 0xff ? 0xfe : code;
}

uint32_t Ue8m0ToBf16(uint32_t code) {
  if (code == 0xff) return 0x7fff;
  return std::bit_cast<uint32_t>(std::ldexp(1.0f, static_cast<int>(code) - 127)) >> 16;
}

double Bf16Value(uint32_t h) { return std::bit_cast<float>(h << 16); }

// tf32 .rn / .rz: |v| as a multiple of its 10-bit-significand unit (2^-136 among subnormals),
// rounded to nearest even or truncated; NaN canonical; .satfinite: the largest finite value
// instead of infinity; .relu: negative values to +0.
uint32_t Tf32(float v, bool rz, bool satfinite, bool relu) {
  if (std::isnan(v)) return 0x7fffffffu;
  if (relu && v < 0) return 0;
  const uint32_t sign = std::signbit(v) ? 0x80000000u : 0;
  double a = std::fabs(static_cast<double>(v));
  if (!std::isinf(a) && a != 0) {
    const double unit = std::ldexp(1.0, std::max(std::ilogb(a), -126) - 10);
    a = (rz ? std::trunc(a / unit) : std::nearbyint(a / unit)) * unit;
  }
  const double max = std::bit_cast<float>(0x7f7fe000u);
  if (a > max) return sign | (satfinite ? 0x7f7fe000u : 0x7f800000u);
  return sign | std::bit_cast<uint32_t>(static_cast<float>(a));
}

REFERENCE(blackwell_ext, narrow_floats) {
  for (unsigned t = 0; t < 64; ++t) {
    const float a = Spread(in[t], -3, t), b = Spread(in[t + 64], -4, t), c = Spread(in[t + 128], -5, t);
    const float raw = std::bit_cast<float>(in[t + 192]), wide = Spread(in[t + 256], 120, t);
    const uint32_t bits = in[t + 320];
    uint32_t* o = &out[t * 18];
    o[0] = Encode(a, kE2M1, false) << 4 | Encode(b, kE2M1, false);  // float2{x = b, y = a}: y is the upper
    o[1] = Encode(a, kE2M1, true) << 4 | Encode(c, kE2M1, true);
    o[2] = Encode(b, kE2M3, false) << 8 | Encode(c, kE2M3, false);
    o[3] = Encode(b, kE3M2, true) << 8 | Encode(a, kE3M2, true);
    o[4] = Ue8m0(wide, false, true) << 8 | Ue8m0(raw, false, true);
    o[5] = Ue8m0(wide, true, false) << 8 | Ue8m0(raw, true, false);
    o[6] = Ue8m0(Bf16Value(in[t + 192] >> 16), true, true) << 8 | Ue8m0(Bf16Value(in[t + 192] & 0xffff), true, true);
    o[7] = DecodeToHalf(bits >> 4 & 0xf, kE2M1, false) << 16 | DecodeToHalf(bits & 0xf, kE2M1, false);
    o[8] = DecodeToHalf(bits >> 8 & 0x3f, kE3M2, true) << 16 | DecodeToHalf(bits & 0x3f, kE3M2, true);
    o[9] = DecodeToHalf(bits >> 24 & 0x3f, kE2M3, false) << 16 | DecodeToHalf(bits >> 16 & 0x3f, kE2M3, false);
    o[10] = Ue8m0ToBf16(bits >> 16 & 0xff) << 16 | Ue8m0ToBf16(bits >> 8 & 0xff);
    o[11] = Tf32(wide, false, true, false);
    o[12] = Tf32(raw, true, true, true);
    o[13] = Tf32(raw, false, false, false);
    o[14] = Encode(a, kE4M3, true) << 8 | Encode(raw, kE4M3, true);
    const double hi = static_cast<double>(std::bit_cast<_Float16>(static_cast<uint16_t>(bits >> 16)));
    const double lo = static_cast<double>(std::bit_cast<_Float16>(static_cast<uint16_t>(bits)));
    o[15] = Encode(hi, kE5M2, true) << 8 | Encode(lo, kE5M2, true);
    o[16] = DecodeToHalf(bits >> 8 & 0xff, kE4M3, true) << 16 | DecodeToHalf(bits & 0xff, kE4M3, true);
    o[17] = std::bit_cast<uint32_t>(a);
  }
}

}  // namespace
}  // namespace gpuwasm::conformance
