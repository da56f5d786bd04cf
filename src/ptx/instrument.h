// Instrumented PTX: the host rewrites every module a guest loads so that isolation does not rest on
// the device (docs/adr/0009-instrumented-ptx.md).
//
//   Fence     every global and generic load, store, atomic, reduction and async-copy source has its
//             address checked against the instance's window [base, base + size) before it runs
//             (one sub, one setp, one branch). An access outside (that is not a generic access to
//             shared or local memory, nor inside one of the module's own variables) records its
//             original PTX line, kind, size and address in the control block, raises the abort
//             word and exits: a clean kernel exit instead of a write into another instance's
//             buffer or a process-fatal fault.
//   Deadline  every backward branch, indirect branch and call (and every kStraightLineBudget
//             instructions of straight-line code) first reads the control block's abort word
//             (a volatile global load) and exits when it is set; the host sets it at the
//             invocation's deadline, so a runaway kernel ends without ending its process.
//   Refusal   instructions a tenant must not use, or that touch memory in ways the fence does not
//             cover, are Unsupported by name and line; trap becomes a recorded fault and an exit
//             (on a GPU it is a sticky, context-fatal error), nanosleep is bounded.
//
// Every .entry gets three hidden parameters after its own (HiddenParams): the window base, the
// window size and the control block's address. Device functions read them from a 24-byte static
// shared variable the entry fills. Shared and local memory are not fenced: a GPU bounds them per
// CTA and per thread in hardware (an access outside is a fault of that kernel's context, never an
// access to another instance's memory); the CPU device checks them itself.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "ptx/ast.h"

namespace gpuwasm::ptx {

// Part of the cache key of instrumented modules: bump it whenever the output changes.
inline constexpr uint32_t kInstrumentVersion = 1;

// Instructions of straight-line code between two abort checks.
inline constexpr uint32_t kStraightLineBudget = 4096;

// The longest nanosleep an instrumented kernel can ask for (a larger operand is clamped).
inline constexpr uint32_t kMaxNanosleepNs = 1'000'000;

// The most statements the passes write into one module (the parser's own bound, ParseLimits): a
// larger result is ResourceExhausted, so a small hostile module cannot make a huge one.
inline constexpr size_t kMaxInstrumentedStatements = 1 << 19;

// The smallest window the host may pass (the fence precomputes size - n for accesses up to 64 bytes).
inline constexpr uint64_t kMinWindowBytes = 4096;

// The names of the hidden parameters, in order (each .u64, 8-aligned, after the kernel's own).
inline constexpr const char* kHiddenParams[3] = {"__gw_window_base", "__gw_window_size", "__gw_control"};
inline constexpr uint64_t kHiddenParamBytes = 24;

// The control block in device memory (host-visible; 8-aligned, 32 bytes). The kernel only reads
// `abort` and writes the rest when it stops itself; the host zeroes it before the first launch.
struct ControlBlock {
  uint32_t abort = 0;    // nonzero: instrumented kernels exit at their next check
  uint32_t fault = 0;    // ControlFault; the first thread to stop itself wins
  uint32_t line = 0;     // PTX line of the instruction, in the text the guest loaded
  uint32_t access = 0;   // bit 16: a store (atomics and reductions too); low 16 bits: bytes
  uint64_t address = 0;  // the address the access would have used
  uint64_t reserved = 0;
};
static_assert(sizeof(ControlBlock) == 32);

enum ControlFault : uint32_t { kNoFault = 0, kFenceFault = 1, kTrapFault = 2 };

struct InstrumentOptions {
  bool fence = true;
  bool deadline = true;
};

// The instrumented module: `m` with the passes applied and the hidden parameters added.
// Unsupported names every refused instruction with its line; ResourceExhausted when the result
// would pass kMaxInstrumentedStatements.
Result<Module> Instrument(const Module& m, const InstrumentOptions& options = {});

// The device fault message for a control block a kernel filled (fault != kNoFault), the same words
// the CPU device uses for its own checks: "kernel 'k' (PTX line 23): global store of 4 bytes at
// 0x7f00 is outside the instance's buffers".
std::string DescribeControlFault(const ControlBlock& block, const std::string& kernel);

// What a launch of `kernel` came to, from its control block as the host sees it (`control`: the 32
// bytes, 8-aligned): OK when nothing is recorded, DeviceFault(DescribeControlFault) for a recorded
// fault, DeadlineExceeded when only the abort word is raised.
Status ControlBlockStatus(const void* control, const std::string& kernel);

}  // namespace gpuwasm::ptx
