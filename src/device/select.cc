#include "device/select.h"

#include <charconv>

#include "device/cpu/cpu_device.h"
#include "device/cuda/driver.h"

namespace gpuwasm::device {
namespace {

std::string Describe(const cuda::GpuProbe& p) {
  return std::to_string(p.device_count) + " device(s), first: " + p.first_device_name + ", CUDA " + p.cuda_version();
}

}  // namespace

Result<std::shared_ptr<Device>> OpenDevice(std::string_view spec, std::string* why_cpu) {
  if (spec == "cpu") return cpu::CreateCpuDevice();
  if (spec == "auto") {
    Result<cuda::GpuProbe> gpu = cuda::ProbeGpu();
    std::string why = gpu.ok() ? "a GPU is usable (" + Describe(*gpu) +
                                     ") but this build of gpuwasm has no CUDA device yet: using the CPU device"
                               : gpu.status().message() + ": using the CPU device";
    if (why_cpu != nullptr) *why_cpu = std::move(why);
    return cpu::CreateCpuDevice();
  }
  if (spec.rfind("cuda:", 0) == 0) {
    std::string_view digits = spec.substr(5);
    int ordinal = -1;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), ordinal);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || ordinal < 0) {
      return Status::InvalidArgument("unknown device '" + std::string(spec) + "': N in cuda:N is a device ordinal (0, 1, ...)");
    }
    std::string name(spec);
    Result<cuda::GpuProbe> gpu = cuda::ProbeGpu();
    if (!gpu.ok()) return Status::Unavailable("device '" + name + "' is not available: " + gpu.status().message());
    if (ordinal >= gpu->device_count) {
      return Status::InvalidArgument("device '" + name + "' does not exist: the CUDA driver reports " +
                              std::to_string(gpu->device_count) + " device(s)");
    }
    return Status::Unavailable("device '" + name + "' is not available: this build of gpuwasm has no CUDA device yet (" +
                               Describe(*gpu) + ")");
  }
  return Status::InvalidArgument("unknown device '" + std::string(spec) + "' (use auto, cpu or cuda:N)");
}

}  // namespace gpuwasm::device
