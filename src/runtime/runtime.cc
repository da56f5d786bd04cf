#include "runtime/runtime.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <future>

#include "common/compile_slots.h"
#include "device/select.h"
#include "host/guest_io.h"
#include "host/host_env.h"
#include "host/kernel_registry.h"
#include "runtime/instance_runner.h"
#include "runtime/tenant_worker.h"
#include "wasm/instance.h"

namespace gpuwasm::runtime {

using Clock = std::chrono::steady_clock;

// Lifetime counters and the running gauge of a tenant or function: relaxed atomics, so folding
// an invocation in and reading them never blocks.
struct Runtime::Counters {
  std::atomic<uint64_t> invocations[kInvocationStatusCount] = {};
  std::atomic<uint64_t> rejected{0}, deploys_refused{0};
  std::atomic<uint64_t> limit_refusals[kRefusedLimitCount] = {};

  // `s`, counted against `limit` when it is a refusal.
  Status Refusing(RefusedLimit limit, Status s) {
    if (!s.ok()) limit_refusals[static_cast<size_t>(limit)].fetch_add(1, std::memory_order_relaxed);
    return s;
  }
  std::atomic<uint64_t> duration_us{0};
  std::atomic<uint64_t> kernels_launched{0}, back_pressure_rejections{0}, yields{0}, gpu_time_ns{0};
  std::atomic<uint64_t> kernel_faults{0}, quota_refusals{0};
  std::atomic<uint32_t> running{0};

  void Fold(const InvokeResult& r) {
    invocations[static_cast<size_t>(r.status)].fetch_add(1, std::memory_order_relaxed);
    duration_us.fetch_add(static_cast<uint64_t>(r.duration.count()), std::memory_order_relaxed);
    kernels_launched.fetch_add(r.metrics.kernels_launched, std::memory_order_relaxed);
    back_pressure_rejections.fetch_add(r.metrics.back_pressure_rejections, std::memory_order_relaxed);
    yields.fetch_add(r.metrics.yield_count, std::memory_order_relaxed);
    kernel_faults.fetch_add(r.metrics.kernel_faults, std::memory_order_relaxed);
    quota_refusals.fetch_add(r.metrics.quota_refusals, std::memory_order_relaxed);
    gpu_time_ns.fetch_add(static_cast<uint64_t>(r.gpu_time.count()), std::memory_order_relaxed);
  }
  Totals Read() const {
    Totals t;
    for (size_t i = 0; i < kInvocationStatusCount; ++i)
      t.invocations[i] = invocations[i].load(std::memory_order_relaxed);
    t.rejected = rejected.load(std::memory_order_relaxed);
    t.deploys_refused = deploys_refused.load(std::memory_order_relaxed);
    for (size_t i = 0; i < kRefusedLimitCount; ++i) {
      t.limit_refusals[i] = limit_refusals[i].load(std::memory_order_relaxed);
    }
    t.duration_seconds = static_cast<double>(duration_us.load(std::memory_order_relaxed)) / 1e6;
    t.kernels_launched = kernels_launched.load(std::memory_order_relaxed);
    t.back_pressure_rejections = back_pressure_rejections.load(std::memory_order_relaxed);
    t.yields = yields.load(std::memory_order_relaxed);
    t.kernel_faults = kernel_faults.load(std::memory_order_relaxed);
    t.quota_refusals = quota_refusals.load(std::memory_order_relaxed);
    t.gpu_time_ns = gpu_time_ns.load(std::memory_order_relaxed);
    t.running = running.load(std::memory_order_relaxed);
    return t;
  }
};

struct Runtime::TenantState {
  TenantConfig config;
  Counters counters;
  std::atomic<uint32_t> admitted{0};     // running + queued, against concurrent_invocations
  std::unique_ptr<TenantDevice> device;  // the tenant's device context (in this process: isolation none)
};

struct Runtime::FunctionState {
  std::string tenant, id, name;
  int64_t version = 0;
  Counters counters;
};

struct Runtime::Live {
  uint64_t id = 0;
  TenantState* tenant = nullptr;
  FunctionState* function = nullptr;
  Clock::time_point started;
  // Where its live counters are: its environment here, or its slot in its worker's shared memory.
  const host::HostEnv* env = nullptr;
  wasm::Instance* instance = nullptr;
  std::atomic<const worker::LiveInstanceMetrics*> slot{nullptr};

