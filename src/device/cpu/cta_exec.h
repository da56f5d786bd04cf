// The interpreter's CTA executor (internal to src/device/cpu/): one CTA of a launch at a time,
// its threads' registers, shared and local memory, and the schedulers that run them (exec.h
// says how). Split by what each part does:
//   scheduler.cc         the CTA-wide (converged) and per-warp schedulers, calls, native code's
//                        host side
//   semantics_memory.cc  ld/st, atomics, cp.async: every access bounds-checked
//   semantics_int.cc     setp, integer arithmetic
//   semantics_float.cc   float, half and conversion instructions
//   semantics_misc.cc    carry chains, dot products, video, redux, match, set/slct, ...
//   execute.cc           the dispatch of one data instruction to its family
#pragma once

#include <algorithm>
#include <cfenv>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/names.h"
#include "device/cpu/exec.h"
#include "device/cpu/numeric.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace gpuwasm::device::cpu {

using ptx::Type;

inline constexpr uint32_t kFull = 0xffffffffu;
inline constexpr uint32_t kMaxCallDepth = 32;

struct Frame {
  uint32_t ret_pc;
  uint32_t site;
};

// The lanes an instruction runs for. Warp by warp it is a mask over the warp's 32 lanes. While
// the CTA runs converged (CtaExec::RunConverged) one instruction runs for many threads at once:
// then a full mask covers `full` threads of the CTA, and `wide`, when set, says which ones (a
// mask per warp). A Lanes converts to its mask, so a handler tests and counts it as one; only
// ForLanes reads the rest, and a handler passes the Lanes it got to the helpers that loop.
struct Lanes {
  uint32_t mask;
  uint32_t full = 32;
  const uint32_t* wide = nullptr;
  Lanes(uint32_t m) : mask(m) {}  // NOLINT(google-explicit-constructor): one warp's lanes
  Lanes(uint32_t m, uint32_t threads, const uint32_t* masks) : mask(m), full(threads), wide(masks) {}
  operator uint32_t() const { return mask; }  // NOLINT(google-explicit-constructor)
  // Run for more than one warp's lanes at once (the converged CTA's), or for a mask per warp.
  bool cta_wide() const { return full != 32 || wide != nullptr; }
};

template <class F>
inline void ForLanes(Lanes lanes, F&& f) {
  if (lanes.mask == kFull) {
    const int n = static_cast<int>(lanes.full);
    if (const uint32_t* wm = lanes.wide; wm != nullptr) [[unlikely]] {
      for (int w = 0; w < n / 32; ++w) {
        if (wm[w] == kFull) {
          for (int l = 0; l < 32; ++l) f(w * 32 + l);
        } else {
          for (uint32_t m = wm[w]; m != 0; m &= m - 1) f(w * 32 + __builtin_ctz(m));
        }
      }
      return;
    }
    for (int l = 0; l < n; ++l) f(l);
  } else {
    for (uint32_t m = lanes.mask; m != 0; m &= m - 1) f(__builtin_ctz(m));
  }
}

// Without -mpopcnt std::popcount is a library call; this is a handful of instructions inline.
inline uint32_t Popcount32(uint32_t x) {
  x = x - ((x >> 1) & 0x55555555u);
  x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
  x = (x + (x >> 4)) & 0x0f0f0f0fu;
  return (x * 0x01010101u) >> 24;
}

// The lanes of a warp whose predicate register (one value per lane, bit 0) is set.
inline uint32_t PredicateMask(const uint64_t* g) {
#if defined(__SSE2__)
  uint32_t m = 0;
  for (int l = 0; l < 32; l += 2) {  // bit 0 of two lanes to their sign bits, then movemask
    const __m128i v = _mm_slli_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g + l)), 63);
    m |= static_cast<uint32_t>(_mm_movemask_pd(_mm_castsi128_pd(v))) << l;
  }
  return m;
#else
  uint32_t m = 0;
  for (int l = 0; l < 32; ++l) m |= static_cast<uint32_t>(g[l] & 1) << l;
  return m;
#endif
}

