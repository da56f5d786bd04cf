// Runtime: the layer both `gpuwasm run` and `gpuwasm serve` use. It owns the function store,
// the tenants with their quotas, the device and one device context per tenant, the engine, and
// the lifecycle of every invocation:
//
//   Deploy   store the module (blob + metadata, crash-safe), compile it on the compile pool
//            through the engine's content-addressed cache; status compiling -> ready | failed.
//   Invoke   per-tenant admission (running + queued <= concurrent_invocations, else an
//            "overloaded" Unavailable error), then a fresh instance with the tenant's limits and
//            the request's deadline (default 30 s, capped by the tenant), in one of the node's
//            `workers` slots: in this process on a pool thread or on the server's I/O thread
//            that read the request (ADR 0026), or in the tenant's worker process with no thread
//            here waiting for it (InvokeAsync; ADR 0021); input in; exit status,
//            output, stdout, stderr, the final InstanceMetricsSnapshot and GPU time out. Every
//            buffer, module and instance is released at the end, also on a trap, a deadline or a
//            device fault.
//   Observe  the running instances with their live snapshots, and lifetime totals plus current
//            gauges per tenant and per function.
//   Shutdown stop admitting, let running invocations finish within a grace period, then
//            interrupt the rest.
//
// A tenant only ever sees its own functions: another tenant's id is NotFound.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "device/device.h"
#include "host/metrics.h"
#include "runtime/config.h"
#include "runtime/invocation.h"
#include "runtime/tenant_worker.h"
#include "runtime/worker_pool.h"
#include "store/local_store.h"
#include "wasm/engine.h"

