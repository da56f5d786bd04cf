#include "nvml/nvml.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gpuwasm::nvml {

template <class T>
using Id = T;  // lets a function-pointer type be spelled "type name"

struct NvmlSymbols {
#define GPUWASM_NVML_SYMBOLS(X)                                                                       \
  X(nvmlInit_v2, nvmlReturn_t (*)())                                                                  \
  X(nvmlShutdown, nvmlReturn_t (*)())                                                                 \
  X(nvmlErrorString, const char* (*)(nvmlReturn_t))                                                   \
  X(nvmlSystemGetDriverVersion, nvmlReturn_t (*)(char*, unsigned int))                                \
  X(nvmlDeviceGetCount_v2, nvmlReturn_t (*)(unsigned int*))                                           \
  X(nvmlDeviceGetHandleByIndex_v2, nvmlReturn_t (*)(unsigned int, nvmlDevice_t*))                     \
  X(nvmlDeviceGetHandleByUUID, nvmlReturn_t (*)(const char*, nvmlDevice_t*))                          \
  X(nvmlDeviceGetName, nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int))                           \
  X(nvmlDeviceGetUUID, nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int))                           \
  X(nvmlDeviceGetArchitecture, nvmlReturn_t (*)(nvmlDevice_t, unsigned int*))                         \
  X(nvmlDeviceGetMemoryInfo, nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*))                           \
  X(nvmlDeviceGetUtilizationRates, nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t*))                \
  X(nvmlDeviceGetMigMode, nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, unsigned int*))               \
  X(nvmlDeviceGetMaxMigDeviceCount, nvmlReturn_t (*)(nvmlDevice_t, unsigned int*))                    \
  X(nvmlDeviceGetMigDeviceHandleByIndex, nvmlReturn_t (*)(nvmlDevice_t, unsigned int, nvmlDevice_t*)) \
  X(nvmlDeviceGetGpuInstanceId, nvmlReturn_t (*)(nvmlDevice_t, unsigned int*))                        \
  X(nvmlGpmQueryDeviceSupport, nvmlReturn_t (*)(nvmlDevice_t, nvmlGpmSupport_t*))                     \
  X(nvmlGpmSampleAlloc, nvmlReturn_t (*)(nvmlGpmSample_t*))                                           \
  X(nvmlGpmSampleFree, nvmlReturn_t (*)(nvmlGpmSample_t))                                             \
  X(nvmlGpmSampleGet, nvmlReturn_t (*)(nvmlDevice_t, nvmlGpmSample_t))                                \
  X(nvmlGpmMigSampleGet, nvmlReturn_t (*)(nvmlDevice_t, unsigned int, nvmlGpmSample_t))               \
  X(nvmlGpmMetricsGet, nvmlReturn_t (*)(nvmlGpmMetricsGet_t*))
#define GPUWASM_FIELD(name, type) Id<type> name = nullptr;
  GPUWASM_NVML_SYMBOLS(GPUWASM_FIELD)
#undef GPUWASM_FIELD
};

