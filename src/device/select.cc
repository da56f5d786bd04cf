#include "device/select.h"

#include "device/cpu/cpu_device.h"

namespace gpuwasm::device {

Result<std::shared_ptr<Device>> OpenDevice(std::string_view spec) {
  if (spec == "cpu" || spec == "auto") {
    // This build has no CUDA device yet, so "auto" is the CPU device.
    return cpu::CreateCpuDevice();
  }
  if (spec.rfind("cuda", 0) == 0) {
    return Status::Unavailable("device '" + std::string(spec) + "' is not available: this build of gpuwasm has no CUDA device support yet");
  }
  return Status::InvalidArgument("unknown device '" + std::string(spec) + "' (use auto, cpu or cuda:N)");
}

}  // namespace gpuwasm::device
