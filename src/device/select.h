// Choosing the device from a user's spec: "auto" (the default), "cpu", or "cuda:N".
#pragma once

#include <memory>
#include <string_view>

#include "common/status.h"
#include "device/device.h"

namespace gpuwasm::device {

// "auto" picks a CUDA device when one is usable and otherwise the CPU device; "cpu" forces the CPU
// device; "cuda:N" forces CUDA device N and fails clearly when there is none.
Result<std::shared_ptr<Device>> OpenDevice(std::string_view spec);

}  // namespace gpuwasm::device
