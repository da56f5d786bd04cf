#include "telemetry/gpm_monitor.h"

#include <cctype>
#include <cmath>
#include <cstdio>

namespace gpuwasm::telemetry {
namespace {

// dcgm-exporter's names for GPM metrics, with DCGM's scaling.
struct DcgmName {
  uint32_t id;
  const char* name;
  double scale;  // percent -> ratio: 0.01; MiB/s -> bytes/s: 1048576
  const char* help;
};
constexpr DcgmName kDcgm[] = {
    {1, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0.01, "Ratio of time the graphics engine is active."},
    {2, "DCGM_FI_PROF_SM_ACTIVE", 0.01, "The ratio of cycles an SM has at least 1 warp assigned."},
    {3, "DCGM_FI_PROF_SM_OCCUPANCY", 0.01, "The ratio of number of warps resident on an SM."},
    {5, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 0.01, "Ratio of cycles the tensor (HMMA) pipe is active."},
    {10, "DCGM_FI_PROF_DRAM_ACTIVE", 0.01,
     "Ratio of cycles the device memory interface is active sending or receiving data."},
    {11, "DCGM_FI_PROF_PIPE_FP64_ACTIVE", 0.01, "Ratio of cycles the fp64 pipes are active."},
    {12, "DCGM_FI_PROF_PIPE_FP32_ACTIVE", 0.01, "Ratio of cycles the fp32 pipes are active."},
    {13, "DCGM_FI_PROF_PIPE_FP16_ACTIVE", 0.01, "Ratio of cycles the fp16 pipes are active."},
    {20, "DCGM_FI_PROF_PCIE_TX_BYTES", 1048576.0,
     "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes "
     "per second."},
    {21, "DCGM_FI_PROF_PCIE_RX_BYTES", 1048576.0,
     "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per "
     "second."},
    {60, "DCGM_FI_PROF_NVLINK_RX_BYTES", 1048576.0,
     "The rate of data received over NVLink, not including protocol headers, in bytes per second."},
    {61, "DCGM_FI_PROF_NVLINK_TX_BYTES", 1048576.0,
     "The rate of data transmitted over NVLink, not including protocol headers, in bytes per second."},
};

const DcgmName* Dcgm(uint32_t id) {
  for (const DcgmName& d : kDcgm) {
    if (d.id == id) return &d;
  }
  return nullptr;
}

std::string OurName(const nvml::GpmMetricInfo& m) {
  std::string s = "gpuwasm_gpm_";
  for (const char* p = m.name; *p; ++p) s += static_cast<char>(std::tolower(static_cast<unsigned char>(*p)));
  return s;
}

}  // namespace

std::vector<uint32_t> GpmMonitorOptions::DefaultGpmMetrics() { return {1, 2, 3, 5, 10, 11, 12, 13, 20, 21, 61, 60}; }

Labels TargetLabels(const GpmTarget& t) {
  return {{"gpu", std::to_string(t.gpu)},
          {"uuid", t.uuid},
          {"gpu_instance", t.gpu_instance ? std::to_string(*t.gpu_instance) : ""}};
}

Result<std::unique_ptr<GpmMonitor>> GpmMonitor::Start(std::shared_ptr<nvml::Nvml> nvml, MetricRegistry& registry,
                                                      GpmMonitorOptions options) {
  // The wait plus the sampling itself keeps samples of a 100 ms interval more than 100 ms apart,
  // as NVML requires; GpmMetricsGet checks the real spacing.
  if (options.interval.count() < 100) {
    return Status::InvalidArgument("GPM interval of " + std::to_string(options.interval.count()) +
                                   " ms is too short: it must be at least 100 ms (NVML refreshes every 100 ms)");
  }
  for (uint32_t id : options.metrics) {
    if (nvml::FindGpmMetric(id) == nullptr)
      return Status::InvalidArgument("unknown GPM metric id " + std::to_string(id));
  }
  if (!options.log) options.log = [](const std::string& m) { std::fprintf(stderr, "gpuwasm: gpm: %s\n", m.c_str()); };
  std::unique_ptr<GpmMonitor> mon(new GpmMonitor(nvml, registry, std::move(options)));
  GPUWASM_ASSIGN_OR_RETURN(uint32_t count, nvml->device_count());
  for (uint32_t i = 0; i < count; ++i) {
    auto dev = nvml::Device::ByIndex(nvml, i);
    if (!dev.ok()) {
      mon->LogOnce("dev" + std::to_string(i), "GPU " + std::to_string(i) + ": " + dev.status().message());
      continue;
    }
    GpmTarget base{i, dev->uuid().value_or(""), dev->name().value_or(""), std::nullopt};
    if (!dev->gpm_supported()) {
      mon->LogOnce("nogpm" + std::to_string(i),
                   "GPU " + std::to_string(i) + " (" + base.name + ") does not support GPM");
      continue;
    }
    mon->slots_.push_back({base, *dev, std::nullopt});
    auto migs = dev->mig_devices();
    if (migs.ok()) {
      std::set<uint32_t> seen;
      for (const nvml::MigDevice& m : *migs) {
        if (!seen.insert(m.gpu_instance_id).second) continue;
        GpmTarget t = base;
        t.gpu_instance = m.gpu_instance_id;
        mon->slots_.push_back({t, *dev, std::nullopt});
      }
    }
  }
  for (const Slot& s : mon->slots_) mon->targets_.push_back(s.target);
  mon->Round();  // first samples: no metrics yet
  if (mon->options_.background) mon->thread_ = std::thread([m = mon.get()] { m->Loop(); });
  return mon;
}

GpmMonitor::~GpmMonitor() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GpmMonitor::Loop() {
  std::unique_lock<std::mutex> lock(stop_mu_);
  while (!stop_cv_.wait_for(lock, options_.interval, [&] { return stop_; })) {
    lock.unlock();
    Round();
    lock.lock();
  }
}

void GpmMonitor::LogOnce(const std::string& key, const std::string& message) {
  if (logged_.insert(key).second) options_.log(message);
}

void GpmMonitor::Publish(const GpmTarget& t, const nvml::GpmMetricResult& r) {
  const nvml::GpmMetricInfo* info = nvml::FindGpmMetric(r.id);
  Labels labels = TargetLabels(t);
  registry_.SetGauge(
      OurName(*info),
      std::string("NVML GPM ") + info->name + (info->unit[0] ? std::string(" (") + info->unit + ")" : ""), labels,
      r.value);
  if (const DcgmName* d = Dcgm(r.id)) registry_.SetGauge(d->name, d->help, labels, r.value * d->scale);
}

void GpmMonitor::Unpublish(const GpmTarget& t, uint32_t id) {
  Labels labels = TargetLabels(t);
  registry_.Remove(OurName(*nvml::FindGpmMetric(id)), labels);
  if (const DcgmName* d = Dcgm(id)) registry_.Remove(d->name, labels);
}

std::vector<GpmTargetResult> GpmMonitor::Round() {
  std::lock_guard<std::mutex> lock(round_mu_);
  std::vector<GpmTargetResult> results;
  for (Slot& slot : slots_) {
    GpmTargetResult tr{slot.target, Status::Ok(), {}};
    std::string where = "GPU " + std::to_string(slot.target.gpu) +
                        (slot.target.gpu_instance ? " GI " + std::to_string(*slot.target.gpu_instance) : "");
    auto sample =
        slot.target.gpu_instance ? slot.device.gpm_mig_sample(*slot.target.gpu_instance) : slot.device.gpm_sample();
    Labels labels = TargetLabels(slot.target);
    if (!sample.ok()) {
      tr.status = sample.status();
      LogOnce(where + "/sample/" + std::string(StatusCodeName(tr.status.code())), where + ": " + tr.status.message());
      for (uint32_t id : options_.metrics) Unpublish(slot.target, id);
      registry_.SetGauge("gpuwasm_gpm_up", "1 when GPM sampling of this GPU (instance) works", labels, 0);
      slot.previous.reset();  // a stale sample must not pair with the next good one
      results.push_back(std::move(tr));
      continue;
    }
    registry_.SetGauge("gpuwasm_gpm_up", "1 when GPM sampling of this GPU (instance) works", labels, 1);
    if (slot.previous) {
      auto metrics = nvml::GpmMetricsGet(*nvml_, *slot.previous, *sample, options_.metrics);
      if (!metrics.ok()) {
        tr.status = metrics.status();
        LogOnce(where + "/metrics/" + std::string(StatusCodeName(tr.status.code())),
                where + ": " + tr.status.message());
      } else {
        for (const nvml::GpmMetricResult& r : *metrics) {
          if (r.status.ok()) {
            Publish(slot.target, r);
          } else {
            Unpublish(slot.target, r.id);
            LogOnce(where + "/" + std::to_string(r.id) + "/" + std::string(StatusCodeName(r.status.code())),
                    where + ": metric " + r.short_name + " unavailable: " + r.status.message());
          }
        }
        tr.metrics = std::move(*metrics);
      }
    }
    slot.previous = std::move(*sample);
    results.push_back(std::move(tr));
  }
  rounds_.fetch_add(1);
  return results;
}

}  // namespace gpuwasm::telemetry
