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

  // Safe from any thread. quota_refusals counts wasi_cuda's WCU_ERR_QUOTA and output_write's.
  InstanceMetricsSnapshot metrics() const {
    InstanceMetricsSnapshot s = cuda ? cuda->metrics_snapshot_with_scheduler(scheduler) : InstanceMetricsSnapshot{};
    s.yield_count = scheduler.yield_count();
    s.quota_refusals += io.output_refusals();
    return s;
  }
};

}  // namespace gpuwasm::host
