// The control-flow graph native code is written from (internal to src/device/cpu/): a kernel's
// reachable instructions cut into basic blocks and each block's successors. Which register slots
// hold one value for every thread of the CTA is Decode's (uniformity.h). The C writer
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
#include "device/cpu/uniformity.h"

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

  // One past the block's last instruction (its terminator, or where the next block starts).
  uint32_t BlockEnd(uint32_t b) const { return ends[b]; }

  uint32_t BlockOf(uint32_t pc) const {
    return static_cast<uint32_t>(std::lower_bound(starts.begin(), starts.end(), pc) - starts.begin());
  }

  // One value for every thread of the CTA wherever the slot is read (Program::divergent). In a
  // kernel with calls native code treats no slot as uniform (the analysis is not interprocedural).
  bool IsUniform(uint32_t slot) const { return !has_calls && !p_->divergent[slot]; }

  // ReadsWrites (uniformity.h) over this CFG's program.
  void ReadsWrites(const Inst& in, std::vector<uint32_t>& reads, std::vector<uint32_t>& writes) const {
    cpu::ReadsWrites(*p_, in, reads, writes);
  }

  std::vector<uint32_t> starts, ends;       // per block: its first instruction, one past its last
  std::set<uint32_t> seen;                  // the reachable instructions
  std::vector<std::vector<uint32_t>> succ;  // per block: its successors (kExit: the virtual exit)
  std::set<uint32_t> host;                  // pcs of host blocks
  bool has_calls = false;

 private:
  // The instructions reachable from the entry, cut into blocks at branch targets and after
  // branches, barriers and exits; each block's successors.
  Status FindBlocks(const std::function<bool(const Inst&, uint32_t)>& writes_as_c);

  const Program* p_ = nullptr;
  const KernelEntry* k_ = nullptr;
};

}  // namespace gpuwasm::device::cpu
