#include "device/cpu/native_cfg.h"

#include <algorithm>
#include <map>

namespace gpuwasm::device::cpu {

Status NativeUnsupported(const Inst& in, const std::string& what) {
  return Status::Unsupported("native code: " + what + " (PTX line " + std::to_string(in.line) + ")");
}

Result<KernelCfg> KernelCfg::Build(const Program& p, const KernelEntry& k,
                                   const std::function<bool(const Inst&, uint32_t)>& writes_as_c) {
  KernelCfg cfg;
  cfg.p_ = &p;
  cfg.k_ = &k;
  GPUWASM_RETURN_IF_ERROR(cfg.FindBlocks(writes_as_c));
  cfg.FindUniform();
  return cfg;
}

// The instructions reachable from the entry, cut into blocks at branch targets and after
// branches, barriers and exits; each block's successors.
Status KernelCfg::FindBlocks(const std::function<bool(const Inst&, uint32_t)>& writes_as_c) {
  std::set<uint32_t> leaders = {k_->entry_pc};
  std::set<uint32_t> reached;
  std::vector<uint32_t> work = {k_->entry_pc};
  while (!work.empty()) {
    uint32_t pc = work.back();
    work.pop_back();
    while (pc < p_->code.size() && reached.insert(pc).second) {
      if (reached.size() > kMaxInstructions) return Status::Unsupported("native code: kernel too large");
      const Inst& in = p_->code[pc];
      if ((in.op == Op::kLd || in.op == Op::kSt) && (in.flags & kVolatile) && in.mem != Mem::kGlobal) {
        // The warp-synchronous idiom (volatile shared memory, no __syncwarp) relies on the
        // threads of a warp running in lockstep; native code runs them one after another.
        return NativeUnsupported(in, "volatile shared memory access (warp-synchronous code)");
      }
      // A block of its own, run by the executor: calls and rets (it keeps the frames) and what
      // has no C (trap among them: the executor ends the launch with its fault).
      const bool call_or_ret = in.op == Op::kCall || in.op == Op::kRet;
      if (call_or_ret || (!IsTerminator(in.op) && !writes_as_c(in, pc))) {
        host.insert(pc);
        leaders.insert(pc);
        leaders.insert(pc + 1);
      }
      if (in.op == Op::kCall) {
        const uint32_t callee = p_->calls[in.target].callee_entry;
        leaders.insert(callee);
        work.push_back(callee);
        has_calls = true;
      } else if (in.op == Op::kRet) {
        if (in.guard == kNoSlot) break;
      } else if (in.op == Op::kBra) {
        leaders.insert(in.target);
        work.push_back(in.target);
        leaders.insert(pc + 1);
        if (in.guard == kNoSlot) break;
      } else if (in.op == Op::kBar || in.op == Op::kWarpSync) {
        if (in.guard != kNoSlot) return NativeUnsupported(in, "guarded barrier");
        leaders.insert(pc + 1);
      } else if (in.op == Op::kExit) {
        leaders.insert(pc + 1);
        if (in.guard == kNoSlot) break;
      }
      ++pc;
    }
    if (pc >= p_->code.size()) return Status::Unsupported("native code: control reaches the end of the code");
  }
  for (uint32_t l : leaders) {
    if (reached.count(l)) starts.push_back(l);
  }
  if (starts.size() > kMaxBlocks) return Status::Unsupported("native code: kernel too large");
  seen = std::move(reached);
  ends.resize(starts.size());
  for (uint32_t b = 0; b < starts.size(); ++b) {
    const uint32_t end = b + 1 < starts.size() ? starts[b + 1] : static_cast<uint32_t>(p_->code.size());
    uint32_t pc = starts[b];
    while (pc < end && seen.count(pc)) {
      if (IsTerminator(p_->code[pc++].op)) break;
    }
    ends[b] = pc;
  }
  succ.resize(starts.size());
  for (uint32_t b = 0; b < starts.size(); ++b) {
    const uint32_t last = BlockEnd(b) - 1;
    const Inst& in = p_->code[last];
    auto& out = succ[b];
    if (in.op == Op::kCall) {  // into the callee (its ret goes on after the call)
      out.push_back(BlockOf(p_->calls[in.target].callee_entry));
      if (in.guard != kNoSlot) out.push_back(BlockOf(last + 1));
    } else if (in.op == Op::kRet) {
      out.push_back(kExit);
      if (in.guard != kNoSlot) out.push_back(BlockOf(last + 1));
    } else if (!IsTerminator(in.op)) {
      out.push_back(BlockOf(last + 1));
    } else if (in.op == Op::kBra) {
      out.push_back(BlockOf(in.target));
      if (in.guard != kNoSlot) out.push_back(BlockOf(last + 1));
    } else if (in.op == Op::kBar || in.op == Op::kWarpSync) {
      out.push_back(BlockOf(last + 1));
    } else {
      out.push_back(kExit);
      if (in.guard != kNoSlot) out.push_back(BlockOf(last + 1));
    }
  }
  return Status::Ok();
}

// The register slots `in` reads and writes. A guarded write keeps the old value where the guard
// is false: it reads its destination too. A store reads its values (kept in d[]).
void KernelCfg::ReadsWrites(const Inst& in, std::vector<uint32_t>& reads, std::vector<uint32_t>& writes) const {
  reads.clear();
  writes.clear();
  if (in.op == Op::kCall || in.op == Op::kRet) {     // a call copies arguments in; a ret results out
    for (size_t i = 0; i < p_->calls.size(); ++i) {  // (of any call site, for a ret: conservative)
      const CallSite& cs = p_->calls[i];
      if (in.op == Op::kCall && i != in.target) continue;
      const auto& from = in.op == Op::kCall ? cs.arg_slots : cs.ret_slots;
      const auto& to = in.op == Op::kCall ? cs.param_slots : cs.result_slots;
      reads.insert(reads.end(), from.begin(), from.end());
      writes.insert(writes.end(), to.begin(), to.end());
      reads.insert(reads.end(), to.begin(), to.end());  // lanes that do not run it keep them
    }
    if (in.guard != kNoSlot) reads.push_back(in.guard);
    return;
  }
  for (uint32_t s : in.s) {
    if (s != kNoSlot) reads.push_back(s);
  }
  if (in.guard != kNoSlot) reads.push_back(in.guard);
  if (IsTerminator(in.op)) return;
  for (uint32_t d : in.d) {
    if (d == kNoSlot) continue;
    if (in.op == Op::kSt) {
      reads.push_back(d);
      continue;
    }
    writes.push_back(d);
    if (in.guard != kNoSlot) reads.push_back(d);
  }
}

// Which slots hold one value for every thread of the CTA wherever they are read (a static
// divergence analysis). Thread-dependent values start at %tid, %laneid, %warpid, the lane
// masks and memory loads; they flow through data, and through control: a slot written in the
// blocks between a branch on a thread-dependent value and the point all its paths meet again
// (the branch's immediate post-dominator) differs between threads that took different paths.
void KernelCfg::FindUniform() {
  if (has_calls) {  // the analysis is not interprocedural: with calls every slot is per thread
    divergent.assign(p_->slot_count, 1);
    return;
  }
  divergent.assign(p_->slot_count, 0);
  for (uint32_t s = 0; s < kSpecialCount; ++s) {
    if (SpecialScope(s) == Scope::kThread) divergent[p_->special_base + s] = 1;
  }
  const auto ipdom = ImmediatePostDominators();
  std::map<uint32_t, std::vector<uint32_t>> region_writes;  // per block branching per thread
  std::vector<uint32_t> reads, writes;
  for (bool changed = true; changed;) {
    changed = false;
    auto mark = [&](uint32_t s) {
      if (!divergent[s]) divergent[s] = 1, changed = true;
    };
    for (uint32_t b = 0; b < starts.size(); ++b) {
      for (uint32_t pc = starts[b]; pc < BlockEnd(b); ++pc) {
        const Inst& in = p_->code[pc];
        ReadsWrites(in, reads, writes);
        // Loads, atomics, warp instructions and the clock give each thread its own value.
        bool d = in.op == Op::kLd || in.op == Op::kAtom || in.op == Op::kShfl || in.op == Op::kVote ||
                 in.op == Op::kRedux || in.op == Op::kMatch || in.op == Op::kActivemask || in.op == Op::kClock;
        for (uint32_t r : reads) d = d || divergent[r];
        if (d) {
          for (uint32_t w : writes) mark(w);
        }
      }
      const Inst& last = p_->code[BlockEnd(b) - 1];
      if (IsTerminator(last.op) && last.guard != kNoSlot && divergent[last.guard]) {
        auto it = region_writes.find(b);
        if (it == region_writes.end()) {  // the region does not change between passes
          std::set<uint32_t> slots;
          for (uint32_t r : Region(b, ipdom[b])) {
            for (uint32_t pc = starts[r]; pc < BlockEnd(r); ++pc) {
              ReadsWrites(p_->code[pc], reads, writes);
              slots.insert(writes.begin(), writes.end());
            }
          }
          it = region_writes.emplace(b, std::vector<uint32_t>(slots.begin(), slots.end())).first;
        }
        for (uint32_t w : it->second) mark(w);
      }
    }
  }
}

// Per block, its immediate post-dominator (kExit: only the virtual exit).
std::vector<uint32_t> KernelCfg::ImmediatePostDominators() const {
  const uint32_t n = static_cast<uint32_t>(starts.size());
  // pdom[b]: bit set over blocks (the virtual exit is implicit: it post-dominates everything).
  std::vector<std::vector<bool>> pdom(n, std::vector<bool>(n, true));
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t b = n; b-- > 0;) {
      std::vector<bool> next(n, true);
      bool to_exit = false;
      for (uint32_t s : succ[b]) {
        if (s == kExit) {
          to_exit = true;
          continue;
        }
        for (uint32_t i = 0; i < n; ++i) next[i] = next[i] && pdom[s][i];
      }
      if (to_exit) std::fill(next.begin(), next.end(), false);
      next[b] = true;
      if (next != pdom[b]) {
        pdom[b] = std::move(next);
        changed = true;
      }
    }
  }
  std::vector<uint32_t> ipdom(n, kExit);
  for (uint32_t b = 0; b < n; ++b) {
    size_t best = 0;
    for (uint32_t d = 0; d < n; ++d) {  // the nearest strict post-dominator has the most of its own
      if (d == b || !pdom[b][d]) continue;
      size_t size = static_cast<size_t>(std::count(pdom[d].begin(), pdom[d].end(), true));
      if (size > best) best = size, ipdom[b] = d;
    }
  }
  return ipdom;
}

// Blocks reachable from `b`'s successors without passing `stop`.
std::vector<uint32_t> KernelCfg::Region(uint32_t b, uint32_t stop) const {
  std::vector<bool> in(starts.size(), false);
  std::vector<uint32_t> work, out;
  for (uint32_t s : succ[b]) work.push_back(s);
  while (!work.empty()) {
    uint32_t x = work.back();
    work.pop_back();
    if (x == kExit || x == stop || in[x]) continue;
    in[x] = true;
    out.push_back(x);
    for (uint32_t s : succ[x]) work.push_back(s);
  }
  return out;
}

}  // namespace gpuwasm::device::cpu
