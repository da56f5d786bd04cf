#include "host/wasi_cuda.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <random>

#include "host/host_env.h"
#include "ptx/instrument.h"
#include "wasm/watchdog.h"

namespace gpuwasm::host {
namespace {

uint32_t Seed() {
  static std::atomic<uint32_t> counter{static_cast<uint32_t>(std::random_device{}())};
  return counter.fetch_add(0x9e3779b9u);
}

// The abort word of a window's control block (its first word), as the Watchdog stores flags.
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free);
std::atomic<uint32_t>* AbortWord(const device::Window& w) {
  return static_cast<std::atomic<uint32_t>*>(w.control_host());
}

}  // namespace

WasiCudaContext::WasiCudaContext(std::shared_ptr<device::Device> device, std::shared_ptr<TenantContext> modules,
                                 WasiCudaOptions options)
    : device_(std::move(device)),
      modules_(std::move(modules)),
      options_(options),
      admission_(LaunchAdmission::Create(options.max_inflight_launches, options.admission_wait)),
      registry_(modules_, Seed()),
      buffers_(3, Seed()) {
  if (options_.deadline) {
    if (std::chrono::steady_clock::now() >= *options_.deadline) {
      deadline_tripped_.store(1);
    } else {
      deadline_timer_ = wasm::Watchdog::Get().Arm(*options_.deadline, &deadline_tripped_, 1);
    }
  }
}

WasiCudaContext::~WasiCudaContext() {
  if (deadline_timer_ != 0) wasm::Watchdog::Get().Disarm(deadline_timer_);  // before the flag goes
  if (abort_timer_ != 0) wasm::Watchdog::Get().Disarm(abort_timer_);
  if (window_) AbortWord(*window_)->store(1);  // instrumented kernels still running stop at their next check
  if (stream_) {
    stream_->Cancel();  // stop queued and running work of this instance
    (void)stream_->Synchronize();
  }
  buffers_.ForEach([&](int32_t, Buffer& b) { Release(b); });
  buffers_.Clear();
  registry_.Clear();
  window_.reset();
  device_bytes_.store(0);
  stream_view_.store(nullptr, std::memory_order_release);
  stream_.reset();
}

void WasiCudaContext::Release(const Buffer& b) {
  // An instrumented tenant's buffers are its window's (MemAlloc made the window before the first).
  (void)(window_ ? window_->Free(b.ptr, b.generation) : modules_->context().FreeIfCurrent(b.ptr, b.generation));
}

int32_t WasiCudaContext::Fail(int32_t code, std::string message) {
  if (code == WCU_ERR_QUOTA) quota_refusals_.fetch_add(1, std::memory_order_relaxed);
  last_error_ = std::move(message);
  return code;
}

// " (4 bytes past the end of buffer 3, of 1024 bytes)" for the address a device fault names
// ("... at 0x7f00 ..."), from the instance's own buffers; "" when it names none or none is near.
std::string WasiCudaContext::NearestBuffer(const std::string& message) {
  const size_t at = message.find(" at 0x");
  if (at == std::string::npos) return "";
  const uint64_t addr = std::strtoull(message.c_str() + at + 6, nullptr, 16);
  int32_t best = 0;
  Buffer nearest;
  buffers_.ForEach([&](int32_t h, Buffer& b) {
    if (b.ptr <= addr && (best == 0 || b.ptr > nearest.ptr)) {
      best = h;
      nearest = b;
    }
  });
  if (best == 0) return "";
  const uint64_t off = addr - nearest.ptr;
  if (off < nearest.size) {
    return " (offset " + std::to_string(off) + " of buffer " + std::to_string(best) + ", of " +
           std::to_string(nearest.size) + " bytes: the access runs past its end)";
  }
  if (off - nearest.size > (uint64_t{1} << 30)) return "";  // far from any buffer: a wild pointer
  return " (" + std::to_string(off - nearest.size) + " bytes past the end of buffer " + std::to_string(best) + ", of " +
         std::to_string(nearest.size) + " bytes)";
}

