// `gpuwasm doctor`: checks that this machine can run gpuwasm and says what it found: the C
// compiler and wasm2c the engine compiles guests with, the CUDA driver, and NVML (GPUs, GPM). Each
// check is one line; the exit status is non-zero when something required is missing. It also
// serves as the native smoke test of a fresh build (`make demo` runs it).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/output.h"
#include "cli/version.h"
#include "device/cuda/driver.h"
#include "nvml/nvml.h"

namespace gpuwasm::cli {
namespace {

// Full path of an executable named `name` on PATH, or "" when there is none.
std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  std::string p(path);
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string dir = p.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return "";
}

struct Check {
  std::string what;
  bool ok;
  bool required;
  std::string detail;
};

int RunDoctor() {
  std::vector<Check> checks;
  std::string cc = FindOnPath("cc");
  checks.push_back({"C compiler (cc) for guest AOT compile", !cc.empty(), true,
                    cc.empty() ? "not on PATH: install gcc (scripts/install-deps.sh)" : cc});
  std::string tcc = FindOnPath("tcc");
  checks.push_back({"tcc for large modules' quick tier (optional)", !tcc.empty(), false,
                    tcc.empty() ? "not on PATH: large modules deploy only when cc is done (install tcc)" : tcc});
  std::string w2c = FindOnPath("wasm2c");
  checks.push_back({"wasm2c (Debian wabt)", !w2c.empty(), true, w2c.empty() ? "not on PATH: install wabt" : w2c});
  // The CUDA driver: loads, initializes, is new enough, and sees a device (the same probe
  // `--device auto` will use). $GPUWASM_CUDA_LIBRARY picks another library.
  auto driver = device::cuda::CudaDriver::Load();
  Result<device::cuda::GpuProbe> gpu =
      driver.ok() ? (*driver)->Probe() : Result<device::cuda::GpuProbe>(driver.status());
  if (gpu.ok()) {
    std::string detail = "CUDA " + gpu->cuda_version() + ", " + std::to_string(gpu->device_count) +
                         " device(s), first: " + gpu->first_device_name;
    auto info = (*driver)->QueryDevice(0);
    if (info.ok()) {
      char limits[128];
      std::snprintf(limits, sizeof limits, " (sm_%d%d, %u SMs, %.1f GiB)", info->compute_major, info->compute_minor,
                    info->sm_count, static_cast<double>(info->total_memory) / (1 << 30));
      detail += limits;
    } else {
      detail += " (limits unknown: " + info.status().message() + ")";
    }
    checks.push_back({"CUDA driver", true, false, detail});
  } else {
    checks.push_back({"CUDA driver", false, false, gpu.status().message() + ": CPU device only"});
  }
  auto lib = nvml::Nvml::Open();
  if (!lib.ok()) {
    checks.push_back({"NVML (GPU telemetry)", false, false, lib.status().message() + ": no GPU telemetry"});
  } else {
    uint32_t n = (*lib)->device_count().value_or(0), gpm = 0;
    for (uint32_t i = 0; i < n; ++i) {
      auto d = nvml::Device::ByIndex(*lib, i);
      if (d.ok() && d->gpm_supported()) ++gpm;
    }
    checks.push_back({"NVML (GPU telemetry)", true, false,
                      "driver " + (*lib)->driver_version().value_or("?") + ", " + std::to_string(n) + " GPU(s), " +
                          std::to_string(gpm) + " with GPM"});
  }

  bool all_required = true;
  if (JsonOutput()) {
    nlohmann::json list = nlohmann::json::array();
    for (const Check& c : checks) {
      list.push_back({{"check", c.what}, {"ok", c.ok}, {"required", c.required}, {"detail", c.detail}});
      if (c.required && !c.ok) all_required = false;
    }
    PrintJson({{"version", kVersionLine}, {"ready", all_required}, {"checks", list}});
    return all_required ? 0 : 1;
  }
  std::printf("%s\n", kVersionLine);
  for (const Check& c : checks) {
    const char* mark = c.ok ? "ok  " : (c.required ? "FAIL" : "--  ");
    std::printf("  [%s] %-40s %s\n", mark, c.what.c_str(), c.detail.c_str());
    if (c.required && !c.ok) all_required = false;
  }
  std::printf("doctor: %s\n", all_required ? "ready" : "missing requirements");
  return all_required ? 0 : 1;
}

}  // namespace

void RegisterDoctor(CLI::App& app) {
  CLI::App* cmd =
      app.add_subcommand("doctor", "Check that this machine can run gpuwasm (compiler, wasm2c, CUDA driver, NVML)");
  cmd->callback([] { SetExitCode(RunDoctor()); });
}

}  // namespace gpuwasm::cli
