// NVML, loaded at run time: the library, its devices (including MIG devices) and GPM samples.
//
//   auto nvml = nvml::Nvml::Open();              // libnvidia-ml.so.1, $GPUWASM_NVML_LIBRARY or a path
//   auto dev = nvml::Device::ByIndex(*nvml, 0);
//   auto s1 = dev->gpm_sample(); ...; auto s2 = dev->gpm_sample();
//   auto results = nvml::GpmMetricsGet(*nvml, *s1, *s2, {GpmMetricId::kSmUtil});
//
// Every symbol is resolved on its own: a symbol the installed driver lacks makes that call return
// Unsupported and nothing else. Nvml initialises NVML on construction and shuts it down when the
// last owner (the Nvml itself, or a Device or GpmSample made from it) is gone: a handle or sample
// can never outlive the library.
//
// Thread-safety: NVML is thread-safe; Nvml and Device may be used from any thread. A GpmSample is
// NOT safe to share between threads (NVML fills and reads its buffer without locking): use each
// from one thread at a time. A concurrent use is caught at run time and aborts with a message.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/shared_library.h"
#include "common/status.h"
#include "nvml/nvml_abi.h"

namespace gpuwasm::nvml {

enum class GpmMetricId : uint32_t {
#define GPUWASM_GPM_METRIC(value, name, unit, first) k##name = value,
#include "nvml/gpm_metric_ids.inc"
#undef GPUWASM_GPM_METRIC
};

struct GpmMetricInfo {
  uint32_t id;
  const char* name;  // "SM_UTIL"
  const char* unit;  // "%", "MiB/s", "bytes", "cycles" or ""
  const char* first_header;
};
const std::vector<GpmMetricInfo>& AllGpmMetrics();  // the 302 ids, ascending
const GpmMetricInfo* FindGpmMetric(uint32_t id);
const GpmMetricInfo* FindGpmMetric(std::string_view name);  // "SM_UTIL" or "sm_util"

// Text of an NVML return code ("NVML_ERROR_NOT_SUPPORTED (3)").
std::string NvmlErrorName(nvmlReturn_t r);

struct NvmlSymbols;  // the resolved function table (internal)

class Nvml : public std::enable_shared_from_this<Nvml> {
 public:
  // Loads the library (path, else $GPUWASM_NVML_LIBRARY, else libnvidia-ml.so.1) and calls
  // nvmlInit_v2. Unavailable when the library is missing or NVML cannot initialise.
  static Result<std::shared_ptr<Nvml>> Open(std::string path = "");
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  const std::string& path() const { return path_; }
  Result<std::string> driver_version() const;
  Result<uint32_t> device_count() const;
  const NvmlSymbols& sym() const { return *sym_; }
  // Status for an NVML call's result, naming the call.
  static Status Check(nvmlReturn_t r, const char* call);

 private:
  Nvml() = default;
  SharedLibrary library_;  // closed after nvmlShutdown (~Nvml)
  std::string path_;
  std::unique_ptr<NvmlSymbols> sym_;
  bool initialized_ = false;
};

class GpmSample;

struct MemoryInfo {
  uint64_t total = 0, free = 0, used = 0;
};
struct Utilization {
  uint32_t gpu_percent = 0, memory_percent = 0;
};
struct MigDevice;

class Device {
 public:
  static Result<Device> ByIndex(const std::shared_ptr<Nvml>& nvml, uint32_t index);
  static Result<Device> ByUuid(const std::shared_ptr<Nvml>& nvml, std::string_view uuid);

  Result<std::string> name() const;
  Result<std::string> uuid() const;
  Result<uint32_t> architecture() const;  // NVML's value: 7 Ampere, 8 Ada, 9 Hopper, 10 Blackwell
  Result<MemoryInfo> memory_info() const;
  Result<Utilization> utilization() const;
  Result<bool> mig_enabled() const;
  // The MIG devices of this (parent) GPU, each with its GPU-instance id. Empty without MIG.
  Result<std::vector<MigDevice>> mig_devices() const;
  // GPM support (nvmlGpmQueryDeviceSupport with version 1); false on any error, as DCGM does.
  bool gpm_supported() const;
  // A new sample, filled now: for the whole GPU, or for one MIG GPU instance.
  Result<GpmSample> gpm_sample() const;
  Result<GpmSample> gpm_mig_sample(uint32_t gpu_instance_id) const;

  nvmlDevice_t handle() const { return handle_; }
  const std::shared_ptr<Nvml>& nvml() const { return nvml_; }

 private:
  Device(std::shared_ptr<Nvml> nvml, nvmlDevice_t h) : nvml_(std::move(nvml)), handle_(h) {}
  friend struct MigDevice;
  std::shared_ptr<Nvml> nvml_;
  nvmlDevice_t handle_ = nullptr;
};

struct MigDevice {
  Device device;
  uint32_t gpu_instance_id = 0;
};

// Owns one nvmlGpmSample_t. Move-only. The destructor frees the sample and ignores errors;
// free() frees it and reports the error. See the thread-safety note above.
class GpmSample {
 public:
  using Clock = std::chrono::steady_clock;
  // Allocates an empty sample.
  static Result<GpmSample> Allocate(std::shared_ptr<Nvml> nvml);
  // Takes ownership of a raw handle. Preconditions: `handle` was allocated by this same library
  // (nvmlGpmSampleAlloc of `nvml`) and is not freed or owned elsewhere; otherwise it is freed
  // twice.
  static GpmSample adopt(std::shared_ptr<Nvml> nvml, nvmlGpmSample_t handle);

  GpmSample(GpmSample&& o) noexcept;
  GpmSample& operator=(GpmSample&& o) noexcept;
  GpmSample(const GpmSample&) = delete;
  GpmSample& operator=(const GpmSample&) = delete;
  ~GpmSample();

  // Frees now; the sample is empty afterwards even when NVML reports an error.
  Status free();
  // Gives up the raw handle without freeing it (the caller owns it now).
  nvmlGpmSample_t release();
  nvmlGpmSample_t handle() const { return handle_; }  // borrowed
  const std::shared_ptr<Nvml>& nvml() const { return nvml_; }
  // When the sample was last filled (GPM rates need samples > 100 ms apart).
  std::optional<Clock::time_point> taken_at() const { return taken_at_; }

  // Fills the sample for `device` (or one of its MIG GPU instances).
  Status Fill(const Device& device);
  Status FillMig(const Device& device, uint32_t gpu_instance_id);

 private:
  GpmSample(std::shared_ptr<Nvml> nvml, nvmlGpmSample_t h) : nvml_(std::move(nvml)), handle_(h) {}
  class Guard;  // catches concurrent use
  std::shared_ptr<Nvml> nvml_;
  nvmlGpmSample_t handle_ = nullptr;
  std::optional<Clock::time_point> taken_at_;
  mutable std::atomic<int> users_{0};
};

// One requested metric's outcome. `status` is per metric: a metric NVML could not compute is an
// error here (not a hidden zero); `value` may be NaN, which NVML uses for "no data".
struct GpmMetricResult {
  uint32_t id = 0;
  Status status;
  double value = 0;
  std::string short_name, long_name, unit;  // from NVML when given, else from AllGpmMetrics()
};

// Metrics between two samples of the same device (sample1 older). InvalidArgument when the
// samples are 100 ms apart or less (NVML refreshes its counters every 100 ms), or empty.
Result<std::vector<GpmMetricResult>> GpmMetricsGet(const Nvml& nvml, const GpmSample& sample1, const GpmSample& sample2,
                                                   const std::vector<uint32_t>& metric_ids);

}  // namespace gpuwasm::nvml