namespace {

const char* ReturnName(nvmlReturn_t r) {
  switch (r) {
    case NVML_SUCCESS: return "NVML_SUCCESS";
    case NVML_ERROR_UNINITIALIZED: return "NVML_ERROR_UNINITIALIZED";
    case NVML_ERROR_INVALID_ARGUMENT: return "NVML_ERROR_INVALID_ARGUMENT";
    case NVML_ERROR_NOT_SUPPORTED: return "NVML_ERROR_NOT_SUPPORTED";
    case NVML_ERROR_NO_PERMISSION: return "NVML_ERROR_NO_PERMISSION";
    case NVML_ERROR_NOT_FOUND: return "NVML_ERROR_NOT_FOUND";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "NVML_ERROR_INSUFFICIENT_SIZE";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "NVML_ERROR_DRIVER_NOT_LOADED";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML_ERROR_LIBRARY_NOT_FOUND";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "NVML_ERROR_FUNCTION_NOT_FOUND";
    case NVML_ERROR_GPU_IS_LOST: return "NVML_ERROR_GPU_IS_LOST";
    case NVML_ERROR_MEMORY: return "NVML_ERROR_MEMORY";
    case NVML_ERROR_NO_DATA: return "NVML_ERROR_NO_DATA";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "NVML_ERROR_ARGUMENT_VERSION_MISMATCH";
    case NVML_ERROR_UNKNOWN: return "NVML_ERROR_UNKNOWN";
    default: return "NVML_ERROR";
  }
}

StatusCode CodeFor(nvmlReturn_t r) {
  switch (r) {
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_FUNCTION_NOT_FOUND:
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return StatusCode::kUnsupported;
    case NVML_ERROR_INVALID_ARGUMENT: return StatusCode::kInvalidArgument;
    case NVML_ERROR_NOT_FOUND: return StatusCode::kNotFound;
    case NVML_ERROR_NO_PERMISSION: return StatusCode::kPermissionDenied;
    case NVML_ERROR_GPU_IS_LOST: return StatusCode::kDeviceFault;
    case NVML_ERROR_MEMORY: return StatusCode::kResourceExhausted;
    case NVML_ERROR_UNINITIALIZED:
    case NVML_ERROR_DRIVER_NOT_LOADED:
    case NVML_ERROR_NO_DATA: return StatusCode::kUnavailable;
    default: return StatusCode::kInternal;
  }
}

Status Missing(const char* symbol) {
  return Status::Unsupported(std::string(symbol) + " is not available in this NVML library");
}

#define NVML_CALL(nvml, fn, ...) \
  ((nvml).sym().fn == nullptr ? Missing(#fn) : Nvml::Check((nvml).sym().fn(__VA_ARGS__), #fn))

std::string Lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

}  // namespace

std::string NvmlErrorName(nvmlReturn_t r) { return std::string(ReturnName(r)) + " (" + std::to_string(r) + ")"; }

const std::vector<GpmMetricInfo>& AllGpmMetrics() {
  static const std::vector<GpmMetricInfo> all = {
#define GPUWASM_GPM_METRIC(value, name, unit, first) {value, #name, unit, first},
#include "nvml/gpm_metric_ids.inc"
#undef GPUWASM_GPM_METRIC
  };
  return all;
}

const GpmMetricInfo* FindGpmMetric(uint32_t id) {
  for (const GpmMetricInfo& m : AllGpmMetrics()) {
    if (m.id == id) return &m;
  }
  return nullptr;
}

const GpmMetricInfo* FindGpmMetric(std::string_view name) {
  std::string want = Lower(name);
  for (const GpmMetricInfo& m : AllGpmMetrics()) {
    if (Lower(m.name) == want) return &m;
  }
  return nullptr;
}

Status Nvml::Check(nvmlReturn_t r, const char* call) {
  if (r == NVML_SUCCESS) return Status::Ok();
  return Status(CodeFor(r), std::string(call) + " failed: " + NvmlErrorName(r));
}

Result<std::shared_ptr<Nvml>> Nvml::Open(std::string path) {
  if (path.empty()) {
    const char* env = std::getenv("GPUWASM_NVML_LIBRARY");
    path = env != nullptr && *env != '\0' ? env : "libnvidia-ml.so.1";
  }
  std::shared_ptr<Nvml> n(new Nvml());
  n->path_ = path;
  Result<SharedLibrary> library = SharedLibrary::Open(path);
  if (!library.ok()) return Status::Unavailable("NVML is not available: " + library.status().message());
  n->library_ = std::move(*library);
  n->sym_ = std::make_unique<NvmlSymbols>();
  // Each symbol on its own: a missing one only disables the calls that need it.
#define GPUWASM_RESOLVE(name, type) n->sym_->name = n->library_.Get<Id<type>>(#name);
  GPUWASM_NVML_SYMBOLS(GPUWASM_RESOLVE)
#undef GPUWASM_RESOLVE
  if (n->sym_->nvmlInit_v2 == nullptr) return Status::Unavailable("NVML library " + path + " has no nvmlInit_v2");
  nvmlReturn_t r = n->sym_->nvmlInit_v2();
  if (r != NVML_SUCCESS) return Status::Unavailable("nvmlInit_v2 failed: " + NvmlErrorName(r));
  n->initialized_ = true;
  return n;
}

Nvml::~Nvml() {
  if (initialized_ && sym_->nvmlShutdown != nullptr) sym_->nvmlShutdown();
}

Result<std::string> Nvml::driver_version() const {
  char buf[96] = {};
  GPUWASM_RETURN_IF_ERROR(NVML_CALL(*this, nvmlSystemGetDriverVersion, buf, sizeof buf));
  return std::string(buf);
}

Result<uint32_t> Nvml::device_count() const {
  unsigned int n = 0;
  GPUWASM_RETURN_IF_ERROR(NVML_CALL(*this, nvmlDeviceGetCount_v2, &n));
  return n;
}

Result<Device> Device::ByIndex(const std::shared_ptr<Nvml>& nvml, uint32_t index) {
  nvmlDevice_t h = nullptr;
  GPUWASM_RETURN_IF_ERROR(NVML_CALL(*nvml, nvmlDeviceGetHandleByIndex_v2, index, &h));
  return Device(nvml, h);
}

Result<Device> Device::ByUuid(const std::shared_ptr<Nvml>& nvml, std::string_view uuid) {
  nvmlDevice_t h = nullptr;
  std::string u(uuid);
  GPUWASM_RETURN_IF_ERROR(NVML_CALL(*nvml, nvmlDeviceGetHandleByUUID, u.c_str(), &h));
  return Device(nvml, h);
}

Result<std::string> Device::name() const {
  char buf[96] = {};
  GPUWASM_RETURN_IF_ERROR(NVML_CALL(*nvml_, nvmlDeviceGetName, handle_, buf, sizeof buf));
  return std::string(buf);
}

Result<std::string> Device::uuid() const {
  char buf[96] = {};
  GPUWASM_RETURN_IF_ERROR(NVML_CALL(*nvml_, nvmlDeviceGetUUID, handle_, buf, sizeof buf));
  return std::string(buf);
}

Result<uint32_t> Device::architecture() const {
  unsigned int a = 0;
  GPUWASM_RETURN_IF_ERROR(NVML_CALL(*nvml_, nvmlDeviceGetArchitecture, handle_, &a));
  return a;
}

Result<MemoryInfo> Device::memory_info() const {
  nvmlMemory_t m{};
  GPUWASM_RETURN_IF_ERROR(NVML_CALL(*nvml_, nvmlDeviceGetMemoryInfo, handle_, &m));
  return MemoryInfo{m.total, m.free, m.used};
}

Result<Utilization> Device::utilization() const {
  nvmlUtilization_t u{};
  GPUWASM_RETURN_IF_ERROR(NVML_CALL(*nvml_, nvmlDeviceGetUtilizationRates, handle_, &u));
  return Utilization{u.gpu, u.memory};
}

Result<bool> Device::mig_enabled() const {
  unsigned int current = 0, pending = 0;
  GPUWASM_RETURN_IF_ERROR(NVML_CALL(*nvml_, nvmlDeviceGetMigMode, handle_, &current, &pending));
  return current == 1;
}

Result<std::vector<MigDevice>> Device::mig_devices() const {
  std::vector<MigDevice> out;
  auto enabled = mig_enabled();
  if (!enabled.ok() && enabled.status().code() == StatusCode::kUnsupported) return out;  // no MIG on this GPU
  if (!enabled.ok()) return enabled.status();
  if (!*enabled) return out;
  unsigned int max = 0;
  GPUWASM_RETURN_IF_ERROR(NVML_CALL(*nvml_, nvmlDeviceGetMaxMigDeviceCount, handle_, &max));
  for (unsigned int i = 0; i < max; ++i) {
    nvmlDevice_t mig = nullptr;
    Status s = NVML_CALL(*nvml_, nvmlDeviceGetMigDeviceHandleByIndex, handle_, i, &mig);
    if (s.code() == StatusCode::kNotFound) continue;  // an empty slot
    GPUWASM_RETURN_IF_ERROR(s);
    unsigned int gi = 0;
    GPUWASM_RETURN_IF_ERROR(NVML_CALL(*nvml_, nvmlDeviceGetGpuInstanceId, mig, &gi));
    out.push_back(MigDevice{Device(nvml_, mig), gi});
  }
  return out;
}

bool Device::gpm_supported() const {
  if (nvml_->sym().nvmlGpmQueryDeviceSupport == nullptr) return false;
  nvmlGpmSupport_t s{};
  s.version = NVML_GPM_SUPPORT_VERSION;  // the raw 1 (go-nvml #168: NVML_STRUCT_VERSION is refused)
  return nvml_->sym().nvmlGpmQueryDeviceSupport(handle_, &s) == NVML_SUCCESS && s.isSupportedDevice != 0;
}

Result<GpmSample> Device::gpm_sample() const {
  GPUWASM_ASSIGN_OR_RETURN(GpmSample s, GpmSample::Allocate(nvml_));
  GPUWASM_RETURN_IF_ERROR(s.Fill(*this));
  return s;
}

Result<GpmSample> Device::gpm_mig_sample(uint32_t gpu_instance_id) const {
  GPUWASM_ASSIGN_OR_RETURN(GpmSample s, GpmSample::Allocate(nvml_));
  GPUWASM_RETURN_IF_ERROR(s.FillMig(*this, gpu_instance_id));
  return s;
}

// ---- GpmSample ----

class GpmSample::Guard {
 public:
  explicit Guard(const GpmSample& s) : s_(s) {
    if (s_.users_.fetch_add(1) != 0) {
      std::fprintf(stderr, "gpuwasm: a GpmSample was used from two threads at once (it is not thread-safe)\n");
      std::abort();
    }
  }
  ~Guard() { s_.users_.fetch_sub(1); }

 private:
  const GpmSample& s_;
};

Result<GpmSample> GpmSample::Allocate(std::shared_ptr<Nvml> nvml) {
  nvmlGpmSample_t h = nullptr;
  GPUWASM_RETURN_IF_ERROR(NVML_CALL(*nvml, nvmlGpmSampleAlloc, &h));
  return GpmSample(std::move(nvml), h);
}

GpmSample GpmSample::adopt(std::shared_ptr<Nvml> nvml, nvmlGpmSample_t handle) {
  return GpmSample(std::move(nvml), handle);
}

GpmSample::GpmSample(GpmSample&& o) noexcept
    : nvml_(std::move(o.nvml_)), handle_(std::exchange(o.handle_, nullptr)), taken_at_(o.taken_at_) {}

GpmSample& GpmSample::operator=(GpmSample&& o) noexcept {
  if (this != &o) {
    (void)free();
    nvml_ = std::move(o.nvml_);
    handle_ = std::exchange(o.handle_, nullptr);
    taken_at_ = o.taken_at_;
  }
  return *this;
}

GpmSample::~GpmSample() { (void)free(); }  // errors are ignored here by design; free() reports them

Status GpmSample::free() {
  if (handle_ == nullptr) return Status::Ok();
  Guard g(*this);
  nvmlGpmSample_t h = std::exchange(handle_, nullptr);
  taken_at_.reset();
  return NVML_CALL(*nvml_, nvmlGpmSampleFree, h);
}

nvmlGpmSample_t GpmSample::release() {
  taken_at_.reset();
  return std::exchange(handle_, nullptr);
}

Status GpmSample::Fill(const Device& device) {
  if (handle_ == nullptr) return Status::InvalidArgument("GpmSample is empty");
  Guard g(*this);
  GPUWASM_RETURN_IF_ERROR(NVML_CALL(*nvml_, nvmlGpmSampleGet, device.handle(), handle_));
  taken_at_ = Clock::now();
  return Status::Ok();
}

Status GpmSample::FillMig(const Device& device, uint32_t gpu_instance_id) {
  if (handle_ == nullptr) return Status::InvalidArgument("GpmSample is empty");
  Guard g(*this);
  GPUWASM_RETURN_IF_ERROR(NVML_CALL(*nvml_, nvmlGpmMigSampleGet, device.handle(), gpu_instance_id, handle_));
  taken_at_ = Clock::now();
  return Status::Ok();
}

Result<std::vector<GpmMetricResult>> GpmMetricsGet(const Nvml& nvml, const GpmSample& sample1, const GpmSample& sample2,
                                                   const std::vector<uint32_t>& metric_ids) {
  if (sample1.handle() == nullptr || sample2.handle() == nullptr || !sample1.taken_at() || !sample2.taken_at()) {
    return Status::InvalidArgument("GPM metrics need two filled samples");
  }
  auto apart = std::chrono::duration_cast<std::chrono::milliseconds>(*sample2.taken_at() - *sample1.taken_at());
  if (apart.count() <= 100) {
    return Status::InvalidArgument("GPM samples are " + std::to_string(apart.count()) +
                                   " ms apart; NVML needs more than 100 ms between them");
  }
  if (nvml.sym().nvmlGpmMetricsGet == nullptr) return Missing("nvmlGpmMetricsGet");
  std::vector<GpmMetricResult> out;
  // One metric per call, as DCGM does: batching has shown layout problems on some drivers.
  auto req = std::make_unique<nvmlGpmMetricsGet_t>();
  for (uint32_t id : metric_ids) {
    std::memset(req.get(), 0, sizeof *req);
    req->version = NVML_GPM_METRICS_GET_VERSION;
    req->numMetrics = 1;
    req->sample1 = sample1.handle();
    req->sample2 = sample2.handle();
    req->metrics[0].metricId = id;
    req->metrics[0].nvmlReturn = NVML_ERROR_UNKNOWN;  // a sentinel NVML must overwrite
    GpmMetricResult r;
    r.id = id;
    nvmlReturn_t call = nvml.sym().nvmlGpmMetricsGet(req.get());
    const nvmlGpmMetric_t& m = req->metrics[0];
    if (call != NVML_SUCCESS) {
      r.status = Nvml::Check(call, "nvmlGpmMetricsGet");
    } else if (m.nvmlReturn != NVML_SUCCESS) {
      r.status = Nvml::Check(m.nvmlReturn, "GPM metric");
    } else {
      r.value = m.value;
      if (std::isnan(r.value))
        r.status = Status::Unavailable("GPM metric " + std::to_string(id) + " has no data (NaN)");
    }
    const GpmMetricInfo* info = FindGpmMetric(id);
    r.short_name = m.metricInfo.shortName != nullptr ? m.metricInfo.shortName : (info ? info->name : "");
    r.long_name = m.metricInfo.longName != nullptr ? m.metricInfo.longName : (info ? info->name : "");
    r.unit = m.metricInfo.unit != nullptr ? m.metricInfo.unit : (info ? info->unit : "");
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace gpuwasm::nvml
