// Running one instance: what an invocation does once admitted, wherever it runs (in the runtime's
// own process, or in its tenant's worker process). A fresh instance gets the tenant's limits, the
// deadline, its input and arguments, a wasi_cuda context on the tenant's device context; it runs
// the entry; output, stdout, stderr, the final InstanceMetricsSnapshot and GPU time come out; every
// buffer, module and the instance are released, also after a trap, a deadline or a device fault.
//
// TenantDevice: a tenant's device context, made at its first GPU use with the tenant's byte quota.
//
// Thread-safety: RunInstance may run on many threads at once; TenantDevice is thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device/device.h"
#include "host/host_env.h"
#include "host/kernel_registry.h"
#include "runtime/config.h"
#include "runtime/invocation.h"
#include "wasm/instance.h"
#include "wasm/module.h"

namespace gpuwasm::runtime {

class TenantDevice {
 public:
  // `instrument`: the tenant's modules are instrumented (TenantConfig::instrument_ptx) where the
  // device can give instances windows.
  TenantDevice(std::shared_ptr<device::Device> device, uint64_t max_bytes, bool instrument)
      : device_(std::move(device)),
        max_bytes_(max_bytes),
        instrument_(instrument && device_->info().instance_windows) {}
  // The context and its module cache, made on first use.
  Result<std::shared_ptr<host::TenantContext>> Modules();
  struct Usage {
    uint64_t bytes = 0, reserved = 0, resets = 0;
    size_t modules = 0;
  };
  // What the context holds now (zeros before its first use).
  Usage usage();
  const std::shared_ptr<device::Device>& device() const { return device_; }

 private:
  std::shared_ptr<device::Device> device_;
  uint64_t max_bytes_;
  bool instrument_;
  std::mutex mu_;
  std::shared_ptr<host::TenantContext> modules_;
};

struct InstanceSpec {
  const TenantConfig* tenant = nullptr;
  std::string function_id, function_name;
  int64_t version = 0;
  std::shared_ptr<const wasm::Module> module;
  std::string entry;  // resolved: never empty
  std::string input;
  std::vector<std::string> args;  // after argv[0] (the function's name)
  std::vector<std::string> env;   // "KEY=value"
  std::chrono::steady_clock::time_point deadline;
  std::function<void(int fd, std::string_view bytes)> live_output;  // InvokeRequest::live_output
};

// Told when the instance starts running (its environment and instance stay valid until Finished)
// and when it stopped; both on the running thread. For the live view of running instances.
class InstanceObserver {
 public:
  virtual ~InstanceObserver() = default;
  virtual void Started(const host::HostEnv& env, wasm::Instance& instance) = 0;
  virtual void Finished() = 0;
};

// Runs the instance to its end. `interrupting` (shutdown) stops it at its next check, and keeps it
// from starting. Device, tenant and function fields of the result are filled; duration and
// deadline are the caller's.
InvokeResult RunInstance(TenantDevice& device, const InstanceSpec& spec, const std::atomic<bool>& interrupting,
                         InstanceObserver* observer);

}  // namespace gpuwasm::runtime
