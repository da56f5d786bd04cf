#include "device/cuda/cuda_device.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "common/content_cache.h"
#include "common/names.h"
#include "common/sha256.h"
#include "device/allocation_table.h"
#include "device/cuda/symbols.h"
#include "device/window_ranges.h"
#include "ptx/instrument.h"
#include "ptx/parser.h"

namespace gpuwasm::device::cuda {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kJitLogBytes = 16 * 1024;

std::atomic<uint64_t> g_next_core{1};
thread_local uint64_t t_bound_gen = 0;  // the generation made current on this thread

class CudaDevice;
class CudaContext;
class CudaStream;

// Pinned host memory that host-to-device copies are staged through. A copy from pageable memory
// may block inside the driver until the stream's earlier work is done (behind a kernel that never
// ends: for ever), holding whatever the caller holds; a copy from pinned memory is asynchronous.
// Fixed slots: each chunk of a copy takes one and gives it back when that chunk's copy completed.
// Thread-safe.
class StagingRing {
 public:
  StagingRing(uint8_t* base, size_t slot_bytes, uint32_t slots) : base_(base), slot_bytes_(slot_bytes) {
    for (uint32_t i = slots; i > 0; --i) free_.push_back(i - 1);
  }

  // A free slot, waiting while `keep_waiting()` says so (asked outside the ring's lock); none once
  // the ring is closed (its context went) or the caller gave up.
  std::optional<uint32_t> Take(const std::function<bool()>& keep_waiting) {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        if (closed_) return std::nullopt;
        if (!free_.empty()) {
          uint32_t s = free_.back();
          free_.pop_back();
          return s;
        }
        cv_.wait_for(lock, std::chrono::milliseconds(10), [&] { return closed_ || !free_.empty(); });
        if (closed_) return std::nullopt;
        if (!free_.empty()) continue;
      }
      if (!keep_waiting()) return std::nullopt;
    }
  }
  void Give(uint32_t slot) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      free_.push_back(slot);
    }
    cv_.notify_one();
  }
  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }
  uint8_t* At(uint32_t slot) const { return base_ + size_t{slot} * slot_bytes_; }
  size_t slot_bytes() const { return slot_bytes_; }

 private:
  uint8_t* const base_;
  const size_t slot_bytes_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<uint32_t> free_;
  bool closed_ = false;
};

// One generation of a tenant's GPU context (CudaContext): the driver's CUDA context with its memory
// pool, the utility stream allocations are zeroed on, and its pinned staging memory. A reset ends
// the generation and the next use builds a new one; `id` is unique in the process, so stale users
// notice, and the memory allocated in it carries it (Allocate's `generation`). ADR 0015.
// It owns its driver objects: they are destroyed with it, unless it was abandoned.
struct Generation {
  explicit Generation(const DriverSymbols& s) : sym(&s) {}
  ~Generation() { Destroy(); }
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;
  // Destroys the driver objects now (the pool after trimming it, the pinned memory, the context
  // with its streams, events and modules); the caller freed the memory allocated in it. Once.
  void Destroy();
  // A kernel may still run in it that nothing can stop (a fault the driver could not clear): its
  // driver objects are kept, never destroyed, until the process ends (ADR 0015).
  void Abandon() { sym = nullptr; }

  const DriverSymbols* sym;  // nullptr once destroyed or abandoned
  uint64_t id = 0;
  void* ctx = nullptr;
  void* pool = nullptr;
  void* util = nullptr;
  void* pinned = nullptr;
  std::shared_ptr<StagingRing> staging;
  std::vector<void*> spare_events;  // guarded by CudaContext::events_mu_
};

class CudaModule;

class CudaKernel final : public Kernel {
 public:
  CudaKernel(std::shared_ptr<const CudaModule> module, KernelSignature sig)
      : module_(std::move(module)), sig_(std::move(sig)) {}
  const KernelSignature& signature() const override { return sig_; }
  const CudaModule& module() const { return *module_; }
  const std::shared_ptr<const CudaModule>& module_ptr() const { return module_; }

 private:
  std::shared_ptr<const CudaModule> module_;
  KernelSignature sig_;
};

// What a kernel is in one generation: its function and the limits the JIT gave it.
struct Compiled {
  void* function = nullptr;
  uint32_t max_threads = 0;    // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK (registers decide)
  uint32_t dynamic_optin = 0;  // dynamic shared bytes opted in with cuFuncSetAttribute
};

// What the watcher does for a stream outside every stream lock (cuCtxDestroy is never called
// while streams_mu_ or a stream's lock is held): reset or abandon a generation, then complete the
// operation that called for it.
struct Deferred {
  enum Kind { kComplete, kReset, kAbandon };
  CudaStream* stream = nullptr;
  Kind kind = kComplete;
  uint64_t gen_id = 0;
  std::string why;
  Completion done;
  Status result;
};

class CudaContext final : public Context, public std::enable_shared_from_this<CudaContext> {
 public:
  CudaContext(std::shared_ptr<CudaDevice> device, ContextOptions options);
  ~CudaContext() override;

  Result<DevicePtr> Allocate(uint64_t bytes, uint64_t* generation = nullptr) override;
  Status Free(DevicePtr ptr) override;
  Status FreeIfCurrent(DevicePtr ptr, uint64_t generation) override;
  Result<std::shared_ptr<const Module>> LoadModule(std::string_view ptx) override;
  Result<std::unique_ptr<Stream>> CreateStream() override;
  Result<std::unique_ptr<Window>> CreateWindow(uint64_t max_bytes) override;
  uint64_t allocated_bytes() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return table_.used();
  }
  uint64_t reserved_bytes() const override;

  // The current generation, bound to this thread, with `lock` holding it (shared). Builds a fresh generation
  // when there is none (first use, or after a reset). DeviceFault once the GPU is lost.
  Result<Generation*> Acquire(std::shared_lock<std::shared_mutex>& lock);
  // Generation `id`, bound to this thread, if it is still the current one (nullptr otherwise, and once
  // the GPU is lost); never builds one.
  Generation* Current(std::shared_lock<std::shared_mutex>& lock, uint64_t id);
  // Makes `gen` current on this thread (the caller holds it).
  Status Bind(const Generation& gen);
  // Ends generation `id` (if it is still the current one) because of `why`: destroys it after freeing
  // its memory, or, when `abandon` (a kernel in it would not stop, and cuCtxDestroy is not
  // documented to stop one), leaves it to the end of the process. Later users of the generation fail
  // naming `why`; memory that could not be freed stays charged to the context's quota.
  void Reset(uint64_t id, const std::string& why, bool abandon = false);
  std::string reset_reason() const {
    std::lock_guard<std::mutex> lock(mu_);
    return reset_reason_;
  }
  uint64_t resets() const override { return resets_.load(); }
  // What work on a generation that is gone reports: the GPU's loss, or the reset.
  Status GoneStatus(const std::string& what) const;

  Result<void*> TakeEvent(Generation& gen);
  void ReturnEvent(uint64_t gen_id, void* event);
  // Polls `event` of generation `gen_id` until it completed (OK), the generation was reset or it failed.
  Status WaitEvent(uint64_t gen_id, void* event, const char* what);
  // Checked range of one live allocation (OutOfRange otherwise), like the CPU device.
  Status CheckRange(DevicePtr ptr, uint64_t bytes) const;
  // The staging memory of generation `id`, or nullptr when that generation is gone.
  std::shared_ptr<StagingRing> StagingOf(uint64_t id);

  // Windows (CudaWindow): a buffer placed in a window's mapped memory of generation `gen_id` counts
  // against the quota and is a live allocation for copies (ResourceExhausted beyond the quota,
  // DeviceFault when the generation is gone); removing it gives the bytes back.
  Status AddWindowAllocation(uint64_t gen_id, DevicePtr p, uint64_t bytes);
  void RemoveWindowAllocation(uint64_t gen_id, DevicePtr p);
  void WindowMapped(int64_t bytes) { window_mapped_.fetch_add(static_cast<uint64_t>(bytes)); }
  // Zero-fills [p, p + bytes) of generation `gen_id` on its utility stream and waits for it.
  Status Zero(uint64_t gen_id, DevicePtr p, uint64_t bytes);
  // A window of a generation that is gone keeps its `bytes` of mapped memory: charged to the quota
  // until the process ends, which it then needs.
  void LeakWindow(uint64_t bytes);

  void Register(CudaStream* s);
  void Unregister(CudaStream* s);
  void Wake();

  CudaDevice& device() { return *device_; }
  const DriverSymbols& sym() const;
  // The driver's verdict as a Status; a process-fatal error also marks the GPU lost, naming `what`
  // failed (the kernel, the copy) when the caller knows.
  Status Check(CUresult r, const char* call, const std::string& what = "") const;

 private:
  // Parses and JIT-compiles `ptx` in the current generation (LoadModule's cache misses).
  Result<std::shared_ptr<const CudaModule>> Build(std::string_view ptx);
  Status BuildGeneration();  // with gen_mu_ held exclusively
  // Destroys a generation no one else can reach any more (its memory was freed).
  void Watch();
  void TrimPool();

  std::shared_ptr<CudaDevice> device_;

  mutable std::shared_mutex gen_mu_;
  std::unique_ptr<Generation> gen_;
  std::vector<std::unique_ptr<Generation>> abandoned_;  // guarded by gen_mu_; Abandon()ed
  std::atomic<uint64_t> resets_{0};

  mutable std::mutex mu_;  // table_, leaked_, reset_reason_
  // Live buffers of the current generation (true: in an instance's window, whose memory is the
  // window's), allocations being made, and leaked_, all against the quota.
  AllocationTable<bool> table_;
  std::atomic<uint64_t> window_mapped_{0};  // device memory mapped into windows
  uint64_t leaked_ = 0;                     // of ended generations, never freed: held until the process ends
  ContentCache<const CudaModule> modules_;  // Keep::kWhileHeld
  std::string reset_reason_;

  std::mutex events_mu_;

  std::mutex streams_mu_;
  std::vector<CudaStream*> streams_;
  std::mutex watch_mu_;
  std::condition_variable watch_cv_;
  bool work_posted_ = false;
  bool stop_ = false;
  std::thread watcher_;
};

