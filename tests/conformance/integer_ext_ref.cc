// References of tests/conformance/integer_ext.cu, written from the PTX ISA's definitions.
#include <algorithm>
#include <cstdlib>
#include <cstring>

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

// vop2/vop4 with selectors and a mask as written in PTX ("32" for .h32: element 1 from halfword 3
// of {b, a}, element 0 from halfword 2; mask "31" for .b31): the ISA's extractAndSignExt over the
// 64-bit {b, a}, the operation and clamp per element, then the merge (unmasked elements from c)
// or the accumulation of the masked results into c. `cmp`: vset's comparison instead of `op`.
uint32_t SimdSelected(V op, int bits, bool d_signed, bool ab_signed, bool sat, bool add, uint32_t a, uint32_t b,
                      uint32_t c, const char* asel, const char* bsel, const char* mask,
                      bool (*cmp)(int64_t, int64_t) = nullptr) {
  const int n = 32 / bits;
  const uint64_t pair = uint64_t{b} << 32 | a;
  const uint64_t emask = bits == 8 ? 0xffu : 0xffffu;
  auto element = [&](const char* sel, int i) -> int64_t {
    const int k = sel[n - 1 - i] - '0';
    const uint64_t e = pair >> (bits * k) & emask;
    if (!ab_signed) return static_cast<int64_t>(e);
    return bits == 8 ? int64_t{static_cast<int8_t>(e)} : int64_t{static_cast<int16_t>(e)};
  };
  bool write[4] = {};
  for (const char* m = mask; *m; ++m) write[*m - '0'] = true;
  uint32_t d = add ? c : 0;
  for (int i = 0; i < n; ++i) {
    const int64_t x = element(asel, i), y = element(bsel, i);
    int64_t r = cmp ? int64_t{cmp(x, y)} : VOp(op, x, y);
    if (sat) {
      const int64_t lo = d_signed ? -(int64_t{1} << (bits - 1)) : 0;
      const int64_t hi = d_signed ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
      r = std::clamp(r, lo, hi);
    }
    if (add) {
      if (write[i]) d += static_cast<uint32_t>(r);
    } else {
      const uint32_t e = write[i] ? static_cast<uint32_t>(r) : c >> (bits * i);
      d |= (e & static_cast<uint32_t>(emask)) << (bits * i);
    }
  }
  return d;
}

REFERENCE(integer_ext, simd_video_selectors) {
  for (unsigned t = 0; t < 64; ++t) {
    const uint32_t a = in[t], b = in[t + 64], c = in[t + 128];
    uint32_t* o = &out[t * 6];
    o[0] = SimdSelected(V::kAdd, 16, false, false, true, false, a, b, c, "32", "01", "1");
    o[1] = SimdSelected(V::kSub, 8, true, true, false, false, a, b, c, "7654", "0123", "31");
    o[2] = SimdSelected(V::kMin, 16, true, true, false, true, a, b, c, "11", "22", "0");
    o[3] = SimdSelected(V::kAbsdiff, 8, false, false, false, true, a, b, c, "2301", "4567", "320");
    o[4] = SimdSelected(V::kAdd, 16, false, false, false, false, a, b, c, "01", "32", "1",
                        [](int64_t x, int64_t y) { return x > y; });
    o[5] = SimdSelected(V::kAvrg, 8, false, false, false, false, a, b, c, "0000", "7777", "0");
  }
}

// Scalar video, following the ISA's pseudocode: partSelectSignExtend, the operation on the
// (33-bit) values, optSaturate to d's type or to the part d.dsel names, optSecondaryOp with c
// (c read with d's signedness), optMerge into c.
enum class Part { kWord, kB0, kB1, kB2, kB3, kH0, kH1 };
enum class Op2 { kNone, kAdd, kMin, kMax };

int64_t PartSelectSignExtend(uint32_t v, bool sign, Part p) {
  switch (p) {
    case Part::kWord: return sign ? int64_t{static_cast<int32_t>(v)} : int64_t{v};
    case Part::kH0: return Half(v, 0, sign);
    case Part::kH1: return Half(v, 1, sign);
    default: return Byte(v, static_cast<int>(p) - 1, sign);
  }
}

