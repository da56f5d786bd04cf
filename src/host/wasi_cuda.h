// WasiCudaContext: the wasi_cuda module of one guest instance (see docs/abi.md), on top of the
// Device interface.
//
// Every guest-visible object is a handle in a per-instance table with generations: a freed or
// foreign handle is WCU_ERR_BAD_HANDLE. Quotas per instance bound buffers, device bytes, modules
// and retained PTX bytes (WCU_ERR_QUOTA). Kernel argument records are checked against the
// kernel's PTX parameter list; BUFFER arguments become device addresses. Launches pass admission
// (back-pressure and deadline) and run asynchronously on the instance's stream. Every failure sets
// the instance's last-error text. Destruction stops the instance's device work and releases every
// buffer and module.
//
// Thread-safety: the wasi_cuda calls come from the instance's thread. metrics_snapshot*() may be
// called from any thread at any time: each field is one relaxed atomic read.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "device/device.h"
#include "host/admission.h"
#include "host/handles.h"
#include "host/kernel_registry.h"
#include "host/metrics.h"
#include "host/scheduler.h"
#include "wasi_cuda_abi.h"

// The wasi_cuda.launch import: defined in wasi_cuda.cc, next to the launch path it inlines.
extern "C" uint32_t Z_wasi_cudaZ_launch(void* env, uint32_t kernel, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t bx,
                                        uint32_t by, uint32_t bz, uint32_t shared, uint32_t args, uint32_t count);

namespace gpuwasm::host {

class GuestIo;

// The guest ABI's error codes (WCU_OK, WCU_ERR_*), argument record kinds (WCU_ARG_*) and the
// layouts of wcu_arg and wcu_device_info_t come from the SDK's own header (sdk/include), the one
// definition guests compile against; the host checks the layouts it relies on here.
static_assert(sizeof(wcu_arg) == 16 && offsetof(wcu_arg, handle) == 4 && offsetof(wcu_arg, value) == 8);
static_assert(sizeof(wcu_device_info_t) == 120 && offsetof(wcu_device_info_t, max_block_dim) == 20 &&
              offsetof(wcu_device_info_t, total_memory) == 48 && offsetof(wcu_device_info_t, name) == 56);

// Bytes of a scalar argument record kind (B8, B16, B32, B64); 0 for BUFFER and unknown kinds.
constexpr uint64_t ScalarArgBytes(uint32_t kind) {
  switch (kind) {
    case WCU_ARG_B8: return 1;
    case WCU_ARG_B16: return 2;
    case WCU_ARG_B32: return 4;
    case WCU_ARG_B64: return 8;
    default: return 0;
  }
}

inline constexpr size_t kWcuArgSize = sizeof(wcu_arg);
inline constexpr uint32_t kMaxLaunchArgs = 4096;  // argument records one launch may pass
inline constexpr size_t kDeviceInfoSize = sizeof(wcu_device_info_t);

struct WasiCudaOptions {
  bool gpu_enabled = true;  // off: every call is WCU_ERR_NOT_PERMITTED
  uint32_t max_buffers = 4096;
  uint64_t max_device_bytes = 1ull << 30;
  uint32_t max_modules = 64;
  uint64_t max_ptx_bytes = 16ull << 20;  // retained PTX of live modules
  uint32_t max_inflight_launches = 64;
  std::chrono::milliseconds admission_wait{1000};                 // longest wait for a launch slot
  std::optional<std::chrono::steady_clock::time_point> deadline;  // the invocation's
};

class WasiCudaContext {
 public:
  WasiCudaContext(std::shared_ptr<device::Device> device, std::shared_ptr<TenantContext> modules,
                  WasiCudaOptions options);
  ~WasiCudaContext();
  WasiCudaContext(const WasiCudaContext&) = delete;
  WasiCudaContext& operator=(const WasiCudaContext&) = delete;

  // The wasi_cuda calls, with guest memory already bounds-checked into spans.
  int32_t DeviceInfo(std::span<uint8_t> out);
  int32_t ModuleLoad(std::span<const uint8_t> ptx);
  int32_t ModuleUnload(int32_t module);
  int32_t FunctionGet(int32_t module, std::string_view name);
  int32_t MemAlloc(int64_t size);
  int32_t MemFree(int32_t buffer);
  int32_t MemcpyHtoD(int32_t buffer, int64_t offset, std::span<const uint8_t> src);
  int32_t MemcpyDtoH(std::span<uint8_t> dst, int32_t buffer, int64_t offset);
  int32_t MemcpyDtoD(int32_t dst, int64_t dst_offset, int32_t src, int64_t src_offset, int64_t bytes);
  int32_t MemsetD8(int32_t buffer, int64_t offset, int32_t value, int64_t bytes);
  // `args` holds `count` 16-byte records; `guest` resolves WCU_ARG_BYTES addresses (without it
  // such a record is refused).
  int32_t Launch(int32_t kernel, const uint32_t grid[3], const uint32_t block[3], uint32_t shared_bytes,
                 std::span<const uint8_t> args, uint32_t count, const GuestIo* guest = nullptr);
  // Records WCU_ERR_BAD_POINTER for a guest range outside linear memory (the imports' cold path).
  int32_t FailGuestRange(uint32_t ptr, uint64_t len, const char* what);
  int32_t Synchronize();
  // Copies the last error text (truncated to out.size()); returns its full length.
  int32_t LastError(std::span<uint8_t> out) const;

