// Scalar numeric helpers of the CPU device: IEEE half / bfloat16 conversions (round to nearest
// even), flush-to-zero, and bit utilities. Header-only, pure functions.
#pragma once

#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace gpuwasm::device::cpu {

inline float AsF32(uint64_t v) { return std::bit_cast<float>(static_cast<uint32_t>(v)); }
inline double AsF64(uint64_t v) { return std::bit_cast<double>(v); }
inline uint64_t Bits(float f) { return std::bit_cast<uint32_t>(f); }
inline uint64_t Bits(double d) { return std::bit_cast<uint64_t>(d); }

inline double HalfToDouble(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v;
  if (e == 0)
    v = std::ldexp(static_cast<double>(m), -24);
  else if (e == 31)
    v = m ? NAN : INFINITY;
  else
    v = std::ldexp(static_cast<double>(m | 1024), e - 25);
  return (h & 0x8000) ? -v : v;
}

// Correctly rounded (current rounding mode, normally nearest-even) double -> binary16.
inline uint16_t DoubleToHalf(double d) {
  if (std::isnan(d)) return 0x7e00;
  uint16_t sign = std::signbit(d) ? 0x8000 : 0;
  double a = std::fabs(d);
  if (a == 0) return sign;
  int ex;
  std::frexp(a, &ex);  // a = f * 2^ex, f in [0.5, 1)
  int e = ex - 1;      // a in [2^e, 2^(e+1))
  if (e < -14) {       // subnormal: multiples of 2^-24
    double m = std::nearbyint(std::ldexp(a, 24));
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(m));  // m == 1024 becomes the smallest normal
  }
  double m = std::nearbyint(std::ldexp(a, 10 - e));  // in [1024, 2048]
  if (m >= 2048) {
    m /= 2;
    ++e;
  }
  if (e > 15) {
    int r = std::fegetround();
    // Overflow: infinity unless rounding towards zero (or away from this sign's infinity).
    bool to_max = r == FE_TOWARDZERO || (r == FE_DOWNWARD && !sign) || (r == FE_UPWARD && sign);
    return static_cast<uint16_t>(sign | (to_max ? 0x7bff : 0x7c00));
  }
  return static_cast<uint16_t>(sign | ((e + 15) << 10) | (static_cast<uint16_t>(m) & 1023));
}

inline double Bf16ToDouble(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

inline uint16_t DoubleToBf16(double d) {
  if (std::isnan(d)) return 0x7fc0;
  // binary32 -> bfloat16 keeps the exponent range, so round the significand to 8 bits directly.
  double a = std::fabs(d);
  uint16_t sign = std::signbit(d) ? 0x8000 : 0;
  if (a == 0) return sign;
  int ex;
  std::frexp(a, &ex);
  int e = ex - 1;
  if (e < -126) {
    double m = std::nearbyint(std::ldexp(a, 133));  // subnormal bf16: multiples of 2^-133
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(m));
  }
  double m = std::nearbyint(std::ldexp(a, 7 - e));  // [128, 256]
  if (m >= 256) {
    m /= 2;
    ++e;
  }
  if (e > 127) return static_cast<uint16_t>(sign | 0x7f80);
  return static_cast<uint16_t>(sign | ((e + 127) << 7) | (static_cast<uint16_t>(m) & 127));
}

inline float FlushF32(float f) { return std::fpclassify(f) == FP_SUBNORMAL ? std::copysign(0.0f, f) : f; }
inline double FlushF64(double d) { return std::fpclassify(d) == FP_SUBNORMAL ? std::copysign(0.0, d) : d; }

// Scoped dynamic rounding mode (for .rz/.rm/.rp); no-op for round-to-nearest.
class RoundingScope {
 public:
  explicit RoundingScope(int mode) : active_(mode != FE_TONEAREST) {
    if (active_) {
      saved_ = std::fegetround();
      std::fesetround(mode);
    }
  }
  ~RoundingScope() {
    if (active_) std::fesetround(saved_);
  }
  RoundingScope(const RoundingScope&) = delete;
  RoundingScope& operator=(const RoundingScope&) = delete;

 private:
  int saved_ = FE_TONEAREST;
  bool active_;
};

}  // namespace gpuwasm::device::cpu
