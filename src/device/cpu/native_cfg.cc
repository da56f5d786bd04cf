#include "device/cpu/native_cfg.h"

#include <algorithm>

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

}  // namespace gpuwasm::device::cpu