class CudaDevice final : public Device, public std::enable_shared_from_this<CudaDevice> {
 public:
  CudaDevice(std::shared_ptr<CudaDriver> driver, int handle, DeviceInfo info, uint32_t default_shared,
             CudaDeviceOptions options)
      : driver_(std::move(driver)),
        handle_(handle),
        info_(std::move(info)),
        default_shared_(default_shared),
        options_(std::move(options)) {}
  const DeviceInfo& info() const override { return info_; }
  Result<std::shared_ptr<Context>> CreateContext(const ContextOptions& options) override {
    if (lost()) return LostStatus();
    return std::shared_ptr<Context>(std::make_shared<CudaContext>(shared_from_this(), options));
  }
  std::string restart_reason() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return restart_reason_;
  }
  const CudaDriver& driver() const { return *driver_; }
  int handle() const { return handle_; }
  const CudaDeviceOptions& options() const { return options_; }
  // Shared memory a launch may use without opting in (the 48 KiB window).
  uint32_t default_shared() const { return default_shared_; }

  // Whether a process-fatal error was seen: every later call fails with LostStatus().
  bool lost() const { return lost_.load(std::memory_order_acquire); }
  Status LostStatus() const {
    std::lock_guard<std::mutex> lock(mu_);
    return Status::DeviceFault("the GPU is unusable in this process: " + lost_reason_ +
                               " (the CUDA driver requires the process to be restarted)");
  }
  // Records that the process must be restarted (and, when `lost`, that the GPU is unusable in it);
  // the first time, tells options().on_fatal.
  void NeedRestart(const std::string& why, bool lost) {
    bool first = false;
    std::string reason = why;
    if (lost) {
      // A fault is asynchronous: the call that saw it may belong to any kernel of the process. Every
      // kernel running then is named (a worker process runs one tenant's).
      std::lock_guard<std::mutex> lock(running_mu_);
      std::string names;
      for (const auto& [what, n] : running_) names += (names.empty() ? "" : ", ") + what;
      if (!names.empty()) reason += " (running in this process then: " + names + ")";
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (restart_reason_.empty()) {
        restart_reason_ = reason;
        first = true;
      }
      if (lost && !lost_.load()) {
        lost_reason_ = reason;
        lost_.store(true, std::memory_order_release);
      }
    }
    if (first && options_.on_fatal) options_.on_fatal(reason);
  }
  // Kernels issued and not yet known to be complete, by what they are ("kernel 'vadd'").
  void LaunchIssued(const std::string& what) {
    std::lock_guard<std::mutex> lock(running_mu_);
    ++running_[what];
  }
  void LaunchEnded(const std::string& what) {
    std::lock_guard<std::mutex> lock(running_mu_);
    auto it = running_.find(what);
    if (it != running_.end() && --it->second == 0) running_.erase(it);
  }

 private:
  std::shared_ptr<CudaDriver> driver_;
  int handle_;
  DeviceInfo info_;
  uint32_t default_shared_;
  CudaDeviceOptions options_;
  mutable std::mutex mu_;
  std::atomic<bool> lost_{false};
  std::string lost_reason_, restart_reason_;
  std::mutex running_mu_;  // a leaf: nothing else is taken under it
  std::map<std::string, int> running_;
};

const DriverSymbols& CudaContext::sym() const { return device_->driver().sym(); }

Status CudaContext::Check(CUresult r, const char* call, const std::string& what) const {
  Status s = device_->driver().Check(r, call);
  if (IsProcessFatalError(r)) device_->NeedRestart(what.empty() ? s.message() : what + " failed: " + s.message(), true);
  return s;
}

Status CudaContext::GoneStatus(const std::string& what) const {
  if (device_->lost()) return device_->LostStatus();
  return Status::DeviceFault(what + ": the GPU context was reset: " + reset_reason());
}

// PTX text, its kernels' signatures, and the module compiled in the context's current generation
// (compiled again, from the retained text, after a reset).
class CudaModule final : public Module, public std::enable_shared_from_this<CudaModule> {
 public:
  CudaModule(std::shared_ptr<CudaContext> ctx, std::string ptx, std::map<std::string, KernelSignature> kernels)
      : ctx_(std::move(ctx)), ptx_(std::move(ptx)), kernels_(std::move(kernels)) {}

  ~CudaModule() override {
    if (module_ == nullptr) return;
    std::shared_lock<std::shared_mutex> lock;
    if (ctx_->Current(lock, gen_id_) != nullptr) (void)ctx_->sym().cuModuleUnload(module_);
  }

  // Before the module is shared: static shared memory as the JIT laid it out.
  void SetStaticShared(const std::string& name, uint32_t bytes) { kernels_[name].static_shared_bytes = bytes; }

  Result<std::shared_ptr<const Kernel>> GetKernel(std::string_view name) const override {
    auto it = kernels_.find(std::string(name));
    if (it == kernels_.end()) return Status::NotFound("no kernel named '" + std::string(name) + "' in the module");
    return std::shared_ptr<const Kernel>(std::make_shared<CudaKernel>(shared_from_this(), it->second));
  }

  std::vector<std::string> KernelNames() const override {
    std::vector<std::string> names;
    for (const auto& [name, sig] : kernels_) names.push_back(name);
    return names;
  }

  // JIT-compiles the PTX in `gen` (the caller holds it) unless already done there.
  Status CompileIn(const Generation& gen) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (module_ != nullptr && gen_id_ == gen.id) return Status::Ok();
    module_ = nullptr;
    functions_.clear();
    const DriverSymbols& sym = ctx_->sym();
    std::vector<char> error(kJitLogBytes, '\0');
    int options[] = {kJitErrorLogBuffer, kJitErrorLogBufferSize};
    void* values[] = {error.data(), reinterpret_cast<void*>(uintptr_t{kJitLogBytes - 1})};
    void* m = nullptr;
    CUresult r = sym.cuModuleLoadDataEx(&m, ptx_.c_str(), 2, options, values);
    if (r != CUDA_SUCCESS) {
      std::string log(error.data(), strnlen(error.data(), error.size()));
      Status s = ctx_->Check(r, "cuModuleLoadDataEx");
      if (s.code() == StatusCode::kDeviceFault) return s;
      return Status(
          s.code() == StatusCode::kInternal ? StatusCode::kInvalidArgument : s.code(),
          "the CUDA driver's JIT rejected the PTX: " + (log.empty() ? s.message() : log + " (" + s.message() + ")"));
    }
    std::map<std::string, Compiled> fns;
    for (const auto& [name, sig] : kernels_) {
      Compiled c;
      Status s = ctx_->Check(sym.cuModuleGetFunction(&c.function, m, name.c_str()), "cuModuleGetFunction");
      int v = 0;
      if (s.ok())
        s = ctx_->Check(sym.cuFuncGetAttribute(&v, kFuncMaxThreadsPerBlock, c.function), "cuFuncGetAttribute");
      if (!s.ok()) {
        (void)sym.cuModuleUnload(m);
        return s;
      }
      c.max_threads = static_cast<uint32_t>(std::max(v, 0));
      fns[name] = c;
    }
    module_ = m;
    gen_id_ = gen.id;
    functions_ = std::move(fns);
    return Status::Ok();
  }

  Result<Compiled> Function(const Generation& gen, const std::string& name) const {
    GPUWASM_RETURN_IF_ERROR(CompileIn(gen));
    std::lock_guard<std::mutex> lock(mu_);
    auto it = functions_.find(name);
    if (it == functions_.end()) return Status::NotFound("no kernel named '" + name + "' in the module");
    return it->second;
  }

  // Lets kernel `name` (compiled in `gen`, which the caller holds) use `bytes` of dynamic shared
  // memory beyond the default window: CUDA refuses such a launch until the kernel opts in.
  Status OptInShared(const Generation& gen, const std::string& name, uint32_t bytes) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = functions_.find(name);
    if (gen_id_ != gen.id || it == functions_.end())
      return Status::Internal("kernel '" + name + "' is not compiled here");
    if (it->second.dynamic_optin >= bytes) return Status::Ok();
    if (ctx_->sym().cuFuncSetAttribute == nullptr) {
      return Status::Unsupported(
          "the CUDA driver has no cuFuncSetAttribute: no dynamic shared memory beyond the default");
    }
    GPUWASM_RETURN_IF_ERROR(ctx_->Check(
        ctx_->sym().cuFuncSetAttribute(it->second.function, kFuncMaxDynamicSharedBytes, static_cast<int>(bytes)),
        "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)"));
    it->second.dynamic_optin = bytes;
    return Status::Ok();
  }

 private:
  std::shared_ptr<CudaContext> ctx_;
  std::string ptx_;
  std::map<std::string, KernelSignature> kernels_;
  mutable std::mutex mu_;
  mutable void* module_ = nullptr;
  mutable uint64_t gen_id_ = 0;
  mutable std::map<std::string, Compiled> functions_;
};

