#include "wasm/trap.h"

namespace gpuwasm::wasm {

std::string_view TrapKindName(TrapKind kind) {
  switch (kind) {
    case TrapKind::kNone: return "none";
    case TrapKind::kOutOfBounds: return "out_of_bounds";
    case TrapKind::kIntegerOverflow: return "integer_overflow";
    case TrapKind::kIntegerDivideByZero: return "integer_divide_by_zero";
    case TrapKind::kInvalidConversion: return "invalid_conversion";
    case TrapKind::kUnreachable: return "unreachable";
    case TrapKind::kIndirectCallMismatch: return "indirect_call_mismatch";
    case TrapKind::kUncaughtException: return "uncaught_exception";
    case TrapKind::kStackExhausted: return "stack_exhausted";
    case TrapKind::kDeadlineExceeded: return "deadline_exceeded";
    case TrapKind::kInterrupted: return "interrupted";
    case TrapKind::kResourceExhausted: return "resource_exhausted";
    case TrapKind::kMemoryCap: return "memory_cap";
    case TrapKind::kHostError: return "host_error";
  }
  return "unknown";
}

}  // namespace gpuwasm::wasm