inline int RoundMode(Round r) {
  switch (r) {
    case Round::kRz:
    case Round::kRzi: return FE_TOWARDZERO;
    case Round::kRm:
    case Round::kRmi: return FE_DOWNWARD;
    case Round::kRp:
    case Round::kRpi: return FE_UPWARD;
    default: return FE_TONEAREST;
  }
}

// Integer type dispatch: f receives a value of the C++ type matching `t`.
template <class F>
inline void WithInt(Type t, F&& f) {
  switch (t) {
    case Type::kS8: f(int8_t{}); break;
    case Type::kS16: f(int16_t{}); break;
    case Type::kS32: f(int32_t{}); break;
    case Type::kS64: f(int64_t{}); break;
    case Type::kU8:
    case Type::kB8: f(uint8_t{}); break;
    case Type::kU16:
    case Type::kB16: f(uint16_t{}); break;
    case Type::kU64:
    case Type::kB64: f(uint64_t{}); break;
    default: f(uint32_t{}); break;
  }
}

template <class T>
inline uint64_t Store(T v) {  // register value: sign-extended for signed types, zero-extended otherwise
  if constexpr (std::is_signed_v<T>)
    return static_cast<uint64_t>(static_cast<int64_t>(v));
  else
    return static_cast<uint64_t>(v);
}

// A register's bits as T (float and double by their bits), and back (Store for integers).
template <class T, class U>
inline T FromBits(U bits) {
  if constexpr (std::is_same_v<T, float>)
    return AsF32(bits);
  else if constexpr (std::is_same_v<T, double>)
    return AsF64(bits);
  else
    return static_cast<T>(bits);
}

template <class T>
inline uint64_t ToBits(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return Bits(v);
  else
    return Store(v);
}

// setp's integer (and ordered) comparisons, shared with video's.
template <class T>
inline bool CompareOrdered(Cmp c, T a, T b) {
  switch (c) {
    case Cmp::kEq: return a == b;
    case Cmp::kNe: return a != b;
    case Cmp::kLt:
    case Cmp::kLo: return a < b;
    case Cmp::kLe:
    case Cmp::kLs: return a <= b;
    case Cmp::kGt:
    case Cmp::kHi: return a > b;
    case Cmp::kGe:
    case Cmp::kHs: return a >= b;
    default: return false;
  }
}

class CtaExec {
 public:
  CtaExec(LaunchRun& run, const Program& p, const KernelEntry& k);

  // Runs one CTA; false when the launch failed (fault, cancel, deadline).
  bool Run(uint64_t cta);

  // The thread-instructions the CTAs run since the last call; the worker hands them to the launch
  // when it is done (a counter shared by the workers, added to per CTA, was a cache line they
  // fought over).
  uint64_t TakeInstructions() { return std::exchange(instructions_, 0); }

 private:
  enum class Converged { kExited, kDiverged, kFailed };

  // Runs the CTA with the kernel's native code (native.h). While every live thread is at one
  // block (none at a barrier) the CTA runs together: the block runs once for all and tells where
  // all go next. Otherwise the lowest block some thread waits for runs next, for the threads
  // waiting for it; bar.sync releases when no thread can run.
  bool RunNative(const NativeCode& code);

  // The lanes of `group` whose guard of `in` holds (R: the warp's registers).
  uint32_t GuardLanes(const Inst& in, const uint64_t* R, uint32_t group) const {
    if (in.guard == kNoSlot) return group;
    return (PredicateMask(R + static_cast<size_t>(in.guard) * stride_) ^ (in.guard_negated ? kFull : 0u)) & group;
  }

  // Lane l of warp w enters the call `in`: the arguments are copied to the callee's parameters and
  // a frame returning to `ret_pc` is pushed. False when the call stack is full.
  bool PushCall(const Inst& in, uint32_t w, int l, uint32_t ret_pc);

  // Lane l of warp w returns from its innermost call: the results are copied to the caller's; the
  // pc it goes on at, or kNoFrame when it is in no call (a ret of the kernel itself).
  static constexpr uint32_t kNoFrame = UINT32_MAX;
  uint32_t PopCall(uint32_t w, int l);

