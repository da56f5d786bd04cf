// The CTA executor's schedulers (cta_exec.h): CTA-wide, per warp, and native code's host side.
#include "device/cpu/cta_exec.h"
#include "device/cpu/uniformity.h"

namespace gpuwasm::device::cpu {

CtaExec::CtaExec(LaunchRun& run, const Program& p, const KernelEntry& k)
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

bool CtaExec::Run(uint64_t cta) {
  if (cfg_.grid.y == 1 && cfg_.grid.z == 1) {  // (three 64-bit divisions cost as much as a small CTA's C)
    cta_[0] = static_cast<uint32_t>(cta);
    cta_[1] = cta_[2] = 0;
  } else {
    cta_[0] = static_cast<uint32_t>(cta % cfg_.grid.x);
    cta_[1] = static_cast<uint32_t>((cta / cfg_.grid.x) % cfg_.grid.y);
    cta_[2] = static_cast<uint32_t>(cta / (uint64_t{cfg_.grid.x} * cfg_.grid.y));
  }
  const NativeCode* native = run_.spec().native.get();
  // %ctaid for every thread, where it changed since the last CTA (nothing writes the slot of a
  // special register): one fill per slot, contiguous across the CTA. Native code's C reads it
  // from NativeCtx; only its host blocks and calls need the registers.
  if (native == nullptr || native->ctaid_registers()) {
    for (uint32_t i = 0; i < 3; ++i) {
      if (filled_cta_[i] == cta_[i]) continue;
      std::fill_n(Special(0, kCtaidX + i), stride_, cta_[i]);
      filled_cta_[i] = cta_[i];
    }
  }
  if (native != nullptr) {  // (its threads' places are NativeCtx::next; call stacks start empty)
    if (!p_.calls.empty()) std::fill(depth_.begin(), depth_.end(), uint8_t{0});
    return RunNative(*native);
  }
  for (uint32_t w = 0; w < nwarps_; ++w) InitWarp(w);
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

bool CtaExec::RunNative(const NativeCode& code) {
  const auto& blocks = code.blocks();
  const uint32_t nblocks = static_cast<uint32_t>(blocks.size());
  if (!native_clean_) {
    native_next_.assign(threads_, code.entry_block());
    native_count_.assign(nblocks, 0);
  }
  native_clean_ = false;  // until this CTA ends with its threads together (not after a stop)
  // Blocks that run for every thread at once leave next[] and count[] as they are; parting,
  // exits, barriers awaited apart and calls write them.
  bool parted = !p_.calls.empty();
  if (native_ahead_off_.size() != nblocks) native_ahead_off_.assign(nblocks, 0);  // kept across CTAs
  NativeCtx c{};
  c.regs = regs_.data();
  c.stride = stride_;
  c.next = native_next_.data();
  c.count = native_count_.data();
  c.shared = shared_.data();
  c.shared_size = shared_size_;
  c.params = run_.spec().params.data();
  c.params_size = run_.spec().params.size();
  static_assert(sizeof(NativeRegion) == sizeof(MemoryView::Region));
  c.regions = reinterpret_cast<NativeRegion*>(inst_region_.data());
  c.address = &CtaExec::NativeAddress;
  c.host = this;
  c.threads = threads_;
  c.flat = cfg_.block.y == 1 && cfg_.block.z == 1;
  c.ahead_off = native_ahead_off_.data();
  c.host_exec = &CtaExec::NativeHostExec;
  for (int i = 0; i < 3; ++i) c.ctaid[i] = static_cast<uint32_t>(cta_[i]);
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
        uint32_t last = 0, k = 0;   // every live thread waits at a barrier: release them
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
      AddInstructions(c.instructions);
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
      parted = true;
      live -= c.exited;
      while (first < threads_ && native_next_[first] == kNativeExited) ++first;
    }
    if (all) {
      if (c.go == kNativeExited) break;  // every thread exited
      together = c.go;                   // kNativeApart: next[] and count[] were written
    }
    parted = parted || together == kNativeApart;
  }
  native_clean_ = ok && !parted;
  AddInstructions(c.instructions);
  return ok;
}

