// Test helpers shared by the runtime and server suites: where the example and lifecycle guests
// are built, an input of one little-endian u64, and one CPU device per test process. The suite
// defines GPUWASM_EXAMPLES_DIR and GPUWASM_RUNTIME_TEST_MODULES.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "device/cpu/cpu_device.h"

namespace gpuwasm::testing {

inline std::filesystem::path Example(const std::string& name) {
  return std::filesystem::path(GPUWASM_EXAMPLES_DIR) / name / (name + ".wasm");
}
inline std::filesystem::path Lifecycle() {
  return std::filesystem::path(GPUWASM_RUNTIME_TEST_MODULES) / "lifecycle.wasm";
}
inline std::string U64(uint64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); }

inline std::shared_ptr<device::Device> Cpu() {
  static std::shared_ptr<device::Device> d = device::cpu::CreateCpuDevice();
  return d;
}

}  // namespace gpuwasm::testing
