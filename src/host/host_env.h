// HostEnv: everything the host keeps for one guest instance: its I/O (WASI, gpuwasm module), its
// wasi_cuda context (absent when GPU access is not configured: calls return NOT_PERMITTED) and
// its scheduler. A pointer to it is what wasm2c passes as the first argument of every import.
#pragma once

#include <memory>
#include <optional>

#include "host/guest_io.h"
#include "host/scheduler.h"
#include "host/wasi_cuda.h"

namespace gpuwasm::host {

struct HostEnv {
  explicit HostEnv(GuestIoOptions io_options, std::unique_ptr<WasiCudaContext> cuda_context = nullptr,
                   std::optional<SchedulerContext::Clock::time_point> deadline = {})
      : io(std::move(io_options)), cuda(std::move(cuda_context)), scheduler(deadline) {}
  GuestIo io;
  std::unique_ptr<WasiCudaContext> cuda;
  SchedulerContext scheduler;

  InstanceMetricsSnapshot metrics() const {
    return cuda ? cuda->metrics_snapshot_with_scheduler(scheduler)
                : InstanceMetricsSnapshot{0, 0, 0, scheduler.yield_count(), 0};
  }
};

}  // namespace gpuwasm::host
