// Why a guest call ended abnormally.
#pragma once

#include <cstdint>
#include <string_view>

namespace gpuwasm::wasm {

enum class TrapKind : uint8_t {
  kNone = 0,
  kOutOfBounds,      // linear memory or table access outside its bounds
  kIntegerOverflow,  // signed division overflow, float->int out of range
  kIntegerDivideByZero,
  kInvalidConversion,  // float->int of NaN
  kUnreachable,
  kIndirectCallMismatch,  // call_indirect: null entry, out of range, or wrong signature
  kUncaughtException,
  kStackExhausted,
  kDeadlineExceeded,   // the watchdog tripped the instance's interrupt flag
  kInterrupted,        // interrupted on request (shutdown), not by the deadline
  kResourceExhausted,  // instantiation could not get memory (mmap failed, table too large)
  kMemoryCap,          // the module's initial memory is above the instance's page cap
  kHostError,          // a host function aborted the call (details from the host)
};

// Stable snake_case name ("out_of_bounds", "deadline_exceeded", ...).
std::string_view TrapKindName(TrapKind kind);

}  // namespace gpuwasm::wasm
