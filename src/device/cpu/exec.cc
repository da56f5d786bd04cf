#include "device/cpu/exec.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "device/cpu/numeric.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

using ptx::Type;

uint8_t* MemoryView::Resolve(uint64_t addr, uint64_t bytes) const {
  auto it = std::upper_bound(regions.begin(), regions.end(), addr,
                             [](uint64_t a, const Region& r) { return a < r.base; });
  if (it == regions.begin()) return nullptr;
  --it;
  if (addr - it->base > it->size || bytes > it->size - (addr - it->base)) return nullptr;
  return it->host + (addr - it->base);
}

LaunchRun::LaunchRun(LaunchSpec spec) : spec_(std::move(spec)) { total_ctas_ = spec_.config.grid.count(); }

void LaunchRun::Fail(Status s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (status_.ok()) status_ = std::move(s);
  failed_.store(true);
}

Status LaunchRun::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

namespace {

constexpr uint32_t kFull = 0xffffffffu;
constexpr uint32_t kMaxCallDepth = 32;

struct Frame {
  uint32_t ret_pc;
  uint32_t site;
};

// How many lanes a full mask covers: 32 (one warp), or every thread of the CTA while it runs an
// instruction CTA-wide (CtaExec::RunConverged; set only around that call, on this thread).
thread_local int tls_full_lanes = 32;
// While a CTA-wide instruction runs for only some threads: one mask per warp (else nullptr).
thread_local const uint32_t* tls_wide_mask = nullptr;

template <class F>
inline void ForLanes(uint32_t mask, F&& f) {
  if (mask == kFull) {
    const int n = tls_full_lanes;
    if (const uint32_t* wm = tls_wide_mask; wm != nullptr) [[unlikely]] {
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
    for (uint32_t m = mask; m != 0; m &= m - 1) f(__builtin_ctz(m));
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

int RoundMode(Round r) {
  switch (r) {
    case Round::kRz: case Round::kRzi: return FE_TOWARDZERO;
    case Round::kRm: case Round::kRmi: return FE_DOWNWARD;
    case Round::kRp: case Round::kRpi: return FE_UPWARD;
    default: return FE_TONEAREST;
  }
}

// Integer type dispatch: f receives a value of the C++ type matching `t`.
template <class F>
void WithInt(Type t, F&& f) {
  switch (t) {
    case Type::kS8: f(int8_t{}); break;
    case Type::kS16: f(int16_t{}); break;
    case Type::kS32: f(int32_t{}); break;
    case Type::kS64: f(int64_t{}); break;
    case Type::kU8: case Type::kB8: f(uint8_t{}); break;
    case Type::kU16: case Type::kB16: f(uint16_t{}); break;
    case Type::kU64: case Type::kB64: f(uint64_t{}); break;
    default: f(uint32_t{}); break;
  }
}

template <class T>
uint64_t Store(T v) {  // register value: sign-extended for signed types, zero-extended otherwise
  if constexpr (std::is_signed_v<T>) return static_cast<uint64_t>(static_cast<int64_t>(v));
  else return static_cast<uint64_t>(v);
}

class CtaExec {
 public:
  CtaExec(LaunchRun& run, const Program& p, const KernelEntry& k)
      : run_(run), p_(p), k_(k), cfg_(run.spec().config), mem_(run.spec().memory) {
    threads_ = static_cast<uint32_t>(cfg_.block.count());
    nwarps_ = (threads_ + 31) / 32;
    slots_ = p.slot_count;
    stride_ = nwarps_ * 32;
    regs_.assign(static_cast<size_t>(stride_) * slots_, 0);
    converged_ok_ = threads_ % 32 == 0;
    shared_size_ = p.static_shared_bytes + cfg_.shared_bytes;
    shared_.assign(shared_size_ + 16, 0);
    local_size_ = p.local_bytes;
    local_.assign(static_cast<size_t>(local_size_) * nwarps_ * 32 + 16, 0);
    depth_.assign(static_cast<size_t>(nwarps_) * 32, 0);
    frames_.assign(static_cast<size_t>(nwarps_) * 32 * kMaxCallDepth, Frame{0, 0});
    warps_.resize(nwarps_);
    inst_region_.resize(p.code.size());
    invariant_done_.assign(p.code.size(), 0);
    uniform_base_.assign(slots_, 0);
    for (size_t c = 0; c < p.consts.size(); ++c) uniform_base_[p.const_base + c] = 1;
    for (uint32_t s : {kNtidX, kNtidY, kNtidZ, kCtaidX, kCtaidY, kCtaidZ, kNctaidX, kNctaidY, kNctaidZ, kNWarpId,
                       kSmId, kNSmId, kGridId, kDynSmem, kTotalSmem}) {
      uniform_base_[p.special_base + s] = 1;
    }
    uniform_ = uniform_base_;
    active_.assign(nwarps_, kFull);
    pending_.assign(nwarps_, 0);
    exec_.assign(nwarps_, kFull);
    // Constants and the special registers that do not depend on the CTA are filled once.
    for (uint32_t w = 0; w < nwarps_; ++w) {
      uint64_t* r = Regs(w);
      for (size_t c = 0; c < p.consts.size(); ++c) {
        std::fill_n(r + (p.const_base + c) * stride_, 32, p.consts[c]);
      }
      InitSpecials(w);
    }
  }

  // Runs one CTA; false when the launch failed (fault, cancel, deadline).
  bool Run(uint64_t cta) {
    cta_[0] = static_cast<uint32_t>(cta % cfg_.grid.x);
    cta_[1] = static_cast<uint32_t>((cta / cfg_.grid.x) % cfg_.grid.y);
    cta_[2] = static_cast<uint32_t>(cta / (uint64_t{cfg_.grid.x} * cfg_.grid.y));
    for (uint32_t w = 0; w < nwarps_; ++w) InitWarp(w);
    if (run_.spec().native) return RunNative(*run_.spec().native);
    uint32_t pc = k_.entry_pc;
    bool converged = converged_ok_;  // every thread starts at the entry
    for (;;) {
      if (converged) {
        switch (RunConverged(pc)) {
          case Converged::kFailed: return false;
          case Converged::kExited: return true;
          case Converged::kDiverged: break;  // the warps' pcs are set: run them one by one
        }
      }
      // Until no warp can run (a warp that used its turn comes back; see RunWarp).
      for (bool again = true; again;) {
        again = false;
        for (uint32_t w = 0; w < nwarps_; ++w) {
          if (warps_[w].run != 0 && !RunWarp(w)) return false;
          again = again || warps_[w].run != 0;
        }
      }
      // No warp can run: every live thread has exited or waits at the barrier. Exited threads
      // count as arrived, so the barrier releases (or the CTA is done).
      bool any_bar = false;
      // Converged again when every thread of every warp waits at one barrier instruction.
      converged = converged_ok_ && (p_.calls.empty() || NoCallActive());
      for (uint32_t w = 0; w < nwarps_; ++w) {
        Warp& wp = warps_[w];
        converged = converged && wp.bar == kFull && wp.bar_same && wp.bar_pc == warps_[0].bar_pc;
        if (wp.bar == 0) continue;
        any_bar = true;
        if (wp.bar == kFull && wp.bar_same) {
          std::fill_n(wp.pc, 32, wp.bar_pc + 1);
        } else {
          for (uint32_t m = wp.bar; m != 0; m &= m - 1) wp.pc[__builtin_ctz(m)] += 1;
        }
        wp.run |= wp.bar;
        wp.bar = 0;
      }
      if (!any_bar) return true;
      if (converged) pc = warps_[0].bar_pc + 1;
    }
  }

 private:
  enum class Converged { kExited, kDiverged, kFailed };

  // Runs the CTA with the kernel's native code (native.h). While every live thread is at one
  // block (none at a barrier) the CTA runs together: the block runs once for all and tells where
  // all go next. Otherwise the lowest block some thread waits for runs next, for the threads
  // waiting for it; bar.sync releases when no thread can run.
  bool RunNative(const NativeCode& code) {
    const auto& blocks = code.blocks();
    const uint32_t nblocks = static_cast<uint32_t>(blocks.size());
    native_next_.assign(threads_, code.entry_block());
    native_count_.assign(nblocks, 0);
    NativeCtx c{};
    c.regs = regs_.data();
    c.stride = stride_;
    c.next = native_next_.data();
    c.count = native_count_.data();
    c.shared = shared_.data();
    c.shared_size = shared_size_;
    c.params = run_.spec().params.data();
    c.params_size = run_.spec().params.size();
    static_assert(sizeof(NativeCtx::Region) == sizeof(MemoryView::Region));
    c.regions = reinterpret_cast<NativeCtx::Region*>(inst_region_.data());
    c.address = &CtaExec::NativeAddress;
    c.host = this;
    c.threads = threads_;
    c.flat = cfg_.block.y == 1 && cfg_.block.z == 1;
    c.host_exec = &CtaExec::NativeHostExec;
    uint32_t live = threads_, first = 0;
    uint32_t together = code.entry_block();  // the block every live thread is at, or kNativeApart
    uint32_t steps = 0;
    bool ok = true;
    while (live > 0) {
      uint32_t b;
      bool all;
      if (together != kNativeApart) {
        b = together;
        all = true;
      } else {
        b = 0;
        while (b < nblocks && native_count_[b] == 0) ++b;
        if (b == nblocks) {
          if (c.waiting == 0) break;  // (cannot happen: live threads are somewhere)
          uint32_t last = 0, k = 0;  // every live thread waits at a barrier: release them
          for (uint32_t& n : native_next_) {
            if (n & kNativeWait) {
              n &= ~kNativeWait;
              if (n != last) {  // counted in a local while the block stays the same
                native_count_[last] += k;
                last = n;
                k = 0;
              }
              ++k;
            }
          }
          native_count_[last] += k;
          c.waiting = 0;
          continue;
        }
        all = native_count_[b] == live && c.waiting == 0;
        if (all) std::fill(native_count_.begin(), native_count_.end(), 0u);  // counted afresh if they part
      }
      if (++steps == 64) {
        steps = 0;
        run_.AddInstructions(c.instructions);
        c.instructions = 0;
        if (!CheckStop()) return false;
      }
      c.all = all ? 1 : 0;
      c.live = live;
      c.first = first;
      c.exited = 0;
      if (blocks[b](&c) != 0) {
        ok = false;
        break;
      }
      if (c.exited != 0) {
        live -= c.exited;
        while (first < threads_ && native_next_[first] == kNativeExited) ++first;
      }
      if (all) {
        if (c.go == kNativeExited) break;  // every thread exited
        together = c.go;                    // kNativeApart: next[] and count[] were written
      }
    }
    run_.AddInstructions(c.instructions);
    return ok;
  }

  // The lanes of `group` whose guard of `in` holds (R: the warp's registers).
  uint32_t GuardLanes(const Inst& in, const uint64_t* R, uint32_t group) const {
    if (in.guard == kNoSlot) return group;
    return (PredicateMask(R + static_cast<size_t>(in.guard) * stride_) ^ (in.guard_negated ? kFull : 0u)) & group;
  }

  // Lane l of warp w enters the call `in`: the arguments are copied to the callee's parameters and
  // a frame returning to `ret_pc` is pushed. False when the call stack is full.
  bool PushCall(const Inst& in, uint32_t w, int l, uint32_t ret_pc) {
    const size_t t = static_cast<size_t>(w) * 32 + l;
    uint8_t& d = depth_[t];
    if (d >= kMaxCallDepth) return false;
    uint64_t* R = Regs(w);
    const CallSite& cs = p_.calls[in.target];
    for (size_t k = 0; k < cs.arg_slots.size(); ++k) {
      R[static_cast<size_t>(cs.param_slots[k]) * stride_ + l] = R[static_cast<size_t>(cs.arg_slots[k]) * stride_ + l];
    }
    frames_[t * kMaxCallDepth + d++] = {ret_pc, in.target};
    return true;
  }

  // Lane l of warp w returns from its innermost call: the results are copied to the caller's; the
  // pc it goes on at, or kNoFrame when it is in no call (a ret of the kernel itself).
  static constexpr uint32_t kNoFrame = UINT32_MAX;
  uint32_t PopCall(uint32_t w, int l) {
    const size_t t = static_cast<size_t>(w) * 32 + l;
    uint8_t& d = depth_[t];
    if (d == 0) return kNoFrame;
    uint64_t* R = Regs(w);
    const Frame& f = frames_[t * kMaxCallDepth + --d];
    const CallSite& cs = p_.calls[f.site];
    for (size_t k = 0; k < cs.ret_slots.size(); ++k) {
      R[static_cast<size_t>(cs.result_slots[k]) * stride_ + l] = R[static_cast<size_t>(cs.ret_slots[k]) * stride_ + l];
    }
    return f.ret_pc;
  }

  // The lanes of warp w that native code's host block `block` runs for: those waiting for it, or
  // every live one when the CTA runs together (c->all).
  uint32_t NativeLanes(const NativeCtx* c, uint32_t w, uint32_t block) const {
    uint32_t group = 0;
    const uint32_t lanes = std::min(32u, threads_ - w * 32);
    for (uint32_t l = 0; l < lanes; ++l) {
      const uint32_t n = c->next[w * 32 + l];
      if (c->all ? n != kNativeExited : n == block) group |= 1u << l;
    }
    return group;
  }

  // NativeCtx::host_exec: an instruction native code leaves to the interpreter (warp-wide ones,
  // atomics, and what the translation has no C for), run for the lanes of each warp waiting for
  // its block together, as the interpreter would run the lanes that reached it.
  static int NativeHostExec(NativeCtx* c, uint32_t pc, uint32_t block, uint32_t fall) {
    auto* e = static_cast<CtaExec*>(c->host);
    const Inst& in = e->p_.code[pc];
    if (in.op == Op::kCall || in.op == Op::kRet) return e->NativeCallRet(c, in, pc, block, fall);
    uint32_t moved = 0;
    for (uint32_t w = 0; w < e->nwarps_; ++w) {
      const uint32_t group = e->NativeLanes(c, w, block);
      if (group == 0) continue;
      uint64_t* R = e->Regs(w);
      const uint32_t exec = e->GuardLanes(in, R, group);
      c->instructions += Popcount32(exec);
      if (exec != 0 && !e->Execute(in, exec, group, w, R)) return 1;
      if (!c->all) {
        for (uint32_t m = group; m != 0; m &= m - 1) c->next[w * 32 + __builtin_ctz(m)] = fall;
        moved += Popcount32(group);
      }
    }
    if (c->all) {
      c->go = fall;
    } else {
      c->count[block] = 0;
      c->count[fall] += moved;
    }
    return 0;
  }

  // A call or a .func's ret in native code, with the interpreter's frames (PushCall, PopCall): a
  // call sends its threads to the callee's first block (`fall`), a ret each thread to the block
  // after the call it returns from. Threads the guard skips go to the next block. Threads may part
  // here (returns to different call sites).
  int NativeCallRet(NativeCtx* c, const Inst& in, uint32_t pc, uint32_t block, uint32_t fall) {
    const NativeCode& code = *run_.spec().native;
    const uint32_t after = code.BlockAt(pc + 1);
    uint32_t common = kNativeApart;
    bool same = true, first = true;
    for (uint32_t w = 0; w < nwarps_; ++w) {
      const uint32_t group = NativeLanes(c, w, block);
      const uint32_t exec = GuardLanes(in, Regs(w), group);
      c->instructions += Popcount32(exec);
      for (uint32_t m = group; m != 0; m &= m - 1) {
        const int l = __builtin_ctz(m);
        const uint32_t t = w * 32 + static_cast<uint32_t>(l);
        uint32_t to = after;  // (where the lanes the guard skips go)
        if ((exec >> l & 1) && in.op == Op::kCall) {
          if (!PushCall(in, w, l, pc + 1)) {
            (void)Fault(in, "call stack deeper than " + std::to_string(kMaxCallDepth));
            return 1;
          }
          to = fall;
        } else if (exec >> l & 1) {
          const uint32_t ret_pc = PopCall(w, l);  // kNoFrame: a kernel's own ret (decoded as exit)
          if (ret_pc == kNoFrame) ++c->exited;
          to = ret_pc == kNoFrame ? kNativeExited : code.BlockAt(ret_pc);
        }
        c->next[t] = to;
        if (!c->all && to != kNativeExited) ++c->count[to];
        same = same && (first || to == common);
        common = to;
        first = false;
      }
    }
    if (!c->all) {
      c->count[block] = 0;
    } else if (same) {
      c->go = common;  // every thread goes on together (or every one exited)
    } else {  // they part: the executor zeroed the counts for the `all` call; count where each goes
      for (uint32_t t = 0; t < threads_; ++t) {
        if (c->next[t] != kNativeExited) ++c->count[c->next[t]];
      }
      c->go = kNativeApart;
    }
    return 0;
  }

  // NativeCtx::address: an access the generated fast path did not cover.
  static uint8_t* NativeAddress(NativeCtx* c, uint32_t pc, uint32_t space, uint64_t addr, uint32_t bytes,
                                uint32_t thread, int store) {
    auto* e = static_cast<CtaExec*>(c->host);
    const Inst& in = e->p_.code[pc];
    if (space == 4) {
      e->Fault(in, "parameter load outside the kernel's parameters");
      return nullptr;
    }
    const auto m = static_cast<Mem>(space);
    if (m == Mem::kGlobal) {
      if (uint8_t* p = e->GlobalFast(addr, bytes); p != nullptr) {
        e->inst_region_[pc] = {e->cache_base_, e->cache_size_, e->cache_host_};
        return p;
      }
    }
    return e->Address(m, addr, bytes, thread / 32, thread % 32, in, store != 0);
  }

  bool NoCallActive() const {
    for (uint8_t d : depth_) {
      if (d != 0) return false;
    }
    return true;
  }

  // Leaves CTA-wide execution: the lanes running there continue at `pc`, and inside an if-region
  // the lanes waiting at its end continue there; the warps take over.
  void Diverge(uint32_t pc) {
    uniform_ = uniform_base_;  // the warps write registers without keeping track
    for (uint32_t w = 0; w < nwarps_; ++w) {
      Warp& wp = warps_[w];
      for (uint32_t l = 0; l < 32; ++l) wp.pc[l] = (pending_[w] >> l & 1) ? region_end_ : pc;
      wp.run = kFull;
      wp.bar = 0;
    }
  }

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
  Converged RunConverged(uint32_t& pc) {
    uint64_t insts = 0;
    uint32_t steps = 0;
    uint64_t* const R = regs_.data();
    bool in_region = false;
    std::fill(active_.begin(), active_.end(), kFull);
    std::fill(pending_.begin(), pending_.end(), 0u);
    auto leave = [&](Converged why) {
      run_.AddInstructions(insts);
      if (why == Converged::kDiverged) Diverge(pc);
      return why;
    };
    for (;;) {
      if (++steps == 512) {
        steps = 0;
        run_.AddInstructions(insts);
        insts = 0;
        if (!CheckStop()) return Converged::kFailed;
      }
      if (in_region && pc == region_end_) {  // the if-region ends: everyone is here again
        for (uint32_t w = 0; w < nwarps_; ++w) active_[w] |= pending_[w];
        std::fill(pending_.begin(), pending_.end(), 0u);
        in_region = false;
      }
      const Inst& in = p_.code[pc];
      // exec: the running threads the guard selects. all: exec == active_; none: no thread.
      bool all = true, none = false;
      const uint32_t* exec = active_.data();
      if (in.guard != kNoSlot) {
        const uint64_t* g = R + static_cast<size_t>(in.guard) * stride_;
        bool any = false;
        if (uniform_[in.guard]) {  // one value for every thread: it selects all of them or none
          const bool taken = ((g[0] & 1) != 0) != in.guard_negated;
          for (uint32_t w = 0; w < nwarps_; ++w) {
            exec_[w] = taken ? active_[w] : 0u;
            all = all && exec_[w] == active_[w];
            any = any || exec_[w] != 0;
          }
          exec = exec_.data();
        } else {
          const uint32_t flip = in.guard_negated ? kFull : 0u;
          for (uint32_t w = 0; w < nwarps_; ++w) {
            const uint32_t m = (PredicateMask(g + w * 32) ^ flip) & active_[w];
            exec_[w] = m;
            all = all && m == active_[w];
            any = any || m != 0;
          }
          exec = exec_.data();
        }
        none = !any;
      }
      if (!none) insts += in_region || !all ? CountExec(exec) : threads_;
      switch (in.op) {
        case Op::kBra:
          if (all) {  // every running thread takes it
            if (in_region && (in.target <= pc || in.target > region_end_)) {
              insts -= CountExec(exec);  // the warps count it when they run it
              return leave(Converged::kDiverged);
            }
            pc = in.target;
          } else if (none) {
            ++pc;
          } else if (!in_region && in.target > pc + 1) {  // an if-region up to the target
            for (uint32_t w = 0; w < nwarps_; ++w) {
              pending_[w] = exec[w];
              active_[w] &= ~exec[w];
            }
            region_end_ = in.target;
            in_region = true;
            ++pc;
          } else {
            insts -= CountExec(exec);  // the warps count it when they run it
            return leave(Converged::kDiverged);
          }
          continue;
        case Op::kExit:
        case Op::kRet:  // no call is active while converged: a return ends the thread
          if (none) {
            ++pc;
            continue;
          }
          if (all && !in_region) {
            run_.AddInstructions(insts);
            return Converged::kExited;
          }
          insts -= CountExec(exec);
          return leave(Converged::kDiverged);
        case Op::kBar:
          if (in_region) {
            insts -= none ? 0 : CountExec(exec);
            return leave(Converged::kDiverged);
          }
          if (!all && !none) {  // some threads skip a barrier the others wait at
            insts -= CountExec(exec);
            return leave(Converged::kDiverged);
          }
          ++pc;  // every thread arrived: released
          continue;
        case Op::kCall:
        case Op::kTrap:
          if (none) {
            ++pc;
            continue;
          }
          insts -= CountExec(exec);
          return leave(Converged::kDiverged);
        default: break;
      }
      if (!none) {
        const bool invariant = p_.launch_invariant[pc] != 0;  // never guarded: all == true
        if (!invariant || in_region || !invariant_done_[pc]) {
          const bool dense = all && !in_region;
          bool ok;
          if (dense && SourcesUniform(in)) {
            ok = ExecuteUniform(in, R);
          } else {
            ok = ExecuteConverged(in, R, exec, dense);
            for (uint32_t d : in.d) {
              if (d != kNoSlot) uniform_[d] = 0;
            }
          }
          if (!ok) {
            run_.AddInstructions(insts);
            return Converged::kFailed;
          }
          if (invariant && !in_region) {
            invariant_done_[pc] = 1;
            for (uint32_t d : in.d) {  // the values stay in every thread's registers for later CTAs
              if (d != kNoSlot) uniform_base_[d] = uniform_[d];
            }
          }
        }
      }
      ++pc;
    }
  }

  uint64_t CountExec(const uint32_t* exec) const {
    uint64_t n = 0;
    for (uint32_t w = 0; w < nwarps_; ++w) n += Popcount32(exec[w]);
    return n;
  }

  // Whether `in` computes one value for every thread: an instruction that depends only on its
  // source registers, each of which holds one value for every thread.
  bool SourcesUniform(const Inst& in) const {
    switch (in.op) {
      case Op::kLd: case Op::kSt: case Op::kAtom: case Op::kShfl: case Op::kVote: case Op::kActivemask:
      case Op::kClock: case Op::kNop: case Op::kWarpSync: case Op::kRedux: case Op::kMatch: case Op::kCpAsync:
        return false;
      default: break;
    }
    if (in.d[0] == kNoSlot) return false;
    for (uint32_t s : in.s) {
      if (s != kNoSlot && !uniform_[s]) return false;
    }
    return true;
  }

  // Runs `in` for thread 0 only and copies its results to every thread (SourcesUniform(in)).
  bool ExecuteUniform(const Inst& in, uint64_t* R) {
    {
      Wide one(*this, 1, nullptr);
      if (!Execute(in, kFull, kFull, 0, R)) return false;
    }
    for (uint32_t d : in.d) {
      if (d == kNoSlot) continue;
      uint64_t* r = R + static_cast<size_t>(d) * stride_;
      std::fill(r + 1, r + threads_, r[0]);
      uniform_[d] = 1;
    }
    return true;
  }

  // While it lives, a full mask covers `lanes` threads of the CTA (with a mask per warp when
  // `masks` is set): handlers run CTA-wide.
  struct Wide {
    CtaExec& e;
    Wide(CtaExec& x, uint32_t lanes, const uint32_t* masks) : e(x) {
      tls_full_lanes = static_cast<int>(lanes);
      tls_wide_mask = masks;
      e.wide_ = true;
      e.wide_declined_ = false;
    }
    ~Wide() {
      tls_full_lanes = 32;
      tls_wide_mask = nullptr;
      e.wide_ = false;
    }
  };

  // Runs `in` for the threads in `exec`, a mask per warp (every thread when `dense`).
  bool ExecuteConverged(const Inst& in, uint64_t* R, const uint32_t* exec, bool dense) {
    bool per_warp = false;
    switch (in.op) {
      case Op::kAtom: case Op::kShfl: case Op::kVote: case Op::kRedux: case Op::kMatch: case Op::kActivemask:
      case Op::kClock: case Op::kCpAsync:
        per_warp = true;
        break;
      case Op::kLd: case Op::kSt:
        per_warp = in.vec != 1 || (in.mem != Mem::kGlobal && in.mem != Mem::kShared);
        break;
      default: break;
    }
    if (!per_warp) {
      bool ok, declined;
      {
        Wide wide(*this, threads_, dense ? nullptr : exec);
        ok = Execute(in, kFull, kFull, 0, R);
        declined = wide_declined_;
      }
      if (!ok) return false;
      if (!declined) return true;
    }
    for (uint32_t w = 0; w < nwarps_; ++w) {
      if (exec[w] != 0 && !Execute(in, exec[w], active_[w], w, Regs(w))) return false;
    }
    return true;
  }

  struct Warp {
    uint32_t pc[32];
    uint32_t live = 0;  // lanes that exist (the last warp may be partial)
    uint32_t run = 0;   // lanes able to run
    uint32_t bar = 0;   // lanes waiting at bar.sync; exited lanes are live & ~run & ~bar
    uint32_t bar_pc = 0;    // where the first waiting lane waits
    bool bar_same = false;  // and every waiting lane waits there
  };

  // Registers are laid out slot by slot across the CTA: slot s of thread t is at s * stride_ + t,
  // so warp w's lanes of a slot are contiguous at w * 32 and a CTA-wide instruction sees one array.
  uint64_t* Regs(uint32_t w) { return regs_.data() + static_cast<size_t>(w) * 32; }

  uint64_t* Special(uint32_t w, uint32_t s) { return Regs(w) + static_cast<size_t>(p_.special_base + s) * stride_; }

  void InitWarp(uint32_t w) {
    Warp& wp = warps_[w];
    uint32_t n = std::min<uint32_t>(32, threads_ - w * 32);
    wp.live = n == 32 ? kFull : ((1u << n) - 1);
    wp.run = wp.live;
    wp.bar = 0;
    uint64_t *cx = Special(w, kCtaidX), *cy = Special(w, kCtaidY), *cz = Special(w, kCtaidZ);
    for (uint32_t l = 0; l < 32; ++l) {
      wp.pc[l] = k_.entry_pc;
      depth_[w * 32 + l] = 0;
      cx[l] = cta_[0];
      cy[l] = cta_[1];
      cz[l] = cta_[2];
    }
  }

  void InitSpecials(uint32_t w) {
    uint32_t first = w * 32;
    auto sp = [&](uint32_t s) { return Special(w, s); };
    for (uint32_t l = 0; l < 32; ++l) {
      uint32_t t = first + l;
      sp(kTidX)[l] = t % cfg_.block.x;
      sp(kTidY)[l] = (t / cfg_.block.x) % cfg_.block.y;
      sp(kTidZ)[l] = t / (cfg_.block.x * cfg_.block.y);
      sp(kNtidX)[l] = cfg_.block.x;
      sp(kNtidY)[l] = cfg_.block.y;
      sp(kNtidZ)[l] = cfg_.block.z;
      sp(kNctaidX)[l] = cfg_.grid.x;
      sp(kNctaidY)[l] = cfg_.grid.y;
      sp(kNctaidZ)[l] = cfg_.grid.z;
      sp(kLaneId)[l] = l;
      sp(kWarpId)[l] = w;
      sp(kNWarpId)[l] = nwarps_;
      sp(kLanemaskEq)[l] = 1u << l;
      sp(kLanemaskLt)[l] = (1u << l) - 1;
      sp(kLanemaskLe)[l] = l == 31 ? kFull : ((1u << (l + 1)) - 1);
      sp(kLanemaskGt)[l] = l == 31 ? 0 : ~((1u << (l + 1)) - 1);
      sp(kLanemaskGe)[l] = ~((1u << l) - 1);
      sp(kSmId)[l] = 0;
      sp(kNSmId)[l] = 1;
      sp(kGridId)[l] = 1;
      sp(kDynSmem)[l] = cfg_.shared_bytes;
      sp(kTotalSmem)[l] = shared_size_;
    }
  }

  bool Fault(const Inst& in, const std::string& what) {
    run_.Fail(Status::DeviceFault("kernel '" + k_.name + "' (PTX line " + std::to_string(in.line) + "): " + what));
    return false;
  }

  static std::string Hex(uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
    return b;
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
                    (m == Mem::kGlobal ? "the instance's buffers"
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
  bool RunWarp(uint32_t w) {
    Warp& wp = warps_[w];
    uint64_t* R = Regs(w);
    uint32_t gpc;
    uint32_t group = Regroup(wp, &gpc);
    uint32_t waiting = WaitingPc(wp, group);
    uint64_t insts = 0;
    uint32_t steps = 0;
    while (group != 0) {
      if (gpc >= waiting) {  // reached (or jumped past) lanes waiting: regroup at the lowest pc
        ForLanes(group, [&](int l) { wp.pc[l] = gpc; });
        group = Regroup(wp, &gpc);
        waiting = WaitingPc(wp, group);
        continue;
      }
      if (++steps == 4096) {
        steps = 0;
        run_.AddInstructions(insts);
        insts = 0;
        if (!CheckStop()) return false;
        if (nwarps_ > 1) {  // let the other warps run: one may spin until another writes (forward progress)
          ForLanes(group, [&](int l) { wp.pc[l] = gpc; });
          return true;
        }
      }
      const Inst& in = p_.code[gpc];
      const uint32_t exec = GuardLanes(in, R, group);
      insts += exec == kFull ? 32 : Popcount32(exec);
      switch (in.op) {
        case Op::kBra: {
          if (exec == group) {
            gpc = in.target;
          } else if (exec == 0) {  // no lane takes it (an `if` all lanes enter): nothing diverges
            ++gpc;
          } else if (in.target == gpc + 1) {  // a branch to the next instruction: no split
            ++gpc;
          } else {
            ForLanes(group, [&](int l) { wp.pc[l] = (exec >> l & 1) ? in.target : gpc + 1; });
            if (group == wp.run) {  // no lane elsewhere: the lower of the two pcs runs next
              const bool taken_first = in.target < gpc + 1;
              group = taken_first ? exec : group & ~exec;
              gpc = taken_first ? in.target : gpc + 1;
            } else {
              group = Regroup(wp, &gpc);
            }
            waiting = WaitingPc(wp, group);
          }
          continue;
        }
        case Op::kExit: {
          ForLanes(group, [&](int l) { wp.pc[l] = gpc + 1; });
          wp.run &= ~exec;
          group = Regroup(wp, &gpc);
          waiting = WaitingPc(wp, group);
          continue;
        }
        case Op::kBar: {
          if (exec == group) {
            ForLanes(group, [&](int l) { wp.pc[l] = gpc; });
          } else {
            ForLanes(group, [&](int l) { wp.pc[l] = (exec >> l & 1) ? gpc : gpc + 1; });
          }
          if (wp.bar == 0) {
            wp.bar_pc = gpc;
            wp.bar_same = true;
          } else if (wp.bar_pc != gpc) {
            wp.bar_same = false;
          }
          wp.run &= ~exec;
          wp.bar |= exec;
          group = Regroup(wp, &gpc);
          waiting = WaitingPc(wp, group);
          continue;
        }
        case Op::kCall: {
          bool ok = true;
          ForLanes(group, [&](int l) {
            if (!(exec >> l & 1)) {
              wp.pc[l] = gpc + 1;
            } else if (!PushCall(in, w, l, gpc + 1)) {
              ok = false;
            } else {
              wp.pc[l] = p_.calls[in.target].callee_entry;
            }
          });
          if (!ok) return Fault(in, "call stack deeper than " + std::to_string(kMaxCallDepth));
          group = Regroup(wp, &gpc);
          waiting = WaitingPc(wp, group);
          continue;
        }
        case Op::kRet: {
          ForLanes(group, [&](int l) {
            if (!(exec >> l & 1)) {
              wp.pc[l] = gpc + 1;
            } else if (const uint32_t to = PopCall(w, l); to == kNoFrame) {
              wp.run &= ~(1u << l);  // returning from the kernel: the thread exits
            } else {
              wp.pc[l] = to;
            }
          });
          group = Regroup(wp, &gpc);
          waiting = WaitingPc(wp, group);
          continue;
        }
        case Op::kTrap:
          if (exec != 0) return Fault(in, "trap instruction executed");
          break;
        default:
          if (exec != 0 && !Execute(in, exec, group, w, R)) return false;
          break;
      }
      ++gpc;
    }
    run_.AddInstructions(insts);
    return true;
  }

  // ---- data instructions -------------------------------------------------------------------
  bool Execute(const Inst& in, uint32_t mask, uint32_t group, uint32_t w, uint64_t* R);
  bool Memory(const Inst& in, uint32_t mask, uint32_t w, uint64_t* R);
  bool VolatileLoad(const Inst& in, uint32_t mask, uint32_t w, uint64_t* R);
  template <unsigned kSize, bool kStore, bool kSigned>
  bool MemLanes(const Inst& in, uint32_t mask, uint32_t w, uint64_t* R);
  uint8_t* GlobalFast(uint64_t addr, uint32_t bytes);
  bool Atomic(const Inst& in, uint32_t mask, uint32_t w, uint64_t* R);
  bool CopyAsync(const Inst& in, uint32_t mask, uint32_t w, uint64_t* R);
  void Convert(const Inst& in, uint32_t mask, uint64_t* R);
  bool FloatOp(const Inst& in, uint32_t mask, uint64_t* R);
  bool HalfOp(const Inst& in, uint32_t mask, uint64_t* R);
  void IntOp(const Inst& in, uint32_t mask, uint64_t* R);
  void Setp(const Inst& in, uint32_t mask, uint64_t* R);
  void Carry(const Inst& in, uint32_t mask, uint64_t* R);
  void DotProduct(const Inst& in, uint32_t mask, uint64_t* R);
  void Video(const Inst& in, uint32_t mask, uint64_t* R);
  void ConvertMini(const Inst& in, uint32_t mask, uint64_t* R);
  void VideoScalar(const Inst& in, uint32_t mask, uint64_t* R);
  void IntMisc(const Inst& in, uint32_t mask, uint64_t* R);
  void SetSlct(const Inst& in, uint32_t mask, uint64_t* R);
  void Redux(const Inst& in, uint32_t mask, uint64_t* R);
  void Match(const Inst& in, uint32_t mask, uint64_t* R);

  LaunchRun& run_;
  const Program& p_;
  const KernelEntry& k_;
  const LaunchConfig& cfg_;
  const MemoryView& mem_;
  uint32_t threads_, nwarps_, slots_;
  uint32_t stride_ = 32;         // register slot stride: every thread of the CTA
  bool converged_ok_ = false;    // whole warps only: CTA-wide execution is possible
  bool wide_ = false;            // inside a CTA-wide Execute
  bool wide_declined_ = false;   // ... which a handler could not do CTA-wide (nothing was changed)
  uint32_t cta_[3] = {0, 0, 0};
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
  // Per slot: every thread of the CTA holds the same value in it, kept while the CTA runs
  // converged (a uniform instruction then runs once and its result is copied); reset to
  // uniform_base_ (constants, the CTA's shape and position, launch-invariant results) when the
  // warps take over.
  std::vector<uint8_t> uniform_, uniform_base_;
  // Native code: per thread the block it waits for; per block how many threads wait for it.
  std::vector<uint32_t> native_next_, native_count_;
  // CTA-wide execution, one mask per warp: the running threads, those waiting at the end of the
  // current if-region (region_end_), and those the current instruction's guard selects.
  std::vector<uint32_t> active_, pending_, exec_;
  uint32_t region_end_ = 0;
};

#define REG(slot) (R + static_cast<size_t>(slot) * stride_)

template <class T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

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
bool CtaExec::MemLanes(const Inst& in, uint32_t mask, uint32_t w, uint64_t* R) {
  using U = std::conditional_t<kSize == 1, uint8_t, std::conditional_t<kSize == 2, uint16_t,
            std::conditional_t<kSize == 4, uint32_t, uint64_t>>>;
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
        ForLanes(mask, [&](int l) { v[l] = static_cast<uint64_t>(static_cast<int64_t>(Load<S>(region + (base[l] + offset - rbase)))); });
      } else {
        ForLanes(mask, [&](int l) { v[l] = Load<U>(region + (base[l] + offset - rbase)); });
      }
      return true;
    }
  }
  if (wide_) {  // the lane-by-lane path below is per warp: the caller runs it warp by warp
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
bool CtaExec::VolatileLoad(const Inst& in, uint32_t mask, uint32_t w, uint64_t* R) {
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

bool CtaExec::Memory(const Inst& in, uint32_t mask, uint32_t w, uint64_t* R) {
  const bool store = in.op == Op::kSt;
  if (!store && (in.flags & kVolatile) && in.mem == Mem::kGlobal && in.vec == 1 && VolatileLoad(in, mask, w, R)) {
    return true;
  }
  const bool sign = ptx::IsSigned(in.t);
  switch (ptx::TypeSize(in.t)) {
    case 1: return store ? MemLanes<1, true, false>(in, mask, w, R) : sign ? MemLanes<1, false, true>(in, mask, w, R) : MemLanes<1, false, false>(in, mask, w, R);
    case 2: return store ? MemLanes<2, true, false>(in, mask, w, R) : sign ? MemLanes<2, false, true>(in, mask, w, R) : MemLanes<2, false, false>(in, mask, w, R);
    case 4: return store ? MemLanes<4, true, false>(in, mask, w, R) : sign ? MemLanes<4, false, true>(in, mask, w, R) : MemLanes<4, false, false>(in, mask, w, R);
    default: return store ? MemLanes<8, true, false>(in, mask, w, R) : MemLanes<8, false, false>(in, mask, w, R);
  }
}

template <class T>
T AtomicApply(AtomOp op, T old, T b, T c) {
  switch (op) {
    case AtomOp::kAdd: return static_cast<T>(old + b);
    case AtomOp::kMin: return std::min(old, b);
    case AtomOp::kMax: return std::max(old, b);
    case AtomOp::kInc:
      if constexpr (std::is_integral_v<T>) return old >= b ? T{0} : static_cast<T>(old + 1);
      else return old;
    case AtomOp::kDec:
      if constexpr (std::is_integral_v<T>) return (old == 0 || old > b) ? b : static_cast<T>(old - 1);
      else return old;
    case AtomOp::kAnd:
      if constexpr (std::is_integral_v<T>) return old & b;
      else return old;
    case AtomOp::kOr:
      if constexpr (std::is_integral_v<T>) return old | b;
      else return old;
    case AtomOp::kXor:
      if constexpr (std::is_integral_v<T>) return old ^ b;
      else return old;
    case AtomOp::kExch: return b;
    case AtomOp::kCas: return old == b ? c : old;
  }
  return old;
}

template <class T, class U>
T FromBits(U bits) {
  if constexpr (std::is_same_v<T, float>) return AsF32(bits);
  else if constexpr (std::is_same_v<T, double>) return AsF64(bits);
  else return static_cast<T>(bits);
}

template <class T>
uint64_t ToBits(T v) {
  if constexpr (std::is_floating_point_v<T>) return Bits(v);
  else return Store(v);
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

// The narrow float formats of cvt. fp8 e4m3 (bias 7, 448 the largest, NaN 0x7f, no infinities),
// e5m2 (bias 15, IEEE-like, 57344 the largest finite), fp6 e2m3 (bias 1, 7.5) and e3m2 (bias 3,
// 28), fp4 e2m1 (bias 1, 6): the last three have neither infinities nor NaN.
struct MiniSpec {
  int ebits, mbits, bias;
  uint8_t max_code;  // the largest finite magnitude's code
  int nan;           // NaN's code; -1: none (NaN converts to the positive largest value)
};

MiniSpec SpecOf(MiniFormat f) {
  switch (f) {
    case MiniFormat::kE4M3: return {4, 3, 7, 0x7e, 0x7f};
    case MiniFormat::kE5M2: return {5, 2, 15, 0x7b, 0x7f};
    case MiniFormat::kE2M1: return {2, 1, 1, 0x7, -1};
    case MiniFormat::kE2M3: return {2, 3, 1, 0x1f, -1};
    default: return {3, 2, 3, 0x1f, -1};  // e3m2
  }
}

// `v` rounded to nearest even and saturated to the largest finite value (.satfinite, which these
// conversions require); .relu makes negative values +0.
uint8_t EncodeMini(double v, MiniFormat f, bool relu) {
  const MiniSpec s = SpecOf(f);
  if (std::isnan(v)) return static_cast<uint8_t>(s.nan >= 0 ? s.nan : s.max_code);
  if (relu && v < 0) return 0;
  const uint8_t sign = std::signbit(v) ? static_cast<uint8_t>(1u << (s.ebits + s.mbits)) : 0;
  const double a = std::fabs(v);
  if (std::isinf(a)) return static_cast<uint8_t>(sign | s.max_code);
  uint32_t code;
  if (a < std::ldexp(1.0, 1 - s.bias)) {  // subnormal: units of the smallest one
    code = static_cast<uint32_t>(std::nearbyint(std::ldexp(a, s.bias - 1 + s.mbits)));
  } else {
    int e = std::ilogb(a);
    double m = std::nearbyint(std::ldexp(a, s.mbits - e));  // 2^mbits .. 2^(mbits+1)
    if (m >= std::ldexp(1.0, s.mbits + 1)) m /= 2, ++e;
    code = e + s.bias >= (1 << s.ebits) ? 0xffu
                                         : static_cast<uint32_t>((e + s.bias) << s.mbits) |
                                               (static_cast<uint32_t>(m) - (1u << s.mbits));
  }
  return static_cast<uint8_t>(sign | std::min<uint32_t>(code, s.max_code));
}

double DecodeMini(uint8_t b, MiniFormat f) {
  const MiniSpec s = SpecOf(f);
  const int sign_bit = s.ebits + s.mbits;
  const int e = (b & ((1 << sign_bit) - 1)) >> s.mbits, m = b & ((1 << s.mbits) - 1);
  const double sg = (b >> sign_bit & 1) ? -1.0 : 1.0;
  if (f == MiniFormat::kE5M2 && e == 31) return m == 0 ? sg * INFINITY : NAN;
  if (f == MiniFormat::kE4M3 && e == 15 && m == 7) return NAN;
  if (e == 0) return sg * std::ldexp(m, 1 - s.bias - s.mbits);
  return sg * std::ldexp((1 << s.mbits) | m, e - s.bias - s.mbits);
}

// ue8m0: a power of two 2^(code - 127), unsigned (the sign is dropped), 0xff NaN. .rz takes the
// largest power not above |v|, .rp the smallest not below (both at least 2^-127); .satfinite
// keeps infinities and overflows at 0xfe.
uint8_t EncodeUe8m0(double v, Round rnd, bool satfinite) {
  if (std::isnan(v)) return 0xff;
  const double a = std::fabs(v);
  if (std::isinf(a)) return satfinite ? 0xfe : 0xff;
  if (a == 0) return 0;
  const int e = std::ilogb(a);
  const bool exact = std::ldexp(1.0, e) == a;
  const int code = std::clamp(e + 127 + (rnd == Round::kRp && !exact ? 1 : 0), 0, 255);
  return static_cast<uint8_t>(satfinite && code == 255 ? 254 : code);
}

uint16_t DecodeUe8m0ToBf16(uint8_t code) {
  if (code == 0xff) return 0x7fff;  // canonical NaN
  if (code == 0) return 0x0040;     // 2^-127, a subnormal bfloat16
  return static_cast<uint16_t>(code << 7);
}

// tf32: an f32 with 10 significand bits (the low 13 bits zero), rounded .rna (ties away), .rn or
// .rz; NaN is the canonical NaN; .satfinite keeps infinities and overflows finite.
uint32_t EncodeTf32(uint32_t bits, Round rnd, bool satfinite, bool relu) {
  const uint32_t sign = bits & 0x80000000u, mag = bits & 0x7fffffffu;
  constexpr uint32_t kMax = 0x7f7fe000u, kInf = 0x7f800000u;
  if (mag > kInf) return 0x7fffffffu;
  if (relu && sign && mag != 0) return 0;
  if (mag == kInf) return sign | (satfinite ? kMax : kInf);
  uint32_t r = mag;
  if (rnd == Round::kRna) r += 0x1000u;
  else if (rnd != Round::kRz) r += 0xfffu + (mag >> 13 & 1);
  r &= ~0x1fffu;
  if (r >= kInf) r = satfinite ? kMax : kInf;
  return sign | r;
}

// A float (as a double) to f16 or bf16 in the current rounding mode, as cvt does: NaN is the
// canonical NaN 0x7fff (as the CUDA toolkit's emulation gives), .relu makes negative values +0,
// .satfinite keeps infinities and overflows at the largest finite value.
uint16_t NarrowFloat(double v, bool bf, uint16_t flags) {
  const bool relu = flags & kRelu, satfinite = flags & kSatFinite;
  if (std::isnan(v)) return 0x7fff;
  if (relu && v < 0) v = 0;
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0, inf = bf ? 0x7f80 : 0x7c00;
  if (std::isinf(v)) return static_cast<uint16_t>(sign | (satfinite ? inf - 1 : inf));
  const uint16_t h = bf ? DoubleToBf16(v) : DoubleToHalf(v);
  return satfinite && (h & 0x7fff) == inf ? static_cast<uint16_t>(sign | (inf - 1)) : h;
}

template <class T>
T FMin(T a, T b, bool nan) {
  if (std::isnan(a) || std::isnan(b)) {
    if (nan || (std::isnan(a) && std::isnan(b))) return std::numeric_limits<T>::quiet_NaN();
    return std::isnan(a) ? b : a;
  }
  if (a == 0 && b == 0) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

template <class T>
T FMax(T a, T b, bool nan) {
  if (std::isnan(a) || std::isnan(b)) {
    if (nan || (std::isnan(a) && std::isnan(b))) return std::numeric_limits<T>::quiet_NaN();
    return std::isnan(a) ? b : a;
  }
  if (a == 0 && b == 0) return std::signbit(a) ? b : a;
  return a > b ? a : b;
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

// cp.async, done at once: src-size bytes (none where ignore-src holds) from global memory, zeros
// up to cp-size, into shared memory; both addresses aligned to cp-size.
bool CtaExec::CopyAsync(const Inst& in, uint32_t mask, uint32_t w, uint64_t* R) {
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

bool CtaExec::Atomic(const Inst& in, uint32_t mask, uint32_t w, uint64_t* R) {
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
      case Type::kF16: case Type::kBF16:
        old = HalfAtomicRmw<uint16_t>(p, op, in.t, static_cast<uint16_t>(b), shared);
        break;
      case Type::kF16x2: case Type::kBF16x2:
        old = HalfAtomicRmw<uint32_t>(p, op, in.t, static_cast<uint32_t>(b), shared);
        break;
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
        if (size == 2) go(uint16_t{});
        else if (size == 4) go(uint32_t{});
        else go(uint64_t{});
        break;
    }
    REG(in.d[0])[l] = size == 2 ? (old & 0xffffu) : size == 4 ? (old & 0xffffffffu) : old;
  });
  return ok;
}

template <class T>
bool CompareOrdered(Cmp c, T a, T b) {
  switch (c) {
    case Cmp::kEq: return a == b;
    case Cmp::kNe: return a != b;
    case Cmp::kLt: case Cmp::kLo: return a < b;
    case Cmp::kLe: case Cmp::kLs: return a <= b;
    case Cmp::kGt: case Cmp::kHi: return a > b;
    case Cmp::kGe: case Cmp::kHs: return a >= b;
    default: return false;
  }
}

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

void CtaExec::Setp(const Inst& in, uint32_t mask, uint64_t* R) {
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
      auto combine = [&](bool x) { return bop == BoolOp::kAnd ? (x && cv) : bop == BoolOp::kOr ? (x || cv) : (x != cv); };
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
        finish(l, CompareFloat(cmp, HalfToDouble(static_cast<uint16_t>(a[l])), HalfToDouble(static_cast<uint16_t>(b[l]))));
      });
      return;
    case Type::kBF16:
      ForLanes(mask, [&](int l) {
        finish(l, CompareFloat(cmp, Bf16ToDouble(static_cast<uint16_t>(a[l])), Bf16ToDouble(static_cast<uint16_t>(b[l]))));
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
          case Cmp::kLt: case Cmp::kLo: run([](T x, T y) { return x < y; }); break;
          case Cmp::kLe: case Cmp::kLs: run([](T x, T y) { return x <= y; }); break;
          case Cmp::kGt: case Cmp::kHi: run([](T x, T y) { return x > y; }); break;
          case Cmp::kGe: case Cmp::kHs: run([](T x, T y) { return x >= y; }); break;
          default: run([](T, T) { return false; }); break;
        }
      });
  }
}

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

void CtaExec::IntOp(const Inst& in, uint32_t mask, uint64_t* R) {
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
        if (in.flags & kSat) ForLanes(mask, [&](int l) { d[l] = Store(sat_add(A(l), B(l), false)); });
        else ForLanes(mask, [&](int l) { d[l] = Store(static_cast<T>(static_cast<U>(A(l)) + static_cast<U>(B(l)))); });
        break;
      case Op::kSub:
        if (in.flags & kSat) ForLanes(mask, [&](int l) { d[l] = Store(sat_add(A(l), B(l), true)); });
        else ForLanes(mask, [&](int l) { d[l] = Store(static_cast<T>(static_cast<U>(A(l)) - static_cast<U>(B(l)))); });
        break;
      case Op::kMulLo: ForLanes(mask, [&](int l) { d[l] = Store(static_cast<T>(static_cast<U>(A(l)) * static_cast<U>(B(l)))); }); break;
      case Op::kMulHi: ForLanes(mask, [&](int l) { d[l] = Store(MulHi<T>(A(l), B(l))); }); break;
      case Op::kMadLo:
        ForLanes(mask, [&](int l) { d[l] = Store(static_cast<T>(static_cast<U>(A(l)) * static_cast<U>(B(l)) + static_cast<U>(C(l)))); });
        break;
      case Op::kMadHi:
        ForLanes(mask, [&](int l) { d[l] = Store(static_cast<T>(static_cast<U>(MulHi<T>(A(l), B(l))) + static_cast<U>(C(l)))); });
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
          if (s >= kBits) d[l] = Store(static_cast<T>(std::is_signed_v<T> && x < 0 ? -1 : 0));
          else d[l] = Store(static_cast<T>(x >> s));
        });
        break;
      case Op::kPopc: ForLanes(mask, [&](int l) { d[l] = static_cast<uint32_t>(std::popcount(static_cast<U>(A(l)))); }); break;
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
GPUWASM_FMA_CLONES void FmaLanesF32(uint32_t mask, uint64_t* d, const uint64_t* a,
                                                                    const uint64_t* b, const uint64_t* c) {
  ForLanes(mask, [&](int l) {
    d[l] = ToBits(std::fma(FromBits<float>(a[l]), FromBits<float>(b[l]), FromBits<float>(c[l])));
  });
}
GPUWASM_FMA_CLONES void FmaLanesF64(uint32_t mask, uint64_t* d, const uint64_t* a,
                                                                    const uint64_t* b, const uint64_t* c) {
  ForLanes(mask, [&](int l) {
    d[l] = ToBits(std::fma(FromBits<double>(a[l]), FromBits<double>(b[l]), FromBits<double>(c[l])));
  });
}
template <class T>
void FmaLanes(uint32_t mask, uint64_t* d, const uint64_t* a, const uint64_t* b, const uint64_t* c) {
  if constexpr (std::is_same_v<T, float>) {
    FmaLanesF32(mask, d, a, b, c);
  } else {
    FmaLanesF64(mask, d, a, b, c);
  }
}

template <class T>
bool PlainFloatOp(Op op, uint32_t mask, uint64_t* d, const uint64_t* a, const uint64_t* b, const uint64_t* c) {
  switch (op) {
    case Op::kAdd: ForLanes(mask, [&](int l) { d[l] = ToBits(FromBits<T>(a[l]) + FromBits<T>(b[l])); }); return true;
    case Op::kSub: ForLanes(mask, [&](int l) { d[l] = ToBits(FromBits<T>(a[l]) - FromBits<T>(b[l])); }); return true;
    case Op::kMulLo: ForLanes(mask, [&](int l) { d[l] = ToBits(FromBits<T>(a[l]) * FromBits<T>(b[l])); }); return true;
    case Op::kFma: FmaLanes<T>(mask, d, a, b, c); return true;
    default: return false;
  }
}

bool CtaExec::FloatOp(const Inst& in, uint32_t mask, uint64_t* R) {
  uint64_t* d = REG(in.d[0]);
  const uint64_t* a = REG(in.s[0]);
  const uint64_t* b = in.s[1] != kNoSlot ? REG(in.s[1]) : a;
  const uint64_t* c = in.s[2] != kNoSlot ? REG(in.s[2]) : a;
  const bool ftz = in.flags & kFtz, sat = in.flags & kSat;
  // The common case: round-to-nearest, no flushing or saturation.
  if (!ftz && !sat && (in.rnd == Round::kDefault || in.rnd == Round::kRn)) {
    if (in.t == Type::kF64 ? PlainFloatOp<double>(in.op, mask, d, a, b, c) : PlainFloatOp<float>(in.op, mask, d, a, b, c)) {
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
  if (in.t == Type::kF64) body(double{});
  else body(float{});
  return true;
}

// f16, bf16 and their packed x2 forms: computed in double (exact for add/mul), rounded once.
bool CtaExec::HalfOp(const Inst& in, uint32_t mask, uint64_t* R) {
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
        default: ok = false; r = 0; break;
      }
      if (in.flags & kSat) r = std::isnan(r) ? 0.0 : std::clamp(r, 0.0, 1.0);
      out |= static_cast<uint64_t>(from(r)) << (16 * h);
    }
    d[l] = out;
  });
  if (!ok) return Fault(in, "this operation is not implemented for half-precision types");
  return true;
}

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