// Work enqueued on a stream and not yet known to be complete.
struct Pending {
  uint64_t gen_id = 0;
  void* start = nullptr;  // launches only
  void* end = nullptr;
  Completion done;
  std::string what;                           // "kernel 'vadd'", "copy to the device", ...
  std::optional<Clock::time_point> deadline;  // launches with a deadline
  std::optional<Clock::time_point> stop_by;   // abandon the generation if still running then
  bool reported = false;                      // done() already called (deadline, cancel)
  bool cancel = false;                        // Cancel() asked: the watcher reports it cancelled
  std::optional<Status> failed;               // failed before it was issued: the watcher completes it so
  std::shared_ptr<const void> keep;           // a staging slot, the kernel
  const void* control = nullptr;              // an instrumented kernel's control block (host view)
  std::string kernel;                         // its name, for what the control block says
  bool started = false;                       // the watcher saw its start event done: running
};

class CudaStream final : public Stream {
 public:
  CudaStream(std::shared_ptr<CudaContext> ctx, uint64_t gen_id, void* stream)
      : ctx_(std::move(ctx)), gen_id_(gen_id), stream_(stream) {
    ctx_->Register(this);
  }

  ~CudaStream() override {
    (void)Synchronize();
    ctx_->Unregister(this);
    std::shared_lock<std::shared_mutex> lock;
    if (ctx_->Current(lock, gen_id_) != nullptr) (void)ctx_->sym().cuStreamDestroy_v2(stream_);
  }

  Status MemcpyHtoD(DevicePtr dst, const void* src, uint64_t bytes) override {
    GPUWASM_RETURN_IF_ERROR(ctx_->CheckRange(dst, bytes));
    const auto* from = static_cast<const uint8_t*>(src);
    std::shared_ptr<StagingRing> ring = ctx_->StagingOf(gen_id_);
    for (uint64_t off = 0; off < bytes;) {
      uint64_t n = std::min<uint64_t>(bytes - off, ring != nullptr ? ring->slot_bytes() : bytes);
      std::optional<uint32_t> slot;
      if (ring != nullptr) slot = ring->Take([&] { return sticky().ok(); });
      if (!slot) return Dead();  // the generation went, or the stream failed: sticky, like any execution error
      std::memcpy(ring->At(*slot), from + off, n);
      const uint8_t* staged = ring->At(*slot);
      // The slot is given back when this chunk's copy completed (or was never issued).
      std::shared_ptr<const void> keep(ring.get(), [ring, s = *slot](const void*) { ring->Give(s); });
      const DevicePtr to = dst + off;
      GPUWASM_RETURN_IF_ERROR(
          Submit("copy to the device", false, {}, std::move(keep), {}, nullptr, {}, [&](const Generation&) {
            return ctx_->Check(ctx_->sym().cuMemcpyHtoDAsync_v2(to, staged, n, stream_), "cuMemcpyHtoDAsync");
          }));
      off += n;
    }
    return Status::Ok();
  }

  Status MemcpyDtoH(void* dst, DevicePtr src, uint64_t bytes) override {
    GPUWASM_RETURN_IF_ERROR(Synchronize());
    GPUWASM_RETURN_IF_ERROR(ctx_->CheckRange(src, bytes));
    void* event = nullptr;
    {
      std::shared_lock<std::shared_mutex> lock;
      Generation* gen = ctx_->Current(lock, gen_id_);
      if (gen == nullptr) return ctx_->GoneStatus("copy to the host");
      GPUWASM_ASSIGN_OR_RETURN(event, ctx_->TakeEvent(*gen));
      Status s = ctx_->Check(ctx_->sym().cuMemcpyDtoHAsync_v2(dst, src, bytes, stream_), "cuMemcpyDtoHAsync");
      if (s.ok()) s = ctx_->Check(ctx_->sym().cuEventRecord(event, stream_), "cuEventRecord");
      if (!s.ok()) {
        lock.unlock();  // ReturnEvent and Reset take the generation lock themselves
        ctx_->ReturnEvent(gen_id_, event);
        return Fail(s, gen_id_);
      }
    }
    Status s = ctx_->WaitEvent(gen_id_, event, "copy to the host");
    if (s.ok()) ctx_->ReturnEvent(gen_id_, event);
    return s;
  }

  Status MemcpyDtoD(DevicePtr dst, DevicePtr src, uint64_t bytes) override {
    GPUWASM_RETURN_IF_ERROR(ctx_->CheckRange(dst, bytes));
    GPUWASM_RETURN_IF_ERROR(ctx_->CheckRange(src, bytes));
    return Submit("device-to-device copy", false, {}, nullptr, {}, nullptr, {}, [&](const Generation&) {
      return ctx_->Check(ctx_->sym().cuMemcpyDtoDAsync_v2(dst, src, bytes, stream_), "cuMemcpyDtoDAsync");
    });
  }

  Status Memset(DevicePtr dst, uint8_t value, uint64_t bytes) override {
    GPUWASM_RETURN_IF_ERROR(ctx_->CheckRange(dst, bytes));
    return Submit("memset", false, {}, nullptr, {}, nullptr, {}, [&](const Generation&) {
      return ctx_->Check(ctx_->sym().cuMemsetD8Async(dst, value, bytes, stream_), "cuMemsetD8Async");
    });
  }

  Status Launch(const Kernel& kernel, const LaunchConfig& config, std::vector<uint8_t> params,
                LaunchOptions options) override {
    const auto* k = dynamic_cast<const CudaKernel*>(&kernel);
    if (k == nullptr) return Status::InvalidArgument("kernel does not belong to this CUDA device");
    const KernelSignature& sig = k->signature();
    if (!options.config_checked) GPUWASM_RETURN_IF_ERROR(CheckLaunchConfig(ctx_->device().info(), sig, config));
    GPUWASM_RETURN_IF_ERROR(CheckParamBytes(sig, params.size()));
    std::vector<void*> args(sig.params.size());
    for (size_t i = 0; i < sig.params.size(); ++i) args[i] = params.data() + sig.params[i].offset;
    std::shared_ptr<const void> keep(k->module_ptr(), k);  // the module outlives the launch
    const bool optin = uint64_t{sig.static_shared_bytes} + config.shared_bytes > ctx_->device().default_shared();
    return Submit("kernel '" + sig.name + "'", true, options.deadline, std::move(keep), std::move(options.on_complete),
                  options.control, sig.name, [&](const Generation& gen) -> Status {
                    GPUWASM_ASSIGN_OR_RETURN(Compiled fn, k->module().Function(gen, sig.name));
                    uint64_t threads = config.block.count();
                    if (fn.max_threads != 0 && threads > fn.max_threads) {
                      return Status::InvalidArgument(
                          "block of " + std::to_string(threads) + " threads exceeds what kernel '" + sig.name +
                          "' allows on this GPU (" + std::to_string(fn.max_threads) + ", limited by its registers)");
                    }
                    if (optin) GPUWASM_RETURN_IF_ERROR(k->module().OptInShared(gen, sig.name, config.shared_bytes));
                    return ctx_->Check(
                        ctx_->sym().cuLaunchKernel(fn.function, config.grid.x, config.grid.y, config.grid.z,
                                                   config.block.x, config.block.y, config.block.z, config.shared_bytes,
                                                   stream_, args.empty() ? nullptr : args.data(), nullptr),
                        "cuLaunchKernel");
                  });
  }

  Status Synchronize() override {
    std::unique_lock<std::mutex> lock(mu_);
    idle_cv_.wait(lock, [&] { return pending_.empty() && completing_ == 0; });
    return sticky_;
  }

