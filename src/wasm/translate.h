// Validation and translation of an untrusted .wasm into C (internal to src/wasm/).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "wasm/engine.h"
#include "wasm/module.h"

namespace wabt {
struct Module;
}

namespace gpuwasm::wasm {

struct Translation {
  std::string c_source;  // wasm2c output + interrupt checks + glue; includes "module.h"
  std::string header;    // module.h
  size_t functions = 0;
  size_t interrupt_checks = 0;
  std::vector<ExportInfo> exports;  // what the glue exports, with the kind of each
  std::string function_names;       // <key>.names (FormatModuleNames, backtrace.h)
};

// What a module may make wasm2c expand (V8's limits where it has one): a module over any of them
// is refused before translation with ResourceExhausted naming the limit. wasm2c's output grows
// with locals (hundreds of bytes of C per local per function) and tables are allocated whole at
// instantiation, so a 54-byte module could otherwise ask for gigabytes.
struct TranslateLimits {
  uint64_t max_functions = 1'000'000;
  uint64_t max_locals_per_function = 50'000;
  uint64_t max_locals = 2'000'000;         // all functions together (wasm2c: about 3 s of translation)
  uint64_t max_table_entries = 1'000'000;  // initial entries of one table, and all element segments' entries
  uint64_t max_globals = 1'000'000;
  uint64_t max_data_segments = 100'000;
  uint64_t max_elem_segments = 100'000;
};

// Validates `wasm` (libwabt), rejects unsupported features, imports outside `imports`, and
// unsafe export names, then translates it with wasm2c's C writer.
Result<Translation> Translate(std::span<const uint8_t> wasm, const std::vector<ImportSpec>& imports,
                              bool interrupt_checks = true);

// The same checks without translating.
Status Validate(std::span<const uint8_t> wasm, const std::vector<ImportSpec>& imports);

// The TranslateLimits check of a module read by libwabt.
Status CheckExpansionLimits(const wabt::Module& module);

// The import list as one command-line argument of the translator child, and back.
std::string EncodeImports(const std::vector<ImportSpec>& imports);
std::vector<ImportSpec> DecodeImports(std::string_view encoded);

// `gpuwasm __translate DIR IMPORTS CHECKS`: the translator child the engine runs under its compile
// limits. Reads DIR/module.wasm; writes DIR/module.c, module.h, exports.txt ("<kind> <name>"
// lines) and names.txt (FormatModuleNames) and exits 0, or writes DIR/error.txt ("<status code name>\n<message>") and
// exits 65.
int TranslatorMain(int argc, char** argv);

}  // namespace gpuwasm::wasm
