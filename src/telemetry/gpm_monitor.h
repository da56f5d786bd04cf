// GpmMonitor: samples NVML GPM on every GPU that supports it (and on each MIG GPU instance) every
// interval and publishes the metrics as gauges, labelled gpu, uuid and gpu_instance ("" for the
// whole GPU), under two names: ours (gpuwasm_gpm_<metric>, NVML's unit) and, for the metrics
// dcgm-exporter knows, its DCGM_FI_PROF_* name and scale (ratios, bytes/s) so existing
// dashboards work. A metric that cannot be read (GPU lost, not supported, version mismatch, NaN)
// is removed from the registry, marked by gpuwasm_gpm_up 0 for its target, and logged once; the
// monitor carries on. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "nvml/nvml.h"
#include "telemetry/registry.h"

namespace gpuwasm::telemetry {

struct GpmMonitorOptions {
  std::chrono::milliseconds interval{1000};  // at least 100 ms
  std::vector<uint32_t> metrics = DefaultGpmMetrics();
  bool background = true;                       // false: no thread; call Round() yourself
  std::function<void(const std::string&)> log;  // default: stderr
  static std::vector<uint32_t> DefaultGpmMetrics();
};

struct GpmTarget {
  uint32_t gpu = 0;
  std::string uuid;
  std::string name;
  std::optional<uint32_t> gpu_instance;  // MIG GPU instance, or the whole GPU
};

struct GpmTargetResult {
  GpmTarget target;
  Status status;  // sampling itself
  std::vector<nvml::GpmMetricResult> metrics;
};

class GpmMonitor {
 public:
  // Discovers the targets and takes their first samples. InvalidArgument for an interval under
  // 100 ms or an unknown metric id.
  static Result<std::unique_ptr<GpmMonitor>> Start(std::shared_ptr<nvml::Nvml> nvml, MetricRegistry& registry,
                                                   GpmMonitorOptions options);
  ~GpmMonitor();
  GpmMonitor(const GpmMonitor&) = delete;
  GpmMonitor& operator=(const GpmMonitor&) = delete;

  // Takes a new sample per target, computes the metrics against the previous one and publishes
  // them. Call at most once per interval (the background thread does this).
  std::vector<GpmTargetResult> Round();
  const std::vector<GpmTarget>& targets() const { return targets_; }
  uint64_t rounds() const { return rounds_.load(); }

 private:
  GpmMonitor(std::shared_ptr<nvml::Nvml> nvml, MetricRegistry& registry, GpmMonitorOptions options)
      : nvml_(std::move(nvml)), registry_(registry), options_(std::move(options)) {}
  void Loop();
  void LogOnce(const std::string& key, const std::string& message);
  void Publish(const GpmTarget& t, const nvml::GpmMetricResult& r);
  void Unpublish(const GpmTarget& t, uint32_t id);

  struct Slot {
    GpmTarget target;
    nvml::Device device;
    std::optional<nvml::GpmSample> previous;
  };
  std::shared_ptr<nvml::Nvml> nvml_;
  MetricRegistry& registry_;
  GpmMonitorOptions options_;
  std::vector<GpmTarget> targets_;
  std::vector<Slot> slots_;
  std::mutex round_mu_;
  std::set<std::string> logged_;
  std::atomic<uint64_t> rounds_{0};
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread thread_;
};

// Prometheus labels of a target.
Labels TargetLabels(const GpmTarget& t);

}  // namespace gpuwasm::telemetry