namespace gpuwasm::runtime {

// The tenant limits a request can be refused by that have no counter of their own (admission is
// `rejected`, the store caps `deploys_refused`, a launch's back-pressure and quota are the
// instance's): counted per tenant, by limit.
enum class RefusedLimit : uint8_t { kMaxModuleSize, kMaxInputSize, kArgsAndEnv };
inline constexpr size_t kRefusedLimitCount = 3;
// The config key (or keys) of the limit: "max_module_size", "max_input_size", "args_and_env".
std::string_view RefusedLimitName(RefusedLimit l);

// Lifetime counters and current gauges of a tenant or a function.
struct Totals {
  uint64_t invocations[kInvocationStatusCount] = {};
  uint64_t rejected = 0;                             // refused by admission (overloaded)
  uint64_t deploys_refused = 0;                      // deploys over max_versions or max_stored_bytes (tenants only)
  uint64_t limit_refusals[kRefusedLimitCount] = {};  // by RefusedLimit (tenants only)
  double duration_seconds = 0;
  uint64_t kernels_launched = 0;
  uint64_t back_pressure_rejections = 0;
  uint64_t yields = 0;
  uint64_t kernel_faults = 0;   // launches an instrumented kernel ended itself (fence, trap)
  uint64_t quota_refusals = 0;  // guest calls refused with WCU_ERR_QUOTA
  uint64_t gpu_time_ns = 0;
  // gauges
  uint32_t running = 0;                 // instances admitted and not finished (queued included)
  uint64_t device_bytes_allocated = 0;  // live device bytes of its running instances
  uint64_t bytes_pinned = 0;            // retained PTX bytes of its running instances
  uint64_t invocations_total() const;
};
void to_json(nlohmann::json& j, const Totals& t);

struct LiveInstance {
  uint64_t id = 0;
  std::string tenant;
  std::string function_id;
  std::string function_name;
  std::chrono::milliseconds elapsed{0};
  host::InstanceMetricsSnapshot metrics;
  std::chrono::nanoseconds gpu_time{0};
};
void to_json(nlohmann::json& j, const LiveInstance& i);

struct TenantStats {
  std::string tenant;
  Totals totals;
  // What the tenant's device context really holds (0 of each once its instances are gone).
  uint64_t context_device_bytes = 0;
  // What the context holds from the device: its buffers plus what its memory pool keeps for reuse
  // (given back once the context is idle a while).
  uint64_t context_reserved_bytes = 0;
  size_t context_modules = 0;
  uint64_t context_resets = 0;  // rebuilt after a device fault or a runaway kernel (CUDA device)
};
struct FunctionStats {
  std::string tenant;
  std::string function_id;
  std::string function_name;
  int64_t version = 0;
  Totals totals;
};
// A tenant worker process (isolation "process").
struct WorkerStats {
  std::string tenant;  // "" for one finishing its last invocations before it is replaced
  int pid = 0;
  size_t running = 0;  // invocations in it now
  uint64_t resident_bytes = 0;
  std::chrono::milliseconds age{0};
};
struct RuntimeStats {
  std::vector<TenantStats> tenants;
  std::vector<FunctionStats> functions;  // functions invoked since start
  uint64_t module_compiles = 0;          // modules compiled by this node (C compiler runs)
  uint64_t module_cache_loads = 0;       // modules loaded from the artifact cache instead
  uint64_t module_quick_compiles = 0;    // of module_compiles: by the quick tier (large modules)
  uint64_t module_tier_upgrades = 0;     // functions switched from quick-tier code to optimised code
  uint64_t compiles_crashed = 0;         // found running at start-up (this host's gpuwasm died): failed
  std::vector<WorkerStats> workers;      // live tenant workers
  uint64_t workers_started = 0;          // lifetime: worker processes started
  uint64_t workers_lost = 0;             // lifetime: ended by a fault, limit, crash or kill while running invocations
  uint64_t workers_idle_stopped = 0;     // lifetime: stopped for being idle (or to make room)
};

struct RuntimeOptions {
  // Open the store (deploys need it). `gpuwasm run` runs without one.
  bool use_store = true;
  // The engine's options; cache_dir defaults to the store's artifacts/ (or the user cache
  // without a store) and imports to the host's.
  wasm::EngineOptions engine;
  // The device to use instead of opening config.device (tests; with isolation "process" it only
  // names the device: each worker opens config.device itself).
  std::shared_ptr<device::Device> device;
  // A gpuwasm executable for the tenant workers (`__worker`) and the translator child
  // (`__translate`): "/proc/self/exe" in gpuwasm itself. Needed with isolation "process".
  std::string worker_program;
};

class Runtime {
 public:
  static Result<std::unique_ptr<Runtime>> Create(RuntimeConfig config, RuntimeOptions options = {});
  ~Runtime();  // Shutdown(0)
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const RuntimeConfig& config() const { return config_; }
  Isolation isolation() const { return isolation_; }
  const device::DeviceInfo& device_info() const { return device_->info(); }
  // Why `auto` chose the CPU device ("" when it did not).
  const std::string& device_note() const { return device_note_; }
  store::LocalStore* store() { return store_.get(); }
  uint32_t workers() const { return pool_->threads(); }

  // Stores the module and starts compiling it; returns its record (status compiling).
  Result<store::FunctionRecord> Deploy(std::string_view tenant, std::string_view name, std::span<const uint8_t> wasm,
                                       std::string_view entry = "");
  // Waits up to `timeout` for the function to leave "compiling"; returns its record.
  Result<store::FunctionRecord> WaitReady(std::string_view tenant, std::string_view id,
                                          std::chrono::milliseconds timeout);
  // By id, or by name: the newest version.
  Result<store::FunctionRecord> GetFunction(std::string_view tenant, std::string_view id_or_name);
  // The tenant's functions; every tenant's without one (the admin role).
  Result<std::vector<store::FunctionRecord>> ListFunctions(std::optional<std::string_view> tenant);
  // Whether the store answers (a cheap query): for readiness. Ok without a store.
  Status CheckStore();
  // Compiled modules held for the next invocation (at most [runtime].loaded_modules).
  size_t loaded_module_count() const;
  // NotFound for an unknown id or another tenant's. Running invocations finish.
  Status DeleteFunction(std::string_view tenant, std::string_view id);

