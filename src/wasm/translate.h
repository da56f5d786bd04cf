// Validation and translation of an untrusted .wasm into C (internal to src/wasm/).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "wasm/engine.h"

namespace gpuwasm::wasm {

struct Translation {
  std::string c_source;  // wasm2c output + interrupt checks + glue; includes "module.h"
  std::string header;    // module.h
  size_t functions = 0;
  size_t interrupt_checks = 0;
};

// Validates `wasm` (libwabt), rejects unsupported features, imports outside `imports`, and
// unsafe export names, then translates it with wasm2c's C writer.
Result<Translation> Translate(std::span<const uint8_t> wasm, const std::vector<ImportSpec>& imports,
                              bool interrupt_checks = true);

// The same checks without translating.
Status Validate(std::span<const uint8_t> wasm, const std::vector<ImportSpec>& imports);

}  // namespace gpuwasm::wasm
