#include "device/cpu/cpu_device.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "common/content_cache.h"
#include "common/names.h"
#include "common/sha256.h"
#include "device/allocation_table.h"
#include "device/cpu/exec.h"
#include "device/cpu/program.h"
#include "device/window_ranges.h"
#include "ptx/instrument.h"
#include "ptx/parser.h"

namespace gpuwasm::device::cpu {
namespace {

// Threads that help run the thread blocks of launches.
class CtaPool {
 public:
  explicit CtaPool(unsigned n) {
    for (unsigned i = 0; i < n; ++i) threads_.emplace_back([this] { Loop(); });
  }
  ~CtaPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  size_t size() const { return threads_.size(); }
  void Submit(std::shared_ptr<LaunchRun> run) {
    if (threads_.empty()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.push_back(std::move(run));
    }
    cv_.notify_all();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      std::shared_ptr<LaunchRun> job = jobs_.front();
      if (!job->has_work()) {
        jobs_.pop_front();
        continue;
      }
      lock.unlock();
      job->Work();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<LaunchRun>> jobs_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

std::shared_ptr<uint8_t> ZeroedHostMemory(uint64_t bytes) {
  void* p = std::calloc(1, bytes);
  if (p == nullptr) return nullptr;
  return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [](uint8_t* q) { std::free(q); });
}

class CpuModule;

// Host memory a context spends beyond its buffers: module variables (for the module's life), the
// scratch of its launches and the data of copies queued behind running work (until they ran).
// Charged against the context's quota together with its buffers; a charge ends with its holder.
struct Ledger {
  std::atomic<uint64_t> charged{0};
};
class Charge {
 public:
  Charge(std::shared_ptr<Ledger> ledger, uint64_t bytes) : ledger_(std::move(ledger)), bytes_(bytes) {}
  ~Charge() { ledger_->charged.fetch_sub(bytes_, std::memory_order_relaxed); }
  Charge(const Charge&) = delete;
  Charge& operator=(const Charge&) = delete;

 private:
  std::shared_ptr<Ledger> ledger_;
  uint64_t bytes_;
};

class CpuKernel final : public Kernel, public std::enable_shared_from_this<CpuKernel> {
 public:
  CpuKernel(std::shared_ptr<const CpuModule> module, const KernelEntry* entry)
      : module_(std::move(module)), entry_(entry) {}
  const KernelSignature& signature() const override { return entry_->signature; }
  const CpuModule& module() const { return *module_; }
  const KernelEntry* entry() const { return entry_; }
  // The kernel's native tier (when to compile, and the code once compiled), made at the first call.
  const std::shared_ptr<NativeTier>& native_tier() const;

 private:
  std::shared_ptr<const CpuModule> module_;
  const KernelEntry* entry_;
  mutable std::once_flag native_once_;
  mutable std::shared_ptr<NativeTier> native_;
};

class CpuModule final : public Module, public std::enable_shared_from_this<CpuModule> {
 public:
  CpuModule(std::shared_ptr<const Program> program, std::vector<MemoryView::Region> globals,
            std::vector<std::shared_ptr<uint8_t>> storage, std::unique_ptr<Charge> charge)
      : program_(std::move(program)),
        globals_(std::move(globals)),
        storage_(std::move(storage)),
        charge_(std::move(charge)) {}

  Result<std::shared_ptr<const Kernel>> GetKernel(std::string_view name) const override {
    const KernelEntry* k = program_->FindKernel(name);
    if (k == nullptr) return Status::NotFound("no kernel named '" + std::string(name) + "' in the module");
    return std::shared_ptr<const Kernel>(std::make_shared<CpuKernel>(shared_from_this(), k));
  }

  std::vector<std::string> KernelNames() const override {
    std::vector<std::string> names;
    for (const KernelEntry& k : program_->kernels) names.push_back(k.name);
    return names;
  }

  const std::shared_ptr<const Program>& program() const { return program_; }
  const std::vector<MemoryView::Region>& globals() const { return globals_; }
  const std::vector<std::shared_ptr<uint8_t>>& storage() const { return storage_; }