  host::InstanceMetricsSnapshot metrics() const {
    if (env != nullptr) return env->metrics();
    const worker::LiveInstanceMetrics* s = slot.load(std::memory_order_acquire);
    return s != nullptr ? s->Read() : host::InstanceMetricsSnapshot{};
  }
  std::chrono::nanoseconds gpu_time() const {
    if (env != nullptr) return env->cuda ? env->cuda->gpu_time() : std::chrono::nanoseconds{0};
    const worker::LiveInstanceMetrics* s = slot.load(std::memory_order_acquire);
    return std::chrono::nanoseconds(s != nullptr ? s->gpu_time_ns.load(std::memory_order_relaxed) : 0);
  }
};

uint64_t Totals::invocations_total() const {
  uint64_t n = 0;
  for (uint64_t v : invocations) n += v;
  return n;
}

std::string_view RefusedLimitName(RefusedLimit l) {
  switch (l) {
    case RefusedLimit::kMaxModuleSize: return "max_module_size";
    case RefusedLimit::kMaxInputSize: return "max_input_size";
    case RefusedLimit::kArgsAndEnv: return "args_and_env";
  }
  return "unknown";
}

void to_json(nlohmann::json& j, const Totals& t) {
  nlohmann::json inv = nlohmann::json::object();
  for (size_t i = 0; i < kInvocationStatusCount; ++i) {
    inv[std::string(InvocationStatusName(static_cast<InvocationStatus>(i)))] = t.invocations[i];
  }
  nlohmann::json refusals = nlohmann::json::object();
  for (size_t i = 0; i < kRefusedLimitCount; ++i) {
    refusals[std::string(RefusedLimitName(static_cast<RefusedLimit>(i)))] = t.limit_refusals[i];
  }
  j = {{"invocations", inv},
       {"rejected", t.rejected},
       {"deploys_refused", t.deploys_refused},
       {"limit_refusals", refusals},
       {"duration_seconds", t.duration_seconds},
       {"kernels_launched", t.kernels_launched},
       {"back_pressure_rejections", t.back_pressure_rejections},
       {"yields", t.yields},
       {"kernel_faults", t.kernel_faults},
       {"quota_refusals", t.quota_refusals},
       {"gpu_time_seconds", static_cast<double>(t.gpu_time_ns) / 1e9},
       {"running", t.running},
       {"device_bytes_allocated", t.device_bytes_allocated},
       {"bytes_pinned", t.bytes_pinned}};
}

void to_json(nlohmann::json& j, const LiveInstance& i) {
  j = {{"id", i.id},
       {"tenant", i.tenant},
       {"function_id", i.function_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(i.function_id)},
       {"function", i.function_name},
       {"elapsed_ms", i.elapsed.count()},
       {"gpu_time_ms", static_cast<double>(i.gpu_time.count()) / 1e6},
       {"metrics", i.metrics}};
}

namespace {

bool ValidFunctionName(std::string_view s) {
  if (s.empty() || s.size() > 128 || s.rfind("fn_", 0) == 0) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
          c == '.')) {
      return false;
    }
  }
  return true;
}

std::string Bytes(uint64_t n) { return std::to_string(n) + " bytes"; }

Status CheckModuleSize(const TenantConfig& t, uint64_t size) {
  if (size <= t.max_module_size) return Status::Ok();
  return Status::ResourceExhausted("module of " + Bytes(size) + " exceeds tenant '" + t.name +
                                   "''s max_module_size of " + Bytes(t.max_module_size));
}

}  // namespace

