// `gpuwasm gpm`: a live view of NVML GPM metrics, like `dcgmi dmon`: every interval, one row per
// GPU (and MIG GPU instance) with the chosen metrics, as a table, JSON lines or Prometheus text.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cli/commands.h"
#include "cli/output.h"
#include "common/duration.h"
#include "nvml/nvml.h"
#include "telemetry/gpm_monitor.h"

namespace gpuwasm::cli {
namespace {

struct GpmFlags {
  std::string interval = "1s";
  std::string metrics;  // comma-separated names or ids; default: the monitor's set
  int count = 0;        // rounds of output; 0 = until interrupted
  std::string format = "table";
  std::string library;  // NVML library path
};

Result<std::vector<uint32_t>> ParseMetrics(const std::string& list) {
  if (list.empty()) return telemetry::GpmMonitorOptions::DefaultGpmMetrics();
  std::vector<uint32_t> ids;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const nvml::GpmMetricInfo* m =
        std::isdigit(static_cast<unsigned char>(item[0]))
            ? nvml::FindGpmMetric(static_cast<uint32_t>(std::strtoul(item.c_str(), nullptr, 10)))
            : nvml::FindGpmMetric(item);
    if (m == nullptr) return Status::InvalidArgument("unknown GPM metric '" + item + "' (see docs/metrics.md)");
    ids.push_back(m->id);
  }
  return ids;
}

int RunGpm(const GpmFlags& f) {
  auto fail = [](const Status& s, int code) { return Fail("gpm", s.message(), code); };
  auto interval = ParseDuration(f.interval);
  if (!interval.ok()) return fail(interval.status(), 64);
  auto ids = ParseMetrics(f.metrics);
  if (!ids.ok()) return fail(ids.status(), 64);
  auto nvml = nvml::Nvml::Open(f.library);
  if (!nvml.ok()) return fail(Status::Unavailable(nvml.status().message() + " (is an NVIDIA driver installed?)"), 69);
  telemetry::MetricRegistry registry;
  telemetry::GpmMonitorOptions o;
  o.interval = *interval;
  o.metrics = *ids;
  o.background = false;
  auto mon = telemetry::GpmMonitor::Start(*nvml, registry, o);
  if (!mon.ok()) return fail(mon.status(), 64);
  if ((*mon)->targets().empty())
    return fail(Status::Unsupported("no GPU with GPM support (Hopper or newer) was found"), 69);
  std::vector<int> width;
  for (uint32_t id : *ids)
    width.push_back(std::max<int>(10, static_cast<int>(std::strlen(nvml::FindGpmMetric(id)->name))));
  if (f.format == "table") {
    std::printf("%-4s %-4s", "gpu", "gi");
    for (size_t k = 0; k < ids->size(); ++k) std::printf(" %*s", width[k], nvml::FindGpmMetric((*ids)[k])->name);
    std::printf("\n");
  }
  for (int round = 0; f.count == 0 || round < f.count; ++round) {
    std::this_thread::sleep_for(*interval);
    auto results = (*mon)->Round();
    if (f.format == "prom") {
      std::fputs(registry.RenderPrometheus().c_str(), stdout);
    } else {
      for (const auto& r : results) {
        if (f.format == "json") {
          nlohmann::json j = {{"gpu", r.target.gpu}, {"uuid", r.target.uuid}};
          j["gpu_instance"] = r.target.gpu_instance ? nlohmann::json(*r.target.gpu_instance) : nlohmann::json(nullptr);
          if (!r.status.ok()) j["error"] = r.status.message();
          for (const auto& m : r.metrics) {
            j["metrics"][nvml::FindGpmMetric(m.id)->name] =
                m.status.ok() ? nlohmann::json(m.value) : nlohmann::json(nullptr);
          }
          std::printf("%s\n", j.dump().c_str());
        } else {
          std::printf("%-4u %-4s", r.target.gpu,
                      r.target.gpu_instance ? std::to_string(*r.target.gpu_instance).c_str() : "-");
          if (!r.status.ok()) {
            std::printf(" %s\n", r.status.message().c_str());
            continue;
          }
          for (size_t k = 0; k < r.metrics.size(); ++k) {
            if (r.metrics[k].status.ok())
              std::printf(" %*.2f", width[k], r.metrics[k].value);
            else
              std::printf(" %*s", width[k], "N/A");
          }
          std::printf("\n");
        }
      }
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

void RegisterGpm(CLI::App& app) {
  auto f = std::make_shared<GpmFlags>();
  CLI::App* cmd = app.add_subcommand(
      "gpm",
      "Live view of NVML GPM metrics (SM active/occupancy, tensor, DRAM, PCIe, NVLink, ...) per GPU and MIG "
      "GPU instance, like dcgmi dmon. Needs an NVIDIA driver with GPM (Hopper or newer).");
  cmd->add_option("--interval,-i", f->interval, "Sampling interval (at least 100 ms)")->capture_default_str();
  cmd->add_option("--metrics,-m", f->metrics, "Comma-separated GPM metrics by name (sm_util) or NVML id (2)");
  cmd->add_option("--count,-c", f->count, "Number of rounds to print (0: until interrupted)")->capture_default_str();
  cmd->add_option("--format,-f", f->format, "table, json (one object per line) or prom (Prometheus text)")
      ->check(CLI::IsMember({"table", "json", "prom"}))
      ->capture_default_str();
  cmd->add_option("--nvml-library", f->library,
                  "NVML library (default: $GPUWASM_NVML_LIBRARY, else libnvidia-ml.so.1)");
  cmd->callback([f] {
    if (JsonOutput()) f->format = "json";  // --json: one object per line, as --format json
    SetExitCode(RunGpm(*f));
  });
}

}  // namespace gpuwasm::cli
