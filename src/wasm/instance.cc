#include "wasm/instance.h"

#include <cstdlib>
#include <cstring>

#include "wasm/watchdog.h"

namespace gpuwasm::wasm {
namespace {

struct EntryCall {
  void (*fn)();
  ExportKind kind;
  uint32_t result = 0;
  void* raw;
};

void CallEntry(Instance*, void* arg) {
  auto* c = static_cast<EntryCall*>(arg);
  if (c->kind == ExportKind::kI32) {
    c->result = reinterpret_cast<uint32_t (*)(void*)>(c->fn)(c->raw);
  } else {
    reinterpret_cast<void (*)(void*)>(c->fn)(c->raw);
  }
}

struct InstantiateCall {
  const Module::Glue* glue;
  void* raw;
  void* host;
};

void CallInstantiate(Instance*, void* arg) {
  auto* c = static_cast<InstantiateCall*>(arg);
  c->glue->instantiate(c->raw, c->host);
}

// A trap while setting up an instance (its start code or a reactor's _initialize), as the
// status the caller sees: a deadline stays a deadline and a memory cap stays an exhausted
// resource, so that an invocation whose deadline passes during setup is not a server error.
Status SetupTrap(std::string_view stage, TrapKind trap, uint32_t max_memory_pages) {
  switch (trap) {
    case TrapKind::kMemoryCap:
      return Status::ResourceExhausted(std::string(stage) + " failed: the module's memory exceeds the cap of " +
                                       std::to_string(max_memory_pages) + " pages");
    case TrapKind::kResourceExhausted:
      return Status::ResourceExhausted(std::string(stage) + " failed: out of memory for linear memory or tables");
    case TrapKind::kDeadlineExceeded:
      return Status::DeadlineExceeded(std::string(stage) + " did not finish before the deadline");
    default: return Status::InvalidArgument(std::string(stage) + " trapped: " + std::string(TrapKindName(trap)));
  }
}

}  // namespace

Result<std::unique_ptr<Instance>> Instance::Create(std::shared_ptr<const Module> module, void* host,
                                                   const InstanceLimits& limits,
                                                   std::optional<Clock::time_point> deadline) {
  std::unique_ptr<Instance> inst(new Instance());
  inst->module_ = std::move(module);
  inst->limits_.max_memory_pages = limits.max_memory_pages;
  inst->limits_.max_table_elements = limits.max_table_elements;
  const Module::Glue& glue = inst->module_->glue();
  size_t size = (glue.instance_size() + 63) & ~size_t{63};
  inst->state_.reset(std::aligned_alloc(64, size));
  inst->raw_ = inst->state_.get();
  if (inst->raw_ == nullptr) return Status::ResourceExhausted("cannot allocate instance state");
  std::memset(inst->raw_, 0, size);  // wasm2c's free functions accept never-allocated members

  InstantiateCall call{&glue, inst->raw_, host};
  CallOutcome outcome;
  inst->Run(CallInstantiate, &call, deadline, &outcome);
  inst->instantiated_ = true;  // free whatever part was set up, even after a trap
  if (!outcome.ok()) return SetupTrap("instantiation", outcome.trap, limits.max_memory_pages);
  if (outcome.exited) return Status::InvalidArgument("the module exited during instantiation");
  inst->memory_ = glue.memory(inst->raw_);
  // WASI reactors (wasi-libc -mexec-model=reactor) must have _initialize run before any other
  // export: it runs static constructors and sets up libc.
  if (const ExportInfo* init = inst->module_->FindExport("_initialize");
      init != nullptr && init->kind == ExportKind::kVoid) {
    auto r = inst->Call("_initialize", deadline);
    if (!r.ok()) return r.status();
    if (!r->ok()) return SetupTrap("_initialize", r->trap, limits.max_memory_pages);
    if (r->exited) return Status::InvalidArgument("the module exited in _initialize");
  }
  return inst;
}

Instance::~Instance() {
  if (instantiated_) module_->glue().free(raw_);  // then state_ frees the struct
}

Result<CallOutcome> Instance::Call(std::string_view name, std::optional<Clock::time_point> deadline) {
  if (poisoned_) {
    return Status::Unavailable("instance is no longer usable: an earlier call trapped, exited or was interrupted");
  }
  const ExportInfo* e = module_->FindExport(name);
  if (e == nullptr) {
    return Status::NotFound("module has no exported function '" + std::string(name) + "'; " +
                            DescribeEntryPoints(module_->exports()));
  }
  if (e->kind == ExportKind::kUnsupported) {
    return Status::InvalidArgument("export '" + std::string(name) +
                                   "' is not callable as an entry point: it must be () -> () or () -> i32");
  }
  EntryCall call{module_->ExportFunction(name), e->kind, 0, raw_};
  CallOutcome outcome;
  Run(CallEntry, &call, deadline, &outcome);
  if (outcome.ok() && !outcome.exited && e->kind == ExportKind::kI32) {
    outcome.exit_code = static_cast<int32_t>(call.result);
    outcome.returned_value = true;
  }
  if (!outcome.ok() || outcome.exited) poisoned_ = true;
  return outcome;
}

void Instance::Run(void (*thunk)(Instance*, void*), void* arg, std::optional<Clock::time_point> deadline,
                   CallOutcome* outcome) {
  // A deadline flag left over from a previous call that finished just in time is cleared;
  // an explicit Interrupt() stays.
  uint32_t stale = rt::kInterruptDeadline;
  interrupt_.compare_exchange_strong(stale, 0);
  if (deadline && Clock::now() >= *deadline) {
    outcome->trap = TrapKind::kDeadlineExceeded;
    poisoned_ = true;
    return;
  }
  uint64_t timer = 0;
  if (deadline) timer = Watchdog::Get().Arm(*deadline, &interrupt_, rt::kInterruptDeadline);

  rt::CallState state;
  state.limits = &limits_;
  state.interrupt = &interrupt_;
  state.memory = fault_memory_;
  rt::Enter(&state);
  if (sigsetjmp(state.jmp, 0) == 0) thunk(this, arg);
  rt::Leave();
  if (deadline) Watchdog::Get().Disarm(timer);
  if (fault_memory_ == nullptr) fault_memory_ = state.memory;  // allocated by instantiation
  outcome->trap = state.trap;
  if (state.trap != TrapKind::kNone && state.trap_address_count > 0) {
    outcome->backtrace = module_->Backtrace(std::span(state.trap_addresses, state.trap_address_count));
  }
  outcome->exited = state.exited;
  outcome->exit_code = state.exit_code;
}

void ExitCurrentCall(int32_t code) { rt::Exit(code); }

}  // namespace gpuwasm::wasm