// "kernel 'k' (PTX line 23): ..." with the .cu line the PTX line came from, when the kernel's PTX
// has nvcc's line information: "kernel 'k' (PTX line 23, vector_add.cu:12): ...".
std::string WasiCudaContext::WithSourceLine(const std::string& message) {
  const std::string head = "kernel '", mid = "' (PTX line ";
  const size_t k = message.find(head), m = message.find(mid);
  if (k != 0 || m == std::string::npos) return message;
  const size_t digits = m + mid.size(), close = message.find(')', digits);
  if (close == std::string::npos) return message;
  const std::string kernel = message.substr(head.size(), m - head.size());
  const uint32_t line = static_cast<uint32_t>(std::strtoul(message.c_str() + digits, nullptr, 10));
  const std::string source = registry_.SourceLine(kernel, line);
  if (source.empty()) return message;
  return message.substr(0, close) + ", " + source + message.substr(close);
}

int32_t WasiCudaContext::FromStatus(const Status& s, int32_t default_code) {
  int32_t code = default_code;
  switch (s.code()) {
    case StatusCode::kDeviceFault:
      device_lost_ = true;
      return Fail(WCU_ERR_DEVICE, WithSourceLine(s.message()) + NearestBuffer(s.message()));
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kCancelled: code = WCU_ERR_DEADLINE; break;
    case StatusCode::kResourceExhausted: code = WCU_ERR_QUOTA; break;
    case StatusCode::kUnsupported: code = WCU_ERR_UNSUPPORTED; break;
    case StatusCode::kOutOfRange: code = WCU_ERR_OUT_OF_RANGE; break;
    case StatusCode::kNotFound: code = WCU_ERR_NOT_FOUND; break;
    case StatusCode::kInternal: code = WCU_ERR_INTERNAL; break;
    default: break;
  }
  return Fail(code, s.message());
}

int32_t WasiCudaContext::CheckUsable() {
  if (!options_.gpu_enabled) return Fail(WCU_ERR_NOT_PERMITTED, "GPU access is not enabled for this function's tenant");
  if (device_lost_) return Fail(WCU_ERR_DEVICE, "a device fault happened earlier: the instance's GPU state is lost");
  return WCU_OK;
}

Result<device::Stream*> WasiCudaContext::GetStream() {
  if (!stream_) {
    GPUWASM_ASSIGN_OR_RETURN(stream_, modules_->context().CreateStream());
    stream_view_.store(stream_.get(), std::memory_order_release);
  }
  return stream_.get();
}

Result<device::Window*> WasiCudaContext::GetWindow() {
  if (!window_) {
    GPUWASM_ASSIGN_OR_RETURN(window_, modules_->context().CreateWindow(options_.max_device_bytes));
    if (deadline_tripped_.load() != 0) {
      AbortWord(*window_)->store(1);
    } else if (options_.deadline) {
      abort_timer_ = wasm::Watchdog::Get().Arm(*options_.deadline, AbortWord(*window_), 1);
    }
  }
  return window_.get();
}

int32_t WasiCudaContext::CheckRange(const Buffer& b, int64_t offset, int64_t bytes, const char* what) {
  if (offset < 0 || bytes < 0 || static_cast<uint64_t>(offset) > b.size ||
      static_cast<uint64_t>(bytes) > b.size - static_cast<uint64_t>(offset)) {
    return Fail(WCU_ERR_OUT_OF_RANGE, std::string(what) + ": range [" + std::to_string(offset) + ", +" +
                                          std::to_string(bytes) + ") is outside the buffer of " +
                                          std::to_string(b.size) + " bytes");
  }
  return WCU_OK;
}

