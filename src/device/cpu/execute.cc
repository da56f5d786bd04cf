// One data instruction to its family (cta_exec.h).
#include "device/cpu/cta_exec.h"
#include "device/cpu/float_formats.h"

namespace gpuwasm::device::cpu {

namespace {

// isspacep: shared and local memory are their windows of the generic address space, global memory
// is the rest; no generic address is in .const or .param here.
bool IsInSpace(const Inst& in, uint64_t a) {
  if (in.cmp == 1) return false;
  const bool shared = a - kSharedWindow < (1ull << 32), local = a - kLocalWindow < (1ull << 32);
  return in.mem == Mem::kShared ? shared : in.mem == Mem::kLocal ? local : !shared && !local;
}

}  // namespace

bool CtaExec::Execute(const Inst& in, Lanes mask, uint32_t group, uint32_t w, uint64_t* R) {
  switch (in.op) {
    case Op::kNop:
    case Op::kWarpSync: return true;
    case Op::kMov: {
      uint64_t* d = REG(in.d[0]);
      const uint64_t* a = REG(in.s[0]);
      ForLanes(mask, [&](int l) { d[l] = a[l]; });
      return true;
    }
    case Op::kPack: {
      unsigned eb = ptx::TypeSize(in.t) * 8 / in.vec;
      uint64_t em = eb == 64 ? ~0ull : ((1ull << eb) - 1);
      uint64_t* d = REG(in.d[0]);
      ForLanes(mask, [&](int l) {
        uint64_t v = 0;
        for (unsigned k = 0; k < in.vec; ++k) v |= (REG(in.s[k])[l] & em) << (eb * k);
        d[l] = v;
      });
      return true;
    }
    case Op::kUnpack: {
      unsigned eb = ptx::TypeSize(in.t) * 8 / in.vec;
      uint64_t em = eb == 64 ? ~0ull : ((1ull << eb) - 1);
      const uint64_t* a = REG(in.s[0]);
      ForLanes(mask, [&](int l) {
        uint64_t v = a[l];
        for (unsigned k = 0; k < in.vec; ++k) REG(in.d[k])[l] = (v >> (eb * k)) & em;
      });
      return true;
    }
    case Op::kLdKParam: {
      unsigned size = ptx::TypeSize(in.t);
      const auto& params = run_.spec().params;
      if (in.offset < 0 || static_cast<uint64_t>(in.offset) + size > params.size()) {
        return Fault(in, "parameter load outside the kernel's parameters");
      }
      uint64_t v = 0;
      std::memcpy(&v, params.data() + in.offset, size);
      if (ptx::IsSigned(in.t) && size < 8) {
        int shift = 64 - 8 * size;
        v = static_cast<uint64_t>(static_cast<int64_t>(v << shift) >> shift);
      }
      uint64_t* d = REG(in.d[0]);
      ForLanes(mask, [&](int l) { d[l] = v; });
      return true;
    }
    case Op::kLd:
    case Op::kSt: return Memory(in, mask, w, R);
    case Op::kCvta: {  // to generic
      uint64_t add = in.mem == Mem::kShared ? kSharedWindow : in.mem == Mem::kLocal ? kLocalWindow : 0;
      uint64_t* d = REG(in.d[0]);
      const uint64_t* a = REG(in.s[0]);
      ForLanes(mask, [&](int l) { d[l] = a[l] + add; });
      return true;
    }
    case Op::kCvtaTo: {
      uint64_t sub = in.mem == Mem::kShared ? kSharedWindow : in.mem == Mem::kLocal ? kLocalWindow : 0;
      uint64_t* d = REG(in.d[0]);
      const uint64_t* a = REG(in.s[0]);
      ForLanes(mask, [&](int l) { d[l] = sub != 0 && a[l] >= sub ? a[l] - sub : a[l]; });
      return true;
    }
    case Op::kMulWide:
    case Op::kMadWide: {
      uint64_t* d = REG(in.d[0]);
      const uint64_t *a = REG(in.s[0]), *b = REG(in.s[1]);
      const uint64_t* c = in.op == Op::kMadWide ? REG(in.s[2]) : nullptr;
      WithInt(in.t2, [&](auto tag) {
        using T = decltype(tag);
        using W = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
        ForLanes(mask, [&](int l) {
          uint64_t p =
              static_cast<uint64_t>(static_cast<W>(static_cast<T>(a[l])) * static_cast<W>(static_cast<T>(b[l])));
          if (c != nullptr) p += c[l];
          if (sizeof(T) == 2) p &= 0xffffffffu;
          d[l] = p;
        });
      });
      return true;
    }
    case Op::kSetp: Setp(in, mask, R); return true;
    case Op::kSelp: {
      uint64_t* d = REG(in.d[0]);
      const uint64_t *a = REG(in.s[0]), *b = REG(in.s[1]), *p = REG(in.s[2]);
      bool neg = in.flags & kNegPred3;
      ForLanes(mask, [&](int l) { d[l] = ((p[l] & 1) != neg) ? a[l] : b[l]; });
      return true;
    }
    case Op::kCvt: Convert(in, mask, R); return true;
    case Op::kIsspacep: {
      uint64_t* d = REG(in.d[0]);
      const uint64_t* a = REG(in.s[0]);
      ForLanes(mask, [&](int l) { d[l] = IsInSpace(in, a[l]); });
      return true;
    }
    case Op::kTestp: {
      uint64_t* d = REG(in.d[0]);
      const uint64_t* a = REG(in.s[0]);
      ForLanes(mask, [&](int l) {
        double v = in.t == Type::kF64 ? AsF64(a[l]) : AsF32(a[l]);
        int c = in.t == Type::kF64 ? std::fpclassify(v) : std::fpclassify(static_cast<float>(v));
        bool r = false;
        switch (in.cmp) {
          case 0: r = std::isfinite(v); break;
          case 1: r = std::isinf(v); break;
          case 2: r = !std::isnan(v); break;
          case 3: r = std::isnan(v); break;
          case 4: r = c == FP_NORMAL; break;
          case 5: r = c == FP_SUBNORMAL; break;
        }
        d[l] = r;
      });
      return true;
    }
    case Op::kPrmt: {
      uint64_t* d = REG(in.d[0]);
      const uint64_t *a = REG(in.s[0]), *b = REG(in.s[1]), *c = REG(in.s[2]);
      ForLanes(mask, [&](int l) {
        uint64_t bytes = (a[l] & 0xffffffffu) | ((b[l] & 0xffffffffu) << 32);
        uint32_t sel = static_cast<uint32_t>(c[l]), r = 0;
        for (int k = 0; k < 4; ++k) {
          uint32_t s = (sel >> (4 * k)) & 0xf;
          uint32_t byte = (bytes >> (8 * (s & 7))) & 0xff;
          if (s & 8) byte = (byte & 0x80) ? 0xff : 0;  // replicate the sign bit
          r |= byte << (8 * k);
        }
        d[l] = r;
      });
      return true;
    }
    case Op::kShf: {
      uint64_t* d = REG(in.d[0]);
      const uint64_t *a = REG(in.s[0]), *b = REG(in.s[1]), *c = REG(in.s[2]);
      bool left = in.flags & kLeft, wrap = in.flags & kWrap;
      ForLanes(mask, [&](int l) {
        uint32_t n = static_cast<uint32_t>(c[l]);
        n = wrap ? (n & 31) : std::min(n, 32u);
        uint64_t v = ((b[l] & 0xffffffffu) << 32) | (a[l] & 0xffffffffu);
        d[l] = left ? static_cast<uint32_t>((v << n) >> 32) : static_cast<uint32_t>(v >> n);
      });
      return true;
    }
    case Op::kLop3: {
      uint64_t* d = REG(in.d[0]);
      const uint64_t *a = REG(in.s[0]), *b = REG(in.s[1]), *c = REG(in.s[2]), *lut = REG(in.s[3]);
      ForLanes(mask, [&](int l) {
        uint32_t x = static_cast<uint32_t>(a[l]), y = static_cast<uint32_t>(b[l]), z = static_cast<uint32_t>(c[l]);
        uint32_t t = static_cast<uint32_t>(lut[l]), r = 0;
        for (int k = 0; k < 32; ++k) {
          uint32_t idx = ((x >> k & 1) << 2) | ((y >> k & 1) << 1) | (z >> k & 1);
          r |= ((t >> idx) & 1) << k;
        }
        d[l] = r;
      });
      return true;
    }
    case Op::kAtom: return Atomic(in, mask, w, R);
    case Op::kCpAsync: return CopyAsync(in, mask, w, R);
    case Op::kTrap: return Fault(in, "trap instruction executed");  // (native code's host block)
    case Op::kShfl: {
      auto mode = static_cast<ShflMode>(in.cmp);
      uint32_t vals[32];
      bool valid[32];
      const uint64_t *a = REG(in.s[0]), *b = REG(in.s[1]), *c = REG(in.s[2]);
      ForLanes(mask, [&](int l) {
        int lane = l;
        int bval = static_cast<int>(b[l] & 31);
        uint32_t cval = static_cast<uint32_t>(c[l]);
        int clamp = static_cast<int>(cval & 31), segmask = static_cast<int>((cval >> 8) & 31);
        int max_lane = (lane & segmask) | (clamp & ~segmask);
        int min_lane = lane & segmask;
        int j = lane;
        bool p = false;
        switch (mode) {
          case ShflMode::kUp:
            j = lane - bval;
            p = j >= max_lane;
            break;
          case ShflMode::kDown:
            j = lane + bval;
            p = j <= max_lane;
            break;
          case ShflMode::kBfly:
            j = lane ^ bval;
            p = j <= max_lane;
            break;
          case ShflMode::kIdx:
            j = min_lane | (bval & ~segmask);
            p = j <= max_lane;
            break;
        }
        if (!p || j < 0 || j > 31) j = lane;
        vals[l] = static_cast<uint32_t>(a[j]);
        valid[l] = p;
      });
      ForLanes(mask, [&](int l) {
        REG(in.d[0])[l] = vals[l];
        if (in.flags & kDualDst) REG(in.d[1])[l] = valid[l];
      });
      return true;
    }
    case Op::kVote: {
      const uint64_t *p = REG(in.s[0]), *mm = REG(in.s[1]);
      bool neg = in.flags & kNegSrc0;
      uint32_t members = mask & static_cast<uint32_t>(mm[__builtin_ctz(mask)]);
      uint32_t ballot = 0;
      ForLanes(members, [&](int l) { ballot |= static_cast<uint32_t>((p[l] & 1) != neg) << l; });
      uint64_t r = 0;
      switch (static_cast<VoteMode>(in.cmp)) {
        case VoteMode::kAll: r = ballot == members; break;
        case VoteMode::kAny: r = ballot != 0; break;
        case VoteMode::kUni: r = ballot == 0 || ballot == members; break;
        case VoteMode::kBallot: r = ballot; break;
      }
      uint64_t* d = REG(in.d[0]);
      ForLanes(mask, [&](int l) { d[l] = r; });
      return true;
    }
    case Op::kActivemask: {
      uint64_t* d = REG(in.d[0]);
      ForLanes(mask, [&](int l) { d[l] = group; });
      return true;
    }
    case Op::kAddC:
    case Op::kSubC:
    case Op::kMadC: Carry(in, mask, R); return true;
    case Op::kDp4a:
    case Op::kDp2a: DotProduct(in, mask, R); return true;
    case Op::kVideo: Video(in, mask, R); return true;
    case Op::kVideoScalar: VideoScalar(in, mask, R); return true;
    case Op::kMul24:
    case Op::kMad24:
    case Op::kSad:
    case Op::kSzext:
    case Op::kBmsk:
    case Op::kFns: IntMisc(in, mask, R); return true;
    case Op::kSet:
    case Op::kSlct: SetSlct(in, mask, R); return true;
    case Op::kCvtMini: ConvertMini(in, mask, R); return true;
    case Op::kCvtPack: {          // cvt.{rn,rz}.{f16x2,bf16x2}.f32 d, a, b: a rounded into the upper half, b the lower
      if (in.t2 == Type::kS32) {  // cvt.pack.sat: saturated a above b, then c's low bits
        const unsigned bits = in.cmp;
        const bool sign = in.bool_op != 0;
        const int64_t lo = sign ? -(int64_t{1} << (bits - 1)) : 0;
        const int64_t hi = sign ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
        const uint32_t em = (1u << bits) - 1;
        uint64_t* d = REG(in.d[0]);
        const uint64_t *a = REG(in.s[0]), *b = REG(in.s[1]);
        const uint64_t* c = in.s[2] != kNoSlot ? REG(in.s[2]) : nullptr;
        ForLanes(mask, [&](int l) {
          auto sat = [&](uint64_t v) {
            return static_cast<uint32_t>(std::clamp<int64_t>(static_cast<int32_t>(v), lo, hi)) & em;
          };
          uint32_t r = sat(a[l]) << bits | sat(b[l]);
          if (c != nullptr) r |= static_cast<uint32_t>(c[l]) << (2 * bits);
          d[l] = r;
        });
        return true;
      }
      const bool bf = in.t == Type::kBF16x2;
      uint64_t* d = REG(in.d[0]);
      const uint64_t *a = REG(in.s[0]), *b = REG(in.s[1]);
      RoundingScope rs(RoundMode(in.rnd));
      auto half = [&](uint64_t f) { return NarrowFloat(AsF32(f), bf, in.flags); };
      ForLanes(mask, [&](int l) { d[l] = uint64_t{half(a[l])} << 16 | half(b[l]); });
      return true;
    }
    case Op::kRedux: Redux(in, mask, R); return true;
    case Op::kMatch: Match(in, mask, R); return true;
    case Op::kClock: {
      uint64_t now = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) >> in.offset;
      uint64_t* d = REG(in.d[0]);
      ForLanes(mask, [&](int l) { d[l] = now; });
      return true;
    }
    default: break;
  }
  if (IsHalfLike(in.t)) return HalfOp(in, mask, R);
  if (in.t == Type::kF32 || in.t == Type::kF64) return FloatOp(in, mask, R);
  if (in.t == Type::kPred) {  // and/or/xor/not on predicates
    uint64_t* d = REG(in.d[0]);
    const uint64_t* a = REG(in.s[0]);
    const uint64_t* b = in.s[1] != kNoSlot ? REG(in.s[1]) : a;
    ForLanes(mask, [&](int l) {
      bool x = a[l] & 1, y = b[l] & 1;
      d[l] = in.op == Op::kAnd ? (x && y) : in.op == Op::kOr ? (x || y) : in.op == Op::kXor ? (x != y) : !x;
    });
    return true;
  }
  IntOp(in, mask, R);
  return true;
}

}  // namespace gpuwasm::device::cpu