  // The lanes of warp w that native code's host block `block` runs for: those waiting for it, or
  // every live one when the CTA runs together (c->all).
  uint32_t NativeLanes(const NativeCtx* c, uint32_t w, uint32_t block) const;

  // NativeCtx::host_exec: an instruction native code leaves to the interpreter (warp-wide ones,
  // atomics, and what the translation has no C for), run for the lanes of each warp waiting for
  // its block together, as the interpreter would run the lanes that reached it.
  static int NativeHostExec(NativeCtx* c, uint32_t pc, uint32_t block, uint32_t fall);

  // A call or a .func's ret in native code, with the interpreter's frames (PushCall, PopCall): a
  // call sends its threads to the callee's first block (`fall`), a ret each thread to the block
  // after the call it returns from. Threads the guard skips go to the next block. Threads may part
  // here (returns to different call sites).
  int NativeCallRet(NativeCtx* c, const Inst& in, uint32_t pc, uint32_t block, uint32_t fall);

  // NativeCtx::address: an access the generated fast path did not cover.
  static uint8_t* NativeAddress(NativeCtx* c, uint32_t pc, uint32_t space, uint64_t addr, uint32_t bytes,
                                uint32_t thread, int store);

  bool NoCallActive() const {
    for (uint8_t d : depth_) {
      if (d != 0) return false;
    }
    return true;
  }

  // Leaves CTA-wide execution: the lanes running there continue at `pc`, and inside an if-region
  // the lanes waiting at its end continue there; the warps take over.
  void Diverge(uint32_t pc);

  // The converged CTA runs each instruction once for all its threads (one dispatch instead of one
  // per warp: what makes whole-CTA code like vector add and the reduction's tree levels cheap).
  //  - A guard on a data instruction selects the threads it runs for (a mask per warp).
  //  - A branch that all running threads take, or none, keeps the CTA together. A forward branch
  //    that only some take opens an if-region: the takers wait at its target while the others
  //    run the instructions up to it, then all continue together. Any other split (a branch
  //    inside a region, a backward one), and calls, traps, and exits or barriers inside a region,
  //    hand the CTA to the per-warp scheduler with every lane's pc set.
  //  - bar.sync reached by all threads at once releases at once.
  //  - Instructions with per-warp meaning (shfl, vote, atomics, vector and local/generic memory
  //    accesses) run warp by warp without leaving.
  Converged RunConverged(uint32_t& pc);

  uint64_t CountExec(const uint32_t* exec) const {
    uint64_t n = 0;
    for (uint32_t w = 0; w < nwarps_; ++w) n += Popcount32(exec[w]);
    return n;
  }

  // Whether `in` computes one value for every thread: an instruction that depends only on its
  // source registers, each of which holds one value for every thread (Program::divergent; the CTA
  // is converged and outside any if-region, so every thread holds it).
  bool SourcesUniform(const Inst& in) const;

  void AddInstructions(uint64_t n) { instructions_ += n; }

  // Runs `in` for thread 0 only and copies its results to every thread (SourcesUniform(in)).
  bool ExecuteUniform(const Inst& in, uint64_t* R);

  // Runs `in` for the threads in `exec`, a mask per warp (every thread when `dense`).
  bool ExecuteConverged(const Inst& in, uint64_t* R, const uint32_t* exec, bool dense);

  struct Warp {
    uint32_t pc[32];
    uint32_t live = 0;      // lanes that exist (the last warp may be partial)
    uint32_t run = 0;       // lanes able to run
    uint32_t bar = 0;       // lanes waiting at bar.sync; exited lanes are live & ~run & ~bar
    uint32_t bar_pc = 0;    // where the first waiting lane waits
    bool bar_same = false;  // and every waiting lane waits there
  };

  // Registers are laid out slot by slot across the CTA: slot s of thread t is at s * stride_ + t,
  // so warp w's lanes of a slot are contiguous at w * 32 and a CTA-wide instruction sees one array.
  uint64_t* Regs(uint32_t w) { return regs_.data() + static_cast<size_t>(w) * 32; }

