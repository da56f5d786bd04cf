#include "device/cuda/driver.h"

#include <cstdlib>

#include "device/cuda/symbols.h"

namespace gpuwasm::device::cuda {

const char* CuResultName(CUresult r) {
  switch (r) {
    case 0: return "CUDA_SUCCESS";
    case 1: return "CUDA_ERROR_INVALID_VALUE";
    case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
    case 3: return "CUDA_ERROR_NOT_INITIALIZED";
    case 4: return "CUDA_ERROR_DEINITIALIZED";
    case 34: return "CUDA_ERROR_STUB_LIBRARY";
    case 35: return "CUDA_ERROR_INSUFFICIENT_DRIVER";
    case 46: return "CUDA_ERROR_DEVICE_UNAVAILABLE";
    case 100: return "CUDA_ERROR_NO_DEVICE";
    case 101: return "CUDA_ERROR_INVALID_DEVICE";
    case 200: return "CUDA_ERROR_INVALID_IMAGE";
    case 214: return "CUDA_ERROR_ECC_UNCORRECTABLE";
    case 226: return "CUDA_ERROR_CONTAINED";
    case 201: return "CUDA_ERROR_INVALID_CONTEXT";
    case 209: return "CUDA_ERROR_NO_BINARY_FOR_GPU";
    case 218: return "CUDA_ERROR_INVALID_PTX";
    case 222: return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
    case 400: return "CUDA_ERROR_INVALID_HANDLE";
    case 500: return "CUDA_ERROR_NOT_FOUND";
    case 600: return "CUDA_ERROR_NOT_READY";
    case 700: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case 701: return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
    case 702: return "CUDA_ERROR_LAUNCH_TIMEOUT";
    case 709: return "CUDA_ERROR_CONTEXT_IS_DESTROYED";
    case 710: return "CUDA_ERROR_ASSERT";
    case 714: return "CUDA_ERROR_HARDWARE_STACK_ERROR";
    case 715: return "CUDA_ERROR_ILLEGAL_INSTRUCTION";
    case 716: return "CUDA_ERROR_MISALIGNED_ADDRESS";
    case 717: return "CUDA_ERROR_INVALID_ADDRESS_SPACE";
    case 718: return "CUDA_ERROR_INVALID_PC";
    case 719: return "CUDA_ERROR_LAUNCH_FAILED";
    case 721: return "CUDA_ERROR_TENSOR_MEMORY_LEAK";
    case 810: return "CUDA_ERROR_MPS_CLIENT_TERMINATED";
    case 911: return "CUDA_ERROR_EXTERNAL_DEVICE";
    case 999: return "CUDA_ERROR_UNKNOWN";
    default: return "CUDA_ERROR";
  }
}

Result<std::shared_ptr<CudaDriver>> CudaDriver::Load(std::string path) {
  if (path.empty()) {
    const char* env = std::getenv("GPUWASM_CUDA_LIBRARY");
    path = env != nullptr && *env != '\0' ? env : "libcuda.so.1";
  }
  std::shared_ptr<CudaDriver> d(new CudaDriver());
  d->path_ = path;
  Result<SharedLibrary> library = SharedLibrary::Open(path, SharedLibrary::Unload::kNever);
  if (!library.ok()) return Status::Unavailable("no CUDA driver: " + library.status().message());
  d->library_ = std::move(*library);
  d->sym_ = std::make_unique<DriverSymbols>();
#define GPUWASM_RESOLVE(name, type) d->sym_->name = d->library_.Get<Id<type>>(#name);
  GPUWASM_CUDA_SYMBOLS(GPUWASM_RESOLVE)
#undef GPUWASM_RESOLVE
  if (d->sym_->cuInit == nullptr) return Status::Unavailable("no CUDA driver: " + path + " has no cuInit");
  return d;
}

int CudaDriver::wanted_symbols() {
  int n = 0;
#define GPUWASM_COUNT(name, type) ++n;
  GPUWASM_CUDA_SYMBOLS(GPUWASM_COUNT)
#undef GPUWASM_COUNT
  return n;
}

int CudaDriver::resolved_symbols() const {
  int n = 0;
#define GPUWASM_COUNT_RESOLVED(name, type) n += sym_->name != nullptr;
  GPUWASM_CUDA_SYMBOLS(GPUWASM_COUNT_RESOLVED)
#undef GPUWASM_COUNT_RESOLVED
  return n;
}

Status CudaDriver::Check(CUresult r, const char* call) const {
  if (r == CUDA_SUCCESS) return Status::Ok();
  const char* name = nullptr;
  const char* text = nullptr;
  // The driver names its own codes, except when it cannot (the stub library answers 34 even here).
  if (sym_->cuGetErrorName == nullptr || sym_->cuGetErrorName(r, &name) != CUDA_SUCCESS || name == nullptr) {
    name = CuResultName(r);
  }
  if (sym_->cuGetErrorString == nullptr || sym_->cuGetErrorString(r, &text) != CUDA_SUCCESS) text = nullptr;
  std::string msg = std::string(call) + " failed: " + name + " (" + std::to_string(r) + ")";
  if (text != nullptr) msg += ": " + std::string(text);
  StatusCode code = StatusCode::kInternal;
  switch (r) {
    case 2: code = StatusCode::kResourceExhausted; break;
    case 34:
    case 35:
    case 46:  // exclusive-process compute mode: another process holds the GPU
    case 100:
    case 3:
    case 4: code = StatusCode::kUnavailable; break;
    case 200:
    case 209:
    case 218:
    case 222: code = StatusCode::kInvalidArgument; break;
    case 500: code = StatusCode::kNotFound; break;
    case 701:  // too many registers or threads for this kernel: the launch's fault, not the device's
      code = StatusCode::kResourceExhausted;
      break;
    default:
      if (IsProcessFatalError(r) || IsContextFatalError(r)) code = StatusCode::kDeviceFault;
      break;
  }
  return Status(code, msg);
}

bool IsProcessFatalError(CUresult r) {
  switch (r) {
    case 214:  // CUDA_ERROR_ECC_UNCORRECTABLE
    case 226:  // CUDA_ERROR_CONTAINED
    case 700:  // CUDA_ERROR_ILLEGAL_ADDRESS
    case 702:  // CUDA_ERROR_LAUNCH_TIMEOUT
    case 714:  // CUDA_ERROR_HARDWARE_STACK_ERROR
    case 715:  // CUDA_ERROR_ILLEGAL_INSTRUCTION
    case 716:  // CUDA_ERROR_MISALIGNED_ADDRESS
    case 717:  // CUDA_ERROR_INVALID_ADDRESS_SPACE
    case 718:  // CUDA_ERROR_INVALID_PC
    case 719:  // CUDA_ERROR_LAUNCH_FAILED
    case 721:  // CUDA_ERROR_TENSOR_MEMORY_LEAK
    case 810:  // CUDA_ERROR_MPS_CLIENT_TERMINATED
    case 911:  // CUDA_ERROR_EXTERNAL_DEVICE
    case 999:  // CUDA_ERROR_UNKNOWN
      return true;
    default: return false;
  }
}

bool IsContextFatalError(CUresult r) { return r == 709 || r == 710; }

Result<GpuProbe> CudaDriver::Probe() {
  CUresult r = sym_->cuInit(0);
  if (r == CUDA_ERROR_STUB_LIBRARY) {
    return Status::Unavailable("no GPU: " + path_ +
                               " is the CUDA toolkit's stub library (CUDA_ERROR_STUB_LIBRARY), not a driver");
  }
  if (r != CUDA_SUCCESS) return Status::Unavailable("no GPU: " + Check(r, "cuInit").message());
  GpuProbe p;
  if (sym_->cuDriverGetVersion == nullptr)
    return Status::Unavailable("no GPU: the CUDA driver has no cuDriverGetVersion");
  if (Status s = Check(sym_->cuDriverGetVersion(&p.driver_version), "cuDriverGetVersion"); !s.ok()) {
    return Status::Unavailable("no GPU: " + s.message());
  }
  if (p.driver_version < kMinDriverVersion) {
    return Status::Unavailable("no GPU: the CUDA driver supports CUDA " + p.cuda_version() + "; gpuwasm needs " +
                               GpuProbe::CudaVersion(kMinDriverVersion) + " or newer");
  }
  if (sym_->cuDeviceGetCount == nullptr) return Status::Unavailable("no GPU: the CUDA driver has no cuDeviceGetCount");
  CUresult c = sym_->cuDeviceGetCount(&p.device_count);
  if (c == CUDA_ERROR_NO_DEVICE || (c == CUDA_SUCCESS && p.device_count == 0)) {
    return Status::Unavailable("no GPU: the CUDA driver reports no devices");
  }
  if (Status s = Check(c, "cuDeviceGetCount"); !s.ok()) return Status::Unavailable("no GPU: " + s.message());
  char name[256] = {};
  int dev = 0;
  if (sym_->cuDeviceGet != nullptr && sym_->cuDeviceGetName != nullptr && sym_->cuDeviceGet(&dev, 0) == CUDA_SUCCESS &&
      sym_->cuDeviceGetName(name, sizeof name, dev) == CUDA_SUCCESS) {
    p.first_device_name = name;
  }
  return p;
}

Result<DeviceInfo> CudaDriver::QueryDevice(int ordinal) const {
  if (sym_->cuDeviceGet == nullptr || sym_->cuDeviceGetAttribute == nullptr || sym_->cuDeviceTotalMem_v2 == nullptr) {
    return Status::Unavailable("the CUDA driver at " + path_ +
                               " lacks cuDeviceGet/cuDeviceGetAttribute/cuDeviceTotalMem_v2");
  }
  int dev = 0;
  GPUWASM_RETURN_IF_ERROR(Check(sym_->cuDeviceGet(&dev, ordinal), "cuDeviceGet"));
  // CUdevice_attribute values from cuda.h.
  enum : int {
    kMaxThreadsPerBlock = 1,
    kMaxBlockDimX = 2,
    kMaxGridDimX = 5,
    kMaxSharedPerBlock = 8,
    kWarpSize = 10,
    kSmCount = 16,
    kCcMajor = 75,
    kCcMinor = 76,
    kMaxSharedPerBlockOptin = 97,
  };
  auto attr = [&](int a, const char* what) -> Result<uint32_t> {
    int v = 0;
    GPUWASM_RETURN_IF_ERROR(Check(sym_->cuDeviceGetAttribute(&v, a, dev), what));
    if (v < 0) return Status::Internal(std::string(what) + " returned " + std::to_string(v));
    return static_cast<uint32_t>(v);
  };
  DeviceInfo info;
  info.kind = DeviceKind::kCuda;
  char name[256] = {};
  if (sym_->cuDeviceGetName != nullptr) {
    GPUWASM_RETURN_IF_ERROR(Check(sym_->cuDeviceGetName(name, sizeof name, dev), "cuDeviceGetName"));
  }
  info.name = name;
  GPUWASM_ASSIGN_OR_RETURN(uint32_t major, attr(kCcMajor, "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)"));
  GPUWASM_ASSIGN_OR_RETURN(uint32_t minor, attr(kCcMinor, "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)"));
  info.compute_major = static_cast<int>(major);
  info.compute_minor = static_cast<int>(minor);
  GPUWASM_ASSIGN_OR_RETURN(info.sm_count, attr(kSmCount, "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)"));
  GPUWASM_ASSIGN_OR_RETURN(info.warp_size, attr(kWarpSize, "cuDeviceGetAttribute(WARP_SIZE)"));
  GPUWASM_ASSIGN_OR_RETURN(info.max_threads_per_block,
                           attr(kMaxThreadsPerBlock, "cuDeviceGetAttribute(MAX_THREADS_PER_BLOCK)"));
  for (int i = 0; i < 3; ++i) {
    GPUWASM_ASSIGN_OR_RETURN(info.max_block_dim[i], attr(kMaxBlockDimX + i, "cuDeviceGetAttribute(MAX_BLOCK_DIM)"));
    GPUWASM_ASSIGN_OR_RETURN(info.max_grid_dim[i], attr(kMaxGridDimX + i, "cuDeviceGetAttribute(MAX_GRID_DIM)"));
  }
  GPUWASM_ASSIGN_OR_RETURN(info.max_shared_per_block,
                           attr(kMaxSharedPerBlock, "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK)"));
  // Above the default window (48 KiB) a kernel opts in (cuFuncSetAttribute), up to this limit
  // (227 KiB on an H100/H200); the CUDA device does so for launches that need it.
  int optin = 0;
  if (sym_->cuDeviceGetAttribute(&optin, kMaxSharedPerBlockOptin, dev) == CUDA_SUCCESS &&
      static_cast<int64_t>(optin) > static_cast<int64_t>(info.max_shared_per_block)) {
    info.max_shared_per_block = static_cast<uint32_t>(optin);
  }
  size_t total = 0;
  GPUWASM_RETURN_IF_ERROR(Check(sym_->cuDeviceTotalMem_v2(&total, dev), "cuDeviceTotalMem_v2"));
  info.total_memory = total;
  return info;
}

Result<GpuProbe> ProbeGpu(std::string library) {
  GPUWASM_ASSIGN_OR_RETURN(std::shared_ptr<CudaDriver> d, CudaDriver::Load(std::move(library)));
  return d->Probe();
}

}  // namespace gpuwasm::device::cuda
