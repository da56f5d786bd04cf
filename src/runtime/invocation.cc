#include "runtime/invocation.h"

#include <cctype>

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

Status CheckArgsAndEnv(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  size_t total = 0;
  for (const auto* list : {&args, &env}) {
    const char* what = list == &args ? "argument" : "environment entry";
    if (list->size() > kMaxInvocationStrings) {
      return Status::InvalidArgument(std::to_string(list->size()) + " " + what + "s: at most " +
                                     std::to_string(kMaxInvocationStrings) + " are allowed");
    }
    for (size_t i = 0; i < list->size(); ++i) {
      const std::string& s = (*list)[i];
      const std::string which = std::string(what) + " " + std::to_string(i + 1);
      if (s.size() > kMaxInvocationString) {
        return Status::InvalidArgument(which + " is " + std::to_string(s.size()) + " bytes: at most " +
                                       std::to_string(kMaxInvocationString) + " are allowed");
      }
      if (s.find('\0') != std::string::npos) return Status::InvalidArgument(which + " contains a NUL byte");
      total += s.size();
      if (list == &env) {
        const size_t eq = s.find('=');
        bool key_ok = eq != std::string::npos && eq > 0 && !std::isdigit(static_cast<unsigned char>(s[0]));
        for (size_t k = 0; key_ok && k < eq; ++k) {
          key_ok = std::isalnum(static_cast<unsigned char>(s[k])) || s[k] == '_';
        }
        if (!key_ok) {
          return Status::InvalidArgument(which + " '" + s.substr(0, 64) +
                                         "' is not KEY=value with KEY of letters, digits and _ (not first a digit)");
        }
      }
    }
  }
  if (total > kMaxInvocationStringBytes) {
    return Status::InvalidArgument("arguments and environment are " + std::to_string(total) + " bytes: at most " +
                                   std::to_string(kMaxInvocationStringBytes) + " are allowed");
  }
  return Status::Ok();
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
       {"backtrace", r.backtrace},
       {"metrics", r.metrics}};
}

}  // namespace gpuwasm::runtime