int32_t WasiCudaContext::DeviceInfo(std::span<uint8_t> out) {
  if (int32_t e = CheckUsable(); e != WCU_OK) return e;
  const device::DeviceInfo& i = device_->info();
  static_assert(std::endian::native == std::endian::little, "the host's bytes are the wasm32 guest's");
  wcu_device_info_t info = {};
  info.kind = static_cast<uint32_t>(i.kind);
  info.compute_major = static_cast<uint32_t>(i.compute_major);
  info.compute_minor = static_cast<uint32_t>(i.compute_minor);
  info.sm_count = i.sm_count;
  info.max_threads_per_block = i.max_threads_per_block;
  std::copy_n(i.max_block_dim, 3, info.max_block_dim);
  std::copy_n(i.max_grid_dim, 3, info.max_grid_dim);
  info.max_shared_per_block = i.max_shared_per_block;
  info.total_memory = i.total_memory;
  std::memcpy(info.name, i.name.data(), std::min<size_t>(i.name.size(), sizeof info.name - 1));
  size_t n = std::min(out.size(), sizeof info);
  std::memcpy(out.data(), &info, n);
  return static_cast<int32_t>(n);
}

int32_t WasiCudaContext::ModuleLoad(std::span<const uint8_t> ptx) {
  if (int32_t e = CheckUsable(); e != WCU_OK) return e;
  if (registry_.module_count() >= options_.max_modules) {
    return Fail(WCU_ERR_QUOTA, "module quota of " + std::to_string(options_.max_modules) + " reached");
  }
  if (registry_.retained_bytes() + ptx.size() > options_.max_ptx_bytes) {
    return Fail(WCU_ERR_QUOTA, "retaining " + std::to_string(ptx.size()) +
                                   " more PTX bytes would exceed the quota of " +
                                   std::to_string(options_.max_ptx_bytes));
  }
  auto h = registry_.LoadModule(std::string(reinterpret_cast<const char*>(ptx.data()), ptx.size()));
  if (!h.ok()) return FromStatus(h.status(), WCU_ERR_BAD_PTX);
  return *h;
}

int32_t WasiCudaContext::ModuleUnload(int32_t module) {
  if (int32_t e = CheckUsable(); e != WCU_OK) return e;
  if (!registry_.UnloadModule(module))
    return Fail(WCU_ERR_BAD_HANDLE, "module_unload: bad module handle " + std::to_string(module));
  fits_kernel_ = 0;
  return WCU_OK;
}

int32_t WasiCudaContext::FunctionGet(int32_t module, std::string_view name) {
  if (int32_t e = CheckUsable(); e != WCU_OK) return e;
  if (!registry_.HasModule(module))
    return Fail(WCU_ERR_BAD_HANDLE, "function_get: bad module handle " + std::to_string(module));
  auto h = registry_.GetKernel(module, name);
  if (!h.ok()) return FromStatus(h.status(), WCU_ERR_INTERNAL);
  return *h;
}

int32_t WasiCudaContext::MemAlloc(int64_t size) {
  if (int32_t e = CheckUsable(); e != WCU_OK) return e;
  if (size <= 0) return Fail(WCU_ERR_BAD_ARGS, "mem_alloc: size must be positive, got " + std::to_string(size));
  if (buffers_.size() >= options_.max_buffers) {
    return Fail(WCU_ERR_QUOTA, "buffer quota of " + std::to_string(options_.max_buffers) + " reached");
  }
  uint64_t used = device_bytes_.load(std::memory_order_relaxed);
  if (static_cast<uint64_t>(size) > options_.max_device_bytes - std::min(used, options_.max_device_bytes)) {
    return Fail(WCU_ERR_QUOTA, "allocating " + std::to_string(size) + " bytes would exceed the instance's quota of " +
                                   std::to_string(options_.max_device_bytes) + " device bytes (" +
                                   std::to_string(used) + " in use)");
  }
  uint64_t generation = 0;
  device::Window* window = nullptr;
  if (modules_->instrumented()) {
    Result<device::Window*> w = GetWindow();
    if (!w.ok()) return FromStatus(w.status(), WCU_ERR_QUOTA);
    window = *w;
  }
  auto p = window != nullptr ? window->Allocate(static_cast<uint64_t>(size), &generation)
                             : modules_->context().Allocate(static_cast<uint64_t>(size), &generation);
  if (!p.ok()) return FromStatus(p.status(), WCU_ERR_QUOTA);
  int32_t h = buffers_.Add({*p, static_cast<uint64_t>(size), generation});
  if (h == 0) {
    Release({*p, static_cast<uint64_t>(size), generation});
    return Fail(WCU_ERR_QUOTA, "too many buffers");
  }
  device_bytes_.fetch_add(static_cast<uint64_t>(size), std::memory_order_relaxed);
  return h;
}

