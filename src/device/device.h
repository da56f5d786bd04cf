// The Device interface: what gpuwasm needs from a GPU, implemented by the CPU device (PTX
// executed on the host, bounds-checked) and the CUDA device (driver API).
//
//   Device   one physical device; reports its limits; creates contexts.
//   Context  one per tenant: device memory, loaded modules and streams live in a context, and a
//            kernel can only reach the memory of its own context.
//   Module   PTX loaded into a context; hands out Kernels by .entry name.
//   Stream   an in-order queue: copies, memsets and launches run asynchronously in the order
//            enqueued; an error (device fault) is sticky: later work fails with it and
//            Synchronize() returns it.
//
// Thread-safety: Device and Context methods may be called from any thread. A Stream is used by
// one thread at a time (its owner). Completions always run on the device's threads, never on the
// caller's and never under a lock of the stream: also for work enqueued after the stream failed,
// and for work Cancel() stopped (contract_test.cc checks both on every device).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/status.h"
#include "ptx/ast.h"

namespace gpuwasm::device {

using DevicePtr = uint64_t;  // an address in the device's (context's) address space

enum class DeviceKind : uint8_t { kCpu = 0, kCuda = 1 };

struct DeviceInfo {
  DeviceKind kind = DeviceKind::kCpu;
  std::string name;
  int compute_major = 0, compute_minor = 0;
  uint32_t sm_count = 0;
  uint32_t warp_size = 32;
  uint32_t max_threads_per_block = 1024;
  uint32_t max_block_dim[3] = {1024, 1024, 64};
  uint32_t max_grid_dim[3] = {0x7fffffff, 65535, 65535};
  uint32_t max_shared_per_block = 48 * 1024;  // static + dynamic
  uint64_t total_memory = 0;
  // Context::CreateWindow works: the host can run instrumented PTX (docs/adr/0009-instrumented-ptx.md).
  bool instance_windows = false;
};

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t count() const { return uint64_t{x} * y * z; }
};

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  uint32_t shared_bytes = 0;  // dynamic shared memory
};

// A kernel's parameter list as declared in its PTX (.param order, sizes and offsets).
struct KernelParam {
  std::string name;
  ptx::Type type = ptx::Type::kNone;
  uint64_t size = 0;
  uint64_t offset = 0;
};

struct KernelSignature {
  std::string name;
  std::vector<KernelParam> params;
  uint64_t param_bytes = 0;  // size of the packed parameter buffer
  uint32_t static_shared_bytes = 0;
  uint32_t max_threads = 0;  // from .maxntid (0: none)
};

// A kernel's signature from its declaration: its parameters, their packed size, and the thread
// count of its .maxntid (or .reqntid; a dimension left out counts as 1; at most UINT32_MAX; 0 when
// it has none). Every device builds its kernels' signatures here. Static shared memory is the
// device's to fill in (laid out by the CPU device, by the JIT on a GPU).
KernelSignature SignatureOf(const ptx::Function& entry);

// InvalidArgument naming the kernel when `bytes` is not the size of its packed parameter buffer.
Status CheckParamBytes(const KernelSignature& kernel, uint64_t bytes);

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual const KernelSignature& signature() const = 0;
};

class Module {
 public:
  virtual ~Module() = default;
  // The kernel named `name` (an .entry); NotFound otherwise.
  virtual Result<std::shared_ptr<const Kernel>> GetKernel(std::string_view name) const = 0;
  virtual std::vector<std::string> KernelNames() const = 0;
};

// Called once when an enqueued operation has finished (OK) or failed; on a device thread.
// Move-only, so that it can own what its operation holds (the guest interface's launch permit):
// that goes with the completion, whether it was called or dropped. Callables of up to 32 bytes
// live inside it (a launch allocates nothing); larger ones on the heap.
class Completion {
 public:
  Completion() = default;
  Completion(std::nullptr_t) {}  // NOLINT(google-explicit-constructor): like std::function
  template <class F>
  requires(!std::is_same_v<std::decay_t<F>, Completion> && std::is_invocable_v<std::decay_t<F>&, const Status&>)
      Completion(F&& f) {  // NOLINT(google-explicit-constructor, bugprone-forwarding-reference-overload)
    using T = std::decay_t<F>;
    if constexpr (sizeof(T) <= kInline && alignof(T) <= alignof(std::max_align_t) &&
                  std::is_nothrow_move_constructible_v<T>) {
      new (buf_) T(std::forward<F>(f));
      ops_ = &kInlineOps<T>;
    } else {
      *reinterpret_cast<T**>(buf_) = new T(std::forward<F>(f));
      ops_ = &kHeapOps<T>;
    }
  }
  Completion(Completion&& o) noexcept : ops_(o.ops_) {
    if (ops_ != nullptr) ops_->move(o.buf_, buf_);
    o.ops_ = nullptr;
  }
  Completion& operator=(Completion&& o) noexcept {
    if (this != &o) {
      Reset();
      ops_ = o.ops_;
      if (ops_ != nullptr) ops_->move(o.buf_, buf_);
      o.ops_ = nullptr;
    }
    return *this;
  }
  Completion(const Completion&) = delete;
  Completion& operator=(const Completion&) = delete;
  ~Completion() { Reset(); }