  // Runs a deployed function: by id, or by name (its newest ready version).
  Result<InvokeResult> Invoke(std::string_view tenant, std::string_view id_or_name, InvokeRequest request);
  // An invocation's end: its result or why it did not run. Called exactly once.
  using InvokeCallback = std::function<void(Result<InvokeResult>)>;
  // What the thread that calls InvokeAsync may do.
  enum class Caller : uint8_t {
    // An event loop's thread: only what needs no store read, no compile and no worker start is
    // started, else InvokeAsync returns false and calls nothing, and the caller asks again from a
    // thread that may block. An in-process instance runs here to its end when a pool slot is free
    // at once (no hand-over to a pool thread): the caller hands its loop to another thread while
    // it runs (server::IoThreads; ADR 0026).
    kEventLoop,
    // Any thread that may block.
    kMayBlock,
  };
  // Invoke without waiting: `done` is called on this thread when the invocation is refused before
  // it starts or ran here, else on a runtime thread once it ends (a pool thread, or in worker
  // processes the worker's reader). No thread waits for the instance while it runs in a worker
  // process.
  bool InvokeAsync(std::string_view tenant, std::string_view id_or_name, InvokeRequest request, InvokeCallback done,
                   Caller caller = Caller::kMayBlock);
  // Runs a module that is not deployed (`gpuwasm run`), with the same admission, limits and
  // lifecycle; compile errors are returned as errors.
  Result<InvokeResult> InvokeModule(std::string_view tenant, std::span<const uint8_t> wasm, std::string_view name,
                                    InvokeRequest request);

  std::vector<LiveInstance> Instances(std::optional<std::string_view> tenant = std::nullopt) const;
  RuntimeStats Stats() const;
  // Counts a refusal by `tenant`'s `limit` made before the request reached the runtime (the HTTP
  // API refuses a body over the limit from its Content-Length). An unknown tenant is ignored.
  void CountLimitRefusal(std::string_view tenant, RefusedLimit limit);

  // Stops admitting (new invocations and deploys fail with Unavailable "shutting down"), waits
  // up to `grace` for admitted invocations, then interrupts the rest and waits for them.
  void Shutdown(std::chrono::milliseconds grace);
  bool accepting() const { return accepting_.load(); }

 private:
  struct Counters;
  struct TenantState;
  struct FunctionState;
  struct Live;
  class LiveObserver;
  // A compiled function: its artifact, and the module loaded here when instances run here.
  struct Compiled {
    wasm::Artifact artifact;
    std::shared_ptr<const wasm::Module> module;
  };

  explicit Runtime(RuntimeConfig config);
  Result<TenantState*> Tenant(std::string_view name) const;
  Result<store::FunctionRecord> ResolveReady(TenantState& t, std::string_view id_or_name);
  Result<store::FunctionRecord> ResolveInStore(TenantState& t, std::string_view id_or_name);
  // The resolution cache's answer, if it has one that is still valid.
  std::optional<store::FunctionRecord> ResolveCached(TenantState& t, std::string_view id_or_name);
  // The function's module when this process holds it as optimised code, else null (counts as a
  // use either way). LoadedModule's first step.
  std::shared_ptr<const Compiled> LoadedNow(const std::string& id);
  Result<std::shared_ptr<const Compiled>> CompileModule(std::span<const uint8_t> wasm);
  Result<std::shared_ptr<const Compiled>> LoadedModule(const store::FunctionRecord& f);
  // The function's remembered module when it is quick-tier code (engine.h), else null.
  std::shared_ptr<const Compiled> RememberedQuick(const std::string& id) const;
  // Queues CompileDeployed once per function id at a time.
  void StartCompile(const store::FunctionRecord& f);
  void CompileDeployed(const store::FunctionRecord& f);
  static std::string CompileLockName(const store::FunctionRecord& f);
  // The file that says a compile of `id` runs on this host: made when it starts, removed when it
  // ends in any way but a crash of this process. One found at start-up marks its compile failed.
  std::filesystem::path CompileMarker(const std::string& id) const;
  FunctionState* StateOf(const store::FunctionRecord& f, std::string_view name);
  // Admits the invocation and starts it (Invoke's half after the function is known); `done` as for
  // InvokeAsync.
  struct Call;
  // With `run_here` an in-process instance runs on the calling thread when a pool slot is free.
  void RunAsync(TenantState& t, FunctionState& f, std::shared_ptr<const Compiled> module, std::string entry,
                InvokeRequest request, InvokeCallback done, bool run_here = false);
  // For an instance in a worker process: what it is sent, its live view here, its result's names.
  static WorkerRun MakeWorkerRun(Call& call);
  WorkerLive LiveView(TenantState& t, FunctionState& f);
  InvokeResult CompleteWorkerResult(TenantState& t, FunctionState& f, InvokeResult r);
  static InvokeResult NotStarted(TenantState& t);  // shutting down
  // Its duration and deadline, folded into the totals.
  InvokeResult Finish(TenantState& t, FunctionState& f, InvokeResult r, std::chrono::milliseconds limit,
                      std::chrono::steady_clock::time_point started);
  // Runs the instance in this process (isolation "none"), on the calling thread.
  InvokeResult RunInstance(TenantState& t, FunctionState& f, const std::shared_ptr<const Compiled>& module,
                           const std::string& entry, const InvokeRequest& request,
                           std::chrono::steady_clock::time_point deadline);