 private:
  std::shared_ptr<const Program> program_;
  std::vector<MemoryView::Region> globals_;
  std::vector<std::shared_ptr<uint8_t>> storage_;
  std::unique_ptr<Charge> charge_;  // its variables, against the context's quota
};

const std::shared_ptr<NativeTier>& CpuKernel::native_tier() const {
  std::call_once(native_once_, [&] { native_ = NativeTier::For(TranslateKernel(*module_->program(), *entry_)); });
  return native_;
}

class CpuDevice;

class CpuContext final : public Context, public std::enable_shared_from_this<CpuContext> {
 public:
  CpuContext(std::shared_ptr<CpuDevice> device, uint64_t base, ContextOptions options)
      : device_(std::move(device)),
        table_(options.max_bytes),
        next_addr_(base),
        next_window_(base + kWindowsOffset),
        slice_end_(base + kSliceBytes) {}

  Result<DevicePtr> Allocate(uint64_t bytes, uint64_t* generation = nullptr) override {
    return AllocateAt(0, bytes, generation);
  }

  // Allocate at `at` (a range of a window that no allocation uses), or at a fresh address (0);
  // with `backing`, the allocation's bytes are those (the fake CUDA driver's mapped host memory).
  Result<DevicePtr> AllocateAt(DevicePtr at, uint64_t bytes, uint64_t* generation,
                               std::shared_ptr<uint8_t> backing = nullptr) {
    if (bytes == 0) return Status::InvalidArgument("cannot allocate 0 bytes");
    if (generation != nullptr) *generation = 0;  // the CPU device never resets a context
    std::lock_guard<std::mutex> lock(mu_);
    if (at != 0 && table_.Overlaps(at, bytes)) {  // nothing may overlap it
      return Status::InvalidArgument("[" + Hex(at) + ", +" + std::to_string(bytes) + ") overlaps an allocation");
    }
    GPUWASM_RETURN_IF_ERROR(table_.Charge(bytes, ledger_->charged.load(std::memory_order_relaxed)));
    auto data = backing ? std::move(backing) : ZeroedHostMemory(bytes);  // calloc'ed: zero pages come lazily
    if (!data) {
      table_.Uncharge(bytes);
      return Status::ResourceExhausted("out of host memory for a " + std::to_string(bytes) + "-byte buffer");
    }
    DevicePtr p = at != 0 ? at : Reserve(bytes);
    table_.Insert(p, bytes, std::move(data));
    return p;
  }

  Result<std::unique_ptr<Window>> CreateWindow(uint64_t max_bytes) override;

  // A range of `size` bytes of the context's window area: one a window released, or a fresh one.
  Result<DevicePtr> ReserveWindow(uint64_t size) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = free_windows_.find(size); it != free_windows_.end()) {
      DevicePtr p = it->second;
      free_windows_.erase(it);
      return p;
    }
    if (size > slice_end_ - next_window_) {
      return Status::ResourceExhausted("the context's address space has no room for another instance window of " +
                                       std::to_string(size) + " bytes");
    }
    DevicePtr p = next_window_;
    next_window_ += size;
    return p;
  }
  // Its instance has ended: the range may serve another instance (no pointer into it is live).
  void ReleaseWindow(DevicePtr base, uint64_t size) {
    std::lock_guard<std::mutex> lock(mu_);
    free_windows_.emplace(size, base);
  }

  Status Free(DevicePtr ptr) override {
    std::lock_guard<std::mutex> lock(mu_);
    // A launch still running keeps the memory alive through its view.
    return table_.Remove(ptr).status();
  }

  // Identical PTX (same sha256) is decoded once per context while some holder keeps it.
  Result<std::shared_ptr<const Module>> LoadModule(std::string_view ptx) override {
    GPUWASM_ASSIGN_OR_RETURN(std::shared_ptr<CpuModule> m, modules_.Get(Sha256Hex(ptx), [&] { return Build(ptx); }));
    return std::shared_ptr<const Module>(std::move(m));
  }

  Result<std::unique_ptr<Stream>> CreateStream() override;