Result<std::unique_ptr<Runtime>> Runtime::Create(RuntimeConfig config, RuntimeOptions options) {
  if (config.tenants.empty()) config.tenants = DefaultConfig().tenants;
  std::unique_ptr<Runtime> rt(new Runtime(std::move(config)));
  const RuntimeConfig& c = rt->config_;
  rt->isolation_ = c.isolation.value_or(Isolation::kNone);
  if (rt->isolation_ == Isolation::kProcess && options.worker_program.empty()) {
    return Status::InvalidArgument("isolation \"process\" needs a gpuwasm executable for the tenant workers");
  }
  if (options.device) {
    rt->device_ = std::move(options.device);
  } else {
    // With worker processes this one only says which device the workers will open (no context
    // is ever made here).
    GPUWASM_ASSIGN_OR_RETURN(rt->device_, device::OpenDevice(c.device, &rt->device_note_));
  }
  if (options.use_store) {
    std::filesystem::path dir = store::StoreDir(c.store_dir);
    GPUWASM_ASSIGN_OR_RETURN(rt->store_, store::LocalStore::Open(store::StoreOptions{dir, c.database}));
    for (const TenantConfig& t : c.tenants) GPUWASM_RETURN_IF_ERROR(rt->store_->metadata().AddTenant(t.name));
  }
  wasm::EngineOptions eo = std::move(options.engine);
  if (eo.cache_dir.empty()) eo.cache_dir = rt->store_ ? rt->store_->artifacts_dir() : wasm::DefaultCacheDir();
  if (eo.imports.empty()) eo.imports = host::GuestImports();
  // A supervisor never translates a module itself.
  if (rt->isolation_ == Isolation::kProcess && eo.translator.empty()) eo.translator = options.worker_program;
  WorkerSettings ws;
  ws.program = options.worker_program;
  ws.device = c.device;
  ws.cache_dir = eo.cache_dir;
  ws.runaway_grace = c.runaway_grace;
  ws.idle_timeout = c.worker_idle_timeout;
  ws.max_workers = c.max_workers;
  ws.heartbeat_timeout = c.worker_heartbeat_timeout;
  // One bound on the compilers of the node: this process's (deploys) and its workers' (native
  // code of kernels), shared through lock files next to the artifacts (compile_slots.h).
  uint32_t compilers =
      c.compile_workers != 0 ? c.compile_workers : std::max(1u, std::thread::hardware_concurrency() / 2);
  ws.compile_slots_dir = eo.cache_dir / "compile-slots";
  ws.compile_slots = compilers;
  GPUWASM_RETURN_IF_ERROR(SetCompileSlots(ws.compile_slots_dir, compilers));
  rt->engine_ = std::make_unique<wasm::Engine>(std::move(eo));
  for (const TenantConfig& t : c.tenants) {
    auto state = std::make_unique<TenantState>();
    state->config = t;
    state->device = std::make_unique<TenantDevice>(rt->device_, t.device_bytes, t.instrument_ptx);
    rt->tenants_.emplace(t.name, std::move(state));
  }
  if (rt->isolation_ == Isolation::kProcess) rt->workers_ = std::make_unique<TenantWorkers>(std::move(ws));
  uint32_t workers = c.workers != 0 ? c.workers : DefaultWorkers();
  // With several tenants, none may hold every worker: one stays reachable for the others.
  uint32_t per_tenant = c.tenants.size() > 1 ? std::max(1u, workers - 1) : workers;
  rt->pool_ = std::make_unique<WorkerPool>(workers, per_tenant);
  rt->compile_pool_ = std::make_unique<WorkerPool>(compilers, compilers);
  if (rt->store_) {
    // Compiles a stop left queued start again; one that was running when this host's gpuwasm
    // died is failed, never retried: a module that crashes the compile would crash every start.
    for (const std::string& id : rt->store_->recovery().interrupted_compiles) {
      auto rec = rt->store_->metadata().GetFunction(id);
      if (!rec.ok()) continue;
      std::error_code ec;
      std::filesystem::path marker = rt->CompileMarker(id);
      if (std::filesystem::exists(marker, ec)) {
        rt->MetadataChanged();
        Status s = rt->store_->metadata().SetStatus(
            id, store::DeployStatus::kFailed,
            "its compile was running when gpuwasm on this host ended unexpectedly (a crash or a kill); it is "
            "not tried again: deploy the module again to retry");
        if (s.ok()) std::filesystem::remove(marker, ec);
        rt->crashed_compiles_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      rt->StartCompile(*rec);
    }
  }
  return rt;
}

Runtime::Runtime(RuntimeConfig config) : config_(std::move(config)) {}

Runtime::~Runtime() { Shutdown(std::chrono::milliseconds(0)); }

Result<Runtime::TenantState*> Runtime::Tenant(std::string_view name) const {
  auto it = tenants_.find(name);
  if (it == tenants_.end()) return Status::NotFound("no tenant named '" + std::string(name) + "'");
  return it->second.get();
}

Result<store::FunctionRecord> Runtime::Deploy(std::string_view tenant, std::string_view name,
                                              std::span<const uint8_t> wasm, std::string_view entry) {
  if (!store_) return Status::Unsupported("this runtime has no function store: deploying needs one");
  if (!accepting_) return Status::Unavailable("gpuwasm is shutting down");
  GPUWASM_ASSIGN_OR_RETURN(TenantState * t, Tenant(tenant));
  if (!ValidFunctionName(name)) {
    return Status::InvalidArgument(
        "function name '" + std::string(name) +
        "' must be 1-128 characters of A-Z, a-z, 0-9, '-', '_' and '.', not starting with fn_");
  }
  if (entry.size() > 256) return Status::InvalidArgument("entry point name is longer than 256 bytes");
  GPUWASM_RETURN_IF_ERROR(t->counters.Refusing(RefusedLimit::kMaxModuleSize, CheckModuleSize(t->config, wasm.size())));
  // What is not even a module is refused at once, and nothing of it is stored.
  static constexpr uint8_t kMagic[8] = {0, 'a', 's', 'm', 1, 0, 0, 0};
  if (wasm.size() < 8 || !std::equal(kMagic, kMagic + 8, wasm.begin())) {
    return Status::InvalidArgument("not a wasm module: it does not start with \\0asm and version 1");
  }
  // What the tenant keeps in the store, counted under a lock every node of the store takes, so
  // concurrent deploys cannot pass the caps together.
  GPUWASM_ASSIGN_OR_RETURN(std::unique_ptr<store::StoreLock> quota,
                           store_->metadata().Lock("deploy-quota:" + std::string(tenant)));
  GPUWASM_ASSIGN_OR_RETURN(std::vector<store::FunctionRecord> kept, store_->metadata().ListFunctions(tenant));
  uint64_t kept_bytes = 0;
  for (const store::FunctionRecord& f : kept) kept_bytes += f.size;
  if (kept.size() >= t->config.max_versions || kept_bytes + wasm.size() > t->config.max_stored_bytes) {
    t->counters.deploys_refused.fetch_add(1, std::memory_order_relaxed);
    if (kept.size() >= t->config.max_versions) {
      return Status::PermissionDenied("tenant '" + std::string(tenant) + "' keeps " + std::to_string(kept.size()) +
                                      " deployed versions, its limit (max_versions " +
                                      std::to_string(t->config.max_versions) + "): delete old versions first");
    }
    return Status::PermissionDenied("tenant '" + std::string(tenant) + "' keeps " + std::to_string(kept_bytes) +
                                    " bytes of modules; this one (" + std::to_string(wasm.size()) +
                                    " bytes) would pass its limit (max_stored_bytes " +
                                    std::to_string(t->config.max_stored_bytes) + "): delete old versions first");
  }
  store::NewFunction nf;
  nf.tenant = std::string(tenant);
  nf.name = std::string(name);
  nf.entry = std::string(entry);
  Result<store::FunctionRecord> added = store_->AddFunction(std::move(nf), wasm);
  MetadataChanged();
  GPUWASM_ASSIGN_OR_RETURN(store::FunctionRecord rec, std::move(added));
  StartCompile(rec);
  return rec;
}

void Runtime::StartCompile(const store::FunctionRecord& f) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!compiling_.insert(f.id).second) return;  // already queued or running here
  }
  // Round-robin between tenants: one tenant's slow deploys never hold another's back.
  bool queued = compile_pool_->Submit(f.tenant, [this, f] {
    CompileDeployed(f);
    std::lock_guard<std::mutex> lock(mu_);
    compiling_.erase(f.id);
  });
  if (!queued) {
    std::lock_guard<std::mutex> lock(mu_);
    compiling_.erase(f.id);
  }
}

std::string Runtime::CompileLockName(const store::FunctionRecord& f) { return "compile:" + f.sha256; }

std::filesystem::path Runtime::CompileMarker(const std::string& id) const {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "localhost");
  return engine_->options().cache_dir / "compiling" / host / id;
}

