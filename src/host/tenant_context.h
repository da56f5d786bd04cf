// TenantContext: a tenant's device context and the modules loaded into it (one per tenant, shared
// by its instances). Identical PTX (same sha256) is compiled once per context; concurrent loads of
// the same text wait for the one compile in flight. Entries live as long as some instance holds
// the module. With `instrument` (every tenant but a trusted one that opted out), what the device
// loads is the guest's PTX with the fence and deadline passes applied (ptx/instrument.h), printed
// on the guest's own lines so that errors and faults name them; the key is then the PTX's hash with
// the passes' version. Thread-safe.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>

#include "common/content_cache.h"
#include "common/status.h"
#include "device/device.h"

namespace gpuwasm::host {

class TenantContext {
 public:
  explicit TenantContext(std::shared_ptr<device::Context> context, bool instrument = false)
      : context_(std::move(context)), instrument_(instrument) {}
  Result<std::shared_ptr<const device::Module>> Load(std::string_view ptx);
  bool instrumented() const { return instrument_; }
  uint64_t compiles() const { return compiles_.load(); }  // loads that really compiled
  // Modules some instance still holds (entries of released ones are dropped on the way).
  size_t live_modules();
  device::Context& context() { return *context_; }

 private:
  using Loaded = Result<std::shared_ptr<const device::Module>>;
  Loaded Compile(std::string_view ptx);
  std::shared_ptr<device::Context> context_;
  const bool instrument_;
  ContentCache<const device::Module> modules_;  // Keep::kWhileHeld
  std::atomic<uint64_t> compiles_{0};
};

}  // namespace gpuwasm::host