  uint64_t allocated_bytes() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return table_.used();
  }
  // Its buffers and what is charged beside them (module variables, launch scratch, staged copies).
  uint64_t reserved_bytes() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return table_.used() + ledger_->charged.load(std::memory_order_relaxed);
  }
  size_t module_entries() const { return modules_.entries(); }

  Result<std::shared_ptr<CpuModule>> Build(std::string_view ptx) {
    GPUWASM_ASSIGN_OR_RETURN(ptx::Module parsed, ptx::Parse(ptx));
    GPUWASM_ASSIGN_OR_RETURN(Program program, Decode(parsed));
    std::vector<MemoryView::Region> regions;
    std::vector<std::shared_ptr<uint8_t>> storage;
    // The module's variables and its decoded code live as long as the module.
    uint64_t held = program.code.size() * sizeof(program.code[0]) + program.launch_invariant.size() +
                    program.divergent.size();  // and what Decode found about it (uniformity.h)
    for (const GlobalVariable& g : program.globals) held += g.size;
    GPUWASM_ASSIGN_OR_RETURN(std::unique_ptr<Charge> charge,
                             ChargeHost(held, "the module (its .global and .const variables and decoded code)"));
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (GlobalVariable& g : program.globals) {
        auto data = ZeroedHostMemory(g.size);
        if (!data) return Status::ResourceExhausted("out of host memory for module variable " + g.name);
        if (!g.init.empty()) std::memcpy(data.get(), g.init.data(), std::min<uint64_t>(g.init.size(), g.size));
        DevicePtr addr = Reserve(g.size);
        program.consts[g.address_slot - program.const_base] = addr;
        regions.push_back({addr, g.size, data.get()});
        storage.push_back(std::move(data));
      }
    }
    return std::make_shared<CpuModule>(std::make_shared<const Program>(std::move(program)), std::move(regions),
                                       std::move(storage), std::move(charge));
  }

  // Charges `bytes` of host memory spent for `what` to the context's quota (ResourceExhausted
  // naming it beyond); the charge ends with the returned object.
  Result<std::unique_ptr<Charge>> ChargeHost(uint64_t bytes, const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t used = table_.used() + ledger_->charged.load(std::memory_order_relaxed);
    if (bytes > table_.quota() || used > table_.quota() - bytes) {
      return Status::ResourceExhausted(what + " need " + std::to_string(bytes) +
                                       " bytes of host memory, which would exceed the context's quota of " +
                                       std::to_string(table_.quota()) + " bytes (" + std::to_string(used) + " in use)");
    }
    ledger_->charged.fetch_add(bytes, std::memory_order_relaxed);
    return std::make_unique<Charge>(ledger_, bytes);
  }

  // Host address of [ptr, ptr + bytes) in one live allocation.
  Result<uint8_t*> Resolve(DevicePtr ptr, uint64_t bytes, std::shared_ptr<uint8_t>* keep) const {
    std::lock_guard<std::mutex> lock(mu_);
    const auto* a = table_.Find(ptr, bytes);
    if (a == nullptr) return NotInsideAnAllocation(ptr, bytes);
    *keep = a->second.payload;
    return a->second.payload.get() + (ptr - a->first);
  }

  // Everything a kernel of `module` may touch: the context's allocations and the module's globals.
  MemoryView View(const CpuModule& module) const {
    MemoryView v;
    std::lock_guard<std::mutex> lock(mu_);
    v.regions.reserve(table_.size() + module.globals().size());
    for (const auto& [base, a] : table_.entries()) {
      v.regions.push_back({base, a.size, a.payload.get()});
      v.keep_alive.push_back(a.payload);
    }
    for (const auto& r : module.globals()) v.regions.push_back(r);
    for (const auto& s : module.storage()) v.keep_alive.push_back(s);
    std::sort(v.regions.begin(), v.regions.end(), [](const auto& a, const auto& b) { return a.base < b.base; });
    return v;
  }

  CpuDevice& device() { return *device_; }

 private:
  DevicePtr Reserve(uint64_t bytes) {  // never reused: a stale pointer can never alias new memory
    DevicePtr p = next_addr_;
    next_addr_ += (bytes + 4095) / 4096 * 4096 + 65536;
    return p;
  }

  // Each context has kSliceBytes of the device address space: plain allocations from its start,
  // instance windows from kWindowsOffset on.
  static constexpr uint64_t kSliceBytes = uint64_t{1} << 40;
  static constexpr uint64_t kWindowsOffset = uint64_t{1} << 39;

  std::shared_ptr<CpuDevice> device_;
  mutable std::mutex mu_;
  AllocationTable<std::shared_ptr<uint8_t>> table_;  // each buffer's host memory
  uint64_t next_addr_;
  uint64_t next_window_, slice_end_;
  std::multimap<uint64_t, DevicePtr> free_windows_;  // size -> base, of released windows
  std::shared_ptr<Ledger> ledger_ = std::make_shared<Ledger>();
  ContentCache<CpuModule> modules_;  // Keep::kWhileHeld
};

