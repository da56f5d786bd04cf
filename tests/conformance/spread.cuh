// Inputs of the float conversion cases (reference.h has the same function for the references).
#pragma once

// A float with a random sign and mantissa and an exponent in [2^lo, 2^(lo+7)], from bits; the
// first four threads take inf, -inf, NaN and -0 instead.
__device__ inline float Spread(unsigned bits, int lo, unsigned t) {
  if (t < 4) return __uint_as_float(t == 0 ? 0x7f800000u : t == 1 ? 0xff800000u : t == 2 ? 0x7fc00000u : 0x80000000u);
  return __uint_as_float((bits & 0x807fffffu) | (unsigned)(127 + lo + (int)(bits >> 23 & 7)) << 23);
}
