// The CUDA device: gpuwasm's Device interface on an NVIDIA GPU through the driver API (CudaDriver,
// loaded at run time).
//
//   Context  one CUDA context per gpuwasm Context (the runtime makes one per tenant), created on
//            first use and made current on every thread that touches it. Its buffers come from a
//            stream-ordered memory pool of its own (cuMemAllocFromPoolAsync), zeroed before use,
//            under the context's byte quota.
//   Module   PTX goes through gpuwasm's PTX front end first (the same validation and errors as on
//            the CPU device, and each kernel's parameter list), then the driver's JIT with its
//            error log captured. One compiled module per (context, PTX hash).
//   Stream   a non-blocking CUDA stream per gpuwasm Stream (per instance). Launches pack their
//            parameters at the offsets of the kernel's .param list (cuLaunchKernel) between two
//            events, which give the stream's kernel_time().
//
// Completion: a watcher thread per context polls each stream's oldest event (cuEventQuery), calls
// completions in order and measures GPU time. No thread ever blocks inside the driver waiting for
// the GPU, so a fault or a runaway kernel can always be dealt with:
//   - A sticky fault (illegal address, launch failure, ...) poisons only that context: its streams'
//     work fails with DeviceFault, the context is destroyed, and the next use builds a fresh one
//     (modules are JIT-compiled again from their retained PTX). Other contexts carry on.
//   - A launch still running at its deadline fails with DeadlineExceeded at once. A GPU cannot
//     stop one kernel, so if it is still running `runaway_grace` later (or that long after
//     Cancel()), the context is reset the same way.
//
// Thread-safety: as the Device interface says.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "common/status.h"
#include "device/cuda/driver.h"
#include "device/device.h"

namespace gpuwasm::device::cuda {

struct CudaDeviceOptions {
  std::chrono::milliseconds runaway_grace{1000};
};

// Device `ordinal` of a driver whose Probe() succeeded. Unavailable when the driver lacks a symbol
// the device needs or the device cannot be queried.
Result<std::shared_ptr<Device>> CreateCudaDevice(std::shared_ptr<CudaDriver> driver, int ordinal,
                                                 const CudaDeviceOptions& options = {});

}  // namespace gpuwasm::device::cuda