uint32_t ScalarFinish(__int128 tmp, bool d_signed, bool sat, Part dsel, Op2 op2, uint32_t c) {
  const int bits = dsel == Part::kWord ? 32 : dsel >= Part::kH0 ? 16 : 8;
  if (sat) {
    const __int128 lo = d_signed ? -(__int128{1} << (bits - 1)) : 0;
    const __int128 hi = d_signed ? (__int128{1} << (bits - 1)) - 1 : (__int128{1} << bits) - 1;
    tmp = std::clamp(tmp, lo, hi);
  }
  const __int128 cx = d_signed ? __int128{static_cast<int32_t>(c)} : __int128{c};
  if (op2 == Op2::kAdd) tmp += cx;
  if (op2 == Op2::kMin) tmp = std::min(tmp, cx);
  if (op2 == Op2::kMax) tmp = std::max(tmp, cx);
  if (dsel == Part::kWord) return static_cast<uint32_t>(tmp);
  const int shift = dsel >= Part::kH0 ? 16 * (static_cast<int>(dsel) - 5) : 8 * (static_cast<int>(dsel) - 1);
  const uint32_t m = (bits == 8 ? 0xffu : 0xffffu) << shift;
  return (c & ~m) | ((static_cast<uint32_t>(tmp) << shift) & m);
}

uint32_t ScalarVideo(char op, bool d_signed, bool a_signed, Part asel, bool b_signed, Part bsel, bool sat, Part dsel,
                     Op2 op2, uint32_t a, uint32_t b, uint32_t c) {
  const int64_t ta = PartSelectSignExtend(a, a_signed, asel), tb = PartSelectSignExtend(b, b_signed, bsel);
  __int128 tmp = 0;
  switch (op) {
    case '+': tmp = __int128{ta} + tb; break;
    case '-': tmp = __int128{ta} - tb; break;
    case '|': tmp = ta > tb ? __int128{ta} - tb : __int128{tb} - ta; break;
    case 'm': tmp = std::min(ta, tb); break;
    case 'M': tmp = std::max(ta, tb); break;
  }
  return ScalarFinish(tmp, d_signed, sat, dsel, op2, c);
}

// vshl/vshr: b (unsigned) clamped to 32 or taken modulo 32, then the shift of the extended a.
uint32_t VideoShift(bool left, bool d_signed, bool a_signed, Part asel, bool wrap, bool sat, Op2 op2, uint32_t a,
                    uint32_t b, uint32_t c) {
  const int64_t ta = PartSelectSignExtend(a, a_signed, asel);
  const uint32_t n = wrap ? b & 31 : std::min<uint32_t>(b, 32);
  const __int128 tmp = left ? __int128{ta} * (__int128{1} << n) : __int128{ta} >> n;
  return ScalarFinish(tmp, d_signed, sat, Part::kWord, op2, c);
}

// vmad per the ISA: the 128-bit product, the negation as one's complement plus a carried lsb (or
// .po's lsb), c extended by the final signedness, the scale, the clamp.
uint32_t VideoMad(bool a_signed, Part asel, bool b_signed, Part bsel, bool neg_ab, bool neg_c, bool po, int shr,
                  bool sat, uint32_t a, uint32_t b, uint32_t c) {
  const int64_t ta = PartSelectSignExtend(a, a_signed, asel), tb = PartSelectSignExtend(b, b_signed, bsel);
  const bool signed_final = a_signed || b_signed || neg_ab || neg_c;
  __int128 tmp = __int128{ta} * tb;
  int lsb = 0;
  if (po) {
    lsb = 1;
  } else if (neg_ab) {
    tmp = ~tmp;
    lsb = 1;
  } else if (neg_c) {
    c = ~c;
    lsb = 1;
  }
  const __int128 c128 = signed_final ? __int128{static_cast<int32_t>(c)} : __int128{c};
  tmp = (tmp + c128 + lsb) >> shr;
  if (sat) {
    const __int128 lo = signed_final ? INT32_MIN : 0, hi = signed_final ? INT32_MAX : UINT32_MAX;
    tmp = std::clamp(tmp, lo, hi);
  }
  return static_cast<uint32_t>(tmp);
}