  void Cancel() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      Clock::time_point stop = Clock::now() + ctx_->device().options().runaway_grace;
      for (Pending& p : pending_) {
        if (!p.stop_by || *p.stop_by > stop) p.stop_by = stop;
        p.cancel = true;
      }
    }
    ctx_->Wake();  // the watcher calls the completions; Cancel() returns once it has
    std::unique_lock<std::mutex> lock(mu_);
    idle_cv_.wait(lock, [&] {
      return completing_ == 0 &&
             std::none_of(pending_.begin(), pending_.end(), [](const Pending& p) { return p.cancel && !p.reported; });
    });
  }

  // The finished launches' time (from their events) and, while one runs, its time since the
  // watcher saw its start event done: live while a kernel runs, to within a watcher poll.
  std::chrono::nanoseconds kernel_time() const override {
    std::lock_guard<std::mutex> lock(mu_);
    std::chrono::nanoseconds t(kernel_ns_.load(std::memory_order_relaxed));
    if (running_since_) t += Clock::now() - *running_since_;
    return t;
  }

  // Called by the context's watcher (with streams_mu_ held): completes finished work in order and
  // reports deadlines. A fault that needs the generation reset, or a kernel past its deadline and grace,
  // is handed back in `deferred` for the watcher to deal with outside the locks. Returns whether
  // work is still pending.
  bool Poll(bool* progress, std::vector<Deferred>* deferred);
  // The end of a completion the watcher called for a Deferred of this stream.
  void EndCompletion() {
    std::lock_guard<std::mutex> lock(mu_);
    --completing_;
    if (completing_ == 0) idle_cv_.notify_all();  // Synchronize() and Cancel() wait for it
  }

 private:
  Status sticky() {
    std::lock_guard<std::mutex> lock(mu_);
    return sticky_;
  }

  // Work for a stream whose generation is gone: the stream fails for good (sticky), and so does this.
  Status Dead() {
    Status dead = ctx_->GoneStatus("this stream's work was lost");
    std::lock_guard<std::mutex> lock(mu_);
    if (sticky_.ok()) sticky_ = dead;
    return Status::Ok();  // like an execution error: through Synchronize
  }

  // A failed driver call: device faults end the generation; the stream keeps the first error.
  Status Fail(Status s, uint64_t gen_id) {
    if (s.code() == StatusCode::kDeviceFault) {
      ctx_->Reset(gen_id, s.message());
      std::lock_guard<std::mutex> lock(mu_);
      if (sticky_.ok()) sticky_ = s;
    }
    return s;
  }

  // Issues work on the stream between events and queues it for the watcher. Configuration errors
  // are returned; once the stream failed, later work completes at once with that error. An
  // instrumented kernel's launch gives its control block and the kernel's name (Poll reads it).
  template <class Issue>
  Status Submit(std::string what, bool timed, std::optional<Clock::time_point> deadline,
                std::shared_ptr<const void> keep, Completion done, const void* control, std::string kernel,
                Issue&& issue) {
    Pending p;
    p.what = std::move(what);
    p.deadline = deadline;
    if (deadline) p.stop_by = *deadline + ctx_->device().options().runaway_grace;
    p.keep = std::move(keep);
    p.done = std::move(done);
    p.control = control;
    p.kernel = std::move(kernel);
    if (Status failed = sticky(); !failed.ok()) return Complete(std::move(p), failed);  // so does what follows
    {
      // Only this stream's own generation: a stream of a generation that is gone is dead, and a new generation (built
      // for the tenant's next instance) is not this stream's to touch, nor to build.
      std::shared_lock<std::shared_mutex> lock;
      Generation* gen = ctx_->Current(lock, gen_id_);
      if (gen == nullptr) {
        lock = {};
        Status dead = ctx_->GoneStatus("the GPU context of this stream is gone");
        {
          std::lock_guard<std::mutex> l(mu_);
          if (sticky_.ok()) sticky_ = dead;
        }
        return Complete(std::move(p), dead);
      }
      Status s;
      if (timed) {
        Result<void*> e = ctx_->TakeEvent(*gen);
        s = e.status();
        if (e.ok()) {
          p.start = *e;
          s = ctx_->Check(ctx_->sym().cuEventRecord(p.start, stream_), "cuEventRecord");
        }
      }
      // Counted as running before it is issued: it may fault at once, and the call that sees the
      // fault (any thread's) names the kernels running then.
      const bool counted = s.ok() && timed;
      if (counted) ctx_->device().LaunchIssued(p.what);
      if (s.ok()) s = issue(*gen);
      if (s.ok()) {
        Result<void*> e = ctx_->TakeEvent(*gen);
        s = e.status();
        if (e.ok()) {
          p.end = *e;
          s = ctx_->Check(ctx_->sym().cuEventRecord(p.end, stream_), "cuEventRecord");
        }
      }
      if (!s.ok()) {
        if (counted) ctx_->device().LaunchEnded(p.what);
        uint64_t id = gen_id_;
        if (lock.owns_lock()) lock.unlock();  // ReturnEvent and Reset take the generation lock themselves
        if (p.start != nullptr) ctx_->ReturnEvent(id, p.start);
        if (p.end != nullptr) ctx_->ReturnEvent(id, p.end);
        if (s.code() == StatusCode::kDeviceFault) {
          // Faults are asynchronous: this is the first call that saw an earlier kernel's fault.
          s = Status::DeviceFault("the GPU context faulted (seen while enqueueing " + p.what + "): " + s.message());
          (void)Fail(s, id);
          return Complete(std::move(p), s);  // like an execution error: through the completion and Synchronize
        }
        return s;
      }
      p.gen_id = gen->id;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_.push_back(std::move(p));
    }
    ctx_->Wake();
    return Status::Ok();
  }

  // Queues `p`, which failed with `s` before it was issued, for the watcher to complete in order
  // (completions run on the device's threads).
  Status Complete(Pending p, Status s) {
    p.start = p.end = nullptr;
    p.keep.reset();
    p.failed = std::move(s);
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_.push_back(std::move(p));
    }
    ctx_->Wake();
    return Status::Ok();
  }

  // Calls the completions of work Cancel() asked to stop that were not reported yet.
  void ReportCancelled() {
    std::vector<Completion> cancelled;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (Pending& p : pending_) {
        if (!p.cancel || p.reported) continue;
        p.reported = true;
        if (p.done) cancelled.push_back(std::move(p.done));
      }
      if (cancelled.empty()) return;
      ++completing_;  // Synchronize() waits for these too
    }
    for (Completion& c : cancelled) c(Status::Cancelled("cancelled before it finished"));
    std::lock_guard<std::mutex> lock(mu_);
    --completing_;
    if (completing_ == 0) idle_cv_.notify_all();  // Synchronize() and Cancel() wait for it
  }

  std::shared_ptr<CudaContext> ctx_;
  const uint64_t gen_id_;
  void* const stream_;
  mutable std::mutex mu_;
  std::condition_variable idle_cv_;
  std::deque<Pending> pending_;  // popped only by the watcher
  int completing_ = 0;           // completions being called by the watcher
  Status sticky_;
  std::atomic<int64_t> kernel_ns_{0};
  std::optional<Clock::time_point> running_since_;  // (mu_) the front launch runs since then
};

bool CudaStream::Poll(bool* progress, std::vector<Deferred>* deferred) {
  ReportCancelled();
  for (;;) {
    void* start = nullptr;
    void* end = nullptr;
    uint64_t gen_id = 0;
    std::string what;
    bool issued = true, started = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (pending_.empty()) return false;
      start = pending_.front().start;
      end = pending_.front().end;
      gen_id = pending_.front().gen_id;
      what = pending_.front().what;
      issued = !pending_.front().failed;
      started = pending_.front().started;
    }
    enum { kDone, kRunning, kFailed, kStale } state = kRunning;
    Status failure;
    float ms = -1;
    if (!issued) {
      state = kFailed;  // its status is the one it failed with
    } else {
      std::shared_lock<std::shared_mutex> lock;
      if (ctx_->Current(lock, gen_id) == nullptr) {
        state = kStale;
      } else {
        CUresult r = ctx_->sym().cuEventQuery(end);
        if (r == CUDA_ERROR_NOT_READY && start != nullptr && !started &&
            ctx_->sym().cuEventQuery(start) == CUDA_SUCCESS) {
          started = true;  // (recorded below, under the stream's lock)
        }
        if (r == CUDA_SUCCESS) {
          state = kDone;
          if (start != nullptr) {
            auto elapsed = ctx_->sym().cuEventElapsedTime_v2 != nullptr ? ctx_->sym().cuEventElapsedTime_v2
                                                                        : ctx_->sym().cuEventElapsedTime;
            if (elapsed == nullptr || elapsed(&ms, start, end) != CUDA_SUCCESS) ms = -1;
          }
        } else if (r != CUDA_ERROR_NOT_READY) {
          state = kFailed;
          failure = ctx_->Check(r, "cuEventQuery", what);
        }
      }
    }
    Completion done;
    Status result;
    std::optional<Deferred> action;  // a reset or an abandonment, for the watcher
    {
      std::lock_guard<std::mutex> lock(mu_);
      Pending& p = pending_.front();
      Clock::time_point now = Clock::now();
      if (state == kRunning && started && !p.started) {
        p.started = true;
        running_since_ = now;
      }
      if (state != kRunning) running_since_.reset();  // its time comes from its events now
      if (state == kRunning) {
        if (p.deadline && now >= *p.deadline && !p.reported) {
          p.reported = true;
          done = std::move(p.done);
          result = Status::DeadlineExceeded(p.what + " was still running at its deadline");
          if (sticky_.ok()) sticky_ = result;
        }
        if (p.stop_by && now >= *p.stop_by) {
          action = Deferred{this,
                            Deferred::kAbandon,
                            gen_id,
                            p.what + " kept running " + std::to_string(ctx_->device().options().runaway_grace.count()) +
                                " ms past its deadline or cancellation; a GPU cannot stop one kernel, only ending the "
                                "process does",
                            {},
                            {}};
        }
      } else {
        if (state == kDone) {
          if (ms >= 0)
            kernel_ns_.fetch_add(static_cast<int64_t>(static_cast<double>(ms) * 1e6), std::memory_order_relaxed);
          // An instrumented kernel that stopped itself ended cleanly: its control block says why.
          if (p.control != nullptr) result = ptx::ControlBlockStatus(p.control, p.kernel);
        } else if (p.failed) {
          result = *p.failed;
        } else if (state == kFailed) {
          result = failure.code() == StatusCode::kDeviceFault
                       ? Status::DeviceFault(p.what + " failed: " + failure.message())
                       : failure;
          // A context-level fault ends the generation; after a process-fatal one nothing is destroyed.
          if (failure.code() == StatusCode::kDeviceFault && !ctx_->device().lost()) {
            action = Deferred{this, Deferred::kReset, gen_id, result.message(), {}, {}};
          }
        } else {
          result = ctx_->GoneStatus(p.what + " was lost");
        }
        if (!result.ok() && sticky_.ok()) sticky_ = result;
        if (!p.reported) done = std::move(p.done);
        if (p.start != nullptr) ctx_->device().LaunchEnded(p.what);
        pending_.pop_front();  // drops the staging slot and the kernel's hold here, under the lock
        *progress = true;
      }
      // Synchronize() waits for this too: the reset and the completion happen before it returns.
      if (done || action || state == kDone) ++completing_;
    }
    if (state == kDone) {  // outside mu_: the generation lock is never taken under a stream's lock
      ctx_->ReturnEvent(gen_id, end);
      if (start != nullptr) ctx_->ReturnEvent(gen_id, start);
    }
    if (action) {
      // The generation goes before anyone waiting on this stream hears of the failure: the watcher does
      // both, outside the locks.
      action->done = std::move(done);
      action->result = result;
      deferred->push_back(std::move(*action));
      return true;
    }
    if (done) done(result);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (done || state == kDone) --completing_;
      if (completing_ == 0) idle_cv_.notify_all();  // Synchronize() and Cancel() wait for it
    }
    if (state == kRunning) return true;  // later work waits for this one
  }
}

