#include "runtime/invocation.h"

namespace gpuwasm::runtime {

std::string_view InvocationStatusName(InvocationStatus s) {
  switch (s) {
    case InvocationStatus::kOk: return "ok";
    case InvocationStatus::kExitError: return "exit_error";
    case InvocationStatus::kTrap: return "trap";
    case InvocationStatus::kDeadline: return "deadline";
    case InvocationStatus::kError: return "error";
    case InvocationStatus::kDeviceFault: return "device_fault";
    case InvocationStatus::kWorkerLost: return "worker_lost";
  }
  return "unknown";
}

void to_json(nlohmann::json& j, const InvokeResult& r) {
  auto opt = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
  j = {{"tenant", r.tenant},
       {"function_id", opt(r.function_id)},
       {"function", r.function_name},
       {"version", r.version},
       {"status", InvocationStatusName(r.status)},
       {"exit_status", r.exit_status},
       {"trap", opt(r.trap)},
       {"error", opt(r.error)},
       {"duration_ms", static_cast<double>(r.duration.count()) / 1e3},
       {"deadline_ms", r.deadline.count()},
       {"gpu_time_ms", static_cast<double>(r.gpu_time.count()) / 1e6},
       {"device", r.device},
       {"output_bytes", r.output.size()},
       {"stdout_truncated", r.stdout_truncated},
       {"stderr_truncated", r.stderr_truncated},
       {"discarded_launches", r.discarded_launches},
       {"metrics", r.metrics}};
}

}  // namespace gpuwasm::runtime