void Runtime::CompileDeployed(const store::FunctionRecord& f) {
  auto wake_waiters = [&] {
    { std::lock_guard<std::mutex> lock(mu_); }  // a waiter has checked the status or is waiting
    compiled_cv_.notify_all();
  };
  auto finish = [&](store::DeployStatus status, const std::string& error) {
    Status s = store_->metadata().SetStatus(f.id, status, error);
    MetadataChanged();
    if (!s.ok() && s.code() != StatusCode::kNotFound) {
      std::fprintf(stderr, "gpuwasm: cannot record the deploy status of %s: %s\n", f.id.c_str(), s.ToString().c_str());
    }
    wake_waiters();
  };
  // Once among the nodes sharing the store: a node compiling the same bytes holds this lock,
  // and when it is released the status says whether there is anything left to do.
  Result<std::unique_ptr<store::StoreLock>> held = store_->metadata().Lock(CompileLockName(f));
  if (!held.ok()) {
    // The record stays "compiling": the next invocation of it, or the next start, tries again.
    std::fprintf(stderr, "gpuwasm: cannot compile %s now: %s\n", f.id.c_str(), held.status().ToString().c_str());
    return;
  }
  Result<store::FunctionRecord> now = store_->metadata().GetFunction(f.id);
  if (!now.ok() || now->status != store::DeployStatus::kCompiling) {
    wake_waiters();
    return;  // deleted, or another node finished it: its artifact is loaded on first use
  }
  Result<std::string> bytes = store_->blobs().Get(f.sha256);
  if (!bytes.ok()) return finish(store::DeployStatus::kFailed, bytes.status().ToString());
  // Made before the compile, removed whatever its end (not by a crash).
  struct Marker {
    std::filesystem::path path;
    ~Marker() {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
  } marker{CompileMarker(f.id)};
  {
    std::error_code ec;
    std::filesystem::create_directories(marker.path.parent_path(), ec);
    std::ofstream(marker.path) << f.tenant << "\n";
  }
  auto module = CompileModule(std::span(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size()));
  if (!module.ok() && module.status().code() == StatusCode::kCancelled) {
    wake_waiters();
    return;  // shutting down: still "compiling", compiled at the next start
  }
  if (!module.ok()) return finish(store::DeployStatus::kFailed, module.status().ToString());
  std::string entry = f.entry;
  const wasm::Artifact& a = (*module)->artifact;
  if (entry.empty()) {
    if (a.FindExport("_start") == nullptr && a.FindExport("run") == nullptr) {
      return finish(store::DeployStatus::kFailed,
                    "the module exports neither _start nor run: deploy it with an entry point");
    }
  } else if (a.FindExport(entry) == nullptr) {
    return finish(store::DeployStatus::kFailed,
                  "the module has no export named '" + entry + "'; " + wasm::DescribeEntryPoints(a.exports));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    RememberLoaded(f.id, *module);
  }
  finish(store::DeployStatus::kReady, "");
}

Result<store::FunctionRecord> Runtime::WaitReady(std::string_view tenant, std::string_view id,
                                                 std::chrono::milliseconds timeout) {
  auto until = Clock::now() + timeout;
  for (;;) {
    Result<store::FunctionRecord> rec = GetFunction(tenant, id);
    if (!rec.ok() || rec->status != store::DeployStatus::kCompiling) return rec;
    std::unique_lock<std::mutex> lock(mu_);
    auto now = Clock::now();
    if (now >= until) return Status::DeadlineExceeded("function " + std::string(id) + " is still compiling");
    // A compile here notifies; one on another node (shared store) is seen by asking again, and
    // so is a notification that came between the question and this wait.
    compiled_cv_.wait_until(lock, std::min(until, now + std::chrono::milliseconds(50)));
  }
}

Result<store::FunctionRecord> Runtime::GetFunction(std::string_view tenant, std::string_view id_or_name) {
  if (!store_) return Status::Unsupported("this runtime has no function store");
  GPUWASM_RETURN_IF_ERROR(Tenant(tenant).status());
  if (id_or_name.rfind("fn_", 0) == 0) {
    Result<store::FunctionRecord> rec = store_->metadata().GetFunction(id_or_name);
    if (!rec.ok() || rec->tenant != tenant) {
      if (rec.ok() || rec.status().code() == StatusCode::kNotFound) {
        return Status::NotFound("no function with id " + std::string(id_or_name));  // another tenant's looks absent
      }
    }
    return rec;
  }
  GPUWASM_ASSIGN_OR_RETURN(std::vector<store::FunctionRecord> versions,
                           store_->metadata().Versions(tenant, id_or_name));
  if (versions.empty()) return Status::NotFound("no function named '" + std::string(id_or_name) + "'");
  return versions.front();
}

Result<std::vector<store::FunctionRecord>> Runtime::ListFunctions(std::optional<std::string_view> tenant) {
  if (!store_) return Status::Unsupported("this runtime has no function store");
  if (tenant) GPUWASM_RETURN_IF_ERROR(Tenant(*tenant).status());
  return store_->metadata().ListFunctions(tenant);
}

Status Runtime::CheckStore() {
  if (!store_) return Status::Ok();
  return store_->metadata().ListTenants().status();
}

Status Runtime::DeleteFunction(std::string_view tenant, std::string_view id) {
  if (id.rfind("fn_", 0) != 0) return Status::InvalidArgument("delete takes a function id (fn_...), not a name");
  GPUWASM_ASSIGN_OR_RETURN(store::FunctionRecord rec, GetFunction(tenant, id));
  Result<bool> deleted_or = store_->DeleteFunction(rec.id);
  MetadataChanged();
  GPUWASM_ASSIGN_OR_RETURN(bool deleted, std::move(deleted_or));
  if (!deleted) return Status::NotFound("no function with id " + std::string(id));
  std::lock_guard<std::mutex> lock(mu_);
  loaded_.erase(rec.id);  // running invocations hold their own reference
  return Status::Ok();
}

Result<store::FunctionRecord> Runtime::ResolveReady(TenantState& t, std::string_view id_or_name) {
  const bool cached = !store_->shared();
  const uint64_t generation = metadata_writes_.load(std::memory_order_acquire);
  if (std::optional<store::FunctionRecord> hit = ResolveCached(t, id_or_name)) return *std::move(hit);
  Result<store::FunctionRecord> rec = ResolveInStore(t, id_or_name);
  if (cached && rec.ok()) {
    std::lock_guard<std::mutex> lock(resolved_mu_);
    if (resolved_.size() >= 4096) resolved_.clear();  // names that are not functions are never kept
    resolved_[ResolvedKey(t.config.name, id_or_name)] = {generation, *rec};
  }
  return rec;
}

std::optional<store::FunctionRecord> Runtime::ResolveCached(TenantState& t, std::string_view id_or_name) {
  if (store_->shared()) return std::nullopt;
  const uint64_t generation = metadata_writes_.load(std::memory_order_acquire);
  std::lock_guard<std::mutex> lock(resolved_mu_);
  auto it = resolved_.find(ResolvedKey(t.config.name, id_or_name));
  if (it == resolved_.end() || it->second.generation != generation) return std::nullopt;
  return it->second.rec;
}

std::shared_ptr<const Runtime::Compiled> Runtime::LoadedNow(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = loaded_.find(id);
  if (it == loaded_.end()) return nullptr;
  it->second.used = ++use_clock_;
  if (it->second.module->artifact.quick) return nullptr;  // quick code may be upgraded: LoadedModule
  return it->second.module;
}

Result<store::FunctionRecord> Runtime::ResolveInStore(TenantState& t, std::string_view id_or_name) {
  auto unusable = [this](const store::FunctionRecord& r) -> Status {
    std::string what = "function " + r.name + " version " + std::to_string(r.version) + " (" + r.id + ")";
    if (r.status == store::DeployStatus::kCompiling) {
      // On a shared store the node that deployed it may have died while compiling: take the
      // compile over (it waits on that node's lock while that node is alive).
      if (store_->shared()) StartCompile(r);
      return Status::Unavailable(what + " is still compiling");
    }
    return Status::InvalidArgument(what + " failed to compile: " + r.error);
  };
  if (id_or_name.rfind("fn_", 0) == 0) {
    GPUWASM_ASSIGN_OR_RETURN(store::FunctionRecord rec, GetFunction(t.config.name, id_or_name));
    if (rec.status != store::DeployStatus::kReady) return unusable(rec);
    return rec;
  }
  GPUWASM_ASSIGN_OR_RETURN(std::vector<store::FunctionRecord> versions,
                           store_->metadata().Versions(t.config.name, id_or_name));
  if (versions.empty()) return Status::NotFound("no function named '" + std::string(id_or_name) + "'");
  for (const store::FunctionRecord& r : versions) {
    if (r.status == store::DeployStatus::kReady) return r;
  }
  return unusable(versions.front());
}

Result<std::shared_ptr<const Runtime::Compiled>> Runtime::CompileModule(std::span<const uint8_t> wasm) {
  auto c = std::make_shared<Compiled>();
  GPUWASM_ASSIGN_OR_RETURN(c->artifact, engine_->Build(wasm));
  // Loaded here only when instances run here; a supervisor never maps a module.
  if (isolation_ == Isolation::kNone) {
    GPUWASM_ASSIGN_OR_RETURN(c->module, engine_->Compile(wasm));
  }
  return std::shared_ptr<const Compiled>(std::move(c));
}

Result<std::shared_ptr<const Runtime::Compiled>> Runtime::LoadedModule(const store::FunctionRecord& f) {
  if (std::shared_ptr<const Compiled> m = LoadedNow(f.id)) return m;
  if (std::shared_ptr<const Compiled> quick = RememberedQuick(f.id)) {
    // A large module's quick-tier code serves until its optimised artifact is built.
    std::optional<wasm::Artifact> optimized = engine_->Optimized(quick->artifact);
    if (!optimized) return quick;
    auto c = std::make_shared<Compiled>();
    c->artifact = std::move(*optimized);
    if (isolation_ == Isolation::kNone) {
      Result<std::shared_ptr<const wasm::Module>> m = engine_->Load(c->artifact);
      if (!m.ok()) return quick;  // tried again at the next invocation
      c->module = std::move(*m);
    }
    std::lock_guard<std::mutex> lock(mu_);
    tier_upgrades_.fetch_add(1, std::memory_order_relaxed);
    RememberLoaded(f.id, c);
    return std::shared_ptr<const Compiled>(std::move(c));
  }
  // Deployed before this process started, or on another node: the artifact is normally in the
  // engine's cache (shared by the nodes when the store directory is). Compiled once at a time
  // among the nodes sharing the store.
  GPUWASM_ASSIGN_OR_RETURN(std::unique_ptr<store::StoreLock> held, store_->metadata().Lock(CompileLockName(f)));
  GPUWASM_ASSIGN_OR_RETURN(std::string bytes, store_->blobs().Get(f.sha256));
  GPUWASM_ASSIGN_OR_RETURN(std::shared_ptr<const Compiled> m,
                           CompileModule(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())));
  std::lock_guard<std::mutex> lock(mu_);
  RememberLoaded(f.id, m);
  return m;
}

