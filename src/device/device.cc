#include "device/device.h"

namespace gpuwasm::device {

Status CheckLaunchConfig(const DeviceInfo& info, const KernelSignature& kernel, const LaunchConfig& c) {
  if (LaunchConfigFits(info, kernel, c)) return Status::Ok();
  const uint32_t g[3] = {c.grid.x, c.grid.y, c.grid.z}, b[3] = {c.block.x, c.block.y, c.block.z};
  const char* axis[3] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    if (g[i] == 0 || b[i] == 0) return Status::InvalidArgument("grid and block dimensions must be at least 1");
    if (g[i] > info.max_grid_dim[i]) {
      return Status::InvalidArgument("grid " + std::string(axis[i]) + " = " + std::to_string(g[i]) +
                                     " exceeds the device limit " + std::to_string(info.max_grid_dim[i]));
    }
    if (b[i] > info.max_block_dim[i]) {
      return Status::InvalidArgument("block " + std::string(axis[i]) + " = " + std::to_string(b[i]) +
                                     " exceeds the device limit " + std::to_string(info.max_block_dim[i]));
    }
  }
  uint64_t threads = c.block.count();
  if (threads > info.max_threads_per_block) {
    return Status::InvalidArgument("block of " + std::to_string(threads) + " threads exceeds the device limit of " +
                                   std::to_string(info.max_threads_per_block));
  }
  if (kernel.max_threads != 0 && threads > kernel.max_threads) {
    return Status::InvalidArgument("block of " + std::to_string(threads) +
                                   " threads exceeds the kernel's .maxntid of " + std::to_string(kernel.max_threads));
  }
  uint64_t shared = uint64_t{kernel.static_shared_bytes} + c.shared_bytes;
  if (shared > info.max_shared_per_block) {
    return Status::InvalidArgument("shared memory of " + std::to_string(shared) + " bytes (" +
                                   std::to_string(kernel.static_shared_bytes) + " static + " +
                                   std::to_string(c.shared_bytes) + " dynamic) exceeds the device limit of " +
                                   std::to_string(info.max_shared_per_block));
  }
  return Status::Internal(
      "launch configuration refused without a reason (LaunchConfigFits and CheckLaunchConfig disagree)");
}

}  // namespace gpuwasm::device
