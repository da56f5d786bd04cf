// The CUDA device: gpuwasm's Device interface on an NVIDIA GPU through the driver API (CudaDriver,
// loaded at run time).
//
//   Context  one CUDA context per gpuwasm Context (the runtime makes one per tenant), created on
//            first use and made current on every thread that touches it. Its buffers come from a
//            stream-ordered memory pool of its own (cuMemAllocFromPoolAsync), zeroed before use,
//            under the context's byte quota; an idle context's pool gives its reserve back.
//   Module   PTX goes through gpuwasm's PTX front end first (the same validation and errors as on
//            the CPU device, and each kernel's parameter list), then the driver's JIT with its
//            error log captured. One compiled module per (context, PTX hash).
//   Stream   a non-blocking CUDA stream per gpuwasm Stream (per instance). Launches pack their
//            parameters at the offsets of the kernel's .param list (cuLaunchKernel) between two
//            events, which give the stream's kernel_time(). Launches above the default 48 KiB of
//            shared memory opt in (cuFuncSetAttribute) up to the device's limit. Host-to-device
//            copies are staged through the context's pinned memory, so they never block in the
//            driver behind a running kernel.
//
// Completion: a watcher thread per context polls each stream's oldest event (cuEventQuery), calls
// completions in order and measures GPU time. No thread ever blocks inside the driver waiting for
// the GPU, so a fault or a runaway kernel can always be dealt with. What the driver documents
// decides how (cuda.h, CUDA 13.0):
//   - A process-fatal error (illegal address, launch failure, invalid PC, contained, uncorrectable
//     ECC, ...: "the process must be terminated and relaunched") makes the GPU unusable in this
//     process: every later call of every context fails with DeviceFault naming the first error, no
//     driver object is destroyed, and options.on_fatal is told (a tenant worker exits on it).
//   - A context-fatal error (a device assert) ends that context: its live buffers are freed (what
//     the driver refuses to free stays charged to the quota), it is destroyed, and the next use
//     builds a fresh one (modules are JIT-compiled again from their retained PTX).
//   - A launch still running at its deadline fails with DeadlineExceeded at once. A GPU cannot stop
//     one kernel and cuCtxDestroy is not documented to, so if it is still running `runaway_grace`
//     later (or that long after Cancel()), its context is abandoned: never destroyed (its memory
//     stays charged), replaced for later users, and options.on_fatal is told that only ending the
//     process stops the kernel.
// An out-of-bounds access that stays inside memory the context has mapped (pool memory is mapped
// in chunks of 2 MiB or more) does not fault on a GPU: only the CPU device checks every access.
//
// Thread-safety: as the Device interface says.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "device/cuda/driver.h"
#include "device/device.h"

namespace gpuwasm::device::cuda {

struct CudaDeviceOptions {
  std::chrono::milliseconds runaway_grace{1000};
  // Pinned host memory per context that host-to-device copies are staged through: slots of
  // staging_slot_bytes, each holding one chunk of a copy until that chunk's copy completed.
  uint32_t staging_slots = 16;
  size_t staging_slot_bytes = 512 << 10;
  // An idle context's pool gives the memory its freed buffers left reserved back after this long.
  std::chrono::milliseconds pool_trim_after{1000};
  // Told once, from whichever thread saw it, when this process must be restarted to use the GPU
  // again or to stop a kernel (Device::restart_reason() says the same). It may end the process.
  std::function<void(const std::string&)> on_fatal;
};

// Device `ordinal` of a driver whose Probe() succeeded. Unavailable when the driver lacks a symbol
// the device needs or the device cannot be queried.
Result<std::shared_ptr<Device>> CreateCudaDevice(std::shared_ptr<CudaDriver> driver, int ordinal,
                                                 const CudaDeviceOptions& options = {});

}  // namespace gpuwasm::device::cuda
