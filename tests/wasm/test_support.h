// Helpers shared by the wasm engine tests.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "host/host_env.h"
#include "wasm/engine.h"
#include "wasm/instance.h"

namespace gpuwasm::testing {

std::string ReadFile(const std::string& path);
std::string ModulePath(const std::string& relative);  // under GPUWASM_TEST_MODULES

// One engine per test process, caching in the build tree.
wasm::Engine& SharedEngine();

std::shared_ptr<const wasm::Module> CompileOrDie(const std::string& relative_path);

// Runs `export_name` in a fresh instance; the host env and instance are returned for inspection.
struct GuestRun {
  std::unique_ptr<host::HostEnv> env;
  std::unique_ptr<wasm::Instance> instance;
  Result<wasm::CallOutcome> outcome = Status::Internal("not run");
};
GuestRun RunExport(std::shared_ptr<const wasm::Module> module, const std::string& export_name,
                   host::GuestIoOptions io = {}, wasm::InstanceLimits limits = {},
                   std::optional<wasm::Clock::duration> timeout = {});

// Reference result from wabt's interpreter.
struct InterpResult {
  bool trapped = false;
  std::string trap_message;
  uint32_t value = 0;
  std::string memory_sha256;  // of the exported memory after the call ("" without one)
};
InterpResult InterpRun(const std::string& wasm_bytes, const std::string& export_name);

std::string MemorySha256(const wasm::Instance& instance);

// Virtual size of this process (VmSize), in bytes.
uint64_t VirtualMemoryBytes();

}  // namespace gpuwasm::testing