bool CtaExec::PushCall(const Inst& in, uint32_t w, int l, uint32_t ret_pc) {
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

uint32_t CtaExec::PopCall(uint32_t w, int l) {
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

uint32_t CtaExec::NativeLanes(const NativeCtx* c, uint32_t w, uint32_t block) const {
  uint32_t group = 0;
  const uint32_t lanes = std::min(32u, threads_ - w * 32);
  for (uint32_t l = 0; l < lanes; ++l) {
    const uint32_t n = c->next[w * 32 + l];
    if (c->all ? n != kNativeExited : n == block) group |= 1u << l;
  }
  return group;
}

int CtaExec::NativeHostExec(NativeCtx* c, uint32_t pc, uint32_t block, uint32_t fall) {
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

int CtaExec::NativeCallRet(NativeCtx* c, const Inst& in, uint32_t pc, uint32_t block, uint32_t fall) {
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
  } else {           // they part: the executor zeroed the counts for the `all` call; count where each goes
    for (uint32_t t = 0; t < threads_; ++t) {
      if (c->next[t] != kNativeExited) ++c->count[c->next[t]];
    }
    c->go = kNativeApart;
  }
  return 0;
}

uint8_t* CtaExec::NativeAddress(NativeCtx* c, uint32_t pc, uint32_t space, uint64_t addr, uint32_t bytes,
                                uint32_t thread, int store) {
  auto* e = static_cast<CtaExec*>(c->host);
  const Inst& in = e->p_.code[pc];
  if (space == kNativeParamSpace) {
    e->Fault(in, "parameter load outside the kernel's parameters");
    return nullptr;
  }
  if (space == kNativeMisalignedAtomic) {
    e->Fault(in, "misaligned atomic at " + Hex(addr));
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

void CtaExec::Diverge(uint32_t pc) {
  for (uint32_t w = 0; w < nwarps_; ++w) {
    Warp& wp = warps_[w];
    for (uint32_t l = 0; l < 32; ++l) wp.pc[l] = (pending_[w] >> l & 1) ? region_end_ : pc;
    wp.run = kFull;
    wp.bar = 0;
  }
}

CtaExec::Converged CtaExec::RunConverged(uint32_t& pc) {
  uint64_t insts = 0;
  uint32_t steps = 0;
  uint64_t* const R = regs_.data();
  bool in_region = false;
  std::fill(active_.begin(), active_.end(), kFull);
  std::fill(pending_.begin(), pending_.end(), 0u);
  auto leave = [&](Converged why) {
    AddInstructions(insts);
    if (why == Converged::kDiverged) Diverge(pc);
    return why;
  };
  for (;;) {
    if (++steps == 512) {
      steps = 0;
      AddInstructions(insts);
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
      // One value for every thread (Program::divergent): it selects all of them or none. Not in an
      // if-region: thread 0 may be one that waits at its end, with an older value.
      if (!in_region && !p_.divergent[in.guard]) {
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
          AddInstructions(insts);
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
        }
        if (!ok) {
          AddInstructions(insts);
          return Converged::kFailed;
        }
        if (invariant && !in_region) {
          invariant_done_[pc] = 1;  // the values stay in every thread's registers for later CTAs
        }
      }
    }
    ++pc;
  }
}

bool CtaExec::SourcesUniform(const Inst& in) const {
  if (!ComputesFromSources(in.op)) return false;
  if (in.d[0] == kNoSlot) return false;
  for (uint32_t s : in.s) {
    if (s != kNoSlot && p_.divergent[s]) return false;
  }
  return true;
}

bool CtaExec::ExecuteUniform(const Inst& in, uint64_t* R) {
  if (!Execute(in, Lanes(kFull, 1, nullptr), kFull, 0, R)) return false;
  for (uint32_t d : in.d) {
    if (d == kNoSlot) continue;
    uint64_t* r = R + static_cast<size_t>(d) * stride_;
    std::fill(r + 1, r + threads_, r[0]);
  }
  return true;
}

bool CtaExec::ExecuteConverged(const Inst& in, uint64_t* R, const uint32_t* exec, bool dense) {
  bool per_warp = false;
  switch (in.op) {
    case Op::kAtom:
    case Op::kShfl:
    case Op::kVote:
    case Op::kRedux:
    case Op::kMatch:
    case Op::kActivemask:
    case Op::kClock:
    case Op::kCpAsync: per_warp = true; break;
    case Op::kLd:
    case Op::kSt: per_warp = in.vec != 1 || (in.mem != Mem::kGlobal && in.mem != Mem::kShared); break;
    default: break;
  }
  if (!per_warp) {
    wide_declined_ = false;
    if (!Execute(in, Lanes(kFull, threads_, dense ? nullptr : exec), kFull, 0, R)) return false;
    if (!wide_declined_) return true;
  }
  for (uint32_t w = 0; w < nwarps_; ++w) {
    if (exec[w] != 0 && !Execute(in, exec[w], active_[w], w, Regs(w))) return false;
  }
  return true;
}

void CtaExec::InitWarp(uint32_t w) {
  Warp& wp = warps_[w];
  uint32_t n = std::min<uint32_t>(32, threads_ - w * 32);
  wp.live = n == 32 ? kFull : ((1u << n) - 1);
  wp.run = wp.live;
  wp.bar = 0;
  std::fill_n(wp.pc, 32, k_.entry_pc);
  std::fill_n(depth_.data() + static_cast<size_t>(w) * 32, 32, uint8_t{0});
}

void CtaExec::InitSpecials(uint32_t w) {
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

bool CtaExec::RunWarp(uint32_t w) {
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
      AddInstructions(insts);
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
  AddInstructions(insts);
  return true;
}

}  // namespace gpuwasm::device::cpu
