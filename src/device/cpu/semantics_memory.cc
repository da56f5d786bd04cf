// ld, st, atom, red and cp.async for the interpreter (cta_exec.h): every access checked.
#include <atomic>
#include <cstring>

#include "device/cpu/cta_exec.h"
#include "device/cpu/float_formats.h"

namespace gpuwasm::device::cpu {

uint8_t* CtaExec::GlobalFast(uint64_t addr, uint32_t bytes) {
  uint64_t off = addr - cache_base_;
  if (off < cache_size_ && bytes <= cache_size_ - off) return cache_host_ + off;
  // Slow path: find the region and remember it (lanes of a warp usually share one buffer).
  auto it = std::upper_bound(mem_.regions.begin(), mem_.regions.end(), addr,
                             [](uint64_t a, const MemoryView::Region& r) { return a < r.base; });
  if (it == mem_.regions.begin()) return nullptr;
  --it;
  off = addr - it->base;
  if (off >= it->size || bytes > it->size - off) return nullptr;
  cache_base_ = it->base;
  cache_size_ = it->size;
  cache_host_ = it->host;
  return it->host + off;
}

template <unsigned kSize, bool kStore, bool kSigned>
bool CtaExec::MemLanes(const Inst& in, Lanes mask, uint32_t w, uint64_t* R) {
  using U =
      std::conditional_t<kSize == 1, uint8_t,
                         std::conditional_t<kSize == 2, uint16_t, std::conditional_t<kSize == 4, uint32_t, uint64_t>>>;
  using S = std::make_signed_t<U>;
  const uint64_t* base = REG(in.s[0]);
  const uint64_t offset = static_cast<uint64_t>(in.offset);
  const unsigned vec = in.vec;
  const uint32_t bytes = kSize * vec;
  const bool global = in.mem == Mem::kGlobal;
  const bool shared = in.mem == Mem::kShared, local = in.mem == Mem::kLocal;
  uint8_t* const shared_base = shared_.data();
  const uint64_t shared_size = shared_size_, local_size = local_size_;
  uint8_t* const local_base = local_.data() + static_cast<size_t>(w) * 32 * local_size_;
  uint64_t* vals[4];
  for (unsigned k = 0; k < vec; ++k) vals[k] = REG(in.d[k]);
  // Locals, not members: stores through uint8_t* could alias members and force reloads.
  uint64_t cbase = cache_base_, csize = cache_size_;
  uint8_t* chost = cache_host_;
  if (vec == 1 && (global || shared)) {
    // Fast path: check every lane first (no side effects), then access without branches. A global
    // access checks against the region this instruction hit last, and once more against the
    // region of its first lane's address when that fails (then the slow path, lane by lane).
    MemoryView::Region* last = global ? &inst_region_[static_cast<size_t>(&in - p_.code.data())] : nullptr;
    uint8_t* region = global ? last->host : shared_base;
    uint64_t rbase = global ? last->base : 0, rsize = global ? last->size : shared_size;
    bool inside = rsize >= bytes;
    uint64_t limit = rsize - bytes;
    ForLanes(mask, [&](int l) { inside &= (base[l] + offset - rbase) <= limit; });
    if (!inside && global && GlobalFast(base[__builtin_ctz(mask)] + offset, bytes) != nullptr) {
      *last = {cache_base_, cache_size_, cache_host_};
      cbase = cache_base_;
      csize = cache_size_;
      chost = cache_host_;
      region = last->host;
      rbase = last->base;
      rsize = last->size;
      inside = rsize >= bytes;
      limit = rsize - bytes;
      ForLanes(mask, [&](int l) { inside &= (base[l] + offset - rbase) <= limit; });
    }
    if (inside) {
      uint64_t* v = vals[0];
      if constexpr (kStore) {
        ForLanes(mask, [&](int l) {
          U x = static_cast<U>(v[l]);
          std::memcpy(region + (base[l] + offset - rbase), &x, kSize);
        });
      } else if constexpr (kSigned) {
        ForLanes(mask, [&](int l) {
          v[l] = static_cast<uint64_t>(static_cast<int64_t>(Load<S>(region + (base[l] + offset - rbase))));
        });
      } else {
        ForLanes(mask, [&](int l) { v[l] = Load<U>(region + (base[l] + offset - rbase)); });
      }
      return true;
    }
  }
  if (mask.cta_wide()) {  // the lane-by-lane path below is per warp: the caller runs it warp by warp
    wide_declined_ = true;
    return true;
  }
  for (uint32_t m = mask; m != 0; m &= m - 1) {
    const int l = __builtin_ctz(m);
    const uint64_t addr = base[l] + offset;
    uint8_t* p;
    const uint64_t off = addr - cbase;
    if (global && off < csize && bytes <= csize - off) {
      p = chost + off;
    } else if (shared && addr < shared_size && bytes <= shared_size - addr) {
      p = shared_base + addr;
    } else if (local && addr < local_size && bytes <= local_size - addr) {
      p = local_base + static_cast<size_t>(l) * local_size + addr;
    } else {
      p = global ? GlobalFast(addr, bytes) : nullptr;
      if (p == nullptr) p = Address(in.mem, addr, bytes, w, l, in, kStore);
      if (p == nullptr) return false;
      cbase = cache_base_;
      csize = cache_size_;
      chost = cache_host_;
    }
    if (vec == 1) {
      if constexpr (kStore) {
        U v = static_cast<U>(vals[0][l]);
        std::memcpy(p, &v, kSize);
      } else if constexpr (kSigned) {
        vals[0][l] = static_cast<uint64_t>(static_cast<int64_t>(Load<S>(p)));
      } else {
        vals[0][l] = Load<U>(p);
      }
      continue;
    }
    for (unsigned k = 0; k < vec; ++k) {
      uint8_t* e = p + k * kSize;
      if constexpr (kStore) {
        U v = static_cast<U>(vals[k][l]);
        std::memcpy(e, &v, kSize);
      } else if constexpr (kSigned) {
        vals[k][l] = static_cast<uint64_t>(static_cast<int64_t>(Load<S>(e)));
      } else {
        vals[k][l] = Load<U>(e);
      }
    }
  }
  return true;
}

// A volatile global load of one value reads with a relaxed atomic load where it is aligned: the
// host may store to the word while the kernel runs (the abort word of instrumented PTX, raised by
// another thread), which a plain load would race with. A lane outside every buffer goes the
// regular way, which reports the fault.
bool CtaExec::VolatileLoad(const Inst& in, Lanes mask, uint32_t w, uint64_t* R) {
  const unsigned size = ptx::TypeSize(in.t);
  const unsigned shift = 64 - 8 * size;
  const bool sign = ptx::IsSigned(in.t);
  const uint64_t* base = REG(in.s[0]);
  uint64_t* d = REG(in.d[0]);
  bool inside = true;
  ForLanes(mask, [&](int l) { inside &= GlobalFast(base[l] + static_cast<uint64_t>(in.offset), size) != nullptr; });
  if (!inside) return false;
  ForLanes(mask, [&](int l) {
    uint8_t* p = GlobalFast(base[l] + static_cast<uint64_t>(in.offset), size);
    uint64_t v = 0;
    if (reinterpret_cast<uintptr_t>(p) % size != 0) {
      std::memcpy(&v, p, size);
    } else if (size == 1) {
      v = __atomic_load_n(p, __ATOMIC_RELAXED);
    } else if (size == 2) {
      v = __atomic_load_n(reinterpret_cast<uint16_t*>(p), __ATOMIC_RELAXED);
    } else if (size == 4) {
      v = __atomic_load_n(reinterpret_cast<uint32_t*>(p), __ATOMIC_RELAXED);
    } else {
      v = __atomic_load_n(reinterpret_cast<uint64_t*>(p), __ATOMIC_RELAXED);
    }
    d[l] = sign && size < 8 ? static_cast<uint64_t>(static_cast<int64_t>(v << shift) >> shift) : v;
  });
  (void)w;
  return true;
}

bool CtaExec::Memory(const Inst& in, Lanes mask, uint32_t w, uint64_t* R) {
  const bool store = in.op == Op::kSt;
  if (!store && (in.flags & kVolatile) && in.mem == Mem::kGlobal && in.vec == 1 && VolatileLoad(in, mask, w, R)) {
    return true;
  }
  const bool sign = ptx::IsSigned(in.t);
  switch (ptx::TypeSize(in.t)) {
    case 1:
      return store  ? MemLanes<1, true, false>(in, mask, w, R)
             : sign ? MemLanes<1, false, true>(in, mask, w, R)
                    : MemLanes<1, false, false>(in, mask, w, R);
    case 2:
      return store  ? MemLanes<2, true, false>(in, mask, w, R)
             : sign ? MemLanes<2, false, true>(in, mask, w, R)
                    : MemLanes<2, false, false>(in, mask, w, R);
    case 4:
      return store  ? MemLanes<4, true, false>(in, mask, w, R)
             : sign ? MemLanes<4, false, true>(in, mask, w, R)
                    : MemLanes<4, false, false>(in, mask, w, R);
    default: return store ? MemLanes<8, true, false>(in, mask, w, R) : MemLanes<8, false, false>(in, mask, w, R);
  }
}

namespace {

template <class T>
T AtomicApply(AtomOp op, T old, T b, T c) {
  switch (op) {
    case AtomOp::kAdd: return static_cast<T>(old + b);
    case AtomOp::kMin: return std::min(old, b);
    case AtomOp::kMax: return std::max(old, b);
    case AtomOp::kInc:
      if constexpr (std::is_integral_v<T>)
        return old >= b ? T{0} : static_cast<T>(old + 1);
      else
        return old;
    case AtomOp::kDec:
      if constexpr (std::is_integral_v<T>)
        return (old == 0 || old > b) ? b : static_cast<T>(old - 1);
      else
        return old;
    case AtomOp::kAnd:
      if constexpr (std::is_integral_v<T>)
        return old & b;
      else
        return old;
    case AtomOp::kOr:
      if constexpr (std::is_integral_v<T>)
        return old | b;
      else
        return old;
    case AtomOp::kXor:
      if constexpr (std::is_integral_v<T>)
        return old ^ b;
      else
        return old;
    case AtomOp::kExch: return b;
    case AtomOp::kCas: return old == b ? c : old;
  }
  return old;
}

template <class T>
T AtomicRmw(uint8_t* p, AtomOp op, T b, T c, bool shared) {
  if (shared) {  // a CTA runs on one thread: lanes are serialised here
    T old = Load<T>(p);
    T v = AtomicApply(op, old, b, c);
    std::memcpy(p, &v, sizeof v);
    return old;
  }
  using Bitsize = std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;
  std::atomic_ref<Bitsize> a(*reinterpret_cast<Bitsize*>(p));
  Bitsize cur = a.load(std::memory_order_relaxed);
  for (;;) {
    T old;
    std::memcpy(&old, &cur, sizeof old);
    T v = AtomicApply(op, old, b, c);
    Bitsize nb;
    std::memcpy(&nb, &v, sizeof nb);
    if (a.compare_exchange_weak(cur, nb, std::memory_order_acq_rel, std::memory_order_relaxed)) return old;
  }
}

// The half-precision atomics (.f16 .bf16, and the packed .f16x2 .bf16x2 per half): .add is each
// half's exact sum rounded once to nearest; .min/.max as min/max do (a NaN loses to a number, two
// NaNs give the canonical NaN, -0 is below +0). `old` and `b` are the operand's 16 or 32 bits.
uint32_t HalfApply(AtomOp op, Type t, uint32_t old, uint32_t b) {
  const bool bf = t == Type::kBF16 || t == Type::kBF16x2;
  const int n = t == Type::kF16x2 || t == Type::kBF16x2 ? 2 : 1;
  uint32_t r = 0;
  for (int k = 0; k < n; ++k) {
    const auto x = static_cast<uint16_t>(old >> (16 * k)), y = static_cast<uint16_t>(b >> (16 * k));
    const double xv = bf ? Bf16ToDouble(x) : HalfToDouble(x), yv = bf ? Bf16ToDouble(y) : HalfToDouble(y);
    const bool add = op == AtomOp::kAdd;
    const double v = add ? xv + yv : op == AtomOp::kMin ? FMin(xv, yv, false) : FMax(xv, yv, false);
    // min/max give one of their inputs (exact), or the canonical NaN for two NaNs
    const uint16_t e = !add && std::isnan(v) ? 0x7fff : bf ? DoubleToBf16(v) : DoubleToHalf(v);
    r |= uint32_t{e} << (16 * k);
  }
  return r;
}

template <class B>
B HalfAtomicRmw(uint8_t* p, AtomOp op, Type t, B b, bool shared) {
  if (shared) {
    const B old = Load<B>(p);
    const B v = static_cast<B>(HalfApply(op, t, old, b));
    std::memcpy(p, &v, sizeof v);
    return old;
  }
  std::atomic_ref<B> a(*reinterpret_cast<B*>(p));
  B cur = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(cur, static_cast<B>(HalfApply(op, t, cur, b)), std::memory_order_acq_rel,
                                  std::memory_order_relaxed)) {
  }
  return cur;
}

// atom.exch/cas.b128 on global memory: one 16-byte compare-and-swap (cmpxchg16b where the CPU has
// it, through libatomic).
unsigned __int128 AtomicRmw128(uint8_t* p, AtomOp op, unsigned __int128 b, unsigned __int128 c, bool shared) {
  if (shared) {
    unsigned __int128 old;
    std::memcpy(&old, p, 16);
    const unsigned __int128 v = op == AtomOp::kExch ? b : old == b ? c : old;
    std::memcpy(p, &v, 16);
    return old;
  }
  std::atomic_ref<unsigned __int128> a(*reinterpret_cast<unsigned __int128*>(p));
  unsigned __int128 cur = a.load(std::memory_order_relaxed);
  for (;;) {
    const unsigned __int128 v = op == AtomOp::kExch ? b : cur == b ? c : cur;
    if (a.compare_exchange_weak(cur, v, std::memory_order_acq_rel, std::memory_order_relaxed)) return cur;
  }
}

}  // namespace