std::shared_ptr<const Runtime::Compiled> Runtime::RememberedQuick(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = loaded_.find(id);
  if (it == loaded_.end() || !it->second.module->artifact.quick) return nullptr;
  return it->second.module;
}

void Runtime::RememberLoaded(const std::string& id, std::shared_ptr<const Compiled> module) {
  loaded_[id] = Loaded{std::move(module), ++use_clock_};
  // Over the cap: drop the least recently used (a linear scan; the cap is hundreds). Running
  // invocations hold their own reference; the next invocation loads it from the artifact cache.
  while (loaded_.size() > std::max<uint32_t>(1, config_.loaded_modules)) {
    auto oldest = loaded_.begin();
    for (auto it = loaded_.begin(); it != loaded_.end(); ++it) {
      if (it->second.used < oldest->second.used) oldest = it;
    }
    loaded_.erase(oldest);
  }
}

size_t Runtime::loaded_module_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return loaded_.size();
}

Runtime::FunctionState* Runtime::StateOf(const store::FunctionRecord& f, std::string_view name) {
  std::string key = f.id.empty() ? "module:" + f.tenant + ":" + std::string(name) : f.id;
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = functions_[key];
  if (!slot) {
    slot = std::make_unique<FunctionState>();
    slot->tenant = f.tenant;
    slot->id = f.id;
    slot->name = std::string(name);
    slot->version = f.version;
  }
  return slot.get();
}