// An instance's window (Window): its allocations first-fit in [base, base + size), each followed
// by a gap (as plain allocations are), so that running past a buffer's end faults on the CPU
// device's own check too; the control block is a plain allocation of the context.
class CpuWindow final : public Window {
 public:
  static constexpr uint64_t kAlign = 4096, kGap = 65536;
  // Room for the buffers an instance may hold (host::WasiCudaOptions::max_buffers) with their gaps.
  static constexpr uint64_t kGapsRoom = 4096 * (kGap + kAlign);
  // A window stays well inside the context's window area (CpuContext::kWindowsOffset).
  static constexpr uint64_t kMaxSize = uint64_t{1} << 36;

  CpuWindow(std::shared_ptr<CpuContext> ctx, DevicePtr base, uint64_t size, DevicePtr control, uint8_t* control_host,
            std::shared_ptr<uint8_t> keep)
      : ctx_(std::move(ctx)),
        base_(base),
        size_(size),
        control_(control),
        control_host_(control_host),
        keep_(std::move(keep)),
        ranges_(size) {}
  ~CpuWindow() override {
    ranges_.ForEachTaken([this](uint64_t off) { (void)ctx_->Free(base_ + off); });
    (void)ctx_->Free(control_);
    ctx_->ReleaseWindow(base_, size_);
  }

  DevicePtr base() const override { return base_; }
  uint64_t size() const override { return size_; }
  DevicePtr control() const override { return control_; }
  void* control_host() const override { return control_host_; }

  Result<DevicePtr> Allocate(uint64_t bytes, uint64_t* generation) override {
    if (bytes == 0) return Status::InvalidArgument("cannot allocate 0 bytes");
    const uint64_t need = bytes > size_ ? UINT64_MAX : (bytes + kAlign - 1) / kAlign * kAlign + kGap;
    GPUWASM_ASSIGN_OR_RETURN(uint64_t off, ranges_.Take(need, bytes));
    Result<DevicePtr> p = ctx_->AllocateAt(base_ + off, bytes, generation);
    if (!p.ok()) ranges_.Give(off);
    return p;
  }

  Status Free(DevicePtr ptr, uint64_t generation) override {
    (void)generation;  // the CPU device never resets a context
    if (!ranges_.Taken(ptr - base_)) return NotALiveAllocation(ptr, " of the window");
    GPUWASM_RETURN_IF_ERROR(ctx_->Free(ptr));
    ranges_.Give(ptr - base_);
    return Status::Ok();
  }

 private:
  std::shared_ptr<CpuContext> ctx_;
  DevicePtr base_;
  uint64_t size_;
  DevicePtr control_;
  uint8_t* control_host_;
  std::shared_ptr<uint8_t> keep_;  // the control block's memory
  WindowRanges ranges_;            // each buffer with its gap
};

Result<std::unique_ptr<Window>> CpuContext::CreateWindow(uint64_t max_bytes) {
  if (max_bytes > CpuWindow::kMaxSize) {
    return Status::InvalidArgument("an instance window for " + std::to_string(max_bytes) +
                                   " device bytes is larger than the CPU device's limit of " +
                                   std::to_string(CpuWindow::kMaxSize));
  }
  const uint64_t size =
      std::max(ptx::kMinWindowBytes, (max_bytes + max_bytes / 4 + CpuWindow::kGapsRoom + 65535) / 65536 * 65536);
  GPUWASM_ASSIGN_OR_RETURN(DevicePtr control, Allocate(sizeof(ptx::ControlBlock)));
  std::shared_ptr<uint8_t> keep;
  Result<uint8_t*> host = Resolve(control, sizeof(ptx::ControlBlock), &keep);
  Result<DevicePtr> base = host.ok() ? ReserveWindow(size) : Result<DevicePtr>(host.status());
  if (!base.ok()) {
    (void)Free(control);
    return base.status();
  }
  return std::unique_ptr<Window>(
      std::make_unique<CpuWindow>(shared_from_this(), *base, size, control, *host, std::move(keep)));
}