void CtaExec::Convert(const Inst& in, uint32_t mask, uint64_t* R) {
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
            int64_t v = x;
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

// add.cc addc sub.cc subc mad.cc madc: 32- or 64-bit arithmetic that reads (kCarryIn) and writes
// (kCarryOut) the carry flag, a register slot of its own. sub's flag is the borrow: subc computes
// a - (b + CF). mad.lo/.hi adds c to the low or high half of the full product (signed for .s).
void CtaExec::Carry(const Inst& in, uint32_t mask, uint64_t* R) {
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

// Element i of `bits` bits (8 or 16) of v, extended by its signedness.
int32_t Element(uint32_t v, unsigned bits, unsigned i, bool sign) {
  const uint32_t e = bits == 8 ? (v >> (8 * i)) & 0xff : (v >> (16 * i)) & 0xffff;
  if (!sign) return static_cast<int32_t>(e);
  return bits == 8 ? static_cast<int8_t>(e) : static_cast<int16_t>(e);
}

// dp4a.atype.btype: c + the four byte products; dp2a.lo/.hi.atype.btype: c + a's two halfwords
// times b's bytes 0-1 (.lo) or 2-3 (.hi). Each element extends by its type; the sum wraps.
void CtaExec::DotProduct(const Inst& in, uint32_t mask, uint64_t* R) {
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

// cvt to and from the narrow float formats (see EncodeMini, EncodeUe8m0, EncodeTf32).
void CtaExec::ConvertMini(const Inst& in, uint32_t mask, uint64_t* R) {
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

// vop2 / vop4: per halfword or byte, the operation on the selected elements of {b, a} extended
// by their type; .sat clamps to the destination element's range; then d's masked elements take
// the results and the others c's (the merge), or with .add d is c plus the masked results' sum.
void CtaExec::Video(const Inst& in, uint32_t mask, uint64_t* R) {
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

// The part of a scalar video operand, extended by its type.
int64_t VideoPartOf(uint32_t v, VideoPart p, bool sign) {
  switch (p) {
    case VideoPart::kWord: return sign ? int64_t{static_cast<int32_t>(v)} : int64_t{v};
    case VideoPart::kH0: case VideoPart::kH1: return Element(v, 16, p == VideoPart::kH1, sign);
    default: return Element(v, 8, static_cast<unsigned>(p) - static_cast<unsigned>(VideoPart::kB0), sign);
  }
}

// Scalar video, as the PTX ISA's pseudocode defines it: the parts of a and b extended by their
// types, the operation on them exactly (vmad in 128 bits), saturation to d's type or to the part
// d's selector names, then the secondary operation with c or the merge into c.
void CtaExec::VideoScalar(const Inst& in, uint32_t mask, uint64_t* R) {
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
      case VideoOp::kShl: case VideoOp::kShr: {  // b is unsigned
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
void CtaExec::IntMisc(const Inst& in, uint32_t mask, uint64_t* R) {
  uint64_t* d = REG(in.d[0]);
  const uint64_t *a = REG(in.s[0]), *b = REG(in.s[1]);
  const uint64_t* c = in.s[2] != kNoSlot ? REG(in.s[2]) : a;
  const bool sign = ptx::IsSigned(in.t), wrap = in.flags & kWrap;
  switch (in.op) {
    case Op::kMul24: case Op::kMad24: {  // the low 24 bits of a and b, extended by the type
      const bool hi = in.cmp == 1, mad = in.op == Op::kMad24, sat = in.flags & kSat;
      auto low24 = [&](uint64_t v) -> int64_t {
        const uint32_t x = static_cast<uint32_t>(v) & 0xffffffu;
        return sign ? static_cast<int32_t>(x << 8) >> 8 : static_cast<int64_t>(x);
      };
      ForLanes(mask, [&](int l) {
        const int64_t p = low24(a[l]) * low24(b[l]);  // 48 bits
        int64_t r = hi ? (sign ? p >> 16 : static_cast<int64_t>(static_cast<uint64_t>(p) >> 16)) : p;
        if (mad) {
          if (sat) r = std::clamp<int64_t>(static_cast<int32_t>(r) + int64_t{static_cast<int32_t>(c[l])}, INT32_MIN, INT32_MAX);
          else r += static_cast<int64_t>(c[l]);
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
          const U diff = x < y ? static_cast<U>(static_cast<U>(y) - static_cast<U>(x)) : static_cast<U>(static_cast<U>(x) - static_cast<U>(y));
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
        if (!wrap && pos >= 32) lo = 0;
        else if (!wrap && width >= 32) hi = 0;
        else if (p + w < 32 && w == 0) hi = 0xffffffffu;
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
void CtaExec::SetSlct(const Inst& in, uint32_t mask, uint64_t* R) {
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
void CtaExec::Redux(const Inst& in, uint32_t mask, uint64_t* R) {
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
        r = first ? v : sign ? static_cast<uint32_t>(std::min(static_cast<int32_t>(r), static_cast<int32_t>(v))) : std::min(r, v);
        break;
      case ReduxOp::kMax:
        r = first ? v : sign ? static_cast<uint32_t>(std::max(static_cast<int32_t>(r), static_cast<int32_t>(v))) : std::max(r, v);
        break;
    }
    first = false;
  });
  uint64_t* d = REG(in.d[0]);
  ForLanes(mask, [&](int l) { d[l] = r; });
}

// match.any: per lane, the member lanes whose value equals its own; match.all: the member mask
// when every member's value is the same (and the predicate true), else 0.
void CtaExec::Match(const Inst& in, uint32_t mask, uint64_t* R) {
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

bool CtaExec::Execute(const Inst& in, uint32_t mask, uint32_t group, uint32_t w, uint64_t* R) {
  switch (in.op) {
    case Op::kNop: case Op::kWarpSync: return true;
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
          uint64_t p = static_cast<uint64_t>(static_cast<W>(static_cast<T>(a[l])) * static_cast<W>(static_cast<T>(b[l])));
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
          case ShflMode::kUp: j = lane - bval; p = j >= max_lane; break;
          case ShflMode::kDown: j = lane + bval; p = j <= max_lane; break;
          case ShflMode::kBfly: j = lane ^ bval; p = j <= max_lane; break;
          case ShflMode::kIdx: j = min_lane | (bval & ~segmask); p = j <= max_lane; break;
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
    case Op::kAddC: case Op::kSubC: case Op::kMadC: Carry(in, mask, R); return true;
    case Op::kDp4a: case Op::kDp2a: DotProduct(in, mask, R); return true;
    case Op::kVideo: Video(in, mask, R); return true;
    case Op::kVideoScalar: VideoScalar(in, mask, R); return true;
    case Op::kMul24: case Op::kMad24: case Op::kSad: case Op::kSzext: case Op::kBmsk: case Op::kFns:
      IntMisc(in, mask, R);
      return true;
    case Op::kSet: case Op::kSlct: SetSlct(in, mask, R); return true;
    case Op::kCvtMini: ConvertMini(in, mask, R); return true;
    case Op::kCvtPack: {  // cvt.{rn,rz}.{f16x2,bf16x2}.f32 d, a, b: a rounded into the upper half, b the lower
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
          auto sat = [&](uint64_t v) { return static_cast<uint32_t>(std::clamp<int64_t>(static_cast<int32_t>(v), lo, hi)) & em; };
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

}  // namespace

uint64_t CtaScratchBytes(const Program& p, const LaunchConfig& config) {
  const uint64_t threads = config.block.count();
  const uint64_t lanes = (threads + 31) / 32 * 32;
  return lanes * p.slot_count * sizeof(uint64_t)                      // registers
         + p.static_shared_bytes + config.shared_bytes + 16             // shared memory
         + lanes * p.local_bytes + 16                                   // local memory
         + lanes * (1 + kMaxCallDepth * sizeof(Frame))                  // call depth and frames
         + p.code.size() * (sizeof(MemoryView::Region) + 1)             // per-instruction state
         + uint64_t{p.slot_count} * 2 + threads * 2 * sizeof(uint32_t);  // uniformity, native next[]
}

bool LaunchRun::CheckStop(const std::string& kernel) {
  if (failed()) return false;
  if (spec_.cancel != nullptr && spec_.cancel->load(std::memory_order_relaxed)) {
    Fail(Status::Cancelled("launch of '" + kernel + "' was cancelled"));
    return false;
  }
  if (spec_.deadline && std::chrono::steady_clock::now() >= *spec_.deadline) {
    Fail(Status::DeadlineExceeded("launch of '" + kernel + "' passed its deadline"));
    return false;
  }
  return true;
}

void LaunchRun::Work() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++active_;
  }
  const Program& p = *spec_.program;
  // Scratch (registers, shared and local memory) is per launch and per thread, zero-filled:
  // nothing of another launch is ever visible to this one.
  std::unique_ptr<CtaExec> exec;
  // Between CTAs too, by the clock: a CTA shorter than the in-CTA check interval (a grid of tiny
  // blocks) would otherwise never look at the deadline. Every 4th CTA: a clock read costs about
  // as much as the smallest CTA (one thread, a few instructions) runs.
  uint32_t since_check = 0;
  while (!failed()) {
    uint64_t cta = next_cta_.fetch_add(1);
    if (cta >= total_ctas_) break;
    if (++since_check == 4) {
      since_check = 0;
      if (!CheckStop(spec_.kernel->name)) break;
    }
    if (!exec) {
      // Charged to the context before the launch was queued; the host may still be short of it.
      try {
        exec = std::make_unique<CtaExec>(*this, p, *spec_.kernel);
      } catch (const std::bad_alloc&) {
        Fail(Status::ResourceExhausted("out of host memory for the scratch of a CTA of '" + spec_.kernel->name + "' (" +
                                       std::to_string(CtaScratchBytes(p, spec_.config)) + " bytes)"));
        break;
      }
    }
    if (!exec->Run(cta)) break;
  }
  std::lock_guard<std::mutex> lock(mu_);
  --active_;
  cv_.notify_all();
}

void LaunchRun::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return active_ == 0 && (next_cta_.load() >= total_ctas_ || failed_.load()); });
}

}  // namespace gpuwasm::device::cpu
