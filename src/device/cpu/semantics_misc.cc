// Carry chains, dot products, video, integer misc, set/slct, redux and match (cta_exec.h).
#include <climits>
#include <limits>

#include "device/cpu/cta_exec.h"

namespace gpuwasm::device::cpu {

// add.cc addc sub.cc subc mad.cc madc: 32- or 64-bit arithmetic that reads (kCarryIn) and writes
// (kCarryOut) the carry flag, a register slot of its own. sub's flag is the borrow: subc computes
// a - (b + CF). mad.lo/.hi adds c to the low or high half of the full product (signed for .s).
void CtaExec::Carry(const Inst& in, Lanes mask, uint64_t* R) {
  using U128 = unsigned __int128;
  const unsigned bits = ptx::TypeSize(in.t) * 8;
  const uint64_t vm = bits == 64 ? ~uint64_t{0} : 0xffffffffull;
  const bool sign = ptx::IsSigned(in.t), hi = in.cmp == 1;
  uint64_t* d = REG(in.d[0]);
  const uint64_t *a = REG(in.s[0]), *b = REG(in.s[1]);
  const uint64_t* c = in.op == Op::kMadC ? REG(in.s[2]) : nullptr;
  const uint64_t* cf = (in.flags & kCarryIn) ? REG(in.s[3]) : nullptr;
  uint64_t* cfo = (in.flags & kCarryOut) ? REG(in.d[1]) : nullptr;
  ForLanes(mask, [&](int l) {
    const uint64_t x = a[l] & vm, y = b[l] & vm, carry = cf ? (cf[l] & 1) : 0;
    uint64_t r, out;
    if (in.op == Op::kSubC) {
      const U128 take = U128{y} + carry;
      r = static_cast<uint64_t>(U128{x} - take) & vm;
      out = U128{x} < take ? 1 : 0;
    } else {  // add: x + y; mad: c + a half of x * y
      uint64_t lhs = x, rhs = y;
      if (in.op == Op::kMadC) {
        U128 p;
        if (sign) {
          const __int128 sx = bits == 64 ? static_cast<int64_t>(x) : static_cast<int32_t>(static_cast<uint32_t>(x));
          const __int128 sy = bits == 64 ? static_cast<int64_t>(y) : static_cast<int32_t>(static_cast<uint32_t>(y));
          p = static_cast<U128>(sx * sy);
        } else {
          p = U128{x} * y;
        }
        lhs = c[l] & vm;
        rhs = static_cast<uint64_t>(hi ? p >> bits : p) & vm;
      }
      const U128 s = U128{lhs} + rhs + carry;
      r = static_cast<uint64_t>(s) & vm;
      out = static_cast<uint64_t>(s >> bits) & 1;
    }
    d[l] = r;
    if (cfo) cfo[l] = out;
  });
}

namespace {

// Element i of `bits` bits (8 or 16) of v, extended by its signedness.
int32_t Element(uint32_t v, unsigned bits, unsigned i, bool sign) {
  const uint32_t e = bits == 8 ? (v >> (8 * i)) & 0xff : (v >> (16 * i)) & 0xffff;
  if (!sign) return static_cast<int32_t>(e);
  return bits == 8 ? static_cast<int8_t>(e) : static_cast<int16_t>(e);
}

}  // namespace

// dp4a.atype.btype: c + the four byte products; dp2a.lo/.hi.atype.btype: c + a's two halfwords
// times b's bytes 0-1 (.lo) or 2-3 (.hi). Each element extends by its type; the sum wraps.
void CtaExec::DotProduct(const Inst& in, Lanes mask, uint64_t* R) {
  const bool sa = ptx::IsSigned(in.t), sb = ptx::IsSigned(in.t2), four = in.op == Op::kDp4a;
  const unsigned first = in.cmp == 1 ? 2 : 0;
  uint64_t* d = REG(in.d[0]);
  const uint64_t *a = REG(in.s[0]), *b = REG(in.s[1]), *c = REG(in.s[2]);
  ForLanes(mask, [&](int l) {
    const uint32_t x = static_cast<uint32_t>(a[l]), y = static_cast<uint32_t>(b[l]);
    uint32_t s = static_cast<uint32_t>(c[l]);
    for (unsigned i = 0; i < (four ? 4u : 2u); ++i) {
      const int64_t p = int64_t{Element(x, four ? 8 : 16, i, sa)} * Element(y, 8, four ? i : first + i, sb);
      s += static_cast<uint32_t>(p);
    }
    d[l] = s;
  });
}

// vop2 / vop4: per halfword or byte, the operation on the selected elements of {b, a} extended
// by their type; .sat clamps to the destination element's range; then d's masked elements take
// the results and the others c's (the merge), or with .add d is c plus the masked results' sum.
void CtaExec::Video(const Inst& in, Lanes mask, uint64_t* R) {
  const unsigned n = in.vec, bits = 32 / n;
  const bool sab = ptx::IsSigned(in.t2), sd = ptx::IsSigned(in.t), sat = in.flags & kSat;
  const bool acc = in.flags & kAccumulate;
  const auto vop = static_cast<VideoOp>(in.cmp);
  const auto cmp = static_cast<Cmp>(in.bool_op);
  const int64_t lo = sat ? (sd ? -(int64_t{1} << (bits - 1)) : 0) : INT64_MIN;
  const int64_t hi = sat ? (sd ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1) : INT64_MAX;
  const uint32_t em = bits == 8 ? 0xffu : 0xffffu, dmask = SimdMask(in.sel);
  uint64_t* d = REG(in.d[0]);
  const uint64_t *a = REG(in.s[0]), *b = REG(in.s[1]), *c = REG(in.s[2]);
  // Element k of the pair {b, a}: a's elements are 0..n-1, b's n..2n-1.
  auto pick = [&](uint32_t av, uint32_t bv, uint32_t k) -> int64_t {
    return k < n ? Element(av, bits, k, sab) : Element(bv, bits, k - n, sab);
  };
  ForLanes(mask, [&](int l) {
    const uint32_t av = static_cast<uint32_t>(a[l]), bv = static_cast<uint32_t>(b[l]), cv = static_cast<uint32_t>(c[l]);
    uint32_t merged = 0, sum = cv;
    for (unsigned i = 0; i < n; ++i) {
      const int64_t x = pick(av, bv, SimdSelA(in.sel, i)), y = pick(av, bv, SimdSelB(in.sel, i));
      int64_t r = 0;
      switch (vop) {
        case VideoOp::kAdd: r = x + y; break;
        case VideoOp::kSub: r = x - y; break;
        case VideoOp::kAvrg: r = x + y >= 0 ? (x + y + 1) >> 1 : (x + y) >> 1; break;
        case VideoOp::kAbsdiff: r = x > y ? x - y : y - x; break;
        case VideoOp::kMin: r = std::min(x, y); break;
        case VideoOp::kMax: r = std::max(x, y); break;
        case VideoOp::kSet: r = CompareOrdered<int64_t>(cmp, x, y); break;
        default: break;
      }
      r = std::clamp(r, lo, hi);
      const bool write = dmask >> i & 1;
      merged |= ((write ? static_cast<uint32_t>(r) : cv >> (bits * i)) & em) << (bits * i);
      if (write) sum += static_cast<uint32_t>(r);
    }
    d[l] = acc ? sum : merged;
  });
}

namespace {

// The part of a scalar video operand, extended by its type.
int64_t VideoPartOf(uint32_t v, VideoPart p, bool sign) {
  switch (p) {
    case VideoPart::kWord: return sign ? int64_t{static_cast<int32_t>(v)} : int64_t{v};
    case VideoPart::kH0:
    case VideoPart::kH1: return Element(v, 16, p == VideoPart::kH1, sign);
    default: return Element(v, 8, static_cast<unsigned>(p) - static_cast<unsigned>(VideoPart::kB0), sign);
  }
}

}  // namespace

// Scalar video, as the PTX ISA's pseudocode defines it: the parts of a and b extended by their
// types, the operation on them exactly (vmad in 128 bits), saturation to d's type or to the part
// d's selector names, then the secondary operation with c or the merge into c.
void CtaExec::VideoScalar(const Inst& in, Lanes mask, uint64_t* R) {
  const auto vop = static_cast<VideoOp>(in.cmp);
  const auto cmp = static_cast<Cmp>(in.bool_op);
  const ScalarSel sel = ScalarSel::Unpack(in.sel);
  const bool sd = ptx::IsSigned(in.t), sat = in.flags & kSat;
  const unsigned part_bits = sel.d == VideoPart::kWord ? 32 : sel.d >= VideoPart::kH0 ? 16 : 8;
  const unsigned part_shift = sel.d == VideoPart::kWord ? 0
                              : sel.d >= VideoPart::kH0 ? 16 * (static_cast<unsigned>(sel.d) - 5)
                                                        : 8 * (static_cast<unsigned>(sel.d) - 1);
  uint64_t* d = REG(in.d[0]);
  const uint64_t *a = REG(in.s[0]), *b = REG(in.s[1]);
  const uint64_t* c = in.s[2] != kNoSlot ? REG(in.s[2]) : nullptr;
  auto clamp = [](__int128 v, unsigned bits, bool sign) -> __int128 {
    const __int128 lo = sign ? -(__int128{1} << (bits - 1)) : 0;
    const __int128 hi = sign ? (__int128{1} << (bits - 1)) - 1 : (__int128{1} << bits) - 1;
    return v < lo ? lo : v > hi ? hi : v;
  };
  ForLanes(mask, [&](int l) {
    const uint32_t cv = c ? static_cast<uint32_t>(c[l]) : 0;
    const int64_t ta = VideoPartOf(static_cast<uint32_t>(a[l]), sel.a, sel.a_signed);
    const int64_t tb = VideoPartOf(static_cast<uint32_t>(b[l]), sel.b, sel.b_signed);
    if (vop == VideoOp::kMad) {
      const bool signed_final = sel.a_signed || sel.b_signed || sel.neg_product || sel.neg_c;
      __int128 tmp = __int128{ta} * tb;
      uint32_t cc = cv;
      int lsb = 0;
      if (sel.plus_one) {
        lsb = 1;
      } else if (sel.neg_product) {
        tmp = ~tmp;
        lsb = 1;
      } else if (sel.neg_c) {
        cc = ~cc;
        lsb = 1;
      }
      tmp += (signed_final ? __int128{static_cast<int32_t>(cc)} : __int128{cc}) + lsb;
      tmp >>= sel.scale;
      if (sat) tmp = clamp(tmp, 32, signed_final);
      d[l] = static_cast<uint32_t>(tmp);
      return;
    }
    __int128 tmp = 0;
    switch (vop) {
      case VideoOp::kAdd: tmp = __int128{ta} + tb; break;
      case VideoOp::kSub: tmp = __int128{ta} - tb; break;
      case VideoOp::kAbsdiff: tmp = ta > tb ? __int128{ta} - tb : __int128{tb} - ta; break;
      case VideoOp::kMin: tmp = std::min(ta, tb); break;
      case VideoOp::kMax: tmp = std::max(ta, tb); break;
      case VideoOp::kShl:
      case VideoOp::kShr: {  // b is unsigned
        const int64_t n = sel.wrap ? (tb & 31) : std::min<int64_t>(tb, 32);
        tmp = vop == VideoOp::kShl ? __int128{ta} << n : __int128{ta} >> n;
        break;
      }
      case VideoOp::kSet: tmp = CompareOrdered<int64_t>(cmp, ta, tb); break;
      default: break;
    }
    if (sat) tmp = clamp(tmp, part_bits, sd);
    const __int128 cx = sd ? __int128{static_cast<int32_t>(cv)} : __int128{cv};
    switch (sel.op2) {
      case VideoOp2::kAdd: tmp += cx; break;
      case VideoOp2::kMin: tmp = std::min(tmp, cx); break;
      case VideoOp2::kMax: tmp = std::max(tmp, cx); break;
      case VideoOp2::kNone: break;
    }
    uint32_t r = static_cast<uint32_t>(tmp);
    if (sel.d != VideoPart::kWord) {
      const uint32_t m = (part_bits == 8 ? 0xffu : 0xffffu) << part_shift;
      r = (cv & ~m) | ((r << part_shift) & m);
    }
    d[l] = r;
  });
}

// mul24/mad24, sad, szext, bmsk, fns, as the PTX ISA defines them.
void CtaExec::IntMisc(const Inst& in, Lanes mask, uint64_t* R) {
  uint64_t* d = REG(in.d[0]);
  const uint64_t *a = REG(in.s[0]), *b = REG(in.s[1]);
  const uint64_t* c = in.s[2] != kNoSlot ? REG(in.s[2]) : a;
  const bool sign = ptx::IsSigned(in.t), wrap = in.flags & kWrap;
  switch (in.op) {
    case Op::kMul24:
    case Op::kMad24: {  // the low 24 bits of a and b, extended by the type
      const bool hi = in.cmp == 1, mad = in.op == Op::kMad24, sat = in.flags & kSat;
      auto low24 = [&](uint64_t v) -> int64_t {
        const uint32_t x = static_cast<uint32_t>(v) & 0xffffffu;
        return sign ? static_cast<int32_t>(x << 8) >> 8 : static_cast<int64_t>(x);
      };
      ForLanes(mask, [&](int l) {
        const int64_t p = low24(a[l]) * low24(b[l]);  // 48 bits
        int64_t r = hi ? (sign ? p >> 16 : static_cast<int64_t>(static_cast<uint64_t>(p) >> 16)) : p;
        if (mad) {
          if (sat)
            r = std::clamp<int64_t>(static_cast<int32_t>(r) + int64_t{static_cast<int32_t>(c[l])}, INT32_MIN,
                                    INT32_MAX);
          else
            r += static_cast<int64_t>(c[l]);
        }
        d[l] = sign ? Store(static_cast<int32_t>(r)) : Store(static_cast<uint32_t>(r));
      });
      return;
    }
    case Op::kSad:  // c + |a - b|
      WithInt(in.t, [&](auto tag) {
        using T = decltype(tag);
        using U = std::make_unsigned_t<T>;
        ForLanes(mask, [&](int l) {
          const T x = static_cast<T>(a[l]), y = static_cast<T>(b[l]);
          const U diff = x < y ? static_cast<U>(static_cast<U>(y) - static_cast<U>(x))
                               : static_cast<U>(static_cast<U>(x) - static_cast<U>(y));
          d[l] = Store(static_cast<T>(static_cast<U>(static_cast<U>(c[l]) + diff)));
        });
      });
      return;
    case Op::kSzext:  // a's low n bits (n = b mod 32, or b up to 32), extended by the type
      ForLanes(mask, [&](int l) {
        const uint32_t x = static_cast<uint32_t>(a[l]), n = static_cast<uint32_t>(b[l]);
        uint32_t r = x;
        if (wrap || n < 32) {
          const uint32_t bits = n & 31;
          if (bits == 0) {
            r = 0;
          } else {
            const uint32_t keep = 0xffffffffu >> (32 - bits);
            r = x & keep;
            if (sign && (x >> (bits - 1) & 1)) r |= ~keep;
          }
        }
        d[l] = sign ? Store(static_cast<int32_t>(r)) : r;
      });
      return;
    case Op::kBmsk:  // b ones from bit a; .clamp: a or b of 32 or more saturate, .wrap: both mod 32
      ForLanes(mask, [&](int l) {
        const uint32_t pos = static_cast<uint32_t>(a[l]), width = static_cast<uint32_t>(b[l]);
        const uint32_t p = pos & 31, w = width & 31;
        uint64_t lo = uint64_t{0xffffffffu} << p, hi = p + w >= 32 ? 0 : uint64_t{0xffffffffu} << (p + w);
        if (!wrap && pos >= 32)
          lo = 0;
        else if (!wrap && width >= 32)
          hi = 0;
        else if (p + w < 32 && w == 0)
          hi = 0xffffffffu;
        d[l] = static_cast<uint32_t>(lo & ~hi);
      });
      return;
    case Op::kFns:  // the |offset|-th set bit of a from bit base, upward (offset > 0) or downward
      ForLanes(mask, [&](int l) {
        const uint32_t m = static_cast<uint32_t>(a[l]);
        const int32_t base = static_cast<int32_t>(b[l]), offset = static_cast<int32_t>(c[l]);
        uint32_t r = 0xffffffffu;
        if (offset == 0) {
          if (base >= 0 && base < 32 && (m >> base & 1)) r = static_cast<uint32_t>(base);
        } else {
          int64_t count = std::abs(int64_t{offset}) - 1;
          const int inc = offset > 0 ? 1 : -1;
          for (int pos = base; pos >= 0 && pos < 32; pos += inc) {
            if ((m >> pos & 1) && count-- == 0) {
              r = static_cast<uint32_t>(pos);
              break;
            }
          }
        }
        d[l] = r;
      });
      return;
    default: return;
  }
}

// set: setp's predicate as the destination type's true (1.0f, or all ones) or 0; slct: a where c
// >= 0 (c an s32, or an f32 flushed first with .ftz; a NaN c selects b), else b.
void CtaExec::SetSlct(const Inst& in, Lanes mask, uint64_t* R) {
  uint64_t* d = REG(in.d[0]);
  if (in.op == Op::kSet) {
    Setp(in, mask, R);
    const uint64_t one = in.t2 == Type::kF32 ? 0x3f800000u : in.t2 == Type::kS32 ? ~uint64_t{0} : 0xffffffffu;
    ForLanes(mask, [&](int l) { d[l] = (d[l] & 1) ? one : 0; });
    return;
  }
  const uint64_t *a = REG(in.s[0]), *b = REG(in.s[1]), *c = REG(in.s[2]);
  const bool ftz = in.flags & kFtz;
  ForLanes(mask, [&](int l) {
    bool take_a;
    if (in.t2 == Type::kF32) {
      const float f = ftz ? FlushF32(AsF32(c[l])) : AsF32(c[l]);
      take_a = f >= 0.0f;
    } else {
      take_a = static_cast<int32_t>(c[l]) >= 0;
    }
    d[l] = take_a ? a[l] : b[l];
  });
}

// redux.sync: the operation over the lanes of the warp that run it and are in the member mask;
// every one of them gets the result.
void CtaExec::Redux(const Inst& in, Lanes mask, uint64_t* R) {
  const uint64_t *a = REG(in.s[0]), *mm = REG(in.s[1]);
  const uint32_t members = mask & static_cast<uint32_t>(mm[__builtin_ctz(mask)]);
  const bool sign = ptx::IsSigned(in.t);
  const auto op = static_cast<ReduxOp>(in.cmp);
  uint32_t r = op == ReduxOp::kAnd ? ~0u : 0u;
  bool first = true;
  ForLanes(members, [&](int l) {
    const uint32_t v = static_cast<uint32_t>(a[l]);
    switch (op) {
      case ReduxOp::kAdd: r += v; break;
      case ReduxOp::kAnd: r &= v; break;
      case ReduxOp::kOr: r |= v; break;
      case ReduxOp::kXor: r ^= v; break;
      case ReduxOp::kMin:
        r = first  ? v
            : sign ? static_cast<uint32_t>(std::min(static_cast<int32_t>(r), static_cast<int32_t>(v)))
                   : std::min(r, v);
        break;
      case ReduxOp::kMax:
        r = first  ? v
            : sign ? static_cast<uint32_t>(std::max(static_cast<int32_t>(r), static_cast<int32_t>(v)))
                   : std::max(r, v);
        break;
    }
    first = false;
  });
  uint64_t* d = REG(in.d[0]);
  ForLanes(mask, [&](int l) { d[l] = r; });
}

// match.any: per lane, the member lanes whose value equals its own; match.all: the member mask
// when every member's value is the same (and the predicate true), else 0.
void CtaExec::Match(const Inst& in, Lanes mask, uint64_t* R) {
  const uint64_t *a = REG(in.s[0]), *mm = REG(in.s[1]);
  const uint32_t members = mask & static_cast<uint32_t>(mm[__builtin_ctz(mask)]);
  const uint64_t vm = ptx::TypeSize(in.t) == 8 ? ~uint64_t{0} : 0xffffffffull;
  uint32_t same[32] = {};
  ForLanes(members, [&](int l) {
    ForLanes(members, [&](int k) { same[l] |= static_cast<uint32_t>((a[k] & vm) == (a[l] & vm)) << k; });
  });
  uint64_t* d = REG(in.d[0]);
  if (in.cmp == 1) {
    const bool all = members != 0 && same[__builtin_ctz(members)] == members;
    ForLanes(mask, [&](int l) {
      d[l] = all ? members : 0;
      if (in.flags & kDualDst) REG(in.d[1])[l] = all;
    });
  } else {
    ForLanes(mask, [&](int l) { d[l] = same[l]; });
  }
}

}  // namespace gpuwasm::device::cpu
