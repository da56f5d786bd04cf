// Choosing the device from a user's spec: "auto" (the default), "cpu", or "cuda:N".
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "device/device.h"

namespace gpuwasm::device {

// "auto" picks a CUDA device when one is usable and otherwise the CPU device; "cpu" forces the CPU
// device; "cuda:N" forces CUDA device N and fails clearly when there is none. When "auto" settles
// on the CPU device, *why_cpu (if given) receives the one-line reason (no driver, stub library,
// cuInit error, driver too old, no device, or no CUDA device in this build) for the caller to log.
// $GPUWASM_CUDA_LIBRARY names another driver library; $GPUWASM_CPU_NATIVE (off, auto, always) sets
// when the CPU device compiles kernels to native code (device/cpu/native.h; default auto).
Result<std::shared_ptr<Device>> OpenDevice(std::string_view spec, std::string* why_cpu = nullptr);

// What a CUDA device opened by OpenDevice is told (cuda/cuda_device.h has the meaning of each).
struct OpenOptions {
  std::chrono::milliseconds runaway_grace{1000};
  std::function<void(const std::string&)> on_fatal;  // the process must be restarted: why
};
Result<std::shared_ptr<Device>> OpenDevice(std::string_view spec, std::string* why_cpu, const OpenOptions& options);

}  // namespace gpuwasm::device