class CpuDevice final : public Device, public std::enable_shared_from_this<CpuDevice> {
 public:
  explicit CpuDevice(const CpuDeviceOptions& o) : options_(o) {
    unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    unsigned n = o.threads != 0 ? o.threads : hw;
    // The launching stream's thread works too, so the pool has one thread fewer.
    pool_ = std::make_unique<CtaPool>(n - 1);
    info_.kind = DeviceKind::kCpu;
    info_.name = "gpuwasm CPU device (" + std::to_string(n) + " threads)";
    info_.compute_major = 9;
    info_.compute_minor = 0;
    info_.sm_count = n;
    info_.max_shared_per_block = 96 * 1024;
    info_.instance_windows = true;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    info_.total_memory = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
  }

  const DeviceInfo& info() const override { return info_; }

  Result<std::shared_ptr<Context>> CreateContext(const ContextOptions& options) override {
    // Each context gets its own 1 TiB slice of the device address space.
    uint64_t base = kGlobalBase + (next_context_.fetch_add(1) << 40);
    return std::shared_ptr<Context>(std::make_shared<CpuContext>(shared_from_this(), base, options));
  }

  CtaPool& pool() { return *pool_; }
  const CpuDeviceOptions& options() const { return options_; }

 private:
  CpuDeviceOptions options_;
  DeviceInfo info_;
  std::unique_ptr<CtaPool> pool_;
  std::atomic<uint64_t> next_context_{0};
};

class CpuStream final : public Stream {
 public:
  explicit CpuStream(std::shared_ptr<CpuContext> ctx) : ctx_(std::move(ctx)), thread_([this] { Loop(); }) {}

  ~CpuStream() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  Status MemcpyHtoD(DevicePtr dst, const void* src, uint64_t bytes) override {
    std::shared_ptr<uint8_t> keep;
    GPUWASM_RETURN_IF_ERROR(ctx_->Resolve(dst, bytes, &keep).status());
    // The data waits in host memory until the copy runs (after the stream's earlier work).
    GPUWASM_ASSIGN_OR_RETURN(std::unique_ptr<Charge> c, ctx_->ChargeHost(bytes, "a copy queued behind running work"));
    std::shared_ptr<std::vector<uint8_t>> data;
    try {
      data = std::make_shared<std::vector<uint8_t>>(static_cast<const uint8_t*>(src),
                                                    static_cast<const uint8_t*>(src) + bytes);
    } catch (const std::bad_alloc&) {
      return Status::ResourceExhausted("out of host memory to stage a copy of " + std::to_string(bytes) + " bytes");
    }
    return Enqueue(
        [this, dst, data, charge = std::shared_ptr<Charge>(std::move(c))]() -> Status {
          std::shared_ptr<uint8_t> k;
          GPUWASM_ASSIGN_OR_RETURN(uint8_t * p, ctx_->Resolve(dst, data->size(), &k));
          std::memcpy(p, data->data(), data->size());
          return Status::Ok();
        },
        {});
  }

  Status MemcpyDtoH(void* dst, DevicePtr src, uint64_t bytes) override {
    GPUWASM_RETURN_IF_ERROR(Synchronize());
    std::shared_ptr<uint8_t> keep;
    GPUWASM_ASSIGN_OR_RETURN(uint8_t * p, ctx_->Resolve(src, bytes, &keep));
    std::memcpy(dst, p, bytes);
    return Status::Ok();
  }

  Status MemcpyDtoD(DevicePtr dst, DevicePtr src, uint64_t bytes) override {
    std::shared_ptr<uint8_t> k1, k2;
    GPUWASM_RETURN_IF_ERROR(ctx_->Resolve(dst, bytes, &k1).status());
    GPUWASM_RETURN_IF_ERROR(ctx_->Resolve(src, bytes, &k2).status());
    return Enqueue(
        [this, dst, src, bytes]() -> Status {
          std::shared_ptr<uint8_t> a, b;
          GPUWASM_ASSIGN_OR_RETURN(uint8_t * d, ctx_->Resolve(dst, bytes, &a));
          GPUWASM_ASSIGN_OR_RETURN(uint8_t * s, ctx_->Resolve(src, bytes, &b));
          std::memmove(d, s, bytes);
          return Status::Ok();
        },
        {});
  }

