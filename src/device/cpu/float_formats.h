// cvt's narrow float formats (fp8, fp6, fp4, ue8m0, tf32), f16/bf16 narrowing, and PTX min/max
// (internal to src/device/cpu/: the interpreter's float and memory instructions share them).
#pragma once

#include <cmath>
#include <cstdint>

#include "device/cpu/numeric.h"
#include "device/cpu/program.h"

namespace gpuwasm::device::cpu {

// The narrow float formats of cvt. fp8 e4m3 (bias 7, 448 the largest, NaN 0x7f, no infinities),
// e5m2 (bias 15, IEEE-like, 57344 the largest finite), fp6 e2m3 (bias 1, 7.5) and e3m2 (bias 3,
// 28), fp4 e2m1 (bias 1, 6): the last three have neither infinities nor NaN.
struct MiniSpec {
  int ebits, mbits, bias;
  uint8_t max_code;  // the largest finite magnitude's code
  int nan;           // NaN's code; -1: none (NaN converts to the positive largest value)
};

inline MiniSpec SpecOf(MiniFormat f) {
  switch (f) {
    case MiniFormat::kE4M3: return {4, 3, 7, 0x7e, 0x7f};
    case MiniFormat::kE5M2: return {5, 2, 15, 0x7b, 0x7f};
    case MiniFormat::kE2M1: return {2, 1, 1, 0x7, -1};
    case MiniFormat::kE2M3: return {2, 3, 1, 0x1f, -1};
    default: return {3, 2, 3, 0x1f, -1};  // e3m2
  }
}

// `v` rounded to nearest even and saturated to the largest finite value (.satfinite, which these
// conversions require); .relu makes negative values +0.
inline uint8_t EncodeMini(double v, MiniFormat f, bool relu) {
  const MiniSpec s = SpecOf(f);
  if (std::isnan(v)) return static_cast<uint8_t>(s.nan >= 0 ? s.nan : s.max_code);
  if (relu && v < 0) return 0;
  const uint8_t sign = std::signbit(v) ? static_cast<uint8_t>(1u << (s.ebits + s.mbits)) : 0;
  const double a = std::fabs(v);
  if (std::isinf(a)) return static_cast<uint8_t>(sign | s.max_code);
  uint32_t code;
  if (a < std::ldexp(1.0, 1 - s.bias)) {  // subnormal: units of the smallest one
    code = static_cast<uint32_t>(std::nearbyint(std::ldexp(a, s.bias - 1 + s.mbits)));
  } else {
    int e = std::ilogb(a);
    double m = std::nearbyint(std::ldexp(a, s.mbits - e));  // 2^mbits .. 2^(mbits+1)
    if (m >= std::ldexp(1.0, s.mbits + 1)) m /= 2, ++e;
    code = e + s.bias >= (1 << s.ebits)
               ? 0xffu
               : static_cast<uint32_t>((e + s.bias) << s.mbits) | (static_cast<uint32_t>(m) - (1u << s.mbits));
  }
  return static_cast<uint8_t>(sign | std::min<uint32_t>(code, s.max_code));
}

inline double DecodeMini(uint8_t b, MiniFormat f) {
  const MiniSpec s = SpecOf(f);
  const int sign_bit = s.ebits + s.mbits;
  const int e = (b & ((1 << sign_bit) - 1)) >> s.mbits, m = b & ((1 << s.mbits) - 1);
  const double sg = (b >> sign_bit & 1) ? -1.0 : 1.0;
  if (f == MiniFormat::kE5M2 && e == 31) return m == 0 ? sg * INFINITY : NAN;
  if (f == MiniFormat::kE4M3 && e == 15 && m == 7) return NAN;
  if (e == 0) return sg * std::ldexp(m, 1 - s.bias - s.mbits);
  return sg * std::ldexp((1 << s.mbits) | m, e - s.bias - s.mbits);
}

// ue8m0: a power of two 2^(code - 127), unsigned (the sign is dropped), 0xff NaN. .rz takes the
// largest power not above |v|, .rp the smallest not below (both at least 2^-127); .satfinite
// keeps infinities and overflows at 0xfe.
inline uint8_t EncodeUe8m0(double v, Round rnd, bool satfinite) {
  if (std::isnan(v)) return 0xff;
  const double a = std::fabs(v);
  if (std::isinf(a)) return satfinite ? 0xfe : 0xff;
  if (a == 0) return 0;
  const int e = std::ilogb(a);
  const bool exact = std::ldexp(1.0, e) == a;
  const int code = std::clamp(e + 127 + (rnd == Round::kRp && !exact ? 1 : 0), 0, 255);
  return static_cast<uint8_t>(satfinite && code == 255 ? 254 : code);
}

inline uint16_t DecodeUe8m0ToBf16(uint8_t code) {
  if (code == 0xff) return 0x7fff;  // canonical NaN
  if (code == 0) return 0x0040;     // 2^-127, a subnormal bfloat16
  return static_cast<uint16_t>(code << 7);
}

// tf32: an f32 with 10 significand bits (the low 13 bits zero), rounded .rna (ties away), .rn or
// .rz; NaN is the canonical NaN; .satfinite keeps infinities and overflows finite.
inline uint32_t EncodeTf32(uint32_t bits, Round rnd, bool satfinite, bool relu) {
  const uint32_t sign = bits & 0x80000000u, mag = bits & 0x7fffffffu;
  constexpr uint32_t kMax = 0x7f7fe000u, kInf = 0x7f800000u;
  if (mag > kInf) return 0x7fffffffu;
  if (relu && sign && mag != 0) return 0;
  if (mag == kInf) return sign | (satfinite ? kMax : kInf);
  uint32_t r = mag;
  if (rnd == Round::kRna)
    r += 0x1000u;
  else if (rnd != Round::kRz)
    r += 0xfffu + (mag >> 13 & 1);
  r &= ~0x1fffu;
  if (r >= kInf) r = satfinite ? kMax : kInf;
  return sign | r;
}

// A float (as a double) to f16 or bf16 in the current rounding mode, as cvt does: NaN is the
// canonical NaN 0x7fff (as the CUDA toolkit's emulation gives), .relu makes negative values +0,
// .satfinite keeps infinities and overflows at the largest finite value.
inline uint16_t NarrowFloat(double v, bool bf, uint16_t flags) {
  const bool relu = flags & kRelu, satfinite = flags & kSatFinite;
  if (std::isnan(v)) return 0x7fff;
  if (relu && v < 0) v = 0;
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0, inf = bf ? 0x7f80 : 0x7c00;
  if (std::isinf(v)) return static_cast<uint16_t>(sign | (satfinite ? inf - 1 : inf));
  const uint16_t h = bf ? DoubleToBf16(v) : DoubleToHalf(v);
  return satfinite && (h & 0x7fff) == inf ? static_cast<uint16_t>(sign | (inf - 1)) : h;
}

template <class T>
inline T FMin(T a, T b, bool nan) {
  if (std::isnan(a) || std::isnan(b)) {
    if (nan || (std::isnan(a) && std::isnan(b))) return std::numeric_limits<T>::quiet_NaN();
    return std::isnan(a) ? b : a;
  }
  if (a == 0 && b == 0) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

template <class T>
inline T FMax(T a, T b, bool nan) {
  if (std::isnan(a) || std::isnan(b)) {
    if (nan || (std::isnan(a) && std::isnan(b))) return std::numeric_limits<T>::quiet_NaN();
    return std::isnan(a) ? b : a;
  }
  if (a == 0 && b == 0) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

}  // namespace gpuwasm::device::cpu
