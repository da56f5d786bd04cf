// What every Store shares (store.h): deploy status names, function ids, the clock it stamps.
#include "store/store.h"

#include <chrono>

#include "common/unique_name.h"

namespace gpuwasm::store {

std::string_view DeployStatusName(DeployStatus s) {
  switch (s) {
    case DeployStatus::kCompiling: return "compiling";
    case DeployStatus::kReady: return "ready";
    case DeployStatus::kFailed: return "failed";
  }
  return "unknown";
}

Result<DeployStatus> ParseDeployStatus(std::string_view name) {
  if (name == "compiling") return DeployStatus::kCompiling;
  if (name == "ready") return DeployStatus::kReady;
  if (name == "failed") return DeployStatus::kFailed;
  return Status::InvalidArgument("unknown deploy status '" + std::string(name) + "'");
}

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string NewFunctionId() {
  // Fresh entropy each time: a generator seeded once would hand forked processes, or nodes
  // sharing a database, the same sequence.
  return "fn_" + UniqueSuffix();
}

}  // namespace gpuwasm::store
