#include "runtime/instance_runner.h"

#include <algorithm>

#include "host/guest_io.h"
#include "host/wasi_cuda.h"

namespace gpuwasm::runtime {

using Clock = std::chrono::steady_clock;

Result<std::shared_ptr<host::TenantContext>> TenantDevice::Modules() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!modules_) {
    device::ContextOptions o;
    o.max_bytes = max_bytes_;
    GPUWASM_ASSIGN_OR_RETURN(std::shared_ptr<device::Context> ctx, device_->CreateContext(o));
    modules_ = std::make_shared<host::TenantContext>(std::move(ctx), instrument_);
  }
  return modules_;
}

TenantDevice::Usage TenantDevice::usage() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!modules_) return {};
  device::Context& c = modules_->context();
  return {c.allocated_bytes(), c.reserved_bytes(), c.resets(), modules_->live_modules()};
}

InvokeResult RunInstance(TenantDevice& td, const InstanceSpec& spec, const std::atomic<bool>& interrupting,
                         InstanceObserver* observer) {
  const TenantConfig& t = *spec.tenant;
  InvokeResult r;
  r.tenant = t.name;
  r.function_id = spec.function_id;
  r.function_name = spec.function_name;
  r.version = spec.version;
  r.device = td.device()->info().name;
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
  if (interrupting) return error("gpuwasm is shutting down: the invocation was not started");
  if (Clock::now() >= spec.deadline) return deadline_passed("the deadline passed while the invocation was queued");

  host::WasiCudaOptions o;
  o.gpu_enabled = t.gpu;  // off: every call is WCU_ERR_NOT_PERMITTED, with the reason
  o.max_device_bytes = t.device_bytes;
  o.max_inflight_launches = t.inflight_launches;
  o.deadline = spec.deadline;
  std::shared_ptr<host::TenantContext> modules;  // no device context for a tenant without GPU access
  if (t.gpu) {
    Result<std::shared_ptr<host::TenantContext>> m = td.Modules();
    if (!m.ok()) return error("the device is unavailable: " + m.status().ToString());
    modules = std::move(*m);
  }
  auto cuda = std::make_unique<host::WasiCudaContext>(td.device(), std::move(modules), o);
  host::GuestIoOptions io;
  io.input = spec.input;
  io.args.push_back(spec.function_name);
  io.args.insert(io.args.end(), spec.args.begin(), spec.args.end());
  io.env = spec.env;
  io.max_stdout = io.max_stderr = io.max_output = t.max_output_size;
  io.on_write = spec.live_output;
  auto env = std::make_unique<host::HostEnv>(std::move(io), std::move(cuda), spec.deadline);
  wasm::InstanceLimits limits;
  limits.max_memory_pages = static_cast<uint32_t>(std::clamp<uint64_t>(t.max_memory / 65536, 1, 65536));
  auto instance = wasm::Instance::Create(spec.module, env.get(), limits, spec.deadline);
  if (!instance.ok()) {
    if (instance.status().code() == StatusCode::kDeadlineExceeded) return deadline_passed(instance.status().message());
    return error("cannot instantiate the module: " + instance.status().ToString());
  }
  env->io.Attach(instance->get());

  if (observer != nullptr) observer->Started(*env, **instance);
  if (interrupting) (*instance)->Interrupt();  // shutdown swept the live instances before we joined them
  Result<wasm::CallOutcome> outcome = (*instance)->Call(spec.entry, spec.deadline);
  r.metrics = env->metrics();
  r.gpu_time = env->cuda ? env->cuda->gpu_time() : std::chrono::nanoseconds{0};
  // Launches still queued or running when the guest returned are discarded with the instance: a
  // guest that forgot to synchronize is told why its results are missing.
  if (outcome.ok() && outcome->ok() && env->cuda) r.discarded_launches = env->cuda->inflight_launches();
  if (observer != nullptr) observer->Finished();
  r.output = env->io.output();
  r.stdout_text = env->io.stdout_text();
  r.stderr_text = env->io.stderr_text();
  if (r.discarded_launches > 0) {
    const std::string note = "gpuwasm: " + std::to_string(r.discarded_launches) +
                             " kernel launch(es) had not finished when the guest returned and were discarded "
                             "(call wcu_synchronize() before returning)\n";
    r.stderr_text += note;
    if (spec.live_output) spec.live_output(2, note);
  }
  // A trap (or a deadline) says where the guest was: the wasm backtrace, also on its stderr.
  if (outcome.ok() && !outcome->ok() && outcome->trap != wasm::TrapKind::kInterrupted) {
    for (const wasm::TrapFrame& f : outcome->backtrace) r.backtrace.push_back(f.Display());
    const std::string note = wasm::FormatBacktrace(wasm::TrapKindName(outcome->trap), r.backtrace);
    r.stderr_text += note;
    if (spec.live_output && !note.empty()) spec.live_output(2, note);
  }
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

}  // namespace gpuwasm::runtime
