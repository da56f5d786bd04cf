#include "runtime/runtime.h"

#include <algorithm>
#include <cstdio>
#include <future>

#include "device/select.h"
#include "host/guest_io.h"
#include "host/host_env.h"
#include "host/kernel_registry.h"
#include "wasm/instance.h"

namespace gpuwasm::runtime {

using Clock = std::chrono::steady_clock;

// Lifetime counters and the running gauge of a tenant or function: relaxed atomics, so folding
// an invocation in and reading them never blocks.
struct Runtime::Counters {
  std::atomic<uint64_t> invocations[kInvocationStatusCount] = {};
  std::atomic<uint64_t> rejected{0};
  std::atomic<uint64_t> duration_us{0};
  std::atomic<uint64_t> kernels_launched{0}, back_pressure_rejections{0}, yields{0}, gpu_time_ns{0};
  std::atomic<uint32_t> running{0};

  void Fold(const InvokeResult& r) {
    invocations[static_cast<size_t>(r.status)].fetch_add(1, std::memory_order_relaxed);
    duration_us.fetch_add(static_cast<uint64_t>(r.duration.count()), std::memory_order_relaxed);
    kernels_launched.fetch_add(r.metrics.kernels_launched, std::memory_order_relaxed);
    back_pressure_rejections.fetch_add(r.metrics.back_pressure_rejections, std::memory_order_relaxed);
    yields.fetch_add(r.metrics.yield_count, std::memory_order_relaxed);
    gpu_time_ns.fetch_add(static_cast<uint64_t>(r.gpu_time.count()), std::memory_order_relaxed);
  }
  Totals Read() const {
    Totals t;
    for (size_t i = 0; i < kInvocationStatusCount; ++i) t.invocations[i] = invocations[i].load(std::memory_order_relaxed);
    t.rejected = rejected.load(std::memory_order_relaxed);
    t.duration_seconds = static_cast<double>(duration_us.load(std::memory_order_relaxed)) / 1e6;
    t.kernels_launched = kernels_launched.load(std::memory_order_relaxed);
    t.back_pressure_rejections = back_pressure_rejections.load(std::memory_order_relaxed);
    t.yields = yields.load(std::memory_order_relaxed);
    t.gpu_time_ns = gpu_time_ns.load(std::memory_order_relaxed);
    t.running = running.load(std::memory_order_relaxed);
    return t;
  }
};

struct Runtime::TenantState {
  TenantConfig config;
  Counters counters;
  std::atomic<uint32_t> admitted{0};  // running + queued, against concurrent_invocations
  std::mutex mu;                      // guards modules
  std::shared_ptr<host::ModuleCache> modules;  // the tenant's device context and its module cache