int32_t WasiCudaContext::MemFree(int32_t buffer) {
  if (int32_t e = CheckUsable(); e != WCU_OK) return e;
  Buffer* b = buffers_.Get(buffer);
  if (b == nullptr) return Fail(WCU_ERR_BAD_HANDLE, "mem_free: bad buffer handle " + std::to_string(buffer));
  if (stream_) {  // pending work on the buffer completes first
    Status s = stream_->Synchronize();
    if (!s.ok()) return FromStatus(s, WCU_ERR_DEVICE);
  }
  Buffer copy = *b;
  buffers_.Remove(buffer);
  Release(copy);
  device_bytes_.fetch_sub(copy.size, std::memory_order_relaxed);
  return WCU_OK;
}

int32_t WasiCudaContext::MemcpyHtoD(int32_t buffer, int64_t offset, std::span<const uint8_t> src) {
  if (int32_t e = CheckUsable(); e != WCU_OK) return e;
  Buffer* b = buffers_.Get(buffer);
  if (b == nullptr) return Fail(WCU_ERR_BAD_HANDLE, "memcpy_htod: bad buffer handle " + std::to_string(buffer));
  if (int32_t e = CheckRange(*b, offset, static_cast<int64_t>(src.size()), "memcpy_htod"); e != WCU_OK) return e;
  if (src.empty()) return WCU_OK;
  auto s = GetStream();
  if (!s.ok()) return FromStatus(s.status(), WCU_ERR_INTERNAL);
  Status st = (*s)->MemcpyHtoD(b->ptr + static_cast<uint64_t>(offset), src.data(), src.size());
  return st.ok() ? WCU_OK : FromStatus(st, WCU_ERR_INTERNAL);
}

int32_t WasiCudaContext::MemcpyDtoH(std::span<uint8_t> dst, int32_t buffer, int64_t offset) {
  if (int32_t e = CheckUsable(); e != WCU_OK) return e;
  Buffer* b = buffers_.Get(buffer);
  if (b == nullptr) return Fail(WCU_ERR_BAD_HANDLE, "memcpy_dtoh: bad buffer handle " + std::to_string(buffer));
  if (int32_t e = CheckRange(*b, offset, static_cast<int64_t>(dst.size()), "memcpy_dtoh"); e != WCU_OK) return e;
  auto s = GetStream();
  if (!s.ok()) return FromStatus(s.status(), WCU_ERR_INTERNAL);
  Status st = (*s)->MemcpyDtoH(dst.data(), b->ptr + static_cast<uint64_t>(offset), dst.size());  // waits for prior work
  return st.ok() ? WCU_OK : FromStatus(st, WCU_ERR_INTERNAL);
}

