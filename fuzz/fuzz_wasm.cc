// Fuzz target: the deploy path of the wasm engine up to the C it would compile: validation
// (libwabt), feature and import checks, export-name checks and wasm2c translation.
#include <cstdint>
#include <span>

#include "host/guest_io.h"
#include "wasm/translate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<gpuwasm::wasm::ImportSpec> imports = gpuwasm::host::GuestImports();
  auto t = gpuwasm::wasm::Translate(std::span(data, size), imports);
  if (t.ok()) (void)t->c_source.size();
  return 0;
}
