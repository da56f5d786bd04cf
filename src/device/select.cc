#include "device/select.h"

#include <charconv>
#include <cstdlib>

#include "device/cpu/cpu_device.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/driver.h"

namespace gpuwasm::device {
namespace {

std::string Describe(const cuda::GpuProbe& p) {
  return std::to_string(p.device_count) + " device(s), first: " + p.first_device_name + ", CUDA " + p.cuda_version();
}

// The driver, probed: Unavailable with the reason when there is no usable GPU.
Result<std::pair<std::shared_ptr<cuda::CudaDriver>, cuda::GpuProbe>> LoadGpu() {
  GPUWASM_ASSIGN_OR_RETURN(std::shared_ptr<cuda::CudaDriver> driver, cuda::CudaDriver::Load());
  GPUWASM_ASSIGN_OR_RETURN(cuda::GpuProbe probe, driver->Probe());
  return std::make_pair(std::move(driver), std::move(probe));
}

// The CPU device, with native code as $GPUWASM_CPU_NATIVE says (off, auto: the default, always).
Result<std::shared_ptr<Device>> OpenCpu() {
  cpu::CpuDeviceOptions o;
  if (const char* v = std::getenv("GPUWASM_CPU_NATIVE"); v != nullptr && *v != '\0') {
    const std::string_view mode(v);
    if (mode == "off")
      o.native = cpu::NativeMode::kOff;
    else if (mode == "auto")
      o.native = cpu::NativeMode::kAuto;
    else if (mode == "always")
      o.native = cpu::NativeMode::kAlways;
    else
      return Status::InvalidArgument("GPUWASM_CPU_NATIVE is '" + std::string(mode) + "': use off, auto or always");
  }
  return cpu::CreateCpuDevice(o);
}

}  // namespace

Result<std::shared_ptr<Device>> OpenDevice(std::string_view spec, std::string* why_cpu) {
  return OpenDevice(spec, why_cpu, OpenOptions{});
}

Result<std::shared_ptr<Device>> OpenDevice(std::string_view spec, std::string* why_cpu, const OpenOptions& options) {
  cuda::CudaDeviceOptions co;
  co.runaway_grace = options.runaway_grace;
  co.on_fatal = options.on_fatal;
  if (spec == "cpu") return OpenCpu();
  if (spec == "auto") {
    auto gpu = LoadGpu();
    std::string why;
    if (gpu.ok()) {
      auto dev = cuda::CreateCudaDevice(gpu->first, 0, co);
      if (dev.ok()) return dev;
      why = "a GPU is usable (" + Describe(gpu->second) +
            ") but the CUDA device did not start: " + dev.status().message() + ": using the CPU device";
    } else {
      why = gpu.status().message() + ": using the CPU device";
    }
    auto cpu = OpenCpu();
    if (cpu.ok() && why_cpu != nullptr) *why_cpu = std::move(why);
    return cpu;
  }
  if (spec.rfind("cuda:", 0) == 0) {
    std::string_view digits = spec.substr(5);
    int ordinal = -1;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), ordinal);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || ordinal < 0) {
      return Status::InvalidArgument("unknown device '" + std::string(spec) +
                                     "': N in cuda:N is a device ordinal (0, 1, ...)");
    }
    std::string name(spec);
    auto gpu = LoadGpu();
    if (!gpu.ok()) return Status::Unavailable("device '" + name + "' is not available: " + gpu.status().message());
    if (ordinal >= gpu->second.device_count) {
      return Status::InvalidArgument("device '" + name + "' does not exist: the CUDA driver reports " +
                                     std::to_string(gpu->second.device_count) + " device(s)");
    }
    auto dev = cuda::CreateCudaDevice(gpu->first, ordinal, co);
    if (!dev.ok()) return Status::Unavailable("device '" + name + "' is not available: " + dev.status().message());
    return dev;
  }
  return Status::InvalidArgument("unknown device '" + std::string(spec) + "' (use auto, cpu or cuda:N)");
}

}  // namespace gpuwasm::device
