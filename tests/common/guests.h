// Test helpers shared by the runtime and server suites: where the example and lifecycle guests
// are built, an input of one little-endian u64, and one CPU device per test process. The suite
// defines GPUWASM_EXAMPLES_DIR and GPUWASM_RUNTIME_TEST_MODULES.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iostream>
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

// Runs lifecycle.wasm's never_ending_kernel through `invoke(deadline)` (a result with exit_status),
// doubling the deadline, up to three times, while the guest's launch found the deadline already
// passed (its exit 11): under a sanitizer on a loaded machine the guest can take longer than the
// deadline to reach its launch, and the tests are about what the deadline does to a running kernel.
// `*deadline` becomes the deadline of the run returned.
template <typename Invoke>
auto RunNeverEndingKernel(Invoke invoke, std::chrono::milliseconds* deadline) {
  auto r = invoke(*deadline);
  for (int i = 0; i < 3 && r.exit_status == 11; ++i) {
    std::cerr << "never_ending_kernel: the deadline of " << deadline->count()
              << " ms passed before the launch; again with twice that\n";
    *deadline *= 2;
    r = invoke(*deadline);
  }
  return r;
}

inline std::shared_ptr<device::Device> Cpu() {
  static std::shared_ptr<device::Device> d = device::cpu::CreateCpuDevice();
  return d;
}

}  // namespace gpuwasm::testing