  explicit operator bool() const { return ops_ != nullptr; }
  void operator()(const Status& s) { ops_->call(buf_, s); }

 private:
  static constexpr size_t kInline = 32;
  struct Ops {
    void (*call)(void*, const Status&);
    void (*move)(void* from, void* to);  // leaves `from` destroyed
    void (*destroy)(void*);
  };
  template <class T>
  static constexpr Ops kInlineOps = {[](void* p, const Status& s) { (*static_cast<T*>(p))(s); },
                                     [](void* from, void* to) {
                                       new (to) T(std::move(*static_cast<T*>(from)));
                                       static_cast<T*>(from)->~T();
                                     },
                                     [](void* p) { static_cast<T*>(p)->~T(); }};
  template <class T>
  static constexpr Ops kHeapOps = {[](void* p, const Status& s) { (**static_cast<T**>(p))(s); },
                                   [](void* from, void* to) { *static_cast<T**>(to) = *static_cast<T**>(from); },
                                   [](void* p) { delete *static_cast<T**>(p); }};
  void Reset() {
    if (ops_ != nullptr) ops_->destroy(buf_);
    ops_ = nullptr;
  }

  alignas(std::max_align_t) unsigned char buf_[kInline];
  const Ops* ops_ = nullptr;
};

struct LaunchOptions {
  // Work not finished by then is stopped; the launch fails with DeadlineExceeded.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  Completion on_complete;
  // An instrumented kernel's control block as the host sees it (Window::control_host; the kernel
  // gets its device address as a hidden parameter). When the launch has run, a fault the kernel
  // recorded there fails it with DeviceFault naming the kernel's PTX line, a raised abort word with
  // DeadlineExceeded (ptx::ControlBlockStatus), and the stream's sticky error is that status.
  const void* control = nullptr;
  // The caller has already checked the configuration against this device and kernel with
  // LaunchConfigFits or CheckLaunchConfig (the guest interface does, before admission), so the
  // stream does not check it again. Everything else is still checked.
  bool config_checked = false;
};

class Stream {
 public:
  virtual ~Stream() = default;  // waits for queued work
  // `src` is copied before returning: the caller may reuse it at once.
  virtual Status MemcpyHtoD(DevicePtr dst, const void* src, uint64_t bytes) = 0;
  // Waits for earlier work, then copies.
  virtual Status MemcpyDtoH(void* dst, DevicePtr src, uint64_t bytes) = 0;
  virtual Status MemcpyDtoD(DevicePtr dst, DevicePtr src, uint64_t bytes) = 0;
  virtual Status Memset(DevicePtr dst, uint8_t value, uint64_t bytes) = 0;
  // `params` is the packed parameter buffer (signature().param_bytes long). Configuration errors
  // are returned at once; execution errors through Synchronize() and options.on_complete.
  virtual Status Launch(const Kernel& kernel, const LaunchConfig& config, std::vector<uint8_t> params,
                        LaunchOptions options = {}) = 0;
  // Waits for all enqueued work; returns the stream's first error, if any.
  virtual Status Synchronize() = 0;
  // Stops running and queued work: they fail with Cancelled, their completions running on the
  // device's threads before Cancel() returns (a kernel already running on a GPU cannot be stopped:
  // see the CUDA device). The stream stays usable.
  virtual void Cancel() = 0;
  // Total time this stream's launches spent executing on the device so far (the "GPU time" of
  // an instance). Safe from any thread.
  virtual std::chrono::nanoseconds kernel_time() const = 0;
};