int32_t WasiCudaContext::MemcpyDtoD(int32_t dst, int64_t dst_offset, int32_t src, int64_t src_offset, int64_t bytes) {
  if (int32_t e = CheckUsable(); e != WCU_OK) return e;
  Buffer* d = buffers_.Get(dst);
  Buffer* s = buffers_.Get(src);
  if (d == nullptr || s == nullptr) {
    return Fail(WCU_ERR_BAD_HANDLE, "memcpy_dtod: bad buffer handle " + std::to_string(d == nullptr ? dst : src));
  }
  if (int32_t e = CheckRange(*d, dst_offset, bytes, "memcpy_dtod destination"); e != WCU_OK) return e;
  if (int32_t e = CheckRange(*s, src_offset, bytes, "memcpy_dtod source"); e != WCU_OK) return e;
  if (bytes == 0) return WCU_OK;
  auto st = GetStream();
  if (!st.ok()) return FromStatus(st.status(), WCU_ERR_INTERNAL);
  Status r = (*st)->MemcpyDtoD(d->ptr + static_cast<uint64_t>(dst_offset), s->ptr + static_cast<uint64_t>(src_offset),
                               static_cast<uint64_t>(bytes));
  return r.ok() ? WCU_OK : FromStatus(r, WCU_ERR_INTERNAL);
}

int32_t WasiCudaContext::MemsetD8(int32_t buffer, int64_t offset, int32_t value, int64_t bytes) {
  if (int32_t e = CheckUsable(); e != WCU_OK) return e;
  Buffer* b = buffers_.Get(buffer);
  if (b == nullptr) return Fail(WCU_ERR_BAD_HANDLE, "memset_d8: bad buffer handle " + std::to_string(buffer));
  if (int32_t e = CheckRange(*b, offset, bytes, "memset_d8"); e != WCU_OK) return e;
  if (bytes == 0) return WCU_OK;
  auto s = GetStream();
  if (!s.ok()) return FromStatus(s.status(), WCU_ERR_INTERNAL);
  Status st =
      (*s)->Memset(b->ptr + static_cast<uint64_t>(offset), static_cast<uint8_t>(value), static_cast<uint64_t>(bytes));
  return st.ok() ? WCU_OK : FromStatus(st, WCU_ERR_INTERNAL);
}

static_assert(std::has_unique_object_representations_v<device::LaunchConfig>, "launch shapes are compared bytewise");

// The launch path is the guest's hot path (bench_launch): the checks below are the cheap verdicts,
// and every message is built in a cold path only once something is wrong.
int32_t WasiCudaContext::Launch(int32_t kernel, const uint32_t grid[3], const uint32_t block[3], uint32_t shared_bytes,
                                std::span<const uint8_t> args, uint32_t count, const GuestIo* guest) {
  if (args.size() < uint64_t{count} * kWcuArgSize)
    return Fail(WCU_ERR_BAD_ARGS, "launch: fewer argument bytes than records");
  return LaunchInline(kernel, grid, block, shared_bytes, args.data(), count, guest);
}

int32_t WasiCudaContext::FailGuestRange(uint32_t ptr, uint64_t len, const char* what) {
  return Fail(WCU_ERR_BAD_POINTER, std::string(what) + ": guest range [" + std::to_string(ptr) + ", +" +
                                       std::to_string(len) + ") is outside linear memory");
}

