// References of tests/conformance/integer_ext.cu, written from the PTX ISA's definitions.
#include <algorithm>
#include <cstdlib>

#include "reference.h"

namespace gpuwasm::conformance {
namespace {

REFERENCE(integer_ext, carry_chain_add_sub) {
  for (unsigned t = 0; t < 64; ++t) {
    const uint32_t* a = &in[t * 8];
    const uint32_t* b = &in[1024 + t * 8];
    uint32_t* o = &out[t * 8];
    uint64_t carry = 0;
    for (int k = 0; k < 4; ++k) {
      uint64_t s = uint64_t{a[k]} + b[k] + carry;
      o[k] = static_cast<uint32_t>(s);
      carry = s >> 32;
    }
    uint64_t borrow = 0;  // sub.cc / subc: d = a - (b + CF), CF the borrow
    uint32_t d[4];
    for (int k = 0; k < 4; ++k) {
      uint64_t sub = uint64_t{b[4 + k]} + borrow;
      d[k] = static_cast<uint32_t>(uint64_t{a[4 + k]} - sub);
      borrow = a[4 + k] < sub ? 1 : 0;
    }
    const uint32_t bw = static_cast<uint32_t>(0u - borrow);  // subc.u32 bw, 0, 0
    o[4] = d[0] ^ static_cast<uint32_t>(carry);
    o[5] = d[1];
    o[6] = d[2] ^ bw;
    o[7] = d[3];
  }
}

REFERENCE(integer_ext, carry_chain_mad) {
  for (unsigned t = 0; t < 64; ++t) {
    const uint64_t a = in[t * 4] | uint64_t{in[t * 4 + 1]} << 32, b = in[t * 4 + 2] | uint64_t{in[t * 4 + 3]} << 32;
    const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
    const uint64_t x = uint64_t{in[2048 + t * 2]} << 32 | in[2049 + t * 2];
    const unsigned __int128 twice = static_cast<unsigned __int128>(x) * 2;
    const uint64_t lo = static_cast<uint64_t>(twice), hi = static_cast<uint64_t>(twice >> 64);
    out[t * 4] = static_cast<uint32_t>(p);
    out[t * 4 + 1] = static_cast<uint32_t>(p >> 32) ^ static_cast<uint32_t>(lo);
    out[t * 4 + 2] = static_cast<uint32_t>(p >> 64) ^ static_cast<uint32_t>(lo >> 32);
    out[t * 4 + 3] = static_cast<uint32_t>(p >> 96) ^ static_cast<uint32_t>(hi);
  }
}

int32_t Byte(uint32_t v, int i, bool sign) {
  const uint32_t b = v >> (8 * i) & 0xff;
  return sign ? static_cast<int8_t>(b) : static_cast<int32_t>(b);
}
int32_t Half(uint32_t v, int i, bool sign) {
  const uint32_t h = v >> (16 * i) & 0xffff;
  return sign ? static_cast<int16_t>(h) : static_cast<int32_t>(h);
}

REFERENCE(integer_ext, dot_products) {
  for (unsigned t = 0; t < 64; ++t) {
    const uint32_t a = in[t], b = in[t + 64], c = in[t + 128];
    uint32_t s4 = c, u4 = c, lo = c, hi = c;
    for (int i = 0; i < 4; ++i) {
      s4 += static_cast<uint32_t>(Byte(a, i, true) * Byte(b, i, true));
      u4 += static_cast<uint32_t>(Byte(a, i, false)) * static_cast<uint32_t>(Byte(b, i, false));
    }
    for (int i = 0; i < 2; ++i) {
      lo += static_cast<uint32_t>(Half(a, i, true) * Byte(b, i, true));
      hi += static_cast<uint32_t>(Half(a, i, false)) * static_cast<uint32_t>(Byte(b, 2 + i, false));
    }
    out[t * 4] = s4;
    out[t * 4 + 1] = u4;
    out[t * 4 + 2] = lo;
    out[t * 4 + 3] = hi;
  }
}

enum class V { kAdd, kSub, kAvrg, kAbsdiff, kMin, kMax };

int64_t VOp(V op, int64_t x, int64_t y) {
  switch (op) {
    case V::kAdd: return x + y;
    case V::kSub: return x - y;
    case V::kAvrg: return x + y >= 0 ? (x + y + 1) >> 1 : (x + y) >> 1;
    case V::kAbsdiff: return std::llabs(x - y);
    case V::kMin: return std::min(x, y);
    case V::kMax: return std::max(x, y);
  }
  return 0;
}

// vop4 / vop2 with the default selectors and mask: per element of `bits` bits, the operation on
// a's and b's elements (extended by their types), clamped to the destination's element range
// with .sat; then either merged (every element from the result) or summed into c (.add).
uint32_t Simd(V op, int bits, bool d_signed, bool ab_signed, bool sat, bool add, uint32_t a, uint32_t b, uint32_t c) {
  const int n = 32 / bits;
  const uint32_t emask = bits == 8 ? 0xffu : 0xffffu;
  uint32_t merged = 0, sum = c;
  for (int i = 0; i < n; ++i) {
    const int64_t x = bits == 8 ? Byte(a, i, ab_signed) : Half(a, i, ab_signed);
    const int64_t y = bits == 8 ? Byte(b, i, ab_signed) : Half(b, i, ab_signed);
    int64_t r = VOp(op, x, y);
    if (sat) {
      const int64_t lo = d_signed ? -(int64_t{1} << (bits - 1)) : 0;
      const int64_t hi = d_signed ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
      r = std::clamp(r, lo, hi);
    }
    merged |= (static_cast<uint32_t>(r) & emask) << (bits * i);
    sum += static_cast<uint32_t>(r);
  }
  return add ? sum : merged;
}

REFERENCE(integer_ext, simd_video) {
  for (unsigned t = 0; t < 64; ++t) {
    const uint32_t a = in[t], b = in[t + 64], c = in[t + 128];
    uint32_t* o = &out[t * 8];
    o[0] = Simd(V::kAbsdiff, 8, false, false, false, false, a, b, c);
    o[1] = Simd(V::kAbsdiff, 8, false, false, false, true, a, b, c);
    o[2] = Simd(V::kAdd, 8, true, true, true, false, a, b, c);
    o[3] = Simd(V::kSub, 16, false, false, false, false, a, b, c);
    o[4] = Simd(V::kAvrg, 8, false, false, false, false, a, b, c);
    o[5] = Simd(V::kMax, 16, true, true, false, false, a, b, c);
    o[6] = Simd(V::kMin, 8, false, false, false, true, a, b, c);
    uint32_t set = 0;  // vset4.u32.u32.lt: 1 per byte where a's byte < b's
    for (int i = 0; i < 4; ++i) set |= static_cast<uint32_t>(Byte(a, i, false) < Byte(b, i, false)) << (8 * i);
    o[7] = set;
  }
}

REFERENCE(integer_ext, cvt_from_wider_register) {
  for (unsigned t = 0; t < 64; ++t) {
    const uint64_t x = uint64_t{in[t]} << 32 | in[t + 64];
    const int64_t s = static_cast<int32_t>(static_cast<uint32_t>(x));
    const uint64_t u = static_cast<uint16_t>(x);
    out[t * 4] = static_cast<uint32_t>(s);
    out[t * 4 + 1] = static_cast<uint32_t>(static_cast<uint64_t>(s) >> 32);
    out[t * 4 + 2] = static_cast<uint32_t>(u) ^ static_cast<uint32_t>(u >> 32);
    out[t * 4 + 3] = static_cast<uint16_t>(x);
  }
}

uint32_t Saturate(int32_t v, int bits, bool sign) {
  const int64_t lo = sign ? -(int64_t{1} << (bits - 1)) : 0;
  const int64_t hi = sign ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
  return static_cast<uint32_t>(std::clamp<int64_t>(v, lo, hi)) & ((1u << bits) - 1);
}

REFERENCE(integer_ext, cvt_pack_saturating) {
  for (unsigned t = 0; t < 64; ++t) {
    const int32_t a = static_cast<int32_t>(in[t]) >> (t & 15), b = static_cast<int32_t>(in[t + 64]) >> (t >> 2);
    const int32_t c = static_cast<int32_t>(in[t + 128]);
    const uint32_t lo = Saturate(a, 8, false) << 8 | Saturate(b, 8, false);
    const uint32_t r8 = lo << 16 | Saturate(a, 8, true) << 8 | Saturate(b, 8, true);
    const uint32_t r16 = Saturate(a, 16, true) << 16 | Saturate(b, 16, true);
    const uint32_t u16 = Saturate(b, 16, false) << 16 | Saturate(c, 16, false);
    out[t * 2] = r8;
    out[t * 2 + 1] = r16 ^ (u16 * 3u);
  }
}

}  // namespace
}  // namespace gpuwasm::conformance