// cp.async, done at once: src-size bytes (none where ignore-src holds) from global memory, zeros
// up to cp-size, into shared memory; both addresses aligned to cp-size.
bool CtaExec::CopyAsync(const Inst& in, Lanes mask, uint32_t w, uint64_t* R) {
  const uint32_t size = in.cmp;
  bool ok = true;
  ForLanes(mask, [&](int l) {
    if (!ok) return;
    const uint64_t dst = REG(in.s[0])[l] + static_cast<uint64_t>(in.offset);
    const uint64_t src = REG(in.s[1])[l] + static_cast<uint64_t>(static_cast<int64_t>(in.src_offset));
    uint32_t n = std::min<uint64_t>(REG(in.s[2])[l] & 0xffffffffu, size);
    if (in.s[3] != kNoSlot && (REG(in.s[3])[l] & 1)) n = 0;
    if (dst % size != 0 || src % size != 0) {
      ok = Fault(in, "misaligned cp.async of " + std::to_string(size) + " bytes from " + Hex(src) + " to " + Hex(dst));
      return;
    }
    uint8_t* d = Address(Mem::kShared, dst, size, w, l, in, true);
    const uint8_t* s = d != nullptr && n != 0 ? Address(Mem::kGlobal, src, n, w, l, in, false) : nullptr;
    if (d == nullptr || (n != 0 && s == nullptr)) {
      ok = false;
      return;
    }
    if (n != 0) std::memcpy(d, s, n);
    std::memset(d + n, 0, size - n);
  });
  return ok;
}