inline int32_t WasiCudaContext::LaunchInline(int32_t kernel, const uint32_t grid[3], const uint32_t block[3],
                                             uint32_t shared_bytes, const uint8_t* args, uint32_t count,
                                             const GuestIo* guest) {
  if (!options_.gpu_enabled || device_lost_) [[unlikely]]
    return CheckUsable();
  const KernelRegistry::GuestKernel* k = registry_.FindKernel(kernel);
  if (k == nullptr) [[unlikely]]
    return Fail(WCU_ERR_BAD_HANDLE, "launch: bad kernel handle " + std::to_string(kernel));
  const device::KernelSignature& sig = *k->sig;
  device::LaunchConfig config;
  config.grid = {grid[0], grid[1], grid[2]};
  config.block = {block[0], block[1], block[2]};
  config.shared_bytes = shared_bytes;
  // A guest launches the same kernel with the same shape again and again: the last shape that fit
  // is remembered (kernel handles are never reused while remembered: unloading forgets it).
  if (kernel != fits_kernel_ || std::memcmp(&config, &fits_config_, sizeof config) != 0) {
    if (!device::LaunchConfigFits(device_->info(), sig, config)) [[unlikely]] {
      return Fail(WCU_ERR_BAD_DIMENSIONS,
                  "launch of '" + sig.name + "': " + device::CheckLaunchConfig(device_->info(), sig, config).message());
    }
    fits_kernel_ = kernel;
    fits_config_ = config;
  }
  if (count != k->args.size()) [[unlikely]] {
    return Fail(WCU_ERR_BAD_ARGS, "launch of '" + sig.name + "': the kernel takes " + std::to_string(k->args.size()) +
                                      " arguments, got " + std::to_string(count));
  }
  std::vector<uint8_t> params(sig.param_bytes);
  const void* control = nullptr;
  if (k->hidden_offset != KernelRegistry::kNoHidden) {  // instrumented: the window and the control block
    device::Window* w = window_.get();
    if (w == nullptr) [[unlikely]] {
      Result<device::Window*> made = GetWindow();
      if (!made.ok()) return FromStatus(made.status(), WCU_ERR_QUOTA);
      w = *made;
    }
    const uint64_t hidden[3] = {w->base(), w->size(), w->control()};
    std::memcpy(params.data() + k->hidden_offset, hidden, sizeof hidden);
    control = w->control_host();
  }
  const uint8_t* record = args;
  const KernelRegistry::ArgSlot* slot = k->args.data();
  for (uint32_t i = 0; i < count; ++i, record += kWcuArgSize, ++slot) {
    uint32_t kind, handle;
    uint64_t value;
    std::memcpy(&kind, record, 4);
    std::memcpy(&handle, record + 4, 4);
    std::memcpy(&value, record + 8, 8);
    if (kind == WCU_ARG_BUFFER) {
      const Buffer* b = slot->size == 8 ? buffers_.Get(static_cast<int32_t>(handle)) : nullptr;
      if (b == nullptr || value > b->size) [[unlikely]]
        return FailArgument(sig, i, kind, handle, value);
      value += b->ptr;
    } else if (kind == WCU_ARG_BYTES) {  // raw bytes from guest memory, exactly the parameter's size
      if (handle != slot->size || guest == nullptr || value > UINT32_MAX) [[unlikely]] {
        return FailArgument(sig, i, kind, handle, value, guest != nullptr);
      }
      const uint8_t* bytes = guest->GuestPtr(static_cast<uint32_t>(value), handle);
      if (bytes == nullptr) [[unlikely]]
        return FailGuestRange(static_cast<uint32_t>(value), handle, "launch argument bytes");
      std::memcpy(params.data() + slot->offset, bytes, handle);
      continue;
    } else if (kind != slot->scalar_kind) [[unlikely]] {
      return FailArgument(sig, i, kind, handle, value);
    }
    uint8_t* at = params.data() + slot->offset;
    switch (slot->size) {  // fixed-size copies compile to one store each
      case 1: std::memcpy(at, &value, 1); break;
      case 2: std::memcpy(at, &value, 2); break;
      case 4: std::memcpy(at, &value, 4); break;
      default: std::memcpy(at, &value, 8); break;
    }
  }
  device::Stream* stream = stream_.get();
  if (stream == nullptr) [[unlikely]] {
    auto created = GetStream();
    if (!created.ok()) return FromStatus(created.status(), WCU_ERR_INTERNAL);
    stream = *created;
  }
  LaunchPermit permit;
  switch (admission_->Acquire(options_.deadline, &permit, &deadline_tripped_)) {
    case LaunchAdmission::Outcome::kBusy:
      return Fail(WCU_ERR_BUSY, "launch of '" + sig.name + "': no launch slot (" +
                                    std::to_string(admission_->max_inflight()) + " in flight) within the wait limit");
    case LaunchAdmission::Outcome::kDeadline:
      return Fail(WCU_ERR_DEADLINE, "launch of '" + sig.name + "': the invocation's deadline has passed");
    case LaunchAdmission::Outcome::kAdmitted: break;
  }
  // Only this instance's thread writes the count: a plain increment, readers see whole values.
  kernels_launched_.store(kernels_launched_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  device::LaunchOptions lo;
  lo.deadline = options_.deadline;
  lo.config_checked = true;  // above, or an identical shape earlier
  lo.control = control;
  // The completion owns the slot: it comes back when the device has finished with the launch, or
  // with the completion if the device drops it (the stream is stopped before the admission goes).
  // Two words of capture: inside device::Completion, the launch path allocates nothing.
  lo.on_complete = [permit = std::move(permit), this](const Status& s) mutable {
    if (s.code() == StatusCode::kDeviceFault) [[unlikely]]
      CountKernelFault();
    permit.Release();
  };
  Status s = stream->Launch(*k->kernel, config, std::move(params), std::move(lo));
  if (!s.ok()) [[unlikely]] {  // refused: the completion, and with it the slot, went with `lo`
    // Refused by the device (its shape, its scratch over the quota): not launched.
    kernels_launched_.store(kernels_launched_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
    // The parameters are right by construction: what the device refuses is the shape (on a GPU,
    // a block larger than the compiled kernel's registers allow).
    if (s.code() == StatusCode::kInvalidArgument) {
      return Fail(WCU_ERR_BAD_DIMENSIONS, "launch of '" + sig.name + "': " + s.message());
    }
    return FromStatus(s, WCU_ERR_INTERNAL);
  }
  return WCU_OK;
}

// Why argument record `i` was refused (the launch loop's cold path).
int32_t WasiCudaContext::FailArgument(const device::KernelSignature& sig, uint32_t i, uint32_t kind, uint32_t handle,
                                      uint64_t value, bool have_guest) {
  const device::KernelParam& p = sig.params[i];
  const std::string where = "launch of '" + sig.name + "': argument " + std::to_string(i) + " (" + p.name + ", " +
                            std::to_string(p.size) + " bytes)";
  if (kind == WCU_ARG_BUFFER) {
    if (p.size != 8) return Fail(WCU_ERR_BAD_ARGS, where + ": a BUFFER needs a 64-bit pointer parameter");
    const Buffer* b = buffers_.Get(static_cast<int32_t>(handle));
    if (b == nullptr)
      return Fail(WCU_ERR_BAD_HANDLE, where + ": bad buffer handle " + std::to_string(static_cast<int32_t>(handle)));
    return Fail(WCU_ERR_OUT_OF_RANGE, where + ": offset " + std::to_string(value) + " is past the end of the buffer (" +
                                          std::to_string(b->size) + " bytes)");
  }
  if (kind == WCU_ARG_BYTES) {
    if (!have_guest) return Fail(WCU_ERR_BAD_ARGS, where + ": BYTES arguments need the guest's memory");
    if (value > UINT32_MAX) return FailGuestRange(UINT32_MAX, handle, "launch argument bytes");
    return Fail(WCU_ERR_BAD_ARGS, where + ": got " + std::to_string(handle) + " bytes, the parameter is " +
                                      std::to_string(p.size) + " bytes");
  }
  const uint64_t size = ScalarArgBytes(kind);
  if (size == 0) return Fail(WCU_ERR_BAD_ARGS, where + ": unknown argument kind " + std::to_string(kind));
  // A 64-bit integer parameter given a smaller value is most often a pointer given a handle.
  const bool pointer_like =
      p.size == 8 && size < 8 && (p.type == ptx::Type::kU64 || p.type == ptx::Type::kB64 || p.type == ptx::Type::kS64);
  return Fail(WCU_ERR_BAD_ARGS,
              where + ": got a " + std::to_string(size) + "-byte value, the parameter is " + std::to_string(p.size) +
                  " bytes" +
                  (pointer_like ? " (a pointer parameter takes a buffer: wcu_arg_buffer(buffer, offset))" : ""));
}

// A fault an instrumented kernel recorded ends its launch with DeviceFault, and every later one on
// the stream with the same (sticky) status: counted once. On a device thread; window_ was made
// before the launch and outlives the stream's work.
void WasiCudaContext::CountKernelFault() {
  if (!window_) return;
  auto* control = static_cast<uint32_t*>(window_->control_host());
  if (std::atomic_ref<uint32_t>(control[1]).load() == ptx::kNoFault) return;
  uint64_t none = 0;
  kernel_faults_.compare_exchange_strong(none, 1, std::memory_order_relaxed);
}

int32_t WasiCudaContext::Synchronize() {
  if (int32_t e = CheckUsable(); e != WCU_OK) return e;
  if (!stream_) return WCU_OK;
  Status s = stream_->Synchronize();
  return s.ok() ? WCU_OK : FromStatus(s, WCU_ERR_DEVICE);
}

int32_t WasiCudaContext::LastError(std::span<uint8_t> out) const {
  size_t n = std::min(out.size(), last_error_.size());
  std::memcpy(out.data(), last_error_.data(), n);
  return static_cast<int32_t>(std::min<size_t>(last_error_.size(), INT32_MAX));
}

InstanceMetricsSnapshot WasiCudaContext::metrics_snapshot() const {
  InstanceMetricsSnapshot s;
  s.kernels_launched = kernels_launched_.load(std::memory_order_relaxed);
  s.bytes_pinned = registry_.retained_bytes();
  s.back_pressure_rejections = admission_->rejections();
  s.device_bytes_allocated = device_bytes_.load(std::memory_order_relaxed);
  s.kernel_faults = kernel_faults_.load(std::memory_order_relaxed);
  s.quota_refusals = quota_refusals_.load(std::memory_order_relaxed);
  return s;
}

InstanceMetricsSnapshot WasiCudaContext::metrics_snapshot_with_scheduler(const SchedulerContext& scheduler) const {
  InstanceMetricsSnapshot s = metrics_snapshot();
  s.yield_count = scheduler.yield_count();
  return s;
}

namespace {

[[gnu::noinline, gnu::cold]] int32_t TooManyArgs(WasiCudaContext* cuda, uint32_t count) {
  return cuda->Fail(WCU_ERR_BAD_ARGS, "launch: " + std::to_string(count) + " argument records is too many");
}

}  // namespace
}  // namespace gpuwasm::host

// The guest's hot path (bench_launch) in one function: the import with the launch inlined.
extern "C" uint32_t Z_wasi_cudaZ_launch(void* env, uint32_t kernel, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t bx,
                                        uint32_t by, uint32_t bz, uint32_t shared, uint32_t args, uint32_t count) {
  using namespace gpuwasm::host;
  HostEnv* e = static_cast<HostEnv*>(env);
  WasiCudaContext* cuda = e->cuda.get();
  if (cuda == nullptr) [[unlikely]]
    return static_cast<uint32_t>(WCU_ERR_NOT_PERMITTED);
  if (count > kMaxLaunchArgs) [[unlikely]]
    return static_cast<uint32_t>(TooManyArgs(cuda, count));
  const uint8_t* records = e->io.GuestPtr(args, uint64_t{count} * kWcuArgSize);
  if (records == nullptr) [[unlikely]] {
    return static_cast<uint32_t>(cuda->FailGuestRange(args, uint64_t{count} * kWcuArgSize, "launch arguments"));
  }
  const uint32_t grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  return static_cast<uint32_t>(
      cuda->LaunchInline(static_cast<int32_t>(kernel), grid, block, shared, records, count, &e->io));
}