  RuntimeConfig config_;
  std::shared_ptr<device::Device> device_;
  std::string device_note_;
  std::unique_ptr<store::LocalStore> store_;
  std::unique_ptr<wasm::Engine> engine_;
  std::map<std::string, std::unique_ptr<TenantState>, std::less<>> tenants_;

  mutable std::mutex mu_;  // functions_, loaded_, compiling_, live_, next_live_id_
  std::condition_variable compiled_cv_;
  std::map<std::string, std::unique_ptr<FunctionState>, std::less<>> functions_;  // by id ("" key: ad hoc)
  // Compiled modules by function id, at most config_.loaded_modules (least recently used dropped).
  struct Loaded {
    std::shared_ptr<const Compiled> module;
    uint64_t used = 0;  // use_clock_ at the last use
  };
  void RememberLoaded(const std::string& id, std::shared_ptr<const Compiled> module);  // mu_ held
  std::map<std::string, Loaded, std::less<>> loaded_;
  uint64_t use_clock_ = 0;
  std::set<std::string, std::less<>> compiling_;  // ids queued or compiling here
  std::map<uint64_t, Live*> live_;
  uint64_t next_live_id_ = 1;

  // Names (and ids) resolved to their ready version, kept while the store is this process's own
  // (a local store is locked by one process: every metadata write is this runtime's) and no write
  // happened since: an invocation then reads no store. A shared store resolves every time.
  struct Resolved {
    uint64_t generation = 0;  // metadata_writes_ when the store was read
    store::FunctionRecord rec;
  };
  void MetadataChanged() { metadata_writes_.fetch_add(1, std::memory_order_acq_rel); }
  std::atomic<uint64_t> metadata_writes_{0};
  std::mutex resolved_mu_;
  std::map<std::string, Resolved, std::less<>> resolved_;  // by tenant '\0' id_or_name
  static std::string ResolvedKey(std::string_view tenant, std::string_view id_or_name) {
    std::string key;
    key.reserve(tenant.size() + 1 + id_or_name.size());
    key.append(tenant).push_back('\0');
    return key.append(id_or_name);
  }

  std::atomic<bool> accepting_{true};
  std::atomic<uint64_t> crashed_compiles_{0};
  std::atomic<uint64_t> tier_upgrades_{0};
  std::atomic<bool> interrupting_{false};
  std::atomic<uint32_t> admitted_{0};
  std::mutex idle_mu_;
  std::condition_variable idle_cv_;

  std::unique_ptr<WorkerPool> compile_pool_;
  std::unique_ptr<WorkerPool> pool_;
  Isolation isolation_ = Isolation::kNone;
  std::unique_ptr<class TenantWorkers> workers_;  // isolation "process"
};

}  // namespace gpuwasm::runtime