CudaContext::CudaContext(std::shared_ptr<CudaDevice> device, ContextOptions options)
    : device_(std::move(device)), table_(options.max_bytes), watcher_([this] { Watch(); }) {}

CudaContext::~CudaContext() {
  {
    std::lock_guard<std::mutex> lock(watch_mu_);
    stop_ = true;
  }
  watch_cv_.notify_all();
  watcher_.join();
  std::unique_lock<std::shared_mutex> lock(gen_mu_);
  if (gen_ && !device_->lost()) {
    // Pool memory outlives the context: buffers still live (their owners went without freeing
    // them) are freed first, so destroying the context gives every byte back.
    if (sym().cuCtxSetCurrent(gen_->ctx) == CUDA_SUCCESS) {
      t_bound_gen = gen_->id;
      std::lock_guard<std::mutex> l(mu_);
      for (const auto& [ptr, a] : table_.entries()) {
        if (!a.payload) (void)sym().cuMemFreeAsync(ptr, gen_->util);
      }
      table_.Clear();
    }
    std::lock_guard<std::mutex> l(events_mu_);
    gen_.reset();
  }
  if (gen_) gen_->Abandon();  // a lost GPU's objects are not touched again
  // abandoned_ keeps its generations' driver objects: a kernel still runs in each (the process's end
  // stops it). The Generation records themselves are freed.
}

Status CudaContext::BuildGeneration() {
  if (device_->lost()) return device_->LostStatus();
  const DriverSymbols& s = sym();
  auto gen = std::make_unique<Generation>(s);
  gen->id = g_next_core.fetch_add(1);
  CUresult r = s.cuCtxCreate_v4 != nullptr ? s.cuCtxCreate_v4(&gen->ctx, nullptr, 0, device_->handle())
                                           : s.cuCtxCreate_v2(&gen->ctx, 0, device_->handle());
  GPUWASM_RETURN_IF_ERROR(Check(r, "cuCtxCreate"));
  t_bound_gen = gen->id;  // cuCtxCreate made it current here
  PoolProps props;
  props.alloc_type = kMemAllocationTypePinned;
  props.location_type = kMemLocationTypeDevice;
  props.location_id = device_->handle();
  Status st = Check(s.cuMemPoolCreate(&gen->pool, &props), "cuMemPoolCreate");
  if (st.ok() && s.cuMemPoolSetAttribute != nullptr) {
    // Freed memory stays in the pool for the next allocation instead of going back to the driver
    // at every synchronisation; the watcher trims an idle context's pool (TrimPool).
    uint64_t keep_all = UINT64_MAX;
    (void)s.cuMemPoolSetAttribute(gen->pool, kPoolAttrReleaseThreshold, &keep_all);
  }
  if (st.ok()) st = Check(s.cuStreamCreate(&gen->util, kStreamNonBlocking), "cuStreamCreate");
  const CudaDeviceOptions& o = device_->options();
  const uint32_t slots = std::max<uint32_t>(1, o.staging_slots);
  const size_t slot_bytes = std::max<size_t>(4096, o.staging_slot_bytes);
  if (st.ok()) {
    if (s.cuMemHostAlloc == nullptr || s.cuMemFreeHost == nullptr) {
      st = Status::Unavailable("the CUDA driver lacks cuMemHostAlloc/cuMemFreeHost (pinned staging memory)");
    } else {
      st = Check(s.cuMemHostAlloc(&gen->pinned, slot_bytes * slots, kMemHostAllocPortable), "cuMemHostAlloc");
    }
  }
  if (!st.ok()) {
    gen.reset();
    t_bound_gen = 0;
    return st;
  }
  gen->staging = std::make_shared<StagingRing>(static_cast<uint8_t*>(gen->pinned), slot_bytes, slots);
  gen_ = std::move(gen);
  return Status::Ok();
}

void Generation::Destroy() {
  if (sym == nullptr) return;
  const DriverSymbols& s = *std::exchange(sym, nullptr);
  if (ctx != nullptr && s.cuCtxSetCurrent(ctx) == CUDA_SUCCESS) t_bound_gen = id;
  if (staging) staging->Close();
  for (void* e : spare_events) (void)s.cuEventDestroy_v2(e);  // the rest go with the context
  spare_events.clear();
  if (pool != nullptr) {
    // Pool memory is not tied to the context: cuCtxDestroy leaves it, and cuMemPoolDestroy defers
    // while pointers live. Everything was freed by now (Reset frees what it can first); give the
    // pool's reserve back before destroying it.
    if (s.cuMemPoolTrimTo != nullptr) (void)s.cuMemPoolTrimTo(pool, 0);
    (void)s.cuMemPoolDestroy(pool);
  }
  if (pinned != nullptr) (void)s.cuMemFreeHost(pinned);
  if (ctx != nullptr) (void)s.cuCtxDestroy_v2(ctx);  // its streams, events and modules
  if (t_bound_gen == id) t_bound_gen = 0;
  ctx = pool = util = pinned = nullptr;
}

Result<Generation*> CudaContext::Acquire(std::shared_lock<std::shared_mutex>& lock) {
  for (;;) {
    if (device_->lost()) return device_->LostStatus();
    lock = std::shared_lock<std::shared_mutex>(gen_mu_);
    if (gen_) {
      GPUWASM_RETURN_IF_ERROR(Bind(*gen_));
      return gen_.get();
    }
    lock.unlock();
    std::unique_lock<std::shared_mutex> exclusive(gen_mu_);
    if (!gen_) GPUWASM_RETURN_IF_ERROR(BuildGeneration());
  }
}

Status CudaContext::Bind(const Generation& gen) {
  // The driver's current context is per thread, and other code in the process may change it: ask
  // the driver (a thread-local read) rather than remember.
  void* current = nullptr;
  if (t_bound_gen == gen.id && sym().cuCtxGetCurrent != nullptr && sym().cuCtxGetCurrent(&current) == CUDA_SUCCESS &&
      current == gen.ctx) {
    return Status::Ok();
  }
  GPUWASM_RETURN_IF_ERROR(Check(sym().cuCtxSetCurrent(gen.ctx), "cuCtxSetCurrent"));
  t_bound_gen = gen.id;
  return Status::Ok();
}

Generation* CudaContext::Current(std::shared_lock<std::shared_mutex>& lock, uint64_t id) {
  if (device_->lost()) return nullptr;
  lock = std::shared_lock<std::shared_mutex>(gen_mu_);
  if (!gen_ || gen_->id != id) return nullptr;
  return Bind(*gen_).ok() ? gen_.get() : nullptr;
}

void CudaContext::Reset(uint64_t id, const std::string& why, bool abandon) {
  if (device_->lost()) return;  // nothing can be destroyed or freed any more; the process must end
  std::unique_ptr<Generation> gone;
  uint64_t unfreed = 0;
  {
    std::unique_lock<std::shared_mutex> lock(gen_mu_);
    if (!gen_ || gen_->id != id) return;
    gone = std::move(gen_);
    resets_.fetch_add(1);
    if (gone->staging) gone->staging->Close();  // waiting copies give up
    std::lock_guard<std::mutex> l(mu_);         // order: gen_mu_, then mu_
    reset_reason_ = why;
    if (!abandon && sym().cuCtxSetCurrent(gone->ctx) == CUDA_SUCCESS) {
      t_bound_gen = gone->id;
      // Pool memory outlives the context: free every live buffer first. A fault may make the driver
      // refuse; what it refuses stays charged to the quota until the process ends.
      for (const auto& [ptr, a] : table_.entries()) {
        if (!a.payload && sym().cuMemFreeAsync(ptr, gone->util) != CUDA_SUCCESS) unfreed += a.size;
      }
    } else {
      for (const auto& [ptr, a] : table_.entries()) unfreed += a.payload ? 0 : a.size;
    }
    table_.Clear();  // window buffers' memory is the windows', given back when their instances end
    leaked_ += unfreed;
    table_.Hold(unfreed);
    if (abandon) {
      gone->Abandon();
      abandoned_.push_back(std::move(gone));
    }
  }
  if (abandon) {
    device_->NeedRestart(why, /*lost=*/false);
    return;
  }
  // cuCtxDestroy may wait for the generation's kernels still running on other streams: on a thread of
  // its own, so this context's watcher keeps completing the tenant's other work meanwhile.
  // The device (and so the driver gen->sym points into) lives until the generation is destroyed.
  std::thread([device = device_, gen = std::move(gone)]() mutable {
    gen.reset();
    (void)device;
  }).detach();
  if (unfreed > 0) {
    device_->NeedRestart(
        std::to_string(unfreed) + " bytes of device memory of a reset GPU context could not be freed (" + why + ")",
        /*lost=*/false);
  }
}