  // Records `message` as the last error and returns `code` (for failures found by the caller,
  // such as a bad guest pointer).
  int32_t Fail(int32_t code, std::string message);
  const std::string& last_error() const { return last_error_; }

  InstanceMetricsSnapshot metrics_snapshot() const;
  InstanceMetricsSnapshot metrics_snapshot_with_scheduler(const SchedulerContext& scheduler) const;
  uint32_t inflight_launches() const { return admission_->inflight(); }
  // Time the instance's launches have spent executing on the device so far (its GPU time).
  // Safe from any thread, like the snapshot.
  std::chrono::nanoseconds gpu_time() const {
    const device::Stream* s = stream_view_.load(std::memory_order_acquire);
    return s != nullptr ? s->kernel_time() : std::chrono::nanoseconds{0};
  }

 private:
  // Parenthesised: `friend uint32_t ::f` would read as the member f of uint32_t (clang).
  friend uint32_t(::Z_wasi_cudaZ_launch)(void*, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t,
                                         uint32_t, uint32_t, uint32_t);
  // Launch's body, inlined into Launch and into the import (defined and used in wasi_cuda.cc only).
  [[gnu::always_inline]] inline int32_t LaunchInline(int32_t kernel, const uint32_t grid[3], const uint32_t block[3],
                                                     uint32_t shared_bytes, const uint8_t* args, uint32_t count,
                                                     const GuestIo* guest);
  struct Buffer {
    device::DevicePtr ptr = 0;
    uint64_t size = 0;
    uint64_t generation = 0;  // of the context's memory: a reset since means nothing to free
  };
  int32_t FromStatus(const Status& s, int32_t default_code);
  void Release(const Buffer& b);  // gives a buffer's device memory back
  void CountKernelFault();
  std::string NearestBuffer(const std::string& message);
  std::string WithSourceLine(const std::string& message);
  int32_t CheckUsable();
  Result<device::Stream*> GetStream();
  int32_t CheckRange(const Buffer& b, int64_t offset, int64_t bytes, const char* what);
  int32_t FailArgument(const device::KernelSignature& sig, uint32_t i, uint32_t kind, uint32_t handle, uint64_t value,
                       bool have_guest = true);

  std::shared_ptr<device::Device> device_;
  std::shared_ptr<TenantContext> modules_;
  WasiCudaOptions options_;
  std::shared_ptr<LaunchAdmission> admission_;
  KernelRegistry registry_;
  HandleTable<Buffer> buffers_;
  // Instrumented PTX (the tenant's modules are instrumented): the instance's buffers lie in its
  // window, and its kernels get the window and its control block as hidden parameters. Made at
  // the first buffer or launch; until then nothing of the device is spent.
  Result<device::Window*> GetWindow();
  std::unique_ptr<device::Window> window_;
  uint64_t abort_timer_ = 0;  // raises the window's abort word at the deadline
  std::unique_ptr<device::Stream> stream_;
  std::atomic<const device::Stream*> stream_view_{nullptr};  // stream_, for gpu_time() readers
  std::string last_error_;
  bool device_lost_ = false;
  // Set by the Watchdog at options_.deadline (armed for the context's life; never set without a
  // deadline): the launch path's "deadline passed?" is a load, not a clock read (~30 ns measured).
  std::atomic<uint32_t> deadline_tripped_{0};
  uint64_t deadline_timer_ = 0;
  // The last launch shape that passed the device's limits, and its kernel (0: none).
  int32_t fits_kernel_ = 0;
  device::LaunchConfig fits_config_;
  std::atomic<uint64_t> kernels_launched_{0};
  std::atomic<uint64_t> device_bytes_{0};
  std::atomic<uint64_t> kernel_faults_{0};   // set once, by the completion of the launch that faulted
  std::atomic<uint64_t> quota_refusals_{0};  // every WCU_ERR_QUOTA goes through Fail()
};

}  // namespace gpuwasm::host
