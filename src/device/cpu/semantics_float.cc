// Float, half and conversion instructions for the interpreter (cta_exec.h).
#include <cmath>
#include <limits>

#include "device/cpu/cta_exec.h"
#include "device/cpu/float_formats.h"

namespace gpuwasm::device::cpu {

namespace {

// FMA lanes, built twice: with hardware FMA (chosen at load time on CPUs that have it) and
// without (libm's exact fma). Results are identical: fma is correctly rounded either way. Plain
// functions, one per type: clang cannot multiversion templates. Not under ThreadSanitizer: the
// ifunc resolver would run, instrumented, before TSan's runtime is up.
#if defined(__SANITIZE_THREAD__)

#define GPUWASM_FMA_CLONES

#elif defined(__has_feature)

#if __has_feature(thread_sanitizer)

#define GPUWASM_FMA_CLONES

#endif

#endif

#ifndef GPUWASM_FMA_CLONES

#define GPUWASM_FMA_CLONES __attribute__((target_clones("fma", "default")))

#endif

GPUWASM_FMA_CLONES void FmaLanesF32(const Lanes& mask, uint64_t* d, const uint64_t* a, const uint64_t* b,
                                    const uint64_t* c) {
  ForLanes(mask, [&](int l) {
    d[l] = ToBits(std::fma(FromBits<float>(a[l]), FromBits<float>(b[l]), FromBits<float>(c[l])));
  });
}

GPUWASM_FMA_CLONES void FmaLanesF64(const Lanes& mask, uint64_t* d, const uint64_t* a, const uint64_t* b,
                                    const uint64_t* c) {
  ForLanes(mask, [&](int l) {
    d[l] = ToBits(std::fma(FromBits<double>(a[l]), FromBits<double>(b[l]), FromBits<double>(c[l])));
  });
}

template <class T>
void FmaLanes(const Lanes& mask, uint64_t* d, const uint64_t* a, const uint64_t* b, const uint64_t* c) {
  if constexpr (std::is_same_v<T, float>) {
    FmaLanesF32(mask, d, a, b, c);
  } else {
    FmaLanesF64(mask, d, a, b, c);
  }
}

template <class T>
bool PlainFloatOp(Op op, const Lanes& mask, uint64_t* d, const uint64_t* a, const uint64_t* b, const uint64_t* c) {
  switch (op) {
    case Op::kAdd: ForLanes(mask, [&](int l) { d[l] = ToBits(FromBits<T>(a[l]) + FromBits<T>(b[l])); }); return true;
    case Op::kSub: ForLanes(mask, [&](int l) { d[l] = ToBits(FromBits<T>(a[l]) - FromBits<T>(b[l])); }); return true;
    case Op::kMulLo: ForLanes(mask, [&](int l) { d[l] = ToBits(FromBits<T>(a[l]) * FromBits<T>(b[l])); }); return true;
    case Op::kFma: FmaLanes<T>(mask, d, a, b, c); return true;
    default: return false;
  }
}

}  // namespace

bool CtaExec::FloatOp(const Inst& in, Lanes mask, uint64_t* R) {
  uint64_t* d = REG(in.d[0]);
  const uint64_t* a = REG(in.s[0]);
  const uint64_t* b = in.s[1] != kNoSlot ? REG(in.s[1]) : a;
  const uint64_t* c = in.s[2] != kNoSlot ? REG(in.s[2]) : a;
  const bool ftz = in.flags & kFtz, sat = in.flags & kSat;
  // The common case: round-to-nearest, no flushing or saturation.
  if (!ftz && !sat && (in.rnd == Round::kDefault || in.rnd == Round::kRn)) {
    if (in.t == Type::kF64 ? PlainFloatOp<double>(in.op, mask, d, a, b, c)
                           : PlainFloatOp<float>(in.op, mask, d, a, b, c)) {
      return true;
    }
  }
  RoundingScope rs(RoundMode(in.rnd));
  auto body = [&](auto tag) {
    using T = decltype(tag);
    auto get = [&](const uint64_t* r, int l) {
      T v = FromBits<T>(r[l]);
      if constexpr (std::is_same_v<T, float>) {
        if (ftz) v = FlushF32(v);
      }
      return v;
    };
    auto put = [&](int l, T v) {
      if constexpr (std::is_same_v<T, float>) {
        if (ftz) v = FlushF32(v);
      }
      if (sat && in.op != Op::kMin && in.op != Op::kMax) v = std::isnan(v) ? T{0} : std::clamp(v, T{0}, T{1});
      d[l] = ToBits(v);
    };
    switch (in.op) {
      case Op::kAdd: ForLanes(mask, [&](int l) { put(l, get(a, l) + get(b, l)); }); break;
      case Op::kSub: ForLanes(mask, [&](int l) { put(l, get(a, l) - get(b, l)); }); break;
      case Op::kMulLo: ForLanes(mask, [&](int l) { put(l, get(a, l) * get(b, l)); }); break;
      case Op::kFma: ForLanes(mask, [&](int l) { put(l, std::fma(get(a, l), get(b, l), get(c, l))); }); break;
      case Op::kDiv: ForLanes(mask, [&](int l) { put(l, get(a, l) / get(b, l)); }); break;
      case Op::kMin: ForLanes(mask, [&](int l) { put(l, FMin(get(a, l), get(b, l), sat)); }); break;
      case Op::kMax: ForLanes(mask, [&](int l) { put(l, FMax(get(a, l), get(b, l), sat)); }); break;
      case Op::kAbs: ForLanes(mask, [&](int l) { put(l, std::fabs(get(a, l))); }); break;
      case Op::kNeg: ForLanes(mask, [&](int l) { put(l, -get(a, l)); }); break;
      case Op::kSqrt: ForLanes(mask, [&](int l) { put(l, std::sqrt(get(a, l))); }); break;
      case Op::kRcp: ForLanes(mask, [&](int l) { put(l, T{1} / get(a, l)); }); break;
      case Op::kRsqrt: ForLanes(mask, [&](int l) { put(l, T{1} / std::sqrt(get(a, l))); }); break;
      case Op::kSin: ForLanes(mask, [&](int l) { put(l, std::sin(get(a, l))); }); break;
      case Op::kCos: ForLanes(mask, [&](int l) { put(l, std::cos(get(a, l))); }); break;
      case Op::kEx2: ForLanes(mask, [&](int l) { put(l, std::exp2(get(a, l))); }); break;
      case Op::kLg2: ForLanes(mask, [&](int l) { put(l, std::log2(get(a, l))); }); break;
      case Op::kTanh: ForLanes(mask, [&](int l) { put(l, std::tanh(get(a, l))); }); break;
      case Op::kCopysign: ForLanes(mask, [&](int l) { put(l, std::copysign(get(b, l), get(a, l))); }); break;
      default: break;
    }
  };
  if (in.t == Type::kF64)
    body(double{});
  else
    body(float{});
  return true;
}

// f16, bf16 and their packed x2 forms: computed in double (exact for add/mul), rounded once.
bool CtaExec::HalfOp(const Inst& in, Lanes mask, uint64_t* R) {
  uint64_t* d = REG(in.d[0]);
  const uint64_t* a = REG(in.s[0]);
  const uint64_t* b = in.s[1] != kNoSlot ? REG(in.s[1]) : a;
  const uint64_t* c = in.s[2] != kNoSlot ? REG(in.s[2]) : a;
  const bool bf = in.t == Type::kBF16 || in.t == Type::kBF16x2;
  const int lanes = (in.t == Type::kF16x2 || in.t == Type::kBF16x2) ? 2 : 1;
  auto to = [&](uint16_t h) { return bf ? Bf16ToDouble(h) : HalfToDouble(h); };
  auto from = [&](double v) { return bf ? DoubleToBf16(v) : DoubleToHalf(v); };
  RoundingScope rs(RoundMode(in.rnd));
  bool ok = true;
  ForLanes(mask, [&](int l) {
    uint64_t out = 0;
    for (int h = 0; h < lanes; ++h) {
      double x = to(static_cast<uint16_t>(a[l] >> (16 * h))), y = to(static_cast<uint16_t>(b[l] >> (16 * h))),
             z = to(static_cast<uint16_t>(c[l] >> (16 * h)));
      double r;
      switch (in.op) {
        case Op::kAdd: r = x + y; break;
        case Op::kSub: r = x - y; break;
        case Op::kMulLo: r = x * y; break;
        case Op::kFma: r = std::fma(x, y, z); break;
        case Op::kMin: r = FMin(x, y, false); break;
        case Op::kMax: r = FMax(x, y, false); break;
        case Op::kNeg: r = -x; break;
        case Op::kAbs: r = std::fabs(x); break;
        case Op::kEx2: r = std::exp2(x); break;
        case Op::kTanh: r = std::tanh(x); break;
        default:
          ok = false;
          r = 0;
          break;
      }
      if (in.flags & kSat) r = std::isnan(r) ? 0.0 : std::clamp(r, 0.0, 1.0);
      out |= static_cast<uint64_t>(from(r)) << (16 * h);
    }
    d[l] = out;
  });
  if (!ok) return Fault(in, "this operation is not implemented for half-precision types");
  return true;
}

namespace {

template <class T>
T SaturateFromDouble(double v) {
  if (std::isnan(v)) return T{0};
  if (v <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

double RoundIntegral(double v, Round r) {
  switch (r) {
    case Round::kRni: return std::nearbyint(v);
    case Round::kRmi: return std::floor(v);
    case Round::kRpi: return std::ceil(v);
    default: return std::trunc(v);
  }
}

}  // namespace

void CtaExec::Convert(const Inst& in, Lanes mask, uint64_t* R) {
  uint64_t* d = REG(in.d[0]);
  const uint64_t* a = REG(in.s[0]);
  const Type dt = in.t, st = in.t2;
  const bool sat = in.flags & kSat, ftz = in.flags & kFtz;
  const bool df = ptx::IsFloat(dt), sf = ptx::IsFloat(st);
  auto read_float = [&](int l) -> double {
    switch (st) {
      case Type::kF32: {
        float f = AsF32(a[l]);
        return ftz ? FlushF32(f) : f;
      }
      case Type::kF64: return AsF64(a[l]);
      case Type::kF16: return HalfToDouble(static_cast<uint16_t>(a[l]));
      case Type::kBF16: return Bf16ToDouble(static_cast<uint16_t>(a[l]));
      default: return 0;
    }
  };
  auto write_float = [&](int l, double v) {
    if (sat) v = std::isnan(v) ? 0.0 : std::clamp(v, 0.0, 1.0);
    switch (dt) {
      case Type::kF32: {
        float f = static_cast<float>(v);
        d[l] = Bits(ftz ? FlushF32(f) : f);
        break;
      }
      case Type::kF64: d[l] = Bits(v); break;
      case Type::kF16: d[l] = NarrowFloat(v, false, in.flags); break;
      case Type::kBF16: d[l] = NarrowFloat(v, true, in.flags); break;
      default: break;
    }
  };
  if (sf && df) {
    bool integral = in.rnd == Round::kRni || in.rnd == Round::kRzi || in.rnd == Round::kRmi || in.rnd == Round::kRpi;
    RoundingScope rs(integral ? FE_TONEAREST : RoundMode(in.rnd));
    ForLanes(mask, [&](int l) {
      double v = read_float(l);
      if (integral) v = RoundIntegral(v, in.rnd);
      write_float(l, v);
    });
    return;
  }
  if (sf && !df) {  // float -> integer: rounded, then clamped to the destination range (NaN -> 0)
    ForLanes(mask, [&](int l) {
      double v = RoundIntegral(read_float(l), in.rnd == Round::kDefault ? Round::kRzi : in.rnd);
      WithInt(dt, [&](auto tag) {
        using T = decltype(tag);
        d[l] = Store(SaturateFromDouble<T>(v));
      });
    });
    return;
  }
  if (!sf && df) {  // integer -> float, rounded in the requested mode
    RoundingScope rs(RoundMode(in.rnd));
    ForLanes(mask, [&](int l) {
      WithInt(st, [&](auto tag) {
        using T = decltype(tag);
        T x = static_cast<T>(a[l]);
        if (dt == Type::kF32) {
          d[l] = Bits(static_cast<float>(x));
        } else if (dt == Type::kF64) {
          d[l] = Bits(static_cast<double>(x));
        } else {
          write_float(l, static_cast<double>(x));
        }
      });
    });
    return;
  }
  // integer -> integer: extend or truncate; .sat clamps to the destination range.
  ForLanes(mask, [&](int l) {
    WithInt(st, [&](auto stag) {
      using S = decltype(stag);
      S x = static_cast<S>(a[l]);
      WithInt(dt, [&](auto dtag) {
        using D = decltype(dtag);
        if (sat) {
          if constexpr (std::is_signed_v<S>) {
            int64_t v = x;  // NOLINT(bugprone-signed-char-misuse): an s8 register widens as a number
            int64_t lo = std::is_signed_v<D> ? static_cast<int64_t>(std::numeric_limits<D>::min()) : 0;
            int64_t hi = std::numeric_limits<D>::max() > static_cast<uint64_t>(INT64_MAX)
                             ? INT64_MAX
                             : static_cast<int64_t>(std::numeric_limits<D>::max());
            d[l] = Store(static_cast<D>(std::clamp(v, lo, hi)));
          } else {
            uint64_t v = x;
            uint64_t hi = static_cast<uint64_t>(std::numeric_limits<D>::max());
            d[l] = Store(static_cast<D>(std::min(v, hi)));
          }
        } else {
          d[l] = Store(static_cast<D>(x));
        }
      });
    });
  });
}

// cvt to and from the narrow float formats (see EncodeMini, EncodeUe8m0, EncodeTf32).
void CtaExec::ConvertMini(const Inst& in, Lanes mask, uint64_t* R) {
  const auto f = static_cast<MiniFormat>(in.cmp);
  const bool relu = in.flags & kRelu, satfinite = in.flags & kSatFinite;
  const bool fp4 = f == MiniFormat::kE2M1, fp6 = f == MiniFormat::kE2M3 || f == MiniFormat::kE3M2;
  const unsigned shift = fp4 ? 4 : 8;  // the upper element's position in the pair
  const uint32_t elem = fp4 ? 0xfu : fp6 ? 0x3fu : 0xffu;
  uint64_t* d = REG(in.d[0]);
  const uint64_t *a = REG(in.s[0]), *b = in.s[1] != kNoSlot ? REG(in.s[1]) : nullptr;
  auto encode = [&](double v) -> uint32_t {
    return f == MiniFormat::kUE8M0 ? EncodeUe8m0(v, in.rnd, satfinite) : EncodeMini(v, f, relu);
  };
  ForLanes(mask, [&](int l) {
    const uint32_t av = static_cast<uint32_t>(a[l]);
    if (f == MiniFormat::kTF32) {
      d[l] = EncodeTf32(av, in.rnd, satfinite, relu);
    } else if (in.bool_op & kMiniToHalves) {  // the pair in a, the upper element to the upper half
      auto half = [&](uint32_t code) -> uint32_t {
        if (f == MiniFormat::kUE8M0) return DecodeUe8m0ToBf16(static_cast<uint8_t>(code));
        return NarrowFloat(DecodeMini(static_cast<uint8_t>(code), f), false, relu ? kRelu : 0);
      };
      d[l] = half(av >> shift & elem) << 16 | half(av & elem);
    } else if (in.bool_op & kMiniFromHalves) {  // f16x2 (bf16x2 for ue8m0): upper half to the upper element
      const bool bf = in.t2 == Type::kBF16x2;
      auto value = [&](uint16_t h) { return bf ? Bf16ToDouble(h) : HalfToDouble(h); };
      d[l] = encode(value(static_cast<uint16_t>(av >> 16))) << shift | encode(value(static_cast<uint16_t>(av)));
    } else {  // f32 a to the upper element, b to the lower
      d[l] = encode(AsF32(a[l])) << shift | encode(AsF32(b[l]));
    }
  });
}

}  // namespace gpuwasm::device::cpu