// One instance's share of a context, for instrumented PTX (docs/adr/0009-instrumented-ptx.md): its
// buffers are placed inside [base, base + size), the range the fence lets its kernels reach, and
// its control block lies outside that range. The window's address range is the instance's alone
// while the window lives; allocations count against the context's quota like any other.
// Destruction frees what is left of its allocations and its control block. Used by one thread at a
// time (its instance's).
class Window {
 public:
  virtual ~Window() = default;
  virtual DevicePtr base() const = 0;
  virtual uint64_t size() const = 0;
  // Zero-filled device memory inside the window (ResourceExhausted beyond the context's quota or
  // when no free range of the window fits). `generation` as for Context::Allocate.
  virtual Result<DevicePtr> Allocate(uint64_t bytes, uint64_t* generation = nullptr) = 0;
  // Frees an allocation of this window (as Context::FreeIfCurrent).
  virtual Status Free(DevicePtr ptr, uint64_t generation) = 0;
  // The 32-byte control block (ptx::ControlBlock), zeroed: its device address, which kernels get
  // as a hidden parameter, and the same bytes as the host sees them, 8-aligned and valid while the
  // window lives (the host raises the abort word there, with atomic stores).
  virtual DevicePtr control() const = 0;
  virtual void* control_host() const = 0;
};

struct ContextOptions {
  uint64_t max_bytes = UINT64_MAX;  // device memory quota of the context
};

class Context {
 public:
  virtual ~Context() = default;
  // Zero-filled device memory of `bytes` bytes (ResourceExhausted beyond the quota). `generation`,
  // when given, receives the generation of the context's memory the allocation belongs to.
  virtual Result<DevicePtr> Allocate(uint64_t bytes, uint64_t* generation = nullptr) = 0;
  // Frees a pointer returned by Allocate (InvalidArgument for anything else).
  virtual Status Free(DevicePtr ptr) = 0;
  // Frees `ptr` if it still belongs to `generation` (from Allocate). When a reset took the
  // context's memory since, nothing is freed and the result is OK: the same address may already
  // be another instance's allocation in the rebuilt context.
  virtual Status FreeIfCurrent(DevicePtr ptr, uint64_t generation) {
    (void)generation;
    return Free(ptr);
  }
  // Parses, validates and loads PTX. Errors name the line and column (InvalidArgument), or the
  // unsupported instruction (Unsupported).
  virtual Result<std::shared_ptr<const Module>> LoadModule(std::string_view ptx) = 0;
  virtual Result<std::unique_ptr<Stream>> CreateStream() = 0;
  // A window for one instance whose buffers will total at most `max_bytes` (the window is somewhat
  // larger, so that freeing and allocating again does not run out of room). Unsupported where the
  // device cannot place allocations in a reserved range.
  virtual Result<std::unique_ptr<Window>> CreateWindow(uint64_t max_bytes) {
    (void)max_bytes;
    return Status::Unsupported("this device cannot reserve an address window for an instance");
  }
  virtual uint64_t allocated_bytes() const = 0;  // live allocations (not module globals)
  // Device memory the context holds from the device: its allocations plus what a memory pool keeps
  // for reuse (the CUDA device; the CPU device holds exactly its allocations).
  virtual uint64_t reserved_bytes() const { return allocated_bytes(); }
  // Times the context was rebuilt after a device fault or a kernel that would not stop (the CUDA
  // device; the CPU device contains faults per stream and never needs to).
  virtual uint64_t resets() const { return 0; }
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const = 0;
  virtual Result<std::shared_ptr<Context>> CreateContext(const ContextOptions& options = {}) = 0;
  // Why this process must be restarted to get the device, or some of its resources, back ("" while
  // it need not): a process-fatal device error (then every later call fails with DeviceFault), a
  // kernel no call can stop, or device memory that could not be freed. The CPU device never needs
  // it. A tenant worker process reports this and exits; its supervisor starts a fresh one.
  virtual std::string restart_reason() const { return ""; }
};

// Checks a launch configuration against the device's limits and the kernel (InvalidArgument
// naming the limit).
Status CheckLaunchConfig(const DeviceInfo& info, const KernelSignature& kernel, const LaunchConfig& config);

// The same verdict as CheckLaunchConfig without building a Status: the launch paths' fast check
// (CheckLaunchConfig says what is wrong when this says no). Tested against it.
inline bool LaunchConfigFits(const DeviceInfo& info, const KernelSignature& kernel, const LaunchConfig& c) {
  const uint32_t g[3] = {c.grid.x, c.grid.y, c.grid.z}, b[3] = {c.block.x, c.block.y, c.block.z};
  for (int i = 0; i < 3; ++i) {
    if (g[i] == 0 || b[i] == 0 || g[i] > info.max_grid_dim[i] || b[i] > info.max_block_dim[i]) return false;
  }
  const uint64_t threads = c.block.count();
  if (threads > info.max_threads_per_block || (kernel.max_threads != 0 && threads > kernel.max_threads)) return false;
  return uint64_t{kernel.static_shared_bytes} + c.shared_bytes <= info.max_shared_per_block;
}

}  // namespace gpuwasm::device