namespace {

// Waits for an invocation started with a callback (the synchronous entry points).
class Waiter {
 public:
  Runtime::InvokeCallback callback() {
    return [this](Result<InvokeResult> r) { result_.set_value(std::move(r)); };
  }
  Result<InvokeResult> Wait() { return done_.get(); }

 private:
  std::promise<Result<InvokeResult>> result_;
  std::future<Result<InvokeResult>> done_ = result_.get_future();
};

}  // namespace

Result<InvokeResult> Runtime::Invoke(std::string_view tenant, std::string_view id_or_name, InvokeRequest request) {
  Waiter w;
  InvokeAsync(tenant, id_or_name, std::move(request), w.callback());
  return w.Wait();
}

bool Runtime::InvokeAsync(std::string_view tenant, std::string_view id_or_name, InvokeRequest request,
                          InvokeCallback done, Caller caller) {
  auto fail = [&](Status s) {
    done(std::move(s));
    return true;
  };
  if (!accepting_) return fail(Status::Unavailable("gpuwasm is shutting down"));
  if (!store_) return fail(Status::Unsupported("this runtime has no function store"));
  Result<TenantState*> t = Tenant(tenant);
  if (!t.ok()) return fail(t.status());
  std::shared_ptr<const Compiled> module;
  store::FunctionRecord rec;
  if (caller != Caller::kMayBlock) {
    // Only what memory answers: a resolution and a module this process already holds.
    std::optional<store::FunctionRecord> cached = ResolveCached(**t, id_or_name);
    if (!cached) return false;
    rec = std::move(*cached);
    module = LoadedNow(rec.id);
    if (!module) return false;
  } else {
    Result<store::FunctionRecord> resolved = ResolveReady(**t, id_or_name);
    if (!resolved.ok()) return fail(resolved.status());
    rec = std::move(*resolved);
    Result<std::shared_ptr<const Compiled>> loaded = LoadedModule(rec);
    if (!loaded.ok()) return fail(loaded.status());
    module = std::move(*loaded);
  }
  std::string entry = request.entry.empty() ? rec.entry : request.entry;
  RunAsync(**t, *StateOf(rec, rec.name), std::move(module), std::move(entry), std::move(request), std::move(done),
           caller == Caller::kEventLoop);
  return true;
}

Result<InvokeResult> Runtime::InvokeModule(std::string_view tenant, std::span<const uint8_t> wasm,
                                           std::string_view name, InvokeRequest request) {
  if (!accepting_) return Status::Unavailable("gpuwasm is shutting down");
  GPUWASM_ASSIGN_OR_RETURN(TenantState * t, Tenant(tenant));
  GPUWASM_RETURN_IF_ERROR(t->counters.Refusing(RefusedLimit::kMaxModuleSize, CheckModuleSize(t->config, wasm.size())));
  GPUWASM_ASSIGN_OR_RETURN(std::shared_ptr<const Compiled> module, CompileModule(wasm));
  store::FunctionRecord rec;
  rec.tenant = std::string(tenant);
  std::string entry = request.entry;
  Waiter w;
  RunAsync(*t, *StateOf(rec, name), std::move(module), std::move(entry), std::move(request), w.callback());
  return w.Wait();
}

// One admitted invocation: counted as running (and in the tenant's concurrent_invocations) from
// admission until its result is handed over, so a caller that has it can start the next one; and
// in admitted_ until the callback has returned, so Shutdown's wait for none admitted also waits
// for every callback.
struct Runtime::Call {
  Runtime* rt;
  TenantState& t;
  FunctionState& f;
  std::shared_ptr<const Compiled> module;
  std::string entry;
  InvokeRequest request;
  InvokeCallback done;
  std::chrono::milliseconds limit{0};
  Clock::time_point started, deadline;
  bool running = true;

  Call(Runtime* r, TenantState& ts, FunctionState& fs) : rt(r), t(ts), f(fs) {
    rt->admitted_.fetch_add(1);
    t.counters.running.fetch_add(1, std::memory_order_relaxed);
    f.counters.running.fetch_add(1, std::memory_order_relaxed);
  }
  ~Call() {
    Release();
    {
      std::lock_guard<std::mutex> lock(rt->idle_mu_);
      rt->admitted_.fetch_sub(1);
    }
    rt->idle_cv_.notify_all();
  }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;
  void Release() {
    if (!running) return;
    running = false;
    f.counters.running.fetch_sub(1, std::memory_order_relaxed);
    t.counters.running.fetch_sub(1, std::memory_order_relaxed);
    t.admitted.fetch_sub(1);
  }
  void Answer(Result<InvokeResult> r) {
    Release();
    done(std::move(r));
  }
  void Finish(InvokeResult r) { Answer(rt->Finish(t, f, std::move(r), limit, started)); }
};