  Status Memset(DevicePtr dst, uint8_t value, uint64_t bytes) override {
    std::shared_ptr<uint8_t> keep;
    GPUWASM_RETURN_IF_ERROR(ctx_->Resolve(dst, bytes, &keep).status());
    return Enqueue(
        [this, dst, value, bytes]() -> Status {
          std::shared_ptr<uint8_t> k;
          GPUWASM_ASSIGN_OR_RETURN(uint8_t * p, ctx_->Resolve(dst, bytes, &k));
          std::memset(p, value, bytes);
          return Status::Ok();
        },
        {});
  }

  Status Launch(const Kernel& kernel, const LaunchConfig& config, std::vector<uint8_t> params,
                LaunchOptions options) override {
    const auto* k = dynamic_cast<const CpuKernel*>(&kernel);
    if (k == nullptr) return Status::InvalidArgument("kernel does not belong to the CPU device");
    if (!options.config_checked)
      GPUWASM_RETURN_IF_ERROR(CheckLaunchConfig(ctx_->device().info(), k->signature(), config));
    GPUWASM_RETURN_IF_ERROR(CheckParamBytes(k->signature(), params.size()));
    // Keep the kernel (and so its module and program) alive until the launch ran.
    std::shared_ptr<const CpuKernel> hold = k->shared_from_this();
    // Each thread that runs its CTAs (the stream's and the device pool's, at most one per CTA)
    // holds a CTA's scratch: charged from now until the launch ran.
    const Program& prog = *hold->module().program();
    const uint64_t ctas = config.grid.count();
    const uint64_t runners = std::min<uint64_t>(ctx_->device().pool().size() + 1, std::max<uint64_t>(ctas, 1));
    const uint64_t per_cta = CtaScratchBytes(prog, config);
    const uint64_t scratch = per_cta > UINT64_MAX / runners ? UINT64_MAX : per_cta * runners;
    GPUWASM_ASSIGN_OR_RETURN(
        std::unique_ptr<Charge> c,
        ctx_->ChargeHost(scratch, "the launch of '" + k->signature().name +
                                      "' (registers, local and shared memory of " + std::to_string(runners) +
                                      " CTAs of " + std::to_string(config.block.count()) + " threads at once, " +
                                      std::to_string(per_cta) + " bytes each)"));
    auto p = std::make_shared<std::vector<uint8_t>>(std::move(params));
    auto deadline = options.deadline;
    const void* control = options.control;
    return Enqueue(
        [this, hold, config, p, deadline, control, runners,
         charge = std::shared_ptr<Charge>(std::move(c))]() -> Status {
          LaunchSpec spec;
          spec.program = hold->module().program();
          spec.kernel = hold->entry();
          spec.config = config;
          spec.params = std::move(*p);
          spec.memory = ctx_->View(hold->module());
          spec.deadline = deadline;
          spec.cancel = &cancel_;
          spec.runners = static_cast<uint32_t>(runners);
          const CpuDeviceOptions& o = ctx_->device().options();
          // Translated at the kernel's first launch, unless native code is off.
          NativeTier* slot = o.native != NativeMode::kOff ? hold->native_tier().get() : nullptr;
          if (slot != nullptr) spec.native = slot->Get(o.native, o.cc);
          const bool native = spec.native != nullptr;
          auto run = std::make_shared<LaunchRun>(std::move(spec));
          auto started = std::chrono::steady_clock::now();
          {
            std::lock_guard<std::mutex> lock(time_mu_);
            running_since_ = started;
          }
          ctx_->device().pool().Submit(run);
          run->Work();
          run->Wait();
          const auto took = std::chrono::steady_clock::now() - started;
          {
            std::lock_guard<std::mutex> lock(time_mu_);
            kernel_ns_ += took.count();
            running_since_.reset();
          }
          last_instructions_.store(run->thread_instructions());
          last_native_.store(native);
          if (slot != nullptr && !native) {
            slot->AddInterpreted(run->thread_instructions(), took, {o.native, o.native_threshold, o.native_payback},
                                 o.cc);
          }
          // An instrumented kernel that stopped itself ended cleanly: its control block says why.
          if (control != nullptr && run->status().ok()) return ptx::ControlBlockStatus(control, hold->signature().name);
          return run->status();
        },
        std::move(options.on_complete));
  }

  Status Synchronize() override {
    std::unique_lock<std::mutex> lock(mu_);
    idle_cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
    return sticky_;
  }

