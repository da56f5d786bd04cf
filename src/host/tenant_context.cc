#include "host/tenant_context.h"

#include "common/sha256.h"
#include "ptx/instrument.h"
#include "ptx/parser.h"
#include "ptx/printer.h"

namespace gpuwasm::host {

Result<std::shared_ptr<const device::Module>> TenantContext::Load(std::string_view ptx) {
  std::string key = Sha256Hex(ptx);
  if (instrument_) key += ":instrumented-" + std::to_string(ptx::kInstrumentVersion);
  return modules_.Get(key, [&] {
    compiles_.fetch_add(1);
    return Compile(ptx);
  });
}

TenantContext::Loaded TenantContext::Compile(std::string_view ptx) {
  if (!instrument_) return context_->LoadModule(ptx);
  // Parse errors and refusals name the guest's lines; the printed text keeps them, so the device's
  // own errors and the faults its kernels record do too.
  GPUWASM_ASSIGN_OR_RETURN(ptx::Module parsed, ptx::Parse(ptx));
  GPUWASM_ASSIGN_OR_RETURN(ptx::Module instrumented, ptx::Instrument(parsed));
  ptx::PrintOptions print;
  print.keep_lines = true;
  return context_->LoadModule(ptx::Print(instrumented, print));
}

size_t TenantContext::live_modules() { return modules_.Live(); }

}  // namespace gpuwasm::host