void Runtime::RunAsync(TenantState& t, FunctionState& f, std::shared_ptr<const Compiled> module, std::string entry,
                       InvokeRequest request, InvokeCallback done, bool run_here) {
  if (request.input.size() > t.config.max_input_size) {
    return done(t.counters.Refusing(
        RefusedLimit::kMaxInputSize,
        Status::ResourceExhausted("input of " + Bytes(request.input.size()) + " exceeds tenant '" + t.config.name +
                                  "''s max_input_size of " + Bytes(t.config.max_input_size))));
  }
  if (request.deadline && request.deadline->count() <= 0) {
    return done(Status::InvalidArgument("the deadline must be longer than zero"));
  }
  if (Status s = t.counters.Refusing(RefusedLimit::kArgsAndEnv, CheckArgsAndEnv(request.args, request.env)); !s.ok()) {
    return done(std::move(s));
  }
  auto started = Clock::now();
  // Admission: running + queued invocations of the tenant stay within its limit.
  if (t.admitted.fetch_add(1) >= t.config.concurrent_invocations) {
    t.admitted.fetch_sub(1);
    t.counters.rejected.fetch_add(1, std::memory_order_relaxed);
    f.counters.rejected.fetch_add(1, std::memory_order_relaxed);
    return done(Status::Unavailable("tenant '" + t.config.name +
                                    "' is overloaded: " + std::to_string(t.config.concurrent_invocations) +
                                    " invocations are running or queued, its concurrent_invocations limit"));
  }
  auto call = std::make_shared<Call>(this, t, f);
  call->limit = std::min(request.deadline.value_or(config_.default_deadline), t.config.max_deadline);
  call->started = started;
  call->deadline = started + call->limit;
  if (entry.empty()) entry = module->artifact.FindExport("_start") != nullptr ? "_start" : "run";
  call->module = std::move(module);
  call->entry = std::move(entry);
  call->request = std::move(request);
  call->done = std::move(done);

  const std::string& key = t.config.name;
  if (isolation_ == Isolation::kProcess) {
    // In a worker process: no thread of this one waits for the instance, the worker's reader
    // finishes the call. A pool slot is held meanwhile (the node's bound on running invocations,
    // shared fairly between tenants). When none is free the call queues, and the thread whose
    // invocation frees one starts it; a pool thread starts what may block (a worker that is not
    // running, a large input).
    constexpr size_t kSentInline = 64 << 10;
    WorkerPool::Starter start = [this, call](bool may_block) {
      if (!may_block && call->request.input.size() > kSentInline) return false;
      auto finish = [this, call](InvokeResult r) {
        pool_->Leave(call->t.config.name);
        call->Finish(CompleteWorkerResult(call->t, call->f, std::move(r)));
      };
      if (interrupting_) {
        finish(NotStarted(call->t));
        return true;
      }
      return workers_->Start(call->t.config, MakeWorkerRun(*call), LiveView(call->t, call->f), std::move(finish),
                             /*may_start=*/may_block);
    };
    if (pool_->TryEnter(key)) {
      if (start(false)) return;
      pool_->Leave(key);
    }
    if (!pool_->SubmitStarter(key, std::move(start))) call->Answer(Status::Unavailable("gpuwasm is shutting down"));
    return;
  }
  auto run = [this, call] {
    call->Finish(RunInstance(call->t, call->f, call->module, call->entry, call->request, call->deadline));
  };
  if (run_here && pool_->TryEnter(key)) {
    // On the caller's thread, in a slot of the pool as a pool thread would run it: two wake-ups
    // fewer (the pool thread's, and the caller's for the answer), a third of a trivial
    // invocation's cost over HTTP (ADR 0026).
    struct Slot {
      WorkerPool& pool;
      const std::string& key;
      ~Slot() { pool.Leave(key); }
    } slot{*pool_, key};
    return run();
  }
  bool queued = pool_->Submit(key, std::move(run));
  if (!queued) call->Answer(Status::Unavailable("gpuwasm is shutting down"));
}

InvokeResult Runtime::NotStarted(TenantState& t) {
  InvokeResult r;
  r.tenant = t.config.name;
  r.status = InvocationStatus::kError;
  r.exit_status = 70;
  r.error = "gpuwasm is shutting down: the invocation was not started";
  return r;
}

InvokeResult Runtime::Finish(TenantState& t, FunctionState& f, InvokeResult r, std::chrono::milliseconds limit,
                             Clock::time_point started) {
  r.deadline = limit;
  r.duration = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started);
  t.counters.Fold(r);
  f.counters.Fold(r);
  return r;
}

// The live view of an instance running in this process.
class Runtime::LiveObserver : public InstanceObserver {
 public:
  LiveObserver(Runtime& rt, Live& live) : rt_(rt), live_(live) {}
  void Started(const host::HostEnv& env, wasm::Instance& instance) override {
    std::lock_guard<std::mutex> lock(rt_.mu_);
    live_.env = &env;
    live_.instance = &instance;
    live_.started = Clock::now();
    live_.id = rt_.next_live_id_++;
    rt_.live_[live_.id] = &live_;
  }
  void Finished() override {
    std::lock_guard<std::mutex> lock(rt_.mu_);
    rt_.live_.erase(live_.id);
  }

 private:
  Runtime& rt_;
  Live& live_;
};

InvokeResult Runtime::RunInstance(TenantState& t, FunctionState& f, const std::shared_ptr<const Compiled>& module,
                                  const std::string& entry, const InvokeRequest& request, Clock::time_point deadline) {
  Live live;
  live.tenant = &t;
  live.function = &f;
  InstanceSpec spec;
  spec.tenant = &t.config;
  spec.function_id = f.id;
  spec.function_name = f.name;
  spec.version = f.version;
  spec.module = module->module;
  spec.entry = entry;
  spec.input = request.input;
  spec.args = request.args;
  spec.env = request.env;
  spec.deadline = deadline;
  spec.live_output = request.live_output;
  LiveObserver observer(*this, live);
  return runtime::RunInstance(*t.device, spec, interrupting_, &observer);
}