REFERENCE(integer_ext, scalar_video) {
  using P = Part;
  for (unsigned t = 0; t < 64; ++t) {
    const uint32_t a = in[t], b = in[t + 64], c = in[t + 128], sh = in[t + 192] & 63;
    uint32_t* o = &out[t * 18];
    o[0] = ScalarVideo('+', true, false, P::kB0, true, P::kH1, true, P::kWord, Op2::kNone, a, b, 0);
    o[1] = ScalarVideo('-', false, true, P::kWord, true, P::kWord, true, P::kWord, Op2::kAdd, a, b, c);
    o[2] = ScalarVideo('|', false, false, P::kH0, false, P::kH1, false, P::kWord, Op2::kMin, a, b, c);
    o[3] = ScalarVideo('m', true, true, P::kWord, true, P::kB2, false, P::kWord, Op2::kMax, a, b, c);
    o[4] = ScalarVideo('M', false, false, P::kB3, true, P::kWord, false, P::kH1, Op2::kNone, a, b, c);
    o[5] = ScalarVideo('+', true, true, P::kH0, true, P::kH1, true, P::kB2, Op2::kNone, a, b, c);
    o[6] = VideoShift(true, false, false, P::kB1, false, true, Op2::kNone, a, sh, 0);
    o[7] = VideoShift(false, true, true, P::kWord, true, false, Op2::kNone, a, sh, 0);
    o[8] = VideoShift(true, true, true, P::kH1, true, false, Op2::kAdd, a, sh, c);
    o[9] = Byte(a, 1, false) < Byte(b, 1, true) ? 1 : 0;  // vset.u32.s32.lt
    o[10] = (Half(a, 0, true) != Half(b, 0, false) ? 1 : 0) + c;
    o[11] = (c & 0x00ffffffu) | (a >= b ? 1u : 0u) << 24;
    o[12] = VideoMad(false, P::kH0, false, P::kH0, false, false, false, 15, false, a, b, c);
    o[13] = VideoMad(true, P::kB1, false, P::kH0, false, true, false, 0, true, a, b, c);
    o[14] = VideoMad(false, P::kH1, false, P::kB0, true, false, false, 0, false, a, b, c);
    o[15] = VideoMad(false, P::kWord, false, P::kB2, false, false, true, 7, true, a, b, c);
    o[16] = VideoShift(false, false, false, P::kWord, false, false, Op2::kMax, a, sh, c);
    o[17] = ScalarVideo('M', true, true, P::kWord, true, P::kWord, true, P::kWord, Op2::kNone, a, b, 0);
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

// mul24: the product of a's and b's low 24 bits (sign-extended from bit 23 for .s32), 48 bits.
int64_t Product24(uint32_t a, uint32_t b, bool sign) {
  auto ext = [&](uint32_t v) -> int64_t {
    int64_t x = v & 0xffffff;
    if (sign && x >= 0x800000) x -= 0x1000000;
    return x;
  };
  return ext(a) * ext(b);
}

REFERENCE(integer_ext, cvt_pack_narrow) {
  for (unsigned t = 0; t < 64; ++t) {
    const int32_t a = static_cast<int32_t>(in[t]) >> (24 + (t & 7));
    const int32_t b = static_cast<int32_t>(in[t + 64]) >> (26 + (t >> 3 & 3));
    const uint32_t c = in[t + 128];
    // cvt.pack.sat.<type>.s32.b32 d, x, y, z: d = z << 2n | sat(x) << n | sat(y), n the type's bits.
    const uint32_t lo4 = c << 8 | Saturate(a, 4, false) << 4 | Saturate(b, 4, false);
    out[t * 2] = lo4 << 8 | Saturate(b, 4, true) << 4 | Saturate(a, 4, true);
    const uint32_t lo2 = c << 4 | Saturate(a, 2, true) << 2 | Saturate(b, 2, true);
    out[t * 2 + 1] = lo2 << 4 | Saturate(a, 2, false) << 2 | Saturate(b, 2, false);
  }
}

REFERENCE(integer_ext, mul24_sad) {
  for (unsigned t = 0; t < 64; ++t) {
    const uint32_t a = in[t], b = in[t + 64], c = in[t + 128];
    uint32_t* o = &out[t * 12];
    const int64_t ps = Product24(a, b, true), pu = Product24(a, b, false);
    o[0] = static_cast<uint32_t>(ps);
    o[1] = static_cast<uint32_t>(pu);
    o[2] = static_cast<uint32_t>(ps);
    const int64_t sa = static_cast<int32_t>(a), sb = static_cast<int32_t>(b);
    o[3] = c + static_cast<uint32_t>(sa > sb ? sa - sb : sb - sa);
    o[4] = c + (a > b ? a - b : b - a);
    o[5] = static_cast<uint32_t>(static_cast<uint64_t>(ps) >> 16);  // bits 47..16
    o[6] = static_cast<uint32_t>(static_cast<uint64_t>(pu) >> 16);
    const int64_t hi = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(ps) >> 16));
    o[7] = static_cast<uint32_t>(std::clamp<int64_t>(hi + static_cast<int32_t>(c), INT32_MIN, INT32_MAX));
    o[8] = static_cast<uint32_t>(pu) + c;
    const uint16_t a16 = a & 0xffff, b16 = b & 0xffff, c16 = c & 0xffff;
    o[9] = static_cast<uint16_t>(c16 + (a16 > b16 ? a16 - b16 : b16 - a16));
    const int64_t x = sa * 7, y = sb * (int64_t{1} << 20);  // |x - y| < 2^52: no overflow
    const uint64_t w = c + static_cast<uint64_t>(x > y ? x - y : y - x);
    o[10] = static_cast<uint32_t>(w);
    o[11] = static_cast<uint32_t>(w >> 32);
  }
}

