// Which values the threads of a launch share (internal to src/device/cpu/): computed once per
// module by Decode into the Program, and read by both tiers: the interpreter's converged
// execution computes an instruction with uniform sources once for the CTA and tests a uniform
// guard once; native code keeps a uniform slot in one C variable per block, outside the thread loop.
//
// Two properties, both seeded by SpecialScope (program.h):
//  - per instruction, launch-invariant: its result is the same wherever, in every CTA, it is
//    computed (Program::launch_invariant);
//  - per register slot, CTA-divergent: it may hold different values for the threads of one CTA
//    where it is read (Program::divergent), a static divergence analysis over each kernel's
//    control-flow graph.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "device/cpu/program.h"

namespace gpuwasm::device::cpu {

// The register slots `in` reads and writes. A guarded write keeps the old value where the guard
// is false: it reads its destination too. A store reads its values (kept in d[]). A call reads
// its arguments and writes the callee's parameters; a ret, every call site's results (it may
// return to any of them).
void ReadsWrites(const Program& p, const Inst& in, std::vector<uint32_t>& reads, std::vector<uint32_t>& writes);

// Whether `op` ends a block in the divergence analysis and in native code: a branch, an exit, or
// a barrier (a block runs thread after thread, so the threads of a CTA only see each other's
// shared-memory stores from before a barrier in the next block).
constexpr bool IsTerminator(Op op) {
  return op == Op::kBra || op == Op::kBar || op == Op::kWarpSync || op == Op::kExit;
}

// Whether `op`'s results follow from its source registers (and the kernel's parameters) alone:
// not from memory, the other lanes, the clock, nor control. Only such instructions can compute a
// value once for many threads.
constexpr bool ComputesFromSources(Op op) {
  switch (op) {
    case Op::kNop:
    case Op::kLd:
    case Op::kSt:
    case Op::kAtom:
    case Op::kShfl:
    case Op::kVote:
    case Op::kActivemask:
    case Op::kClock:
    case Op::kTrap:
    case Op::kBra:
    case Op::kCall:
    case Op::kRet:
    case Op::kExit:
    case Op::kBar:
    case Op::kWarpSync:
    case Op::kRedux:
    case Op::kMatch:
    case Op::kCpAsync: return false;
    default: return true;  // register-to-register arithmetic, conversions, ld.param of the kernel
  }
}

// Per instruction: launch-invariant (see Program::launch_invariant).
std::vector<uint8_t> LaunchInvariant(const Program& p);

// Per slot: may differ between the threads of a CTA where read (see Program::divergent). Values
// start to differ at the thread-scope special registers and at instructions that give each thread
// its own (loads, atomics, warp instructions, the clock); they flow through data, and through
// control: a slot written between a branch on a divergent value and the point all its paths meet
// again (the branch's immediate post-dominator) differs between threads that took different paths.
// Not interprocedural: every slot a kernel with calls touches is divergent. The work is bounded
// (kMaxDivergenceWork instruction visits for the module); past it every register slot is divergent.
std::vector<uint8_t> CtaDivergent(const Program& p);

inline constexpr uint64_t kMaxDivergenceWork = uint64_t{1} << 23;

// Immediate dominators of a graph's nodes from `root` (Cooper, Harvey and Kennedy's iteration over
// reverse postorder): `next[x]` are node x's successors, `prev[x]` its predecessors (both without
// sentinels). idom[root] == root; a node `root` does not reach gets kNoDominator. `spend(steps)`
// is told the work done (the postorder's size, then each pass's steps) and stops the analysis by
// returning false (then the result is empty). Post-dominators: the reverse graph from the exit.
inline constexpr uint32_t kNoDominator = 0xffffffffu;
std::vector<uint32_t> ImmediateDominators(uint32_t root, const std::vector<std::vector<uint32_t>>& next,
                                          const std::vector<std::vector<uint32_t>>& prev,
                                          const std::function<bool(uint64_t)>& spend);

}  // namespace gpuwasm::device::cpu