Result<void*> CudaContext::TakeEvent(Generation& gen) {
  {
    std::lock_guard<std::mutex> lock(events_mu_);
    if (!gen.spare_events.empty()) {
      void* e = gen.spare_events.back();
      gen.spare_events.pop_back();
      return e;
    }
  }
  void* e = nullptr;
  GPUWASM_RETURN_IF_ERROR(Check(sym().cuEventCreate(&e, 0), "cuEventCreate"));
  return e;
}

void CudaContext::ReturnEvent(uint64_t gen_id, void* event) {
  std::shared_lock<std::shared_mutex> lock(gen_mu_);
  if (!gen_ || gen_->id != gen_id) return;  // destroyed with its context
  std::lock_guard<std::mutex> l(events_mu_);
  gen_->spare_events.push_back(event);
}

Status CudaContext::WaitEvent(uint64_t gen_id, void* event, const char* what) {
  auto delay = std::chrono::microseconds(5);
  for (;;) {
    {
      std::shared_lock<std::shared_mutex> lock;
      if (Current(lock, gen_id) == nullptr) return GoneStatus(std::string(what) + " was lost");
      CUresult r = sym().cuEventQuery(event);
      if (r == CUDA_SUCCESS) return Status::Ok();
      if (r != CUDA_ERROR_NOT_READY) {
        Status s = Check(r, "cuEventQuery");
        lock.unlock();
        if (s.code() == StatusCode::kDeviceFault) Reset(gen_id, std::string(what) + " failed: " + s.message());
        return s;
      }
    }
    std::this_thread::sleep_for(delay);
    delay = std::min(delay * 2, std::chrono::microseconds(1000));
  }
}

Status CudaContext::CheckRange(DevicePtr ptr, uint64_t bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  return table_.Find(ptr, bytes) != nullptr ? Status::Ok() : NotInsideAnAllocation(ptr, bytes);
}

std::shared_ptr<StagingRing> CudaContext::StagingOf(uint64_t id) {
  std::shared_lock<std::shared_mutex> lock(gen_mu_);
  if (!gen_ || gen_->id != id || device_->lost()) return nullptr;
  return gen_->staging;
}