// The ISA's pseudocode for fns, szext and bmsk, step by step.
uint32_t Fns(uint32_t mask, int32_t base, int32_t offset) {
  if (offset == 0) return (mask >> base & 1) ? static_cast<uint32_t>(base) : 0xffffffffu;
  int count = std::abs(offset) - 1;
  for (int pos = base; pos >= 0 && pos<32; pos += offset> 0 ? 1 : -1) {
    if (mask >> pos & 1) {
      if (count == 0) return static_cast<uint32_t>(pos);
      --count;
    }
  }
  return 0xffffffffu;
}

uint32_t Szext(uint32_t a, uint32_t b, bool clamp, bool sign) {
  const uint32_t b1 = b & 0x1f;
  const bool too_large = b >= 32 && clamp;
  const uint32_t mask = too_large ? 0 : ~0u << b1;
  const bool sign_bit = b1 != 0 && !too_large && sign && ((a >> ((b1 - 1) & 0x1f)) & 1);
  return (a & ~mask) | (sign_bit ? mask : 0);
}

uint32_t Bmsk(uint32_t a, uint32_t b, bool clamp) {
  const uint32_t a1 = a & 0x1f, b1 = b & 0x1f, sum = a1 + b1;
  uint32_t mask0 = ~0u << a1;
  uint32_t mask1 = sum >= 32 ? 0 : ~0u << sum;
  bool position_overflow = false, width_overflow = false;
  if (clamp) {
    if (a >= 32) {
      position_overflow = true;
      mask0 = 0;
    }
    if (b >= 32) width_overflow = true;
  }
  if (sum >= 32 || position_overflow || width_overflow)
    mask1 = 0;
  else if (b1 == 0)
    mask1 = ~0u;
  return mask0 & ~mask1;
}

REFERENCE(integer_ext, bit_masks) {
  for (unsigned t = 0; t < 64; ++t) {
    const uint32_t a = in[t], b = in[t + 64] & 63, c = in[t + 128] & 63;
    uint32_t* o = &out[t * 8];
    o[0] = Fns(a, static_cast<int32_t>(t & 31), static_cast<int32_t>(in[t + 192] % 9) - 4);
    o[1] = Fns(a, static_cast<int32_t>((t * 7) & 31), 0);
    o[2] = Szext(a, b, true, true);
    o[3] = Szext(a, b, false, true);
    o[4] = Szext(a, c, true, false);
    o[5] = Szext(a, c, false, false);
    o[6] = Bmsk(b, c, true);
    o[7] = Bmsk(b, c, false);
  }
}

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float Float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

REFERENCE(integer_ext, set_slct) {
  for (unsigned t = 0; t < 64; ++t) {
    const uint32_t a = in[t], b = in[t + 64], c = in[t + 128];
    volatile float fa = static_cast<float>(static_cast<int32_t>(a)) * 1e-9f;  // volatile: no contraction
    volatile float fb = static_cast<float>(static_cast<int32_t>(b)) * 1e-9f;
    const float diff = fa - fb;
    uint32_t* o = &out[t * 10];
    o[0] = static_cast<int32_t>(a) < static_cast<int32_t>(b) ? 0xffffffffu : 0;
    o[1] = a > b ? 0xffffffffu : 0;
    o[2] = fa >= fb ? Bits(1.0f) : 0;
    const bool p = c <= 0x80000000u;
    o[3] = (!(fa <= fb) && !p) ? 0xffffffffu : 0;  // gtu: greater or unordered
    o[4] = a >= b ? 1 : 2;                         // q = !(a lo b)
    o[5] = static_cast<int32_t>(c) >= 0 ? a : b;
    o[6] = Bits(diff >= 0.0f ? fa : fb);
    const float cf = Float(c & 0x807fffff);  // zero or subnormal
    o[7] = a;                                // .ftz: a subnormal c is a signed zero, >= 0
    o[8] = cf >= 0.0f ? a : b;
    o[9] = static_cast<uint16_t>(a) != static_cast<uint16_t>(a >> 3) ? 0 : 0xffffffffu;
  }
}

}  // namespace
}  // namespace gpuwasm::conformance