  // The tenant's device context, created on first use with its byte quota.
  Result<std::shared_ptr<host::ModuleCache>> Modules(device::Device& device) {
    std::lock_guard<std::mutex> lock(mu);
    if (!modules) {
      device::ContextOptions o;
      o.max_bytes = config.device_bytes;
      GPUWASM_ASSIGN_OR_RETURN(std::shared_ptr<device::Context> ctx, device.CreateContext(o));
      modules = std::make_shared<host::ModuleCache>(std::move(ctx));
    }
    return modules;
  }
  struct Usage {
    uint64_t bytes = 0, reserved = 0, resets = 0;
    size_t modules = 0;
  };
  Usage context_usage() {
    std::lock_guard<std::mutex> lock(mu);
    if (!modules) return {};
    device::Context& c = modules->context();
    return {c.allocated_bytes(), c.reserved_bytes(), c.resets(), modules->live_modules()};
  }
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
  const host::HostEnv* env = nullptr;
  wasm::Instance* instance = nullptr;
};

std::string_view InvocationStatusName(InvocationStatus s) {
  switch (s) {
    case InvocationStatus::kOk: return "ok";
    case InvocationStatus::kExitError: return "exit_error";
    case InvocationStatus::kTrap: return "trap";
    case InvocationStatus::kDeadline: return "deadline";
    case InvocationStatus::kError: return "error";
  }
  return "unknown";
}

uint64_t Totals::invocations_total() const {
  uint64_t n = 0;
  for (uint64_t v : invocations) n += v;
  return n;
}

void to_json(nlohmann::json& j, const InvokeResult& r) {
  auto opt = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
  j = {{"tenant", r.tenant},
       {"function_id", opt(r.function_id)},
       {"function", r.function_name},
       {"version", r.version},
       {"status", InvocationStatusName(r.status)},
       {"exit_status", r.exit_status},
       {"trap", opt(r.trap)},
       {"error", opt(r.error)},
       {"duration_ms", static_cast<double>(r.duration.count()) / 1e3},
       {"deadline_ms", r.deadline.count()},
       {"gpu_time_ms", static_cast<double>(r.gpu_time.count()) / 1e6},
       {"device", r.device},
       {"output_bytes", r.output.size()},
       {"stdout_truncated", r.stdout_truncated},
       {"stderr_truncated", r.stderr_truncated},
       {"metrics", r.metrics}};
}

void to_json(nlohmann::json& j, const Totals& t) {
  nlohmann::json inv = nlohmann::json::object();
  for (size_t i = 0; i < kInvocationStatusCount; ++i) {
    inv[std::string(InvocationStatusName(static_cast<InvocationStatus>(i)))] = t.invocations[i];
  }
  j = {{"invocations", inv},
       {"rejected", t.rejected},
       {"duration_seconds", t.duration_seconds},
       {"kernels_launched", t.kernels_launched},
       {"back_pressure_rejections", t.back_pressure_rejections},
       {"yields", t.yields},
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
  return Status::ResourceExhausted("module of " + Bytes(size) + " exceeds tenant '" + t.name + "''s max_module_size of " +
                                   Bytes(t.max_module_size));
}

}  // namespace

Result<std::unique_ptr<Runtime>> Runtime::Create(RuntimeConfig config, RuntimeOptions options) {
  if (config.tenants.empty()) config.tenants = DefaultConfig().tenants;
  std::unique_ptr<Runtime> rt(new Runtime(std::move(config)));
  const RuntimeConfig& c = rt->config_;
  if (options.device) {
    rt->device_ = std::move(options.device);
  } else {
    GPUWASM_ASSIGN_OR_RETURN(rt->device_, device::OpenDevice(c.device, &rt->device_note_));
  }
  if (options.use_store) {
    std::filesystem::path dir = c.store_dir.empty() ? store::DefaultStoreDir() : c.store_dir;
    GPUWASM_ASSIGN_OR_RETURN(rt->store_, store::LocalStore::Open(store::StoreOptions{dir, c.database}));
    for (const TenantConfig& t : c.tenants) GPUWASM_RETURN_IF_ERROR(rt->store_->metadata().AddTenant(t.name));
  }
  wasm::EngineOptions eo = std::move(options.engine);
  if (eo.cache_dir.empty()) eo.cache_dir = rt->store_ ? rt->store_->artifacts_dir() : wasm::DefaultCacheDir();
  if (eo.imports.empty()) eo.imports = host::GuestImports();
  rt->engine_ = std::make_unique<wasm::Engine>(std::move(eo));
  for (const TenantConfig& t : c.tenants) {
    auto state = std::make_unique<TenantState>();
    state->config = t;
    rt->tenants_.emplace(t.name, std::move(state));
  }
  uint32_t workers = c.workers != 0 ? c.workers : DefaultWorkers();
  // With several tenants, none may hold every worker: one stays reachable for the others.
  uint32_t per_tenant = c.tenants.size() > 1 ? std::max(1u, workers - 1) : workers;
  rt->pool_ = std::make_unique<WorkerPool>(workers, per_tenant);
  uint32_t compilers = c.compile_workers != 0 ? c.compile_workers
                                              : std::max(1u, std::thread::hardware_concurrency() / 2);
  rt->compile_pool_ = std::make_unique<WorkerPool>(compilers, compilers);
  if (rt->store_) {
    // Compiles interrupted by a crash or stop start again.
    for (const std::string& id : rt->store_->recovery().interrupted_compiles) {
      auto rec = rt->store_->metadata().GetFunction(id);
      if (!rec.ok()) continue;
      rt->StartCompile(*rec);
    }
  }
  return rt;
}

Runtime::Runtime(RuntimeConfig config) : config_(std::move(config)) {}

Runtime::~Runtime() {
  Shutdown(std::chrono::milliseconds(0));
}

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
    return Status::InvalidArgument("function name '" + std::string(name) +
                                   "' must be 1-128 characters of A-Z, a-z, 0-9, '-', '_' and '.', not starting with fn_");
  }
  if (entry.size() > 256) return Status::InvalidArgument("entry point name is longer than 256 bytes");
  GPUWASM_RETURN_IF_ERROR(CheckModuleSize(t->config, wasm.size()));
  store::NewFunction nf;
  nf.tenant = std::string(tenant);
  nf.name = std::string(name);
  nf.entry = std::string(entry);
  GPUWASM_ASSIGN_OR_RETURN(store::FunctionRecord rec, store_->AddFunction(std::move(nf), wasm));
  StartCompile(rec);
  return rec;
}

