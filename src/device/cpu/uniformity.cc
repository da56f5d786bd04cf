// Which values the threads of a launch share (uniformity.h).
#include "device/cpu/uniformity.h"

#include <algorithm>
#include <utility>

namespace gpuwasm::device::cpu {

void ReadsWrites(const Program& p, const Inst& in, std::vector<uint32_t>& reads, std::vector<uint32_t>& writes) {
  reads.clear();
  writes.clear();
  if (in.op == Op::kCall || in.op == Op::kRet) {   // a call copies arguments in; a ret results out
    for (size_t i = 0; i < p.calls.size(); ++i) {  // (of any call site, for a ret: conservative)
      const CallSite& cs = p.calls[i];
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

std::vector<uint32_t> ImmediateDominators(uint32_t root, const std::vector<std::vector<uint32_t>>& next,
                                          const std::vector<std::vector<uint32_t>>& prev,
                                          const std::function<bool(uint64_t)>& spend) {
  const size_t n = next.size();
  // Postorder from the root.
  std::vector<uint32_t> order, number(n, kNoDominator);
  std::vector<std::pair<uint32_t, uint32_t>> stack = {{root, 0}};
  std::vector<uint8_t> seen(n, 0);
  seen[root] = 1;
  while (!stack.empty()) {
    auto& [x, i] = stack.back();
    if (i < next[x].size()) {
      const uint32_t y = next[x][i++];
      if (!seen[y]) seen[y] = 1, stack.emplace_back(y, 0);
      continue;
    }
    number[x] = static_cast<uint32_t>(order.size());
    order.push_back(x);
    stack.pop_back();
  }
  if (!spend(order.size())) return {};
  std::vector<uint32_t> idom(n, kNoDominator);
  idom[root] = root;
  uint64_t steps = 0;
  auto intersect = [&](uint32_t a, uint32_t b) {
    while (a != b) {
      while (number[a] < number[b]) a = idom[a], ++steps;
      while (number[b] < number[a]) b = idom[b], ++steps;
    }
    return a;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = order.size() - 1; i-- > 0;) {  // reverse postorder, the root (last) excepted
      const uint32_t x = order[i];
      uint32_t best = kNoDominator;
      for (uint32_t p : prev[x]) {
        if (idom[p] == kNoDominator) continue;
        best = best == kNoDominator ? p : intersect(p, best);
      }
      steps += prev[x].size();
      if (best != idom[x]) idom[x] = best, changed = true;
    }
    if (!spend(steps)) return {};
    steps = 0;
  }
  return idom;
}

// Instructions whose operands are all launch-invariant and whose results go to registers no other
// instruction (or call) writes: then every thread of every CTA computes the same values. Control
// does not matter: the value is the same wherever it is computed, and a CTA that does not reach
// the instruction does not read its result either.
std::vector<uint8_t> LaunchInvariant(const Program& p) {
  std::vector<uint32_t> defs(p.slot_count, 0);
  for (const Inst& in : p.code) {
    for (uint32_t d : in.d) {
      if (d != kNoSlot && d < defs.size()) ++defs[d];
    }
  }
  for (const CallSite& cs : p.calls) {
    for (uint32_t d : cs.param_slots) ++defs[d];
    for (uint32_t d : cs.result_slots) ++defs[d];
  }
  std::vector<uint8_t> slot(p.slot_count, 0);
  for (uint32_t c = 0; c < p.consts.size(); ++c) slot[p.const_base + c] = 1;
  for (uint32_t sp = 0; sp < kSpecialCount; ++sp) {
    if (SpecialScope(sp) == Scope::kLaunch) slot[p.special_base + sp] = 1;
  }
  std::vector<uint8_t> inv(p.code.size(), 0);
  // Passes in program order: nvcc defines before use in straight-line code, so one pass finds
  // nearly all; at most four keep the cost linear for any input (an unmarked instruction is only
  // a missed optimisation).
  bool changed = true;
  for (int pass = 0; pass < 4 && changed; ++pass) {
    changed = false;
    for (size_t pc = 0; pc < p.code.size(); ++pc) {
      const Inst& in = p.code[pc];
      if (inv[pc] || !ComputesFromSources(in.op) || in.guard != kNoSlot) continue;
      bool ok = true;
      for (uint32_t s : in.s) ok = ok && (s == kNoSlot || (s < slot.size() && slot[s]));
      bool any_dst = false;
      for (uint32_t d : in.d) {
        if (d == kNoSlot) continue;
        any_dst = true;
        ok = ok && d < defs.size() && defs[d] == 1;
      }
      if (!ok || !any_dst) continue;
      inv[pc] = 1;
      for (uint32_t d : in.d) {
        if (d != kNoSlot) slot[d] = 1;
      }
      changed = true;
    }
  }
  return inv;
}

namespace {

constexpr uint32_t kExit = 0xffffffffu;  // the virtual exit block
constexpr uint32_t kNone = 0xfffffffeu;  // no immediate post-dominator (the block cannot reach the exit)

// Loads, atomics, warp instructions and the clock give each thread its own value.
bool GivesEachThreadItsOwn(Op op) {
  return op == Op::kLd || op == Op::kAtom || op == Op::kShfl || op == Op::kVote || op == Op::kRedux ||
         op == Op::kMatch || op == Op::kActivemask || op == Op::kClock;
}

// The analysis of one module, kernel after kernel, into `div` (per slot). Stamps (one per kernel)
// mark the instructions a kernel reaches, so no per-kernel array is as long as the module.
class Divergence {
 public:
  explicit Divergence(const Program& p) : p_(p), div_(p.slot_count, 0) {
    for (uint32_t s = 0; s < kSpecialCount; ++s) {
      if (SpecialScope(s) == Scope::kThread) div_[p.special_base + s] = 1;
    }
    reached_.assign(p.code.size(), 0);
    leader_.assign(p.code.size(), 0);
  }

  std::vector<uint8_t> Run() && {
    for (uint32_t k = 0; k < p_.kernels.size(); ++k) {
      if (!Kernel(k + 1, p_.kernels[k].entry_pc)) {  // out of work: nothing below the specials is known
        std::fill(div_.begin(), div_.begin() + std::min<size_t>(p_.special_base, div_.size()), 1);
        break;
      }
    }
    return std::move(div_);
  }

 private:
  bool Spend(uint64_t n) {
    work_ += n;
    return work_ <= kMaxDivergenceWork;
  }

  bool Reached(uint32_t pc) const { return pc < reached_.size() && reached_[pc] == stamp_; }

  // The block starting at `pc`; the block holding `pc`.
  uint32_t BlockOf(uint32_t pc) const {
    return static_cast<uint32_t>(std::lower_bound(starts_.begin(), starts_.end(), pc) - starts_.begin());
  }
  uint32_t BlockHolding(uint32_t pc) const {
    return static_cast<uint32_t>(std::upper_bound(starts_.begin(), starts_.end(), pc) - starts_.begin()) - 1;
  }

  // ReadsWrites into reads_ and writes_, paid for (a ret reads every call site's results).
  bool Operands(uint32_t pc) {
    ReadsWrites(p_, p_.code[pc], reads_, writes_);
    return Spend(1 + reads_.size() + writes_.size());
  }

  // Only registers (and parameter slots) are written: the specials keep their scope and the
  // constants, shared by every kernel of the module, are uniform.
  void Mark(uint32_t s) {
    if (s < p_.special_base && !div_[s]) {
      div_[s] = 1;
      queue_.push_back(s);
    }
  }

  // The instructions the kernel reaches from `entry` (into callees too), and the block leaders.
  bool Walk(uint32_t entry) {
    pcs_.clear();
    has_calls_ = false;
    std::vector<uint32_t> work = {entry};
    leader_[entry] = stamp_;
    while (!work.empty()) {
      uint32_t pc = work.back();
      work.pop_back();
      while (pc < p_.code.size() && !Reached(pc)) {
        reached_[pc] = stamp_;
        pcs_.push_back(pc);
        if (!Spend(1)) return false;
        const Inst& in = p_.code[pc];
        auto lead = [&](uint32_t at) {
          if (at < leader_.size()) leader_[at] = stamp_;
        };
        bool ends = false;
        if (in.op == Op::kCall) {
          has_calls_ = true;
          const uint32_t callee = p_.calls[in.target].callee_entry;
          lead(callee);
          work.push_back(callee);
          lead(pc + 1);
        } else if (in.op == Op::kBra) {
          lead(in.target);
          work.push_back(in.target);
          lead(pc + 1);
          ends = in.guard == kNoSlot;
        } else if (in.op == Op::kRet || in.op == Op::kExit) {
          lead(pc + 1);
          ends = in.guard == kNoSlot;
        } else if (in.op == Op::kBar || in.op == Op::kWarpSync) {
          lead(pc + 1);
        }
        if (ends) break;
        ++pc;
      }
    }
    std::sort(pcs_.begin(), pcs_.end());
    return true;
  }

  // Blocks: a reached leader, or a reached instruction after one not reached, starts one.
  void Blocks() {
    starts_.clear();
    ends_.clear();
    for (size_t i = 0; i < pcs_.size(); ++i) {
      const uint32_t pc = pcs_[i];
      if (i == 0 || leader_[pc] == stamp_ || pcs_[i - 1] + 1 != pc) {
        if (!starts_.empty()) ends_.push_back(pcs_[i - 1] + 1);
        starts_.push_back(pc);
      }
    }
    if (!pcs_.empty()) ends_.push_back(pcs_.back() + 1);
    const auto n = static_cast<uint32_t>(starts_.size());
    succ_.assign(n, {});
    for (uint32_t b = 0; b < n; ++b) {
      const uint32_t last = ends_[b] - 1;
      const Inst& in = p_.code[last];
      auto next = [&] { succ_[b].push_back(Reached(last + 1) ? BlockOf(last + 1) : kExit); };
      if (in.op == Op::kBra) {
        succ_[b].push_back(BlockOf(in.target));
        if (in.guard != kNoSlot) next();
      } else if (in.op == Op::kRet || in.op == Op::kExit) {
        succ_[b].push_back(kExit);
        if (in.guard != kNoSlot) next();
      } else {
        next();  // into the next block (control past the end of the code leaves)
      }
    }
  }

  // Per block, its immediate post-dominator: kExit (only the virtual exit), or kNone where the
  // block cannot reach the exit. Cooper, Harvey and Kennedy's iteration over the reverse graph.
  bool PostDominators() {
    const auto n = static_cast<uint32_t>(starts_.size());
    const uint32_t exit = n;  // the virtual exit as a node
    std::vector<std::vector<uint32_t>> succ(n + 1), pred(n + 1);
    for (uint32_t b = 0; b < n; ++b) {
      for (uint32_t s : succ_[b]) {
        succ[b].push_back(s == kExit ? exit : s);
        pred[s == kExit ? exit : s].push_back(b);
      }
    }
    const std::vector<uint32_t> ipdom = ImmediateDominators(exit, pred, succ, [this](uint64_t w) { return Spend(w); });
    if (ipdom.empty()) return false;
    ipdom_.assign(n, kNone);
    for (uint32_t b = 0; b < n; ++b) {
      ipdom_[b] = ipdom[b] == exit ? kExit : ipdom[b] == kNoDominator ? kNone : ipdom[b];
    }
    return true;
  }

  // Every slot written in the blocks reachable from `b`'s successors without passing its
  // immediate post-dominator: threads that took different paths there differ in them.
  bool RegionWrites(uint32_t b) {
    const uint32_t stop = ipdom_[b];
    std::vector<uint32_t> work(succ_[b].begin(), succ_[b].end());
    while (!work.empty()) {
      const uint32_t x = work.back();
      work.pop_back();
      if (x == kExit || x == stop || in_region_[x] == b + 1) continue;
      in_region_[x] = b + 1;
      for (uint32_t pc = starts_[x]; pc < ends_[x]; ++pc) {
        if (!Operands(pc)) return false;
        for (uint32_t w : writes_) Mark(w);
      }
      work.insert(work.end(), succ_[x].begin(), succ_[x].end());
    }
    return true;
  }

  // An instruction that reads a divergent slot: its results are divergent; a branch's (or exit's,
  // or barrier's) guard makes everything written up to where the paths meet again divergent.
  bool Visit(uint32_t pc) {
    const Inst& in = p_.code[pc];
    if (IsTerminator(in.op)) {
      const uint32_t b = BlockHolding(pc);
      if (in.guard == kNoSlot || !div_[in.guard] || region_done_[b]) return true;
      region_done_[b] = 1;
      return RegionWrites(b);
    }
    if (!Operands(pc)) return false;
    for (uint32_t w : writes_) Mark(w);
    return true;
  }

  bool Kernel(uint32_t stamp, uint32_t entry) {
    stamp_ = stamp;
    if (entry >= p_.code.size()) return true;
    if (!Walk(entry)) return false;
    if (has_calls_) {  // not interprocedural: every slot the kernel (and its callees) touches
      for (uint32_t pc : pcs_) {
        if (!Operands(pc)) return false;
        for (uint32_t r : reads_) Mark(r);
        for (uint32_t w : writes_) Mark(w);
      }
      queue_.clear();
      return true;
    }
    Blocks();
    if (!PostDominators()) return false;
    // Who reads each slot: (slot, pc) pairs, sorted by slot.
    readers_.clear();
    for (uint32_t pc : pcs_) {
      if (!Operands(pc)) return false;
      for (uint32_t r : reads_) readers_.emplace_back(r, pc);
    }
    std::sort(readers_.begin(), readers_.end());
    region_done_.assign(starts_.size(), 0);
    in_region_.assign(starts_.size(), 0);
    queue_.clear();
    for (uint32_t pc : pcs_) {
      if (!GivesEachThreadItsOwn(p_.code[pc].op)) continue;
      if (!Operands(pc)) return false;
      for (uint32_t w : writes_) Mark(w);
    }
    // Slots divergent before this kernel (the thread-scope specials) seed it too.
    for (size_t i = 0; i < readers_.size(); ++i) {
      if (div_[readers_[i].first] && !Visit(readers_[i].second)) return false;
    }
    while (!queue_.empty()) {
      const uint32_t s = queue_.back();
      queue_.pop_back();
      auto it = std::lower_bound(readers_.begin(), readers_.end(), std::make_pair(s, uint32_t{0}));
      for (; it != readers_.end() && it->first == s; ++it) {
        if (!Spend(1) || !Visit(it->second)) return false;
      }
    }
    return true;
  }

  const Program& p_;
  std::vector<uint8_t> div_;
  uint64_t work_ = 0;
  uint32_t stamp_ = 0;
  std::vector<uint32_t> reached_, leader_;  // per pc: the stamp of the last kernel that reached it / leads there
  std::vector<uint32_t> pcs_;               // the kernel's reached instructions, sorted
  bool has_calls_ = false;
  std::vector<uint32_t> starts_, ends_;  // per block: its first instruction, one past its last
  std::vector<std::vector<uint32_t>> succ_;
  std::vector<uint32_t> ipdom_;
  std::vector<std::pair<uint32_t, uint32_t>> readers_;
  std::vector<uint8_t> region_done_;
  std::vector<uint32_t> in_region_;  // per block: 1 + the branch block whose region last took it
  std::vector<uint32_t> queue_;
  std::vector<uint32_t> reads_, writes_;
};

}  // namespace

std::vector<uint8_t> CtaDivergent(const Program& p) { return Divergence(p).Run(); }

}  // namespace gpuwasm::device::cpu
