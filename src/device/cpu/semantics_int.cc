// setp and integer arithmetic for the interpreter (cta_exec.h).
#include <climits>
#include <limits>

#include "device/cpu/cta_exec.h"

namespace gpuwasm::device::cpu {

namespace {

template <class T>
bool CompareFloat(Cmp c, T a, T b) {
  bool unordered = std::isnan(a) || std::isnan(b);
  switch (c) {
    case Cmp::kEq: return !unordered && a == b;
    case Cmp::kNe: return !unordered && a != b;
    case Cmp::kLt: return !unordered && a < b;
    case Cmp::kLe: return !unordered && a <= b;
    case Cmp::kGt: return !unordered && a > b;
    case Cmp::kGe: return !unordered && a >= b;
    case Cmp::kEqu: return unordered || a == b;
    case Cmp::kNeu: return unordered || a != b;
    case Cmp::kLtu: return unordered || a < b;
    case Cmp::kLeu: return unordered || a <= b;
    case Cmp::kGtu: return unordered || a > b;
    case Cmp::kGeu: return unordered || a >= b;
    case Cmp::kNum: return !unordered;
    case Cmp::kNan: return unordered;
    default: return false;
  }
}

}  // namespace

void CtaExec::Setp(const Inst& in, Lanes mask, uint64_t* R) {
  auto cmp = static_cast<Cmp>(in.cmp);
  const uint64_t *a = REG(in.s[0]), *b = REG(in.s[1]);
  auto bop = static_cast<BoolOp>(in.bool_op);
  const bool pred3 = in.flags & kHasPred3, dual = in.flags & kDualDst, neg3 = in.flags & kNegPred3;
  uint64_t* d0 = REG(in.d[0]);
  uint64_t* d1 = dual ? REG(in.d[1]) : nullptr;
  const uint64_t* c = pred3 ? REG(in.s[2]) : nullptr;
  auto finish = [&](int l, bool t) {
    if (!pred3 && !dual) {
      d0[l] = t;
      return;
    }
    bool f = !t;
    if (pred3) {
      bool cv = (c[l] & 1) != neg3;
      auto combine = [&](bool x) {
        return bop == BoolOp::kAnd ? (x && cv) : bop == BoolOp::kOr ? (x || cv) : (x != cv);
      };
      t = combine(t);
      f = combine(f);
    }
    d0[l] = t;
    if (dual) d1[l] = f;
  };
  switch (in.t) {
    case Type::kF32: {
      const bool ftz = in.flags & kFtz;
      ForLanes(mask, [&](int l) {
        float x = AsF32(a[l]), y = AsF32(b[l]);
        if (ftz) {
          x = FlushF32(x);
          y = FlushF32(y);
        }
        finish(l, CompareFloat(cmp, x, y));
      });
      return;
    }
    case Type::kF64: ForLanes(mask, [&](int l) { finish(l, CompareFloat(cmp, AsF64(a[l]), AsF64(b[l]))); }); return;
    case Type::kF16:
      ForLanes(mask, [&](int l) {
        finish(l,
               CompareFloat(cmp, HalfToDouble(static_cast<uint16_t>(a[l])), HalfToDouble(static_cast<uint16_t>(b[l]))));
      });
      return;
    case Type::kBF16:
      ForLanes(mask, [&](int l) {
        finish(l,
               CompareFloat(cmp, Bf16ToDouble(static_cast<uint16_t>(a[l])), Bf16ToDouble(static_cast<uint16_t>(b[l]))));
      });
      return;
    default:
      WithInt(in.t, [&](auto tag) {
        using T = decltype(tag);
        auto run = [&](auto op) {
          if (!pred3 && !dual) {  // the common form: one predicate, nothing combined
            ForLanes(mask, [&](int l) { d0[l] = op(static_cast<T>(a[l]), static_cast<T>(b[l])); });
          } else {
            ForLanes(mask, [&](int l) { finish(l, op(static_cast<T>(a[l]), static_cast<T>(b[l]))); });
          }
        };
        switch (cmp) {
          case Cmp::kEq: run([](T x, T y) { return x == y; }); break;
          case Cmp::kNe: run([](T x, T y) { return x != y; }); break;
          case Cmp::kLt:
          case Cmp::kLo: run([](T x, T y) { return x < y; }); break;
          case Cmp::kLe:
          case Cmp::kLs: run([](T x, T y) { return x <= y; }); break;
          case Cmp::kGt:
          case Cmp::kHi: run([](T x, T y) { return x > y; }); break;
          case Cmp::kGe:
          case Cmp::kHs: run([](T x, T y) { return x >= y; }); break;
          default: run([](T, T) { return false; }); break;
        }
      });
  }
}

namespace {

template <class T>
T IntDiv(T a, T b) {
  if (b == 0) return static_cast<T>(-1);  // PTX leaves it unspecified; hardware gives all ones
  if constexpr (std::is_signed_v<T>) {
    if (a == std::numeric_limits<T>::min() && b == -1) return a;
  }
  return static_cast<T>(a / b);
}

template <class T>
T IntRem(T a, T b) {
  if (b == 0) return a;
  if constexpr (std::is_signed_v<T>) {
    if (a == std::numeric_limits<T>::min() && b == -1) return 0;
  }
  return static_cast<T>(a % b);
}

template <class T>
T MulHi(T a, T b) {
  if constexpr (sizeof(T) == 8) {
    using W = std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>;
    return static_cast<T>((static_cast<W>(a) * static_cast<W>(b)) >> 64);
  } else {
    using W = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
    return static_cast<T>((static_cast<W>(a) * static_cast<W>(b)) >> (8 * sizeof(T)));
  }
}

template <class T>
uint32_t Clz(T v) {
  using U = std::make_unsigned_t<T>;
  U u = static_cast<U>(v);
  return u == 0 ? 8 * sizeof(T) : static_cast<uint32_t>(std::countl_zero(u));
}

}  // namespace

void CtaExec::IntOp(const Inst& in, Lanes mask, uint64_t* R) {
  uint64_t* d = REG(in.d[0]);
  const uint64_t* a = REG(in.s[0]);
  const uint64_t* b = in.s[1] != kNoSlot ? REG(in.s[1]) : a;
  const uint64_t* c = in.s[2] != kNoSlot ? REG(in.s[2]) : a;
  const uint64_t* e = in.s[3] != kNoSlot ? REG(in.s[3]) : a;
  WithInt(in.t, [&](auto tag) {
    using T = decltype(tag);
    using U = std::make_unsigned_t<T>;
    constexpr unsigned kBits = 8 * sizeof(T);
    auto A = [&](int l) { return static_cast<T>(a[l]); };
    auto B = [&](int l) { return static_cast<T>(b[l]); };
    auto C = [&](int l) { return static_cast<T>(c[l]); };
    auto sat_add = [](T x, T y, bool sub) -> T {
      if constexpr (std::is_signed_v<T> && sizeof(T) == 4) {
        int64_t r = sub ? int64_t{x} - y : int64_t{x} + y;
        return static_cast<T>(std::clamp<int64_t>(r, INT32_MIN, INT32_MAX));
      } else {
        return static_cast<T>(sub ? static_cast<U>(x) - static_cast<U>(y) : static_cast<U>(x) + static_cast<U>(y));
      }
    };
    switch (in.op) {
      case Op::kAdd:
        if (in.flags & kSat)
          ForLanes(mask, [&](int l) { d[l] = Store(sat_add(A(l), B(l), false)); });
        else
          ForLanes(mask, [&](int l) { d[l] = Store(static_cast<T>(static_cast<U>(A(l)) + static_cast<U>(B(l)))); });
        break;
      case Op::kSub:
        if (in.flags & kSat)
          ForLanes(mask, [&](int l) { d[l] = Store(sat_add(A(l), B(l), true)); });
        else
          ForLanes(mask, [&](int l) { d[l] = Store(static_cast<T>(static_cast<U>(A(l)) - static_cast<U>(B(l)))); });
        break;
      case Op::kMulLo:
        ForLanes(mask, [&](int l) { d[l] = Store(static_cast<T>(static_cast<U>(A(l)) * static_cast<U>(B(l)))); });
        break;
      case Op::kMulHi: ForLanes(mask, [&](int l) { d[l] = Store(MulHi<T>(A(l), B(l))); }); break;
      case Op::kMadLo:
        ForLanes(mask, [&](int l) {
          d[l] = Store(static_cast<T>(static_cast<U>(A(l)) * static_cast<U>(B(l)) + static_cast<U>(C(l))));
        });
        break;
      case Op::kMadHi:
        ForLanes(mask, [&](int l) {
          d[l] = Store(static_cast<T>(static_cast<U>(MulHi<T>(A(l), B(l))) + static_cast<U>(C(l))));
        });
        break;
      case Op::kDiv: ForLanes(mask, [&](int l) { d[l] = Store(IntDiv<T>(A(l), B(l))); }); break;
      case Op::kRem: ForLanes(mask, [&](int l) { d[l] = Store(IntRem<T>(A(l), B(l))); }); break;
      case Op::kMin: ForLanes(mask, [&](int l) { d[l] = Store(std::min(A(l), B(l))); }); break;
      case Op::kMax: ForLanes(mask, [&](int l) { d[l] = Store(std::max(A(l), B(l))); }); break;
      case Op::kAbs:
        ForLanes(mask, [&](int l) {
          T x = A(l);
          d[l] = Store(x < 0 ? static_cast<T>(U{0} - static_cast<U>(x)) : x);
        });
        break;
      case Op::kNeg: ForLanes(mask, [&](int l) { d[l] = Store(static_cast<T>(U{0} - static_cast<U>(A(l)))); }); break;
      case Op::kAnd: ForLanes(mask, [&](int l) { d[l] = Store(static_cast<T>(A(l) & B(l))); }); break;
      case Op::kOr: ForLanes(mask, [&](int l) { d[l] = Store(static_cast<T>(A(l) | B(l))); }); break;
      case Op::kXor: ForLanes(mask, [&](int l) { d[l] = Store(static_cast<T>(A(l) ^ B(l))); }); break;
      case Op::kNot: ForLanes(mask, [&](int l) { d[l] = Store(static_cast<T>(~A(l))); }); break;
      case Op::kCnot: ForLanes(mask, [&](int l) { d[l] = Store(static_cast<T>(A(l) == 0 ? 1 : 0)); }); break;
      case Op::kShl:
        ForLanes(mask, [&](int l) {
          uint32_t s = static_cast<uint32_t>(b[l]);
          d[l] = Store(s >= kBits ? T{0} : static_cast<T>(static_cast<U>(A(l)) << s));
        });
        break;
      case Op::kShr:
        ForLanes(mask, [&](int l) {
          uint32_t s = static_cast<uint32_t>(b[l]);
          T x = A(l);
          if (s >= kBits)
            d[l] = Store(static_cast<T>(std::is_signed_v<T> && x < 0 ? -1 : 0));
          else
            d[l] = Store(static_cast<T>(x >> s));
        });
        break;
      case Op::kPopc:
        ForLanes(mask, [&](int l) { d[l] = static_cast<uint32_t>(std::popcount(static_cast<U>(A(l)))); });
        break;
      case Op::kClz: ForLanes(mask, [&](int l) { d[l] = Clz(A(l)); }); break;
      case Op::kBrev:
        ForLanes(mask, [&](int l) {
          U x = static_cast<U>(A(l)), r = 0;
          for (unsigned k = 0; k < kBits; ++k) r |= static_cast<U>(((x >> k) & 1) << (kBits - 1 - k));
          d[l] = Store(static_cast<T>(r));
        });
        break;
      case Op::kBfind:
        ForLanes(mask, [&](int l) {
          T x = A(l);
          U u = static_cast<U>(x);
          if constexpr (std::is_signed_v<T>) {
            if (x < 0) u = static_cast<U>(~u);
          }
          uint32_t r = u == 0 ? 0xffffffffu : kBits - 1 - static_cast<uint32_t>(std::countl_zero(u));
          if (u != 0 && (in.flags & kShiftAmt)) r = kBits - 1 - r;
          d[l] = r;
        });
        break;
      case Op::kBfe:
        ForLanes(mask, [&](int l) {
          uint32_t pos = static_cast<uint32_t>(b[l]) & 0xff, len = static_cast<uint32_t>(c[l]) & 0xff;
          U x = static_cast<U>(A(l)), r = 0;
          bool sbit = false;
          if constexpr (std::is_signed_v<T>) {
            uint32_t msb = len == 0 ? 0 : std::min(pos + len - 1, kBits - 1);
            sbit = len != 0 && ((x >> msb) & 1);
          }
          for (uint32_t k = 0; k < kBits; ++k) {
            bool bit = k < len ? (pos + k < kBits ? ((x >> (pos + k)) & 1) : sbit) : sbit;
            if (bit) r |= static_cast<U>(U{1} << k);
          }
          d[l] = Store(static_cast<T>(r));
        });
        break;
      case Op::kBfi:
        ForLanes(mask, [&](int l) {
          uint32_t pos = static_cast<uint32_t>(c[l]) & 0xff, len = static_cast<uint32_t>(e[l]) & 0xff;
          U f = static_cast<U>(a[l]), r = static_cast<U>(b[l]);
          for (uint32_t k = 0; k < len && pos + k < kBits; ++k) {
            U bit = static_cast<U>(U{1} << (pos + k));
            r = static_cast<U>(((f >> k) & 1) ? (r | bit) : (r & ~bit));
          }
          d[l] = Store(static_cast<T>(r));
        });
        break;
      default: break;
    }
  });
}

}  // namespace gpuwasm::device::cpu