void Runtime::StartCompile(const store::FunctionRecord& f) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!compiling_.insert(f.id).second) return;  // already queued or running here
  }
  bool queued = compile_pool_->Submit("", [this, f] {
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

void Runtime::CompileDeployed(const store::FunctionRecord& f) {
  auto wake_waiters = [&] {
    { std::lock_guard<std::mutex> lock(mu_); }  // a waiter has checked the status or is waiting
    compiled_cv_.notify_all();
  };
  auto finish = [&](store::DeployStatus status, const std::string& error) {
    Status s = store_->metadata().SetStatus(f.id, status, error);
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
  auto module = engine_->Compile(std::span(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size()));
  if (!module.ok()) return finish(store::DeployStatus::kFailed, module.status().ToString());
  std::string entry = f.entry;
  if (entry.empty()) {
    if ((*module)->FindExport("_start") == nullptr && (*module)->FindExport("run") == nullptr) {
      return finish(store::DeployStatus::kFailed,
                    "the module exports neither _start nor run: deploy it with an entry point");
    }
  } else if ((*module)->FindExport(entry) == nullptr) {
    return finish(store::DeployStatus::kFailed, "the module has no export named '" + entry + "'");
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
  GPUWASM_ASSIGN_OR_RETURN(std::vector<store::FunctionRecord> versions, store_->metadata().Versions(tenant, id_or_name));
  if (versions.empty()) return Status::NotFound("no function named '" + std::string(id_or_name) + "'");
  return versions.front();
}

Result<std::vector<store::FunctionRecord>> Runtime::ListFunctions(std::string_view tenant) {
  if (!store_) return Status::Unsupported("this runtime has no function store");
  GPUWASM_RETURN_IF_ERROR(Tenant(tenant).status());
  return store_->metadata().ListFunctions(tenant);
}

Status Runtime::CheckStore() {
  if (!store_) return Status::Ok();
  return store_->metadata().ListTenants().status();
}

Status Runtime::DeleteFunction(std::string_view tenant, std::string_view id) {
  if (id.rfind("fn_", 0) != 0) return Status::InvalidArgument("delete takes a function id (fn_...), not a name");
  GPUWASM_ASSIGN_OR_RETURN(store::FunctionRecord rec, GetFunction(tenant, id));
  GPUWASM_ASSIGN_OR_RETURN(bool deleted, store_->DeleteFunction(rec.id));
  if (!deleted) return Status::NotFound("no function with id " + std::string(id));
  std::lock_guard<std::mutex> lock(mu_);
  loaded_.erase(rec.id);  // running invocations hold their own reference
  return Status::Ok();
}

Result<store::FunctionRecord> Runtime::ResolveReady(TenantState& t, std::string_view id_or_name) {
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

Result<std::shared_ptr<const wasm::Module>> Runtime::LoadedModule(const store::FunctionRecord& f) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = loaded_.find(f.id);
    if (it != loaded_.end()) {
      it->second.used = ++use_clock_;
      return it->second.module;
    }
  }
  // Deployed before this process started, or on another node: the artifact is normally in the
  // engine's cache (shared by the nodes when the store directory is). Compiled once at a time
  // among the nodes sharing the store.
  GPUWASM_ASSIGN_OR_RETURN(std::unique_ptr<store::StoreLock> held, store_->metadata().Lock(CompileLockName(f)));
  GPUWASM_ASSIGN_OR_RETURN(std::string bytes, store_->blobs().Get(f.sha256));
  GPUWASM_ASSIGN_OR_RETURN(std::shared_ptr<const wasm::Module> m,
                           engine_->Compile(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())));
  std::lock_guard<std::mutex> lock(mu_);
  RememberLoaded(f.id, m);
  return m;
}

void Runtime::RememberLoaded(const std::string& id, std::shared_ptr<const wasm::Module> module) {
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

Result<InvokeResult> Runtime::Invoke(std::string_view tenant, std::string_view id_or_name, InvokeRequest request) {
  if (!accepting_) return Status::Unavailable("gpuwasm is shutting down");
  if (!store_) return Status::Unsupported("this runtime has no function store");
  GPUWASM_ASSIGN_OR_RETURN(TenantState * t, Tenant(tenant));
  GPUWASM_ASSIGN_OR_RETURN(store::FunctionRecord rec, ResolveReady(*t, id_or_name));
  GPUWASM_ASSIGN_OR_RETURN(std::shared_ptr<const wasm::Module> module, LoadedModule(rec));
  std::string entry = request.entry.empty() ? rec.entry : request.entry;
  return Run(*t, *StateOf(rec, rec.name), std::move(module), std::move(entry), std::move(request));
}

Result<InvokeResult> Runtime::InvokeModule(std::string_view tenant, std::span<const uint8_t> wasm, std::string_view name,
                                           InvokeRequest request) {
  if (!accepting_) return Status::Unavailable("gpuwasm is shutting down");
  GPUWASM_ASSIGN_OR_RETURN(TenantState * t, Tenant(tenant));
  GPUWASM_RETURN_IF_ERROR(CheckModuleSize(t->config, wasm.size()));
  GPUWASM_ASSIGN_OR_RETURN(std::shared_ptr<const wasm::Module> module, engine_->Compile(wasm));
  store::FunctionRecord rec;
  rec.tenant = std::string(tenant);
  std::string entry = request.entry;
  return Run(*t, *StateOf(rec, name), std::move(module), std::move(entry), std::move(request));
}

Result<InvokeResult> Runtime::Run(TenantState& t, FunctionState& f, std::shared_ptr<const wasm::Module> module,
                                  std::string entry, InvokeRequest request) {
  if (request.input.size() > t.config.max_input_size) {
    return Status::ResourceExhausted("input of " + Bytes(request.input.size()) + " exceeds tenant '" + t.config.name +
                                     "''s max_input_size of " + Bytes(t.config.max_input_size));
  }
  if (request.deadline && request.deadline->count() <= 0) {
    return Status::InvalidArgument("the deadline must be longer than zero");
  }
  auto started = Clock::now();
  // Admission: running + queued invocations of the tenant stay within its limit.
  if (t.admitted.fetch_add(1) >= t.config.concurrent_invocations) {
    t.admitted.fetch_sub(1);
    t.counters.rejected.fetch_add(1, std::memory_order_relaxed);
    f.counters.rejected.fetch_add(1, std::memory_order_relaxed);
    return Status::Unavailable("tenant '" + t.config.name + "' is overloaded: " +
                               std::to_string(t.config.concurrent_invocations) +
                               " invocations are running or queued, its concurrent_invocations limit");
  }
  admitted_.fetch_add(1);
  t.counters.running.fetch_add(1, std::memory_order_relaxed);
  f.counters.running.fetch_add(1, std::memory_order_relaxed);
  struct Admitted {
    Runtime* rt;
    TenantState& t;
    FunctionState& f;
    ~Admitted() {
      f.counters.running.fetch_sub(1, std::memory_order_relaxed);
      t.counters.running.fetch_sub(1, std::memory_order_relaxed);
      t.admitted.fetch_sub(1);
      {
        std::lock_guard<std::mutex> lock(rt->idle_mu_);
        rt->admitted_.fetch_sub(1);
      }
      rt->idle_cv_.notify_all();
    }
  } admitted{this, t, f};

  auto limit = std::min(request.deadline.value_or(config_.default_deadline), t.config.max_deadline);
  auto deadline = started + limit;
  if (entry.empty()) entry = module->FindExport("_start") != nullptr ? "_start" : "run";

  std::promise<InvokeResult> promise;
  std::future<InvokeResult> done = promise.get_future();
  bool queued = pool_->Submit(t.config.name, [&] {
    try {
      promise.set_value(RunInstance(t, f, module, entry, request, deadline));
    } catch (...) {
      promise.set_exception(std::current_exception());
    }
  });
  if (!queued) return Status::Unavailable("gpuwasm is shutting down");
  InvokeResult r;
  try {
    r = done.get();
  } catch (const std::exception& e) {
    return Status::Internal(std::string("invocation failed: ") + e.what());
  }
  r.deadline = std::chrono::duration_cast<std::chrono::milliseconds>(limit);
  r.duration = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started);
  t.counters.Fold(r);
  f.counters.Fold(r);
  return r;
}

InvokeResult Runtime::RunInstance(TenantState& t, FunctionState& f, const std::shared_ptr<const wasm::Module>& module,
                                  const std::string& entry, const InvokeRequest& request, Clock::time_point deadline) {
  InvokeResult r;
  r.tenant = t.config.name;
  r.function_id = f.id;
  r.function_name = f.name;
  r.version = f.version;
  r.device = device_->info().name;
  auto error = [&r](std::string why) {
    r.status = InvocationStatus::kError;
    r.exit_status = 70;
    r.error = std::move(why);
    return r;
  };
  auto deadline_passed = [&r](std::string why) {
    r.status = InvocationStatus::kDeadline;
    r.exit_status = 124;
    r.trap = std::string(wasm::TrapKindName(wasm::TrapKind::kDeadlineExceeded));
    r.error = std::move(why);
    return r;
  };
  if (interrupting_) return error("gpuwasm is shutting down: the invocation was not started");
  if (Clock::now() >= deadline) return deadline_passed("the deadline passed while the invocation was queued");

  host::WasiCudaOptions o;
  o.gpu_enabled = t.config.gpu;  // off: every call is WCU_ERR_NOT_PERMITTED, with the reason
  o.max_device_bytes = t.config.device_bytes;
  o.max_inflight_launches = t.config.inflight_launches;
  o.deadline = deadline;
  std::shared_ptr<host::ModuleCache> modules;  // no device context for a tenant without GPU access
  if (t.config.gpu) {
    Result<std::shared_ptr<host::ModuleCache>> m = t.Modules(*device_);
    if (!m.ok()) return error("the device is unavailable: " + m.status().ToString());
    modules = std::move(*m);
  }
  auto cuda = std::make_unique<host::WasiCudaContext>(device_, std::move(modules), o);
  host::GuestIoOptions io;
  io.input = request.input;
  io.args.push_back(f.name);
  io.args.insert(io.args.end(), request.args.begin(), request.args.end());
  io.max_stdout = io.max_stderr = io.max_output = t.config.max_output_size;
  auto env = std::make_unique<host::HostEnv>(std::move(io), std::move(cuda), deadline);
  wasm::InstanceLimits limits;
  limits.max_memory_pages = static_cast<uint32_t>(std::clamp<uint64_t>(t.config.max_memory / 65536, 1, 65536));
  auto instance = wasm::Instance::Create(module, env.get(), limits, deadline);
  if (!instance.ok()) {
    if (instance.status().code() == StatusCode::kDeadlineExceeded) return deadline_passed(instance.status().message());
    return error("cannot instantiate the module: " + instance.status().ToString());
  }
  env->io.Attach(instance->get());

  Live live;
  live.tenant = &t;
  live.function = &f;
  live.started = Clock::now();
  live.env = env.get();
  live.instance = instance->get();
  {
    std::lock_guard<std::mutex> lock(mu_);
    live.id = next_live_id_++;
    live_[live.id] = &live;
  }
  if (interrupting_) (*instance)->Interrupt();  // shutdown swept the live set before we joined it
  Result<wasm::CallOutcome> outcome = (*instance)->Call(entry, deadline);
  r.metrics = env->metrics();
  r.gpu_time = env->cuda ? env->cuda->gpu_time() : std::chrono::nanoseconds{0};
  {
    std::lock_guard<std::mutex> lock(mu_);
    live_.erase(live.id);
  }
  r.output = env->io.output();
  r.stdout_text = env->io.stdout_text();
  r.stderr_text = env->io.stderr_text();
  r.stdout_truncated = env->io.stdout_truncated();
  r.stderr_truncated = env->io.stderr_truncated();
  // Teardown: the instance, then its wasi_cuda context (stops its device work, frees every
  // buffer and module).
  instance->reset();
  env.reset();
  if (!outcome.ok()) return error(outcome.status().ToString());
  if (!outcome->ok()) {
    if (outcome->trap == wasm::TrapKind::kDeadlineExceeded) return deadline_passed("");
    r.trap = std::string(wasm::TrapKindName(outcome->trap));
    if (outcome->trap == wasm::TrapKind::kInterrupted) {
      return error("interrupted: gpuwasm is shutting down");
    }
    r.status = InvocationStatus::kTrap;
    r.exit_status = 134;
    return r;
  }
  r.exit_status = outcome->exit_code & 0xff;
  r.status = r.exit_status == 0 ? InvocationStatus::kOk : InvocationStatus::kExitError;
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
    i.metrics = l->env->metrics();
    i.gpu_time = l->env->cuda ? l->env->cuda->gpu_time() : std::chrono::nanoseconds{0};
    out.push_back(std::move(i));
  }
  return out;
}

RuntimeStats Runtime::Stats() const {
  RuntimeStats s;
  s.module_compiles = engine_->compiles();
  s.module_cache_loads = engine_->cache_loads();
  std::map<const void*, std::pair<uint64_t, uint64_t>> gauges;  // state -> (device bytes, pinned)
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, l] : live_) {
    host::InstanceMetricsSnapshot m = l->env->metrics();
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
    TenantState::Usage u = t->context_usage();
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
  {
    std::unique_lock<std::mutex> lock(idle_mu_);
    idle_cv_.wait_for(lock, grace, [&] { return admitted_.load() == 0; });
  }
  if (admitted_.load() != 0) {
    interrupting_ = true;
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, l] : live_) l->instance->Interrupt();
  }
  // Interrupted guests stop at their next function entry or loop header; one blocked in a
  // device wait stops at its deadline at the latest.
  {
    std::unique_lock<std::mutex> lock(idle_mu_);
    idle_cv_.wait(lock, [&] { return admitted_.load() == 0; });
  }
  if (compile_pool_) compile_pool_->Stop();
  if (pool_) pool_->Stop();
}

}  // namespace gpuwasm::runtime