WorkerRun Runtime::MakeWorkerRun(Call& call) {
  WorkerRun run;
  run.key = call.module->artifact.key;
  run.sha256 = call.module->artifact.sha256;
  run.function_id = call.f.id;
  run.function_name = call.f.name;
  run.version = call.f.version;
  run.entry = call.entry;
  run.input = call.request.input;  // copies: a pool thread runs the call when this run is not sent
  run.args = call.request.args;
  run.env = call.request.env;
  run.deadline = call.deadline;
  return run;
}

WorkerLive Runtime::LiveView(TenantState& t, FunctionState& f) {
  auto live = std::make_shared<Live>();
  live->tenant = &t;
  live->function = &f;
  return [this, live](const worker::LiveInstanceMetrics* slot) {
    std::lock_guard<std::mutex> lock(mu_);
    if (slot != nullptr) {
      live->slot.store(slot, std::memory_order_release);
      live->started = Clock::now();
      live->id = next_live_id_++;
      live_[live->id] = live.get();
    } else {
      live_.erase(live->id);
      live->slot.store(nullptr, std::memory_order_release);
    }
  };
}

InvokeResult Runtime::CompleteWorkerResult(TenantState& t, FunctionState& f, InvokeResult r) {
  r.tenant = t.config.name;
  r.function_id = f.id;
  r.function_name = f.name;
  r.version = f.version;
  if (r.device.empty()) r.device = device_->info().name;
  return r;
}

std::vector<LiveInstance> Runtime::Instances(std::optional<std::string_view> tenant) const {
  std::vector<LiveInstance> out;
  auto now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, l] : live_) {
    if (tenant && l->tenant->config.name != *tenant) continue;
    LiveInstance i;
    i.id = id;
    i.tenant = l->tenant->config.name;
    i.function_id = l->function->id;
    i.function_name = l->function->name;
    i.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(now - l->started);
    i.metrics = l->metrics();
    i.gpu_time = l->gpu_time();
    out.push_back(std::move(i));
  }
  return out;
}

void Runtime::CountLimitRefusal(std::string_view tenant, RefusedLimit limit) {
  Result<TenantState*> t = Tenant(tenant);
  if (t.ok()) (void)(*t)->counters.Refusing(limit, Status::ResourceExhausted("refused"));
}

RuntimeStats Runtime::Stats() const {
  RuntimeStats s;
  s.module_compiles = engine_->compiles();
  s.module_cache_loads = engine_->cache_loads();
  s.module_quick_compiles = engine_->quick_compiles();
  s.module_tier_upgrades = tier_upgrades_.load(std::memory_order_relaxed);
  s.compiles_crashed = crashed_compiles_.load(std::memory_order_relaxed);
  if (workers_) {
    for (const TenantWorkers::Info& w : workers_->Workers()) {
      s.workers.push_back({w.tenant, static_cast<int>(w.pid), w.running, w.resident_bytes, w.age});
    }
    TenantWorkers::Counters c = workers_->counters();
    s.workers_started = c.started;
    s.workers_lost = c.lost;
    s.workers_idle_stopped = c.idle_stopped;
  }
  std::map<const void*, std::pair<uint64_t, uint64_t>> gauges;  // state -> (device bytes, pinned)
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, l] : live_) {
    host::InstanceMetricsSnapshot m = l->metrics();
    for (const void* key : {static_cast<const void*>(l->tenant), static_cast<const void*>(l->function)}) {
      gauges[key].first += m.device_bytes_allocated;
      gauges[key].second += m.bytes_pinned;
    }
  }
  for (const auto& [name, t] : tenants_) {
    TenantStats ts;
    ts.tenant = name;
    ts.totals = t->counters.Read();
    ts.totals.device_bytes_allocated = gauges[t.get()].first;
    ts.totals.bytes_pinned = gauges[t.get()].second;
    TenantDevice::Usage u = workers_ ? workers_->ContextUsage(name) : t->device->usage();
    ts.context_device_bytes = u.bytes;
    ts.context_reserved_bytes = u.reserved;
    ts.context_modules = u.modules;
    ts.context_resets = u.resets;
    s.tenants.push_back(std::move(ts));
  }
  for (const auto& [key, f] : functions_) {
    FunctionStats fs;
    fs.tenant = f->tenant;
    fs.function_id = f->id;
    fs.function_name = f->name;
    fs.version = f->version;
    fs.totals = f->counters.Read();
    fs.totals.device_bytes_allocated = gauges[f.get()].first;
    fs.totals.bytes_pinned = gauges[f.get()].second;
    s.functions.push_back(std::move(fs));
  }
  return s;
}

void Runtime::Shutdown(std::chrono::milliseconds grace) {
  accepting_ = false;
  // Deploys still compiling stay "compiling" in the store and are compiled at the next start:
  // queued ones are dropped, running ones cancelled (their compilers killed), now.
  if (compile_pool_) compile_pool_->DropQueued();
  if (engine_) engine_->CancelCompiles();
  {
    std::unique_lock<std::mutex> lock(idle_mu_);
    idle_cv_.wait_for(lock, grace, [&] { return admitted_.load() == 0; });
  }
  if (admitted_.load() != 0) {
    interrupting_ = true;
    if (workers_) workers_->InterruptAll();
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, l] : live_) {
      if (l->instance != nullptr) l->instance->Interrupt();
    }
  }
  // Interrupted guests stop at their next function entry or loop header; one blocked in a
  // device wait stops at its deadline at the latest.
  {
    std::unique_lock<std::mutex> lock(idle_mu_);
    idle_cv_.wait(lock, [&] { return admitted_.load() == 0; });
  }
  if (compile_pool_) compile_pool_->Stop();
  if (pool_) pool_->Stop();
  if (workers_) workers_->Stop();
}

}  // namespace gpuwasm::runtime
