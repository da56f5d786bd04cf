// wabt's reference interpreter, behind a plain interface: its headers only compile as C++17, so
// interp_reference.cc is built in that mode and shares nothing else with the tests.
#pragma once

#include <cstdint>
#include <string>

namespace gpuwasm::testing {

struct InterpRaw {
  std::string error;  // non-empty: the module could not be read or instantiated
  bool trapped = false;
  std::string trap_message;
  uint32_t value = 0;
  bool has_memory = false;
  std::string memory;  // the exported memory's bytes after the call
};

InterpRaw InterpRunRaw(const std::string& wasm_bytes, const std::string& export_name);

}  // namespace gpuwasm::testing
