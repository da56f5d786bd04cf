#include "device/device.h"

#include <algorithm>

namespace gpuwasm::device {

KernelSignature SignatureOf(const ptx::Function& f) {
  KernelSignature sig;
  sig.name = f.name;
  for (const ptx::Param& p : f.params) sig.params.push_back({p.name, p.type, p.size, p.offset});
  sig.param_bytes = f.param_bytes;
  if (f.maxntid[0] != 0) {
    uint64_t threads = f.maxntid[0];
    for (int k = 1; k < 3; ++k) {  // each product of two 32-bit values fits: clamp before the next
      threads = std::min<uint64_t>(threads * std::max(1u, f.maxntid[k]), UINT32_MAX);
    }
    sig.max_threads = static_cast<uint32_t>(threads);
  }
  return sig;
}

Status CheckParamBytes(const KernelSignature& kernel, uint64_t bytes) {
  if (bytes == kernel.param_bytes) return Status::Ok();
  return Status::InvalidArgument("kernel '" + kernel.name + "' takes " + std::to_string(kernel.param_bytes) +
                                 " bytes of parameters, got " + std::to_string(bytes));
}

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
