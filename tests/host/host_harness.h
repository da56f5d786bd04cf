// Harness for guest-driven tests of the host interface: one engine and one CPU device per test
// process; each Instance gets a fresh tenant context (unless shared) and its own HostEnv.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "device/cpu/cpu_device.h"
#include "host/guest_io.h"
#include "host/host_env.h"
#include "wasm/engine.h"
#include "wasm/instance.h"

namespace gpuwasm::testing {

// Size of a corpus kernel's sm_80 PTX: what a guest embedding it retains when it loads it.
inline uint64_t PtxBytes(const std::string& kernel) {
  std::ifstream in(std::string(GPUWASM_KERNEL_PTX_DIR) + "/" + kernel + ".sm_80.ptx", std::ios::binary | std::ios::ate);
  EXPECT_TRUE(in.good()) << kernel;
  return static_cast<uint64_t>(in.tellg());
}

inline std::shared_ptr<device::Device> Cpu() {
  static std::shared_ptr<device::Device> d = device::cpu::CreateCpuDevice();
  return d;
}

inline std::shared_ptr<const wasm::Module> Guest(const std::string& name) {
  static wasm::Engine* engine = [] {
    wasm::EngineOptions o;
    o.cache_dir = GPUWASM_HOST_TEST_CACHE;
    o.imports = host::GuestImports();
    return new wasm::Engine(std::move(o));
  }();
  std::ifstream in(std::string(GPUWASM_HOST_TEST_MODULES) + "/" + name, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  auto m = engine->Compile(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  EXPECT_TRUE(m.ok()) << name << ": " << m.status();
  return m.ok() ? *m : nullptr;
}

// One guest instance with its own wasi_cuda context.
struct GuestInstance {
  std::shared_ptr<device::Context> context;
  std::shared_ptr<host::TenantContext> modules;
  std::unique_ptr<host::HostEnv> env;
  std::unique_ptr<wasm::Instance> instance;

  GuestInstance(const std::string& wasm, host::WasiCudaOptions options = {}, std::string input = "",
                std::shared_ptr<host::TenantContext> shared = nullptr) {
    // As the runtime gives a tenant: its modules instrumented.
    modules = shared ? shared : std::make_shared<host::TenantContext>(*Cpu()->CreateContext(), true);
    host::GuestIoOptions io;
    io.input = std::move(input);
    env = std::make_unique<host::HostEnv>(
        std::move(io), std::make_unique<host::WasiCudaContext>(Cpu(), modules, options), options.deadline);
    auto inst = wasm::Instance::Create(Guest(wasm), env.get(), {});
    EXPECT_TRUE(inst.ok()) << inst.status();
    instance = std::move(*inst);
    env->io.Attach(instance.get());
  }

  // Runs an export and returns its i32 result (or a large negative on trap/error).
  int32_t Call(const std::string& name) {
    auto r = instance->Call(name);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return INT32_MIN;
    EXPECT_TRUE(r->ok()) << name << " trapped: " << wasm::TrapKindName(r->trap);
    return r->ok() ? r->exit_code : INT32_MIN + 1;
  }

  // The error texts the guest emitted, one per line.
  std::vector<std::string> Errors() const {
    std::vector<std::string> lines;
    std::string out = env->io.output(), cur;
    for (char c : out) {
      if (c == '\n') {
        lines.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
    return lines;
  }

  host::InstanceMetricsSnapshot Metrics() const { return env->metrics(); }
};

}  // namespace gpuwasm::testing
