// The control-flow graph native code is written from (internal to src/device/cpu/): a kernel's
// reachable instructions cut into basic blocks, each block's successors, and which register slots
// hold one value for every thread of the CTA (a static divergence analysis). The C writer
// (native_writer.cc) decides which instructions it writes as C; every other one is a block of its own.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "device/cpu/program.h"

namespace gpuwasm::device::cpu {

// "native code: WHAT (PTX line N)": why a kernel stays interpreted.
Status NativeUnsupported(const Inst& in, const std::string& what);

struct KernelCfg {
  static constexpr uint32_t kMaxInstructions = 20000, kMaxBlocks = 2000;
  static constexpr uint32_t kExit = 0xffffffffu;  // the virtual exit block

  // The CFG of `k` in `p`. `writes_as_c(in, pc)`: whether the C writer writes the instruction as
  // C; any other one (and every call and ret) is a host block, a block of that one instruction.
  // Unsupported when the kernel cannot have native code (too large, volatile shared memory, a
  // guarded barrier, control reaching the end of the code).
  static Result<KernelCfg> Build(const Program& p, const KernelEntry& k,
                                 const std::function<bool(const Inst&, uint32_t)>& writes_as_c);

  // bar.warp.sync ends a block too: the block runs thread after thread, so the threads of a warp
  // only see each other's shared-memory stores from before a __syncwarp() in the next block.
  // (A .func's ret is a host block: where it goes is the caller's.)
  static bool IsTerminator(Op op) { return op == Op::kBra || op == Op::kBar || op == Op::kWarpSync || op == Op::kExit; }

  // One past the block's last instruction (its terminator, or where the next block starts).
  uint32_t BlockEnd(uint32_t b) const { return ends[b]; }

  uint32_t BlockOf(uint32_t pc) const {
    return static_cast<uint32_t>(std::lower_bound(starts.begin(), starts.end(), pc) - starts.begin());
  }

  bool IsUniform(uint32_t slot) const { return !divergent[slot]; }

  // The register slots `in` reads and writes. A guarded write keeps the old value where the guard
  // is false: it reads its destination too. A store reads its values (kept in d[]).
  void ReadsWrites(const Inst& in, std::vector<uint32_t>& reads, std::vector<uint32_t>& writes) const;

  // Per block, its immediate post-dominator (kExit: only the virtual exit).
  std::vector<uint32_t> ImmediatePostDominators() const;

  // Blocks reachable from `b`'s successors without passing `stop`.
  std::vector<uint32_t> Region(uint32_t b, uint32_t stop) const;

  std::vector<uint32_t> starts, ends;       // per block: its first instruction, one past its last
  std::set<uint32_t> seen;                  // the reachable instructions
  std::vector<std::vector<uint32_t>> succ;  // per block: its successors (kExit: the virtual exit)
  std::set<uint32_t> host;                  // pcs of host blocks
  bool has_calls = false;
  std::vector<uint8_t> divergent;  // per slot: may differ between the CTA's threads

 private:
  // The instructions reachable from the entry, cut into blocks at branch targets and after
  // branches, barriers and exits; each block's successors.
  Status FindBlocks(const std::function<bool(const Inst&, uint32_t)>& writes_as_c);

  // Which slots hold one value for every thread of the CTA wherever they are read (a static
  // divergence analysis). Thread-dependent values start at %tid, %laneid, %warpid, the lane
  // masks and memory loads; they flow through data, and through control: a slot written in the
  // blocks between a branch on a thread-dependent value and the point all its paths meet again
  // (the branch's immediate post-dominator) differs between threads that took different paths.
  void FindUniform();

  const Program* p_ = nullptr;
  const KernelEntry* k_ = nullptr;
};

}  // namespace gpuwasm::device::cpu