  void Cancel() override {
    std::unique_lock<std::mutex> lock(mu_);
    cancel_.store(true);                        // the running op stops
    for (Op& op : queue_) op.cancelled = true;  // the stream's thread completes the rest unrun
    if (worker_waiting_) cv_.notify_one();
    idle_cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
    cancel_.store(false);
  }

  // The finished launches' time and the running one's so far: live while a kernel runs.
  std::chrono::nanoseconds kernel_time() const override {
    std::lock_guard<std::mutex> lock(time_mu_);
    std::chrono::nanoseconds t(kernel_ns_);
    if (running_since_) t += std::chrono::steady_clock::now() - *running_since_;
    return t;
  }

  uint64_t last_instructions() const { return last_instructions_.load(); }
  bool last_native() const { return last_native_.load(); }

 private:
  struct Op {
    std::function<Status()> run;
    Completion done;
    bool cancelled = false;
  };

  // Queues `fn`; its completion runs on the stream's thread. Once the stream has failed, later
  // work completes there with the stream's error without running, as on a CUDA context after a fault.
  Status Enqueue(std::function<Status()> fn, Completion done) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back({std::move(fn), std::move(done)});
    if (worker_waiting_) cv_.notify_one();  // a busy worker finds the op without a wake-up
    return Status::Ok();
  }

  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      worker_waiting_ = true;
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      worker_waiting_ = false;
      if (queue_.empty() && stop_) return;
      Op op = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      Status prior = sticky_;
      lock.unlock();
      Status s = op.cancelled ? Status::Cancelled("cancelled before it ran") : prior.ok() ? op.run() : prior;
      if (op.done) op.done(s);
      lock.lock();
      busy_ = false;
      if (!s.ok() && sticky_.ok() && s.code() != StatusCode::kCancelled) sticky_ = s;
      if (queue_.empty()) idle_cv_.notify_all();
    }
  }

  std::shared_ptr<CpuContext> ctx_;
  std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::deque<Op> queue_;
  bool busy_ = false;
  bool stop_ = false;
  bool worker_waiting_ = false;
  Status sticky_;
  std::atomic<bool> cancel_{false};
  std::atomic<uint64_t> last_instructions_{0};
  std::atomic<bool> last_native_{false};
  mutable std::mutex time_mu_;  // kernel_ns_ and running_since_ change together
  int64_t kernel_ns_ = 0;
  std::optional<std::chrono::steady_clock::time_point> running_since_;
  std::thread thread_;
};

Result<std::unique_ptr<Stream>> CpuContext::CreateStream() {
  return std::unique_ptr<Stream>(std::make_unique<CpuStream>(shared_from_this()));
}

}  // namespace

std::shared_ptr<Device> CreateCpuDevice(const CpuDeviceOptions& options) {
  return std::make_shared<CpuDevice>(options);
}

uint64_t LastLaunchInstructions(const Stream& stream) {
  const auto* s = dynamic_cast<const CpuStream*>(&stream);
  return s != nullptr ? s->last_instructions() : 0;
}

bool LastLaunchWasNative(const Stream& stream) {
  const auto* s = dynamic_cast<const CpuStream*>(&stream);
  return s != nullptr && s->last_native();
}

size_t ModuleEntries(const Context& context) {
  const auto* c = dynamic_cast<const CpuContext*>(&context);
  return c != nullptr ? c->module_entries() : 0;
}

Result<DevicePtr> AllocateAt(Context& context, DevicePtr at, uint64_t bytes) {
  auto* c = dynamic_cast<CpuContext*>(&context);
  if (c == nullptr || at == 0) return Status::InvalidArgument("not a CPU device context, or no address");
  return c->AllocateAt(at, bytes, nullptr);
}

Result<DevicePtr> MapHostMemory(Context& context, void* host, uint64_t bytes) {
  auto* c = dynamic_cast<CpuContext*>(&context);
  if (c == nullptr || host == nullptr) return Status::InvalidArgument("not a CPU device context, or no memory");
  return c->AllocateAt(0, bytes, nullptr, std::shared_ptr<uint8_t>(static_cast<uint8_t*>(host), [](uint8_t*) {}));
}

std::string NativeCodeWhyNot(const Kernel& kernel) {
  const auto* k = dynamic_cast<const CpuKernel*>(&kernel);
  return k != nullptr ? k->native_tier()->why_not() : "not a CPU device kernel";
}

}  // namespace gpuwasm::device::cpu
