// Wasm backtraces of traps: which guest functions were on the stack when a call trapped, named
// from the module's "name" section (internal to src/wasm/; hosts see CallOutcome::backtrace).
//
// How it works: the trap (fault handler, wasm_rt_trap, a deadline's interrupt check, a host
// function's abort) records the return addresses on the native stack (RecordTrapStack in
// wasm_rt.cc). Only when a trap is reported are they mapped to functions: wasm2c names function
// N `w2c_fN` (the translator ignores debug names, so a hostile name section never reaches the C),
// and the compiled object's symbol table gives each one's address range (and each export
// wrapper's, which holds a small export inlined into it). The names come from the
// module's name section, read when it was compiled (in the translator child) and stored next to
// the artifact as <key>.names.
//
// A function the C compiler inlined into its caller has no frame of its own and is not listed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpuwasm::wasm {

// Return addresses recorded at a trap, innermost first (the trap machinery's own frames included).
inline constexpr int kMaxTrapAddresses = 64;

// One guest function on the stack at a trap.
struct TrapFrame {
  uint32_t function_index = 0;  // in the module's function index space (imports first)
  std::string name;             // from the name section (demangled); "" when it has none
  // "name" or, without one, "wasm-function[N]" (the name V8 and wasm-objdump use).
  std::string Display() const;
};

// Bounds on what a module's names may cost: longer names are cut, later ones dropped.
inline constexpr size_t kMaxFunctionNameBytes = 200;
inline constexpr size_t kMaxFunctionNamesBytes = 4u << 20;

struct FunctionName {
  uint32_t index;
  std::string name;
};

// The function names of `wasm`'s name section (subsection 1), demangled when they are Itanium
// (C++ or Rust legacy) names and made printable (bytes outside ASCII 0x20-0x7e become '?').
// Tolerates any malformation: it reads what it can and stops, never failing (names only help).
std::vector<FunctionName> ReadFunctionNames(std::span<const uint8_t> wasm);

// What <key>.names holds: the name section's function names, and the C symbol of each export's
// wrapper (wasm2c's Z_guestZ_<export>) with the function it calls, for a small export the C
// compiler inlined into its wrapper. Lines "<index>\t<name>" and "e<index>\t<symbol>".
struct ModuleNames {
  std::vector<FunctionName> functions;
  std::vector<FunctionName> export_symbols;  // name: the C symbol
};
std::string FormatModuleNames(const ModuleNames& names);
ModuleNames ParseModuleNames(std::string_view text);  // lines that do not parse are skipped

// Maps `addresses` (from a trap on a module loaded from `so_path` at `load_base`) to the guest
// functions they lie in, innermost first; addresses outside the module's functions are skipped.
// `names_path` is the module's <key>.names (missing: frames without names).
std::vector<TrapFrame> Symbolize(std::span<const uintptr_t> addresses, const std::string& so_path, uintptr_t load_base,
                                 const std::string& names_path);

// The lines a trap adds to the guest's stderr: "gpuwasm: wasm backtrace of the trap (TRAP),
// innermost call first:" then "  #0 name" per frame, a run of one function (deep recursion) on
// one line. "" without frames.
std::string FormatBacktrace(std::string_view trap, const std::vector<std::string>& frames);

}  // namespace gpuwasm::wasm
