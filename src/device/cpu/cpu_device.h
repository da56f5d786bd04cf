// CpuDevice: the Device that executes PTX on the host's CPUs (the embedded default).
//
// Device memory is host memory behind a per-context address space: every kernel access is
// checked against the context's live allocations (and its module's globals), so a kernel can
// neither reach host memory nor another context's buffers. Thread blocks of a launch run on a
// pool of host threads sized to the machine, plus the launching stream's own thread.
//
// Thread-safety: as documented in device/device.h.
#pragma once

#include <memory>

#include "device/device.h"

namespace gpuwasm::device::cpu {

struct CpuDeviceOptions {
  unsigned threads = 0;  // CTA worker threads (0: hardware concurrency)
};

std::shared_ptr<Device> CreateCpuDevice(const CpuDeviceOptions& options = {});

// The number of thread-instructions executed by the last launch on `stream` (a CPU stream), for
// benchmarks; 0 for other streams.
uint64_t LastLaunchInstructions(const Stream& stream);

}  // namespace gpuwasm::device::cpu