  uint64_t* Special(uint32_t w, uint32_t s) { return Regs(w) + static_cast<size_t>(p_.special_base + s) * stride_; }

  void InitWarp(uint32_t w);

  void InitSpecials(uint32_t w);

  bool Fault(const Inst& in, const std::string& what) {
    run_.Fail(Status::DeviceFault("kernel '" + k_.name + "' (PTX line " + std::to_string(in.line) + "): " + what));
    return false;
  }

  // Host address for a `bytes`-byte access at `addr` in space `m` by lane `l` of warp `w`.
  uint8_t* Address(Mem m, uint64_t addr, uint32_t bytes, uint32_t w, uint32_t l, const Inst& in, bool store) {
    if (m == Mem::kGeneric) {
      if (addr - kSharedWindow < (1ull << 32)) {
        m = Mem::kShared;
        addr -= kSharedWindow;
      } else if (addr - kLocalWindow < (1ull << 32)) {
        m = Mem::kLocal;
        addr -= kLocalWindow;
      } else {
        m = Mem::kGlobal;
      }
    }
    uint8_t* p = nullptr;
    const char* space = "global";
    switch (m) {
      case Mem::kGlobal: p = mem_.Resolve(addr, bytes); break;
      case Mem::kShared:
        space = "shared";
        if (addr <= shared_size_ && bytes <= shared_size_ - addr) p = shared_.data() + addr;
        break;
      case Mem::kLocal:
        space = "local";
        if (addr <= local_size_ && bytes <= local_size_ - addr) {
          p = local_.data() + (static_cast<size_t>(w) * 32 + l) * local_size_ + addr;
        }
        break;
      default: break;
    }
    if (p == nullptr) {
      Fault(in, std::string(space) + (store ? " store" : " load") + " of " + std::to_string(bytes) + " bytes at " +
                    Hex(addr) + " is outside " +
                    (m == Mem::kGlobal   ? "the instance's buffers"
                     : m == Mem::kShared ? "shared memory (" + std::to_string(shared_size_) + " bytes)"
                                         : "the thread's local memory (" + std::to_string(local_size_) + " bytes)"));
    }
    return p;
  }

  uint32_t Regroup(Warp& wp, uint32_t* gpc) {
    uint32_t best = UINT32_MAX, mask = 0;
    for (uint32_t m = wp.run; m != 0; m &= m - 1) {
      const uint32_t l = static_cast<uint32_t>(__builtin_ctz(m));
      if (wp.pc[l] < best) {
        best = wp.pc[l];
        mask = 1u << l;
      } else if (wp.pc[l] == best) {
        mask |= 1u << l;
      }
    }
    *gpc = best;
    return mask;
  }

  // The lowest pc of the warp's runnable lanes outside `group` (UINT32_MAX when none).
  static uint32_t WaitingPc(const Warp& wp, uint32_t group) {
    uint32_t best = UINT32_MAX;
    for (uint32_t m = wp.run & ~group; m != 0; m &= m - 1) best = std::min(best, wp.pc[__builtin_ctz(m)]);
    return best;
  }

  bool CheckStop() { return run_.CheckStop(k_.name); }

  // Runs the warp's lanes with the lowest pc together. Lanes that split at a branch are one group
  // again as soon as the running group reaches the pc where the others wait (or passes it: the
  // lower pc runs first), so the warp-wide instructions after an if or a loop whose trip count
  // differs per lane (shfl.sync, vote, a __syncwarp'ed shared-memory tree) see the whole warp.
  // A warp with other warps beside it runs at most 4096 steps a turn, then returns with lanes
  // still runnable: a warp spinning on a flag another warp sets (cooperative groups' tile
  // barriers) lets that warp run.
  bool RunWarp(uint32_t w);