uint64_t CudaContext::reserved_bytes() const {
  uint64_t reserved = 0;
  {
    std::shared_lock<std::shared_mutex> lock(gen_mu_);
    if (gen_ && !device_->lost() && sym().cuMemPoolGetAttribute != nullptr) {
      uint64_t v = 0;
      if (sym().cuMemPoolGetAttribute(gen_->pool, kPoolAttrReservedMemCurrent, &v) == CUDA_SUCCESS) reserved = v;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  return std::max(reserved + leaked_ + window_mapped_.load(), table_.used());
}

Result<DevicePtr> CudaContext::Allocate(uint64_t bytes, uint64_t* generation) {
  if (bytes == 0) return Status::InvalidArgument("cannot allocate 0 bytes");
  {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string held = leaked_ == 0 ? "" : ", " + std::to_string(leaked_) + " of them held by a reset context";
    GPUWASM_RETURN_IF_ERROR(table_.Charge(bytes, 0, held));  // charged now; given back below on failure
  }
  auto unreserve = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    table_.Uncharge(bytes);
  };
  DevicePtr p = 0;
  uint64_t gen_id = 0;
  void* event = nullptr;
  {
    std::shared_lock<std::shared_mutex> lock;
    Result<Generation*> gen = Acquire(lock);
    if (!gen.ok()) {
      unreserve();
      return gen.status();
    }
    gen_id = (*gen)->id;
    Status s = Check(sym().cuMemAllocFromPoolAsync(&p, bytes, (*gen)->pool, (*gen)->util), "cuMemAllocFromPoolAsync");
    if (s.ok()) {
      // Pool memory may hold an earlier buffer's bytes: zero it before anyone can read it.
      s = Check(sym().cuMemsetD8Async(p, 0, bytes, (*gen)->util), "cuMemsetD8Async");
      Result<void*> e = s.ok() ? TakeEvent(**gen) : Result<void*>(s);
      s = e.status();
      if (e.ok()) {
        event = *e;
        s = Check(sym().cuEventRecord(event, (*gen)->util), "cuEventRecord");
      }
      if (!s.ok()) (void)sym().cuMemFreeAsync(p, (*gen)->util);
    }
    if (!s.ok()) {
      lock.unlock();
      unreserve();
      if (s.code() == StatusCode::kDeviceFault) Reset(gen_id, "allocation failed: " + s.message());
      if (s.code() == StatusCode::kResourceExhausted) {
        return Status::ResourceExhausted("the GPU has no room for " + std::to_string(bytes) + " more bytes (" +
                                         s.message() + ")");
      }
      return s;
    }
  }
  if (Status s = WaitEvent(gen_id, event, "zeroing a new buffer"); !s.ok()) {
    unreserve();
    return s;
  }
  ReturnEvent(gen_id, event);
  std::shared_lock<std::shared_mutex> gen_lock(gen_mu_);
  std::lock_guard<std::mutex> lock(mu_);
  if (!gen_ || gen_->id != gen_id) {
    // Reset while the buffer was being zeroed: it went with its generation.
    table_.Uncharge(bytes);
    return GoneStatus("a new buffer");
  }
  table_.Insert(p, bytes, /*payload=*/false);  // not in a window
  if (generation != nullptr) *generation = gen_id;
  return p;
}

Status CudaContext::Free(DevicePtr ptr) {
  uint64_t current = 0;
  {
    std::shared_lock<std::shared_mutex> lock(gen_mu_);
    current = gen_ ? gen_->id : 0;
  }
  return FreeIfCurrent(ptr, current);
}

Status CudaContext::FreeIfCurrent(DevicePtr ptr, uint64_t generation) {
  std::shared_lock<std::shared_mutex> lock;
  Generation* gen = Current(lock, generation);
  if (gen == nullptr) {
    // The memory went with a reset (or with the GPU): nothing of this generation is left to free.
    if (device_->lost() || generation != 0) return Status::Ok();
    return NotALiveAllocation(ptr);
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    GPUWASM_RETURN_IF_ERROR(table_.Remove(ptr, [](bool window) { return !window; }).status());
  }
  // Stream-ordered on the utility stream; callers free only after the buffer's users finished.
  return Check(sym().cuMemFreeAsync(ptr, gen->util), "cuMemFreeAsync");
}

Result<std::shared_ptr<const Module>> CudaContext::LoadModule(std::string_view ptx) {
  if (device_->lost()) return device_->LostStatus();
  GPUWASM_ASSIGN_OR_RETURN(std::shared_ptr<const CudaModule> m,
                           modules_.Get(Sha256Hex(ptx), [&] { return Build(ptx); }));
  return std::shared_ptr<const Module>(std::move(m));
}

Result<std::shared_ptr<const CudaModule>> CudaContext::Build(std::string_view ptx) {
  // gpuwasm's front end first: the same PTX is accepted, with the same errors, on every device,
  // and it yields each kernel's parameter list.
  GPUWASM_ASSIGN_OR_RETURN(ptx::Module parsed, ptx::Parse(ptx));
  std::map<std::string, KernelSignature> kernels;
  for (const ptx::Function& f : parsed.functions) {
    if (!f.is_entry) continue;
    kernels[f.name] = SignatureOf(f);
  }
  std::string text(ptx);
  if (text.empty() || text.back() != '\0') text.push_back('\0');  // the JIT reads a C string
  auto module = std::make_shared<CudaModule>(shared_from_this(), std::move(text), std::move(kernels));
  uint64_t gen_id = 0;
  Status compiled = [&]() -> Status {
    std::shared_lock<std::shared_mutex> lock;
    GPUWASM_ASSIGN_OR_RETURN(Generation * gen, Acquire(lock));
    gen_id = gen->id;
    GPUWASM_RETURN_IF_ERROR(module->CompileIn(*gen));
    // Static shared memory as the JIT laid it out.
    for (const std::string& name : module->KernelNames()) {
      GPUWASM_ASSIGN_OR_RETURN(Compiled fn, module->Function(*gen, name));
      int shared = 0;
      GPUWASM_RETURN_IF_ERROR(
          Check(sym().cuFuncGetAttribute(&shared, kFuncSharedSizeBytes, fn.function), "cuFuncGetAttribute"));
      module->SetStaticShared(name, static_cast<uint32_t>(std::max(shared, 0)));
    }
    return Status::Ok();
  }();
  if (!compiled.ok()) {
    // A fault an earlier kernel left in the context surfaces here too: the context must go.
    if (compiled.code() == StatusCode::kDeviceFault) Reset(gen_id, "loading a module failed: " + compiled.message());
    return compiled;
  }
  return std::shared_ptr<const CudaModule>(std::move(module));
}

Status CudaContext::AddWindowAllocation(uint64_t gen_id, DevicePtr p, uint64_t bytes) {
  std::shared_lock<std::shared_mutex> gen_lock(gen_mu_);
  std::lock_guard<std::mutex> lock(mu_);
  if (!gen_ || gen_->id != gen_id) return GoneStatus("a new buffer");
  GPUWASM_RETURN_IF_ERROR(table_.Charge(bytes));
  table_.Insert(p, bytes, /*payload=*/true);  // in a window
  return Status::Ok();
}

void CudaContext::RemoveWindowAllocation(uint64_t gen_id, DevicePtr p) {
  std::shared_lock<std::shared_mutex> gen_lock(gen_mu_);
  std::lock_guard<std::mutex> lock(mu_);
  if (!gen_ || gen_->id != gen_id) return;  // went with a reset
  (void)table_.Erase(p, [](bool window) { return window; });
}

Status CudaContext::Zero(uint64_t gen_id, DevicePtr p, uint64_t bytes) {
  void* event = nullptr;
  {
    std::shared_lock<std::shared_mutex> lock;
    Generation* gen = Current(lock, gen_id);
    if (gen == nullptr) return GoneStatus("zeroing a new buffer");
    GPUWASM_RETURN_IF_ERROR(Check(sym().cuMemsetD8Async(p, 0, bytes, gen->util), "cuMemsetD8Async"));
    GPUWASM_ASSIGN_OR_RETURN(event, TakeEvent(*gen));
    Status s = Check(sym().cuEventRecord(event, gen->util), "cuEventRecord");
    if (!s.ok()) return s;
  }
  GPUWASM_RETURN_IF_ERROR(WaitEvent(gen_id, event, "zeroing a new buffer"));
  ReturnEvent(gen_id, event);
  return Status::Ok();
}

void CudaContext::LeakWindow(uint64_t bytes) {
  if (bytes == 0 || device_->lost()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    leaked_ += bytes;
    table_.Hold(bytes);
  }
  device_->NeedRestart(std::to_string(bytes) +
                           " bytes of device memory mapped into an instance's window of a reset GPU "
                           "context cannot be unmapped safely",
                       /*lost=*/false);
}

// An instance's window on a GPU: a range of virtual addresses reserved in the context
// (cuMemAddressReserve), backed granule by granule (cuMemCreate + cuMemMap + cuMemSetAccess, the
// driver's allocation granularity, 2 MiB) as its buffers need them; buffers are placed first-fit,
// 256-aligned. Granules stay mapped until the window ends (no unmapping behind a running kernel);
// their bytes count as reserved. The control block is a page of the host's own memory registered
// with the driver and mapped into the device (cuMemHostRegister with DEVICEMAP): the host raises the
// abort word with a plain store the kernels' volatile loads see, and the page stays the host's
// when the driver's context goes (memory cuMemHostAlloc gave would go with it). Everything belongs to one generation:
// after a reset, allocating fails and freeing frees nothing (the memory went with the window's generation); the
// mappings are given back when the window ends, unless a kernel still runs in that generation (then at the process's
// end).
class CudaWindow final : public Window {
 public:
  static constexpr uint64_t kAlign = 256;

  CudaWindow(std::shared_ptr<CudaContext> ctx, uint64_t gen_id, DevicePtr base, uint64_t size, uint64_t granule,
             DevicePtr control, void* control_host)
      : ctx_(std::move(ctx)),
        gen_id_(gen_id),
        base_(base),
        size_(size),
        granule_(granule),
        control_(control),
        control_host_(control_host),
        ranges_(size) {}

  ~CudaWindow() override {
    ranges_.ForEachTaken([this](uint64_t off) { ctx_->RemoveWindowAllocation(gen_id_, base_ + off); });
    const DriverSymbols& s = ctx_->sym();
    std::shared_lock<std::shared_mutex> lock;
    if (ctx_->Current(lock, gen_id_) == nullptr) {
      // The generation was reset or abandoned: its kernels may still run (cuCtxDestroy waits for them on
      // a thread of its own), so nothing is unmapped under them. Held until the process ends.
      lock = {};
      ctx_->WindowMapped(-static_cast<int64_t>(mapped_.size() * granule_));
      ctx_->LeakWindow(mapped_.size() * granule_);
      return;  // and the control block's page: a kernel of that generation may still write to it
    }
    for (const auto& [g, handle] : mapped_) {
      (void)s.cuMemUnmap(base_ + g * granule_, granule_);
      (void)s.cuMemRelease(handle);
    }
    ctx_->WindowMapped(-static_cast<int64_t>(mapped_.size() * granule_));
    (void)s.cuMemAddressFree(base_, size_);
    (void)s.cuMemHostUnregister(control_host_);
    std::free(control_host_);
  }

  DevicePtr base() const override { return base_; }
  uint64_t size() const override { return size_; }
  DevicePtr control() const override { return control_; }
  void* control_host() const override { return control_host_; }

  Result<DevicePtr> Allocate(uint64_t bytes, uint64_t* generation) override {
    if (bytes == 0) return Status::InvalidArgument("cannot allocate 0 bytes");
    const uint64_t need = bytes > size_ ? UINT64_MAX : (bytes + kAlign - 1) / kAlign * kAlign;
    GPUWASM_ASSIGN_OR_RETURN(uint64_t off, ranges_.Take(need, bytes));
    const DevicePtr p = base_ + off;
    Status s = Map(off, need);
    if (s.ok()) s = ctx_->AddWindowAllocation(gen_id_, p, bytes);
    if (s.ok()) {
      s = ctx_->Zero(gen_id_, p, bytes);
      if (!s.ok()) ctx_->RemoveWindowAllocation(gen_id_, p);
    }
    if (!s.ok()) {
      ranges_.Give(off);
      return s;
    }
    if (generation != nullptr) *generation = gen_id_;
    return p;
  }

  Status Free(DevicePtr ptr, uint64_t generation) override {
    (void)generation;  // every buffer of the window is of its generation
    if (!ranges_.Taken(ptr - base_)) {
      return NotALiveAllocation(ptr, " of the window");
    }
    ctx_->RemoveWindowAllocation(gen_id_, ptr);
    ranges_.Give(ptr - base_);
    return Status::Ok();
  }

 private:
  // Backs every granule of [off, off + bytes) that is not yet.
  Status Map(uint64_t off, uint64_t bytes) {
    const DriverSymbols& s = ctx_->sym();
    std::shared_lock<std::shared_mutex> lock;
    if (ctx_->Current(lock, gen_id_) == nullptr) return ctx_->GoneStatus("a new buffer");
    for (uint64_t g = off / granule_; g <= (off + bytes - 1) / granule_; ++g) {
      if (mapped_.count(g) != 0) continue;
      AllocationProp prop;
      prop.type = kMemAllocationTypePinned;
      prop.location_type = kMemLocationTypeDevice;
      prop.location_id = ctx_->device().handle();
      unsigned long long handle = 0;
      Status st = ctx_->Check(s.cuMemCreate(&handle, granule_, &prop, 0), "cuMemCreate");
      if (!st.ok()) {
        if (st.code() == StatusCode::kResourceExhausted) {
          return Status::ResourceExhausted("the GPU has no room for " + std::to_string(granule_) + " more bytes (" +
                                           st.message() + ")");
        }
        return st;
      }
      const DevicePtr at = base_ + g * granule_;
      st = ctx_->Check(s.cuMemMap(at, granule_, 0, handle, 0), "cuMemMap");
      AccessDesc access;
      access.location_type = kMemLocationTypeDevice;
      access.location_id = ctx_->device().handle();
      access.flags = kMemAccessReadWrite;
      if (st.ok()) {
        st = ctx_->Check(s.cuMemSetAccess(at, granule_, &access, 1), "cuMemSetAccess");
        if (!st.ok()) (void)s.cuMemUnmap(at, granule_);
      }
      if (!st.ok()) {
        (void)s.cuMemRelease(handle);
        return st;
      }
      mapped_[g] = handle;
      ctx_->WindowMapped(static_cast<int64_t>(granule_));
    }
    return Status::Ok();
  }

  std::shared_ptr<CudaContext> ctx_;
  const uint64_t gen_id_;
  const DevicePtr base_;
  const uint64_t size_, granule_;
  const DevicePtr control_;
  void* const control_host_;
  WindowRanges ranges_;                            // the buffers
  std::map<uint64_t, unsigned long long> mapped_;  // granule index -> its physical memory
};

Result<std::unique_ptr<Window>> CudaContext::CreateWindow(uint64_t max_bytes) {
  if (!device_->info().instance_windows) return Context::CreateWindow(max_bytes);
  const DriverSymbols& s = sym();
  std::shared_lock<std::shared_mutex> lock;
  GPUWASM_ASSIGN_OR_RETURN(Generation * gen, Acquire(lock));
  const uint64_t gen_id = gen->id;
  AllocationProp prop;
  prop.type = kMemAllocationTypePinned;
  prop.location_type = kMemLocationTypeDevice;
  prop.location_id = device_->handle();
  size_t granule = 0;
  GPUWASM_RETURN_IF_ERROR(Check(s.cuMemGetAllocationGranularity(&granule, &prop, kMemAllocGranularityMinimum),
                                "cuMemGetAllocationGranularity"));
  granule = std::max<size_t>(granule, 4096);
  // Room for the instance's buffers, fragmentation and the 256-byte rounding of 4096 of them.
  const uint64_t want = std::min<uint64_t>(max_bytes, uint64_t{1} << 40);
  const uint64_t size =
      std::max<uint64_t>(ptx::kMinWindowBytes, (want + want / 4 + (1 << 20) + granule - 1) / granule * granule);
  DevicePtr base = 0;
  GPUWASM_RETURN_IF_ERROR(Check(s.cuMemAddressReserve(&base, size, granule, 0, 0), "cuMemAddressReserve"));
  constexpr size_t kPage = 4096;  // registrations are by page: one page per control block
  void* host = std::aligned_alloc(kPage, kPage);
  if (host == nullptr) {
    (void)s.cuMemAddressFree(base, size);
    return Status::ResourceExhausted("out of host memory for an instance's control block");
  }
  std::memset(host, 0, kPage);
  DevicePtr control = 0;
  Status st = Check(s.cuMemHostRegister_v2(host, kPage, kMemHostRegisterPortable | kMemHostRegisterDeviceMap),
                    "cuMemHostRegister(DEVICEMAP)");
  if (st.ok()) {
    st = Check(s.cuMemHostGetDevicePointer_v2(&control, host, 0), "cuMemHostGetDevicePointer");
    if (!st.ok()) (void)s.cuMemHostUnregister(host);
  }
  if (!st.ok()) {
    std::free(host);
    (void)s.cuMemAddressFree(base, size);
    return st;
  }
  return std::unique_ptr<Window>(
      std::make_unique<CudaWindow>(shared_from_this(), gen_id, base, size, granule, control, host));
}

Result<std::unique_ptr<Stream>> CudaContext::CreateStream() {
  std::shared_lock<std::shared_mutex> lock;
  GPUWASM_ASSIGN_OR_RETURN(Generation * gen, Acquire(lock));
  void* stream = nullptr;
  uint64_t id = gen->id;
  Status s = Check(sym().cuStreamCreate(&stream, kStreamNonBlocking), "cuStreamCreate");
  lock.unlock();
  if (!s.ok()) {
    if (s.code() == StatusCode::kDeviceFault) Reset(id, "creating a stream failed: " + s.message());
    return s;
  }
  return std::unique_ptr<Stream>(std::make_unique<CudaStream>(shared_from_this(), id, stream));
}

void CudaContext::Register(CudaStream* s) {
  std::lock_guard<std::mutex> lock(streams_mu_);
  streams_.push_back(s);
}

void CudaContext::Unregister(CudaStream* s) {
  std::lock_guard<std::mutex> lock(streams_mu_);
  streams_.erase(std::remove(streams_.begin(), streams_.end(), s), streams_.end());
}

void CudaContext::Wake() {
  {
    std::lock_guard<std::mutex> lock(watch_mu_);
    work_posted_ = true;
  }
  watch_cv_.notify_one();
}

void CudaContext::TrimPool() {
  std::shared_lock<std::shared_mutex> lock(gen_mu_);
  if (!gen_ || device_->lost() || sym().cuMemPoolTrimTo == nullptr) return;
  if (!Bind(*gen_).ok()) return;
  (void)sym().cuMemPoolTrimTo(gen_->pool, 0);  // only memory no allocation uses goes back
}

void CudaContext::Watch() {
  auto delay = std::chrono::microseconds(2);
  bool trimmed = true;  // nothing to give back before the first work
  for (;;) {
    bool busy = false, progress = false;
    std::vector<Deferred> deferred;
    {
      std::lock_guard<std::mutex> lock(streams_mu_);
      for (CudaStream* s : streams_) busy |= s->Poll(&progress, &deferred);
    }
    // Outside streams_mu_ and every stream's lock: end generations, then tell those waiting.
    for (const Deferred& d : deferred) Reset(d.gen_id, d.why, d.kind == Deferred::kAbandon);
    for (Deferred& d : deferred) {
      if (d.done) d.done(d.result);
      d.stream->EndCompletion();
    }
    if (!deferred.empty()) continue;
    std::unique_lock<std::mutex> lock(watch_mu_);
    if (stop_) return;
    if (!busy && !work_posted_) {
      if (!trimmed) {
        // Idle: after a while the pool gives back what its freed buffers left reserved.
        if (!watch_cv_.wait_for(lock, device_->options().pool_trim_after, [&] { return stop_ || work_posted_; })) {
          lock.unlock();
          TrimPool();
          trimmed = true;
          continue;
        }
      } else {
        watch_cv_.wait(lock, [&] { return stop_ || work_posted_; });
      }
      delay = std::chrono::microseconds(2);
    } else if (!work_posted_) {
      // Work is on the GPU: look again soon, less often the longer it runs.
      delay = progress ? std::chrono::microseconds(2) : std::min(delay * 2, std::chrono::microseconds(500));
      watch_cv_.wait_for(lock, delay, [&] { return stop_ || work_posted_; });
    }
    if (work_posted_) trimmed = false;
    work_posted_ = false;
    if (stop_) return;
  }
}

}  // namespace

