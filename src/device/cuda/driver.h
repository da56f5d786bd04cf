// The CUDA driver API, loaded at run time: the binary never links libcuda. CudaDriver dlopens
// libcuda.so.1 (or $GPUWASM_CUDA_LIBRARY), resolves the versioned symbols cuda.h maps its names to
// (cuCtxCreate_v4, cuMemcpyHtoDAsync_v2, cuEventDestroy_v2, ...) each on its own, and maps every CUresult to
// a Status naming the call, the error's name and its text.
//
// Probe() decides whether this machine has a usable GPU. A missing library, the toolkit's stub
// library (every call returns CUDA_ERROR_STUB_LIBRARY, 34), cuInit failing (e.g. NO_DEVICE, 100),
// a driver older than CUDA 12.0, or zero devices all mean "no GPU", each with its reason.
//
// Thread-safety: the driver API is thread-safe; a CudaDriver may be shared once loaded.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/shared_library.h"
#include "common/status.h"
#include "device/device.h"

namespace gpuwasm::device::cuda {

using CUresult = int;
inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_STUB_LIBRARY = 34;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
inline constexpr CUresult CUDA_ERROR_NOT_READY = 600;
inline constexpr int kMinDriverVersion = 12000;  // CUDA 12.0: stream-ordered pools, cuLibrary*, v4 ctx

// "CUDA_ERROR_NO_DEVICE" for the codes gpuwasm meets (the driver's own names when it can say).
const char* CuResultName(CUresult r);

// Errors cuda.h documents as leaving the *process* in an inconsistent state ("any further CUDA
// work will return the same error. To continue using CUDA, the process must be terminated and
// relaunched"): illegal address (700), launch failure (719), invalid PC (718), contained (226),
// ... plus uncorrectable ECC (214) and unknown (999), which no process should trust either.
bool IsProcessFatalError(CUresult r);
// Errors after which one context is unusable until destroyed while the process is not: a device
// assert (710: "the context cannot be used anymore, and must be destroyed") and a destroyed
// context (709).
bool IsContextFatalError(CUresult r);

struct DriverSymbols;

struct GpuProbe {
  int driver_version = 0;  // e.g. 13000 for CUDA 13.0
  int device_count = 0;
  std::string first_device_name;
  // "12.8" for driver_version 12080.
  std::string cuda_version() const { return CudaVersion(driver_version); }
  static std::string CudaVersion(int driver_version) {
    return std::to_string(driver_version / 1000) + "." + std::to_string(driver_version % 1000 / 10);
  }
};

class CudaDriver {
 public:
  // Loads the library (path, else $GPUWASM_CUDA_LIBRARY, else libcuda.so.1). Unavailable when it
  // cannot be loaded or lacks cuInit.
  static Result<std::shared_ptr<CudaDriver>> Load(std::string path = "");
  // Never unloads the library: dlclose(libcuda) while the driver's threads or atexit handlers
  // live is a known crash source, and a process loads it once.
  ~CudaDriver() = default;
  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;

  // cuInit, the driver version and the device count: OK only when a GPU is usable; otherwise
  // Unavailable with the reason (stub library, no device, cuInit error, driver too old).
  Result<GpuProbe> Probe();

  // Device `ordinal`'s limits and identity from cuDeviceGetAttribute/cuDeviceTotalMem (queried,
  // never assumed): compute capability, SMs, warp size, block/grid limits, shared memory per block
  // (the opt-in maximum where the driver reports one, else the default 48 KiB window), total
  // memory. Needs a successful Probe().
  Result<DeviceInfo> QueryDevice(int ordinal) const;

  // Status for a driver call's result: "<call> failed: <NAME> (<code>): <text>".
  Status Check(CUresult r, const char* call) const;
  const std::string& path() const { return path_; }
  const DriverSymbols& sym() const { return *sym_; }
  // How many of the versioned symbols gpuwasm uses this library provides (for diagnostics).
  int resolved_symbols() const;
  static int wanted_symbols();

 private:
  CudaDriver() = default;
  SharedLibrary library_;  // Unload::kNever
  std::string path_;
  std::unique_ptr<DriverSymbols> sym_;
};

// Why there is no GPU, or OK: the one line `--device auto` logs.
Result<GpuProbe> ProbeGpu(std::string library = "");

}  // namespace gpuwasm::device::cuda