  // ---- data instructions -------------------------------------------------------------------
  bool Execute(const Inst& in, Lanes mask, uint32_t group, uint32_t w, uint64_t* R);
  bool Memory(const Inst& in, Lanes mask, uint32_t w, uint64_t* R);
  bool VolatileLoad(const Inst& in, Lanes mask, uint32_t w, uint64_t* R);
  template <unsigned kSize, bool kStore, bool kSigned>
  bool MemLanes(const Inst& in, Lanes mask, uint32_t w, uint64_t* R);
  uint8_t* GlobalFast(uint64_t addr, uint32_t bytes);
  bool Atomic(const Inst& in, Lanes mask, uint32_t w, uint64_t* R);
  bool CopyAsync(const Inst& in, Lanes mask, uint32_t w, uint64_t* R);
  void Convert(const Inst& in, Lanes mask, uint64_t* R);
  bool FloatOp(const Inst& in, Lanes mask, uint64_t* R);
  bool HalfOp(const Inst& in, Lanes mask, uint64_t* R);
  void IntOp(const Inst& in, Lanes mask, uint64_t* R);
  void Setp(const Inst& in, Lanes mask, uint64_t* R);
  void Carry(const Inst& in, Lanes mask, uint64_t* R);
  void DotProduct(const Inst& in, Lanes mask, uint64_t* R);
  void Video(const Inst& in, Lanes mask, uint64_t* R);
  void ConvertMini(const Inst& in, Lanes mask, uint64_t* R);
  void VideoScalar(const Inst& in, Lanes mask, uint64_t* R);
  void IntMisc(const Inst& in, Lanes mask, uint64_t* R);
  void SetSlct(const Inst& in, Lanes mask, uint64_t* R);
  void Redux(const Inst& in, Lanes mask, uint64_t* R);
  void Match(const Inst& in, Lanes mask, uint64_t* R);

  LaunchRun& run_;
  uint64_t instructions_ = 0;  // not yet handed to run_
  const Program& p_;
  const KernelEntry& k_;
  const LaunchConfig& cfg_;
  const MemoryView& mem_;
  uint32_t threads_, nwarps_, slots_;
  uint32_t stride_ = 32;        // register slot stride: every thread of the CTA
  bool converged_ok_ = false;   // whole warps only: CTA-wide execution is possible
  bool wide_declined_ = false;  // a CTA-wide Execute a handler could not do (nothing was changed)
  uint32_t cta_[3] = {0, 0, 0};
  uint64_t filled_cta_[3] = {~0ull, ~0ull, ~0ull};  // the %ctaid the register file holds (none yet)
  std::vector<uint64_t> regs_;
  std::vector<uint8_t> shared_;
  uint32_t shared_size_;
  std::vector<uint8_t> local_;
  uint32_t local_size_;
  std::vector<uint8_t> depth_;
  std::vector<Frame> frames_;
  std::vector<Warp> warps_;
  // The global region the last access hit.
  uint64_t cache_base_ = 0, cache_size_ = 0;
  uint8_t* cache_host_ = nullptr;
  // Per instruction, the global region its last access hit: a kernel's loads and stores each
  // keep to one buffer (a[i], b[i], c[i]), while the single cache above flips between them.
  std::vector<MemoryView::Region> inst_region_;
  // Per instruction: a launch-invariant one that already ran CTA-wide in this launch (its
  // registers hold the values every later CTA would compute again).
  std::vector<uint8_t> invariant_done_;
  // Native code: per thread the block it waits for; per block how many threads wait for it.
  std::vector<uint32_t> native_next_, native_count_;
  // Whether native_next_ and native_count_ still hold a CTA's start (every thread at the entry
  // block, no counts): true after a CTA whose threads stayed together to the end, so the next CTA
  // need not fill them again (for a block of 256 threads the fill cost as much as vector add's
  // loop).
  bool native_clean_ = false;
  std::vector<uint8_t> native_ahead_off_;  // NativeCtx::ahead_off, for this launch
  // CTA-wide execution, one mask per warp: the running threads, those waiting at the end of the
  // current if-region (region_end_), and those the current instruction's guard selects.
  std::vector<uint32_t> active_, pending_, exec_;
  uint32_t region_end_ = 0;
};

// Slot `slot` of the registers at R (a warp's, or the CTA's when it runs converged).
#define REG(slot) (R + static_cast<size_t>(slot) * stride_)

template <class T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace gpuwasm::device::cpu