bool CtaExec::Atomic(const Inst& in, Lanes mask, uint32_t w, uint64_t* R) {
  const unsigned size = ptx::TypeSize(in.t);
  bool ok = true;
  auto op = static_cast<AtomOp>(in.cmp);
  ForLanes(mask, [&](int l) {
    if (!ok) return;
    uint64_t addr = REG(in.s[0])[l] + static_cast<uint64_t>(in.offset);
    Mem m = in.mem;
    if (m == Mem::kGeneric) m = addr - kSharedWindow < (1ull << 32) ? Mem::kShared : Mem::kGlobal;
    uint8_t* p = Address(in.mem, addr, size, w, l, in, true);
    if (p == nullptr) {
      ok = false;
      return;
    }
    if (reinterpret_cast<uintptr_t>(p) % size != 0 || addr % size != 0) {
      ok = Fault(in, "misaligned atomic at " + Hex(addr));
      return;
    }
    bool shared = m == Mem::kShared;
    uint64_t b = REG(in.s[1])[l], c = in.s[2] != kNoSlot ? REG(in.s[2])[l] : 0;
    uint64_t old = 0;
    auto go = [&](auto tag) {
      using T = decltype(tag);
      old = ToBits(AtomicRmw<T>(p, op, FromBits<T>(b), FromBits<T>(c), shared));
    };
    switch (in.t) {
      case Type::kF32: go(float{}); break;
      case Type::kF64: go(double{}); break;
      case Type::kS32: go(int32_t{}); break;
      case Type::kS64: go(int64_t{}); break;
      case Type::kF16:
      case Type::kBF16: old = HalfAtomicRmw<uint16_t>(p, op, in.t, static_cast<uint16_t>(b), shared); break;
      case Type::kF16x2:
      case Type::kBF16x2: old = HalfAtomicRmw<uint32_t>(p, op, in.t, static_cast<uint32_t>(b), shared); break;
      case Type::kB128: {  // halves in slot pairs: b in s[1..2], c in s[3..4], the old value to d[0..1]
        auto wide = [&](uint32_t lo) {
          return lo == kNoSlot ? 0 : REG(lo)[l] | static_cast<unsigned __int128>(REG(lo + 1)[l]) << 64;
        };
        const unsigned __int128 o = AtomicRmw128(p, op, wide(in.s[1]), wide(in.s[3]), shared);
        REG(in.d[0])[l] = static_cast<uint64_t>(o);
        REG(in.d[1])[l] = static_cast<uint64_t>(o >> 64);
        return;
      }
      default:
        if (size == 2)
          go(uint16_t{});
        else if (size == 4)
          go(uint32_t{});
        else
          go(uint64_t{});
        break;
    }
    REG(in.d[0])[l] = size == 2 ? (old & 0xffffu) : size == 4 ? (old & 0xffffffffu) : old;
  });
  return ok;
}

}  // namespace gpuwasm::device::cpu
