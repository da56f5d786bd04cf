// What one invocation asks for and what it gave: shared by the runtime, the instance runner and
// the tenant worker processes (which carry it across their socket).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "host/metrics.h"

namespace gpuwasm::runtime {

// How an invocation ended. Requests refused before running (overloaded, not found, too large)
// are errors of Invoke() instead, counted as `rejected` in the totals.
enum class InvocationStatus : uint8_t {
  kOk = 0,         // the entry returned or exited with status 0
  kExitError = 1,  // exited with a non-zero status
  kTrap = 2,       // the guest trapped
  kDeadline = 3,   // the deadline passed (exit status 124)
  kError = 4,      // the instance could not run (instantiation failed, device unavailable, shutdown)
  // A process-fatal device error in its tenant's worker (an illegal address, ...: the CUDA driver
  // requires the process to be restarted); `error` names the fault and the kernel.
  kDeviceFault = 5,
  // Its tenant's worker process died (crashed, exceeded its memory limit, stopped answering, or
  // was killed) while it ran; the next invocation gets a fresh worker.
  kWorkerLost = 6,
};
inline constexpr size_t kInvocationStatusCount = 7;
// "ok", "exit_error", "trap", "deadline", "error", "device_fault", "worker_lost".
std::string_view InvocationStatusName(InvocationStatus s);

struct InvokeRequest {
  std::string input;
  std::optional<std::chrono::milliseconds> deadline;  // default: [runtime].default_deadline
  std::vector<std::string> args;                      // argv after argv[0]
  std::vector<std::string> env;                       // the guest's environment, "KEY=value" each
  std::string entry;                                  // "" = the function's entry
  // Called with the guest's stdout (fd 1) and stderr (fd 2) as it writes them, on the instance's
  // thread; only where the instance runs in this process (isolation "none": `gpuwasm run`).
  std::function<void(int fd, std::string_view bytes)> live_output;
};

// What an invocation may carry besides its body: argv after argv[0] and "KEY=value" environment
// entries, each at most kMaxInvocationStrings strings of kMaxInvocationString bytes, all of them
// kMaxInvocationStringBytes together; keys are [A-Za-z_][A-Za-z0-9_]*; no NUL anywhere.
inline constexpr size_t kMaxInvocationStrings = 64;
inline constexpr size_t kMaxInvocationString = 4096;
inline constexpr size_t kMaxInvocationStringBytes = 16384;
// InvalidArgument naming the first argument or entry that breaks these rules.
Status CheckArgsAndEnv(const std::vector<std::string>& args, const std::vector<std::string>& env);

struct InvokeResult {
  std::string tenant;
  std::string function_id;  // "" for InvokeModule
  std::string function_name;
  int64_t version = 0;
  InvocationStatus status = InvocationStatus::kOk;
  int exit_status = 0;  // the guest's (0-255); 124 on a deadline, 134 on a trap, 70 on an error
  std::string trap;     // trap kind name when status is kTrap or kDeadline
  std::string error;    // what went wrong when status is kError
  std::string output, stdout_text, stderr_text;
  bool stdout_truncated = false, stderr_truncated = false;
  std::chrono::microseconds duration{0};  // admission to end, queueing included
  std::chrono::milliseconds deadline{0};  // the deadline that applied
  host::InstanceMetricsSnapshot metrics;  // final snapshot, taken before teardown
  std::chrono::nanoseconds gpu_time{0};   // time its launches ran on the device
  std::string device;
  // Launches not finished when the guest returned (it did not synchronize): discarded with the
  // instance. Also said at the end of stderr_text.
  uint32_t discarded_launches = 0;
  // On a trap or deadline: the guest functions on its stack, innermost first (names from the
  // module's name section, else "wasm-function[N]"). Also at the end of stderr_text.
  std::vector<std::string> backtrace;
};
// Everything but the output bytes and stdout/stderr (which may be binary).
void to_json(nlohmann::json& j, const InvokeResult& r);

}  // namespace gpuwasm::runtime