Result<std::shared_ptr<Device>> CreateCudaDevice(std::shared_ptr<CudaDriver> driver, int ordinal,
                                                 const CudaDeviceOptions& options) {
  const DriverSymbols& s = driver->sym();
  const std::pair<const char*, bool> needed[] = {
      {"cuCtxCreate_v4 or cuCtxCreate_v2", s.cuCtxCreate_v4 != nullptr || s.cuCtxCreate_v2 != nullptr},
      {"cuCtxDestroy_v2", s.cuCtxDestroy_v2 != nullptr},
      {"cuCtxSetCurrent", s.cuCtxSetCurrent != nullptr},
      {"cuStreamCreate", s.cuStreamCreate != nullptr},
      {"cuStreamDestroy_v2", s.cuStreamDestroy_v2 != nullptr},
      {"cuModuleLoadDataEx", s.cuModuleLoadDataEx != nullptr},
      {"cuModuleUnload", s.cuModuleUnload != nullptr},
      {"cuModuleGetFunction", s.cuModuleGetFunction != nullptr},
      {"cuFuncGetAttribute", s.cuFuncGetAttribute != nullptr},
      {"cuMemPoolCreate", s.cuMemPoolCreate != nullptr},
      {"cuMemPoolDestroy", s.cuMemPoolDestroy != nullptr},
      {"cuMemAllocFromPoolAsync", s.cuMemAllocFromPoolAsync != nullptr},
      {"cuMemFreeAsync", s.cuMemFreeAsync != nullptr},
      {"cuMemHostAlloc", s.cuMemHostAlloc != nullptr},
      {"cuMemFreeHost", s.cuMemFreeHost != nullptr},
      {"cuMemcpyHtoDAsync_v2", s.cuMemcpyHtoDAsync_v2 != nullptr},
      {"cuMemcpyDtoHAsync_v2", s.cuMemcpyDtoHAsync_v2 != nullptr},
      {"cuMemcpyDtoDAsync_v2", s.cuMemcpyDtoDAsync_v2 != nullptr},
      {"cuMemsetD8Async", s.cuMemsetD8Async != nullptr},
      {"cuLaunchKernel", s.cuLaunchKernel != nullptr},
      {"cuEventCreate", s.cuEventCreate != nullptr},
      {"cuEventRecord", s.cuEventRecord != nullptr},
      {"cuEventQuery", s.cuEventQuery != nullptr},
      {"cuEventDestroy_v2", s.cuEventDestroy_v2 != nullptr},
      {"cuEventElapsedTime_v2 or cuEventElapsedTime",
       s.cuEventElapsedTime_v2 != nullptr || s.cuEventElapsedTime != nullptr},
  };
  for (const auto& [name, ok] : needed) {
    if (!ok) return Status::Unavailable("the CUDA driver at " + driver->path() + " lacks " + name);
  }
  GPUWASM_ASSIGN_OR_RETURN(DeviceInfo info, driver->QueryDevice(ordinal));
  int handle = 0;
  GPUWASM_RETURN_IF_ERROR(driver->Check(s.cuDeviceGet(&handle, ordinal), "cuDeviceGet"));
  // Instance windows (instrumented PTX) need the virtual memory management API and mapped pinned
  // memory; without them the host runs tenants' kernels as written (docs/adr/0009).
  int vmm = 0;
  info.instance_windows =
      s.cuMemAddressReserve != nullptr && s.cuMemAddressFree != nullptr && s.cuMemCreate != nullptr &&
      s.cuMemRelease != nullptr && s.cuMemMap != nullptr && s.cuMemUnmap != nullptr && s.cuMemSetAccess != nullptr &&
      s.cuMemGetAllocationGranularity != nullptr && s.cuMemHostGetDevicePointer_v2 != nullptr &&
      s.cuMemHostRegister_v2 != nullptr && s.cuMemHostUnregister != nullptr &&
      s.cuDeviceGetAttribute(&vmm, kAttrVirtualMemoryManagement, handle) == CUDA_SUCCESS && vmm == 1;
  int default_shared = 0;
  GPUWASM_RETURN_IF_ERROR(driver->Check(s.cuDeviceGetAttribute(&default_shared, 8, handle),
                                        "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK)"));
  return std::shared_ptr<Device>(std::make_shared<CudaDevice>(
      std::move(driver), handle, std::move(info), static_cast<uint32_t>(std::max(default_shared, 0)), options));
}

}  // namespace gpuwasm::device::cuda
