// gpuwasm's own implementation of wabt 1.0.32's wasm-rt.h, the runtime that wasm2c-generated
// code calls (wasm_rt_trap, wasm_rt_allocate_memory, ...). It replaces Debian's
// libwasm-rt-impl.a, which has process-global trap state and leaks address space.
//
// - Trap state is thread-local: each thread runs at most one guest call at a time, entered with
//   GuestCall (below), and a trap unwinds only that call.
// - A linear memory reserves 8 GiB of address space (4 GiB index + 4 GiB offset, so generated
//   code needs no bounds checks) and commits pages as the memory grows. On free it is zeroed and
//   kept for the next instance (at most 8, each with at most 1 MiB resident), or unmapped.
// - SIGSEGV/SIGBUS are claimed only while the faulting thread is inside a guest call and the
//   address lies in that call's linear memory reservation, or in the thread's stack guard area
//   (guest stack exhaustion). Any other fault is handed to the previous handler (or the default
//   action), so host bugs still crash loudly.
// - Failure to map memory ends the call with kResourceExhausted; it never aborts the process.
//
// Internal to src/wasm/: hosts use Instance (instance.h).
#pragma once

#include <wasm-rt.h>

#include <atomic>
#include <csetjmp>
#include <cstdint>

#include "wasm/backtrace.h"
#include "wasm/trap.h"

namespace gpuwasm::wasm::rt {

// Installs the signal handlers once per process (idempotent, thread-safe).
void EnsureInitialized();

// Per-call limits consulted by wasm_rt_allocate_memory / tables during instantiation.
struct Limits {
  uint32_t max_memory_pages = 16384;  // 1 GiB
  uint32_t max_table_elements = 1u << 20;
};

// State of the guest call running on this thread.
struct CallState {
  sigjmp_buf jmp;
  TrapKind trap = TrapKind::kNone;
  bool exited = false;  // proc_exit
  int32_t exit_code = 0;
  const Limits* limits = nullptr;
  std::atomic<uint32_t>* interrupt = nullptr;  // the instance's interrupt flag
  wasm_rt_memory_t* memory = nullptr;          // set once known, for the fault handler
  // The native return addresses at a trap, innermost first (for its wasm backtrace).
  uintptr_t trap_addresses[kMaxTrapAddresses];
  int trap_address_count = 0;
};

// Makes `state` the current call of this thread (and sets up the alternate signal stack the
// first time a thread enters a guest). Must be paired with Leave on every path.
void Enter(CallState* state);
void Leave();

// Ends the current guest call: from host functions called by the guest. Never returns.
[[noreturn]] void Exit(int32_t code);
[[noreturn]] void Abort(TrapKind kind);

// Interrupt flag values stored by the watchdog / interrupter.
inline constexpr uint32_t kInterruptDeadline = 1;
inline constexpr uint32_t kInterruptRequested = 2;

// Linear memories kept for reuse (for tests).
size_t KeptMemories();

// Reserved address range of a memory (for tests): the mapping is [data, data + kReservation).
inline constexpr uint64_t kReservation = 8ull << 30;

}  // namespace gpuwasm::wasm::rt

// Symbols the generated code reaches (exported from the executable; see guest_symbols.dynlist).
extern "C" {
// Points at the running instance's interrupt flag, or at a zero word when none runs.
extern __thread volatile uint32_t* gpuwasm_rt_interrupt_flag;
// The same pointer through a call, for code from a compiler without thread-locals (the quick
// tier's tcc).
volatile uint32_t* gpuwasm_rt_interrupt_flag_address(void);
[[noreturn]] void gpuwasm_rt_interrupted(void);
}
