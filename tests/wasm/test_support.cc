#include "test_support.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "common/sha256.h"
#include "host/guest_io.h"
#include "interp_reference.h"

namespace gpuwasm::testing {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string ModulePath(const std::string& relative) { return std::string(GPUWASM_TEST_MODULES) + "/" + relative; }

wasm::Engine& SharedEngine() {
  static wasm::Engine* engine = [] {
    wasm::EngineOptions o;
    o.cache_dir = GPUWASM_TEST_CACHE;
    o.imports = host::GuestImports();
    return new wasm::Engine(std::move(o));
  }();
  return *engine;
}

std::shared_ptr<const wasm::Module> CompileOrDie(const std::string& relative_path) {
  std::string bytes = ReadFile(ModulePath(relative_path));
  auto m = SharedEngine().Compile(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  EXPECT_TRUE(m.ok()) << relative_path << ": " << m.status();
  return m.ok() ? *m : nullptr;
}

GuestRun RunExport(std::shared_ptr<const wasm::Module> module, const std::string& export_name, host::GuestIoOptions io,
                   wasm::InstanceLimits limits, std::optional<wasm::Clock::duration> timeout) {
  GuestRun r;
  r.env = std::make_unique<host::HostEnv>(std::move(io));
  std::optional<wasm::Clock::time_point> deadline;
  if (timeout) deadline = wasm::Clock::now() + *timeout;
  auto inst = wasm::Instance::Create(module, r.env.get(), limits, deadline);
  if (!inst.ok()) {
    r.outcome = inst.status();
    return r;
  }
  r.instance = std::move(*inst);
  r.env->io.Attach(r.instance.get());
  r.outcome = r.instance->Call(export_name, deadline);
  return r;
}

InterpResult InterpRun(const std::string& bytes, const std::string& export_name) {
  InterpRaw raw = InterpRunRaw(bytes, export_name);
  EXPECT_EQ(raw.error, "");
  InterpResult out;
  out.trapped = raw.trapped;
  out.trap_message = raw.trap_message;
  out.value = raw.value;
  if (raw.has_memory) out.memory_sha256 = Sha256Hex(raw.memory);
  return out;
}

std::string MemorySha256(const wasm::Instance& instance) {
  const wasm_rt_memory_t* m = instance.memory();
  if (m == nullptr) return "";
  return Sha256Hex(std::string_view(reinterpret_cast<const char*>(m->data), m->size));
}

uint64_t VirtualMemoryBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmSize:", 0) == 0) return std::stoull(line.substr(7)) * 1024;
  }
  return 0;
}

}  // namespace gpuwasm::testing
