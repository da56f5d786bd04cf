// The engine's translator child and expansion limits: a module that would make libwabt or wasm2c
// expand without bound is refused by name before translation, and whatever translation costs is
// paid by a child process under the compile limits, with the same errors as in this process.
// Build() produces an artifact (and its exports) without loading it; another engine loads it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "../common/wasm_bytes.h"
#include "host/guest_io.h"
#include "test_support.h"
#include "wasm/translate.h"

namespace gpuwasm::testing {
namespace {

std::span<const uint8_t> Bytes(const std::string& s) {
  return std::span(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

struct Dir {
  std::filesystem::path path;
  Dir() {
    char tmpl[] = "/tmp/gpuwasm-translator-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~Dir() { std::filesystem::remove_all(path); }
};

wasm::EngineOptions Options(const std::filesystem::path& dir, bool child) {
  wasm::EngineOptions o;
  o.cache_dir = dir;
  o.imports = host::GuestImports();
  if (child) o.translator = GPUWASM_BINARY;
  return o;
}

// `functions` functions of type () -> (), each declaring `locals` i32 locals, the first exported
// as _start.
std::string ModuleWithLocals(uint64_t functions, uint64_t locals) {
  std::string body = Leb(1) + Leb(locals) + "\x7f" + "\x0b";
  std::string code = Leb(functions), funcs = Leb(functions);
  for (uint64_t i = 0; i < functions; ++i) {
    code += Leb(body.size()) + body;
    funcs += Leb(0);
  }
  return std::string("\0asm\1\0\0\0", 8) + Section(1, Leb(1) + std::string("\x60\x00\x00", 3)) + Section(3, funcs) +
         Section(7, Leb(1) + Leb(6) + "_start" + std::string(1, '\0') + Leb(0)) + Section(10, code);
}

// A table of `entries` funcref entries.
std::string ModuleWithTable(uint64_t entries) {
  return std::string("\0asm\1\0\0\0", 8) + Section(4, Leb(1) + "\x70" + std::string(1, '\0') + Leb(entries));
}

class Translator : public ::testing::TestWithParam<bool> {};  // in this process, or in the child

TEST_P(Translator, a_module_over_an_expansion_limit_is_refused_naming_the_limit) {
  Dir dir;
  wasm::Engine engine(Options(dir.path, GetParam()));
  std::string locals = ModuleWithLocals(1, 20'000'000);
  EXPECT_LT(locals.size(), 64u);  // a tiny module asking for gigabytes of C
  Status s = engine.Compile(Bytes(locals)).status();
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(
      s.message(),
      "module rejected: function 0 declares locals: 20000000; gpuwasm allows at most 50000 (max_locals_per_function)");
  s = engine.Compile(Bytes(ModuleWithLocals(400, 50'000))).status();
  EXPECT_EQ(s.message(),
            "module rejected: its functions declare locals: 20000000; gpuwasm allows at most 2000000 (max_locals)");
  s = engine.Compile(Bytes(ModuleWithTable(100'000'000))).status();
  EXPECT_EQ(
      s.message(),
      "module rejected: a table starts with entries: 100000000; gpuwasm allows at most 1000000 (max_table_entries)");
  // Within the limits it compiles and runs.
  auto ok = engine.Compile(Bytes(ModuleWithLocals(2, 40'000)));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(RunExport(*ok, "_start").outcome->exit_code, 0);
}

TEST_P(Translator, errors_are_the_same_in_the_child_as_in_this_process) {
  Dir dir;
  wasm::Engine engine(Options(dir.path, GetParam()));
  Status s = engine.Compile(Bytes(ReadFile(ModulePath("reject/simd.wasm")))).status();
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_EQ(s.message(), "module uses SIMD (simd128), which gpuwasm does not support");
  s = engine.Compile(Bytes(std::string("\0asm\1\0\0\0\x01\x05", 10))).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("invalid wasm module"), std::string::npos) << s;
  s = engine.Compile(Bytes(ReadFile(GPUWASM_WABT_ABORT_WASM))).status();  // libwabt asserts on it
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("malformed wasm module"), std::string::npos) << s;
}

INSTANTIATE_TEST_SUITE_P(Where, Translator, ::testing::Values(false, true), [](const auto& info) {
  return info.param ? std::string("child") : std::string("in_process");
});

TEST(TranslatorChild, translation_over_the_memory_limit_costs_the_child_not_this_process) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitized translator runs without an address-space limit";
#endif
  Dir dir;
  wasm::EngineOptions o = Options(dir.path, true);
  o.compile_limits.address_space_bytes = 256ull << 20;  // far below what 1.9 M locals' C needs
  wasm::Engine engine(o);
  Status s = engine.Compile(Bytes(ModuleWithLocals(40, 48'000))).status();
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(s.message(), "translating the module exceeded the memory limit of 256 MiB");
  o.compile_limits.address_space_bytes = 4ull << 30;
  o.compile_limits.wall = std::chrono::milliseconds(300);
  wasm::Engine slow(o);
  s = slow.Compile(Bytes(ModuleWithLocals(40, 48'000))).status();
  EXPECT_EQ(s.message(), "translating the module exceeded the wall-clock limit of 300 ms");
  // Nothing of the failed translations is left in the cache directory.
  EXPECT_TRUE(std::filesystem::is_empty(dir.path));
}

TEST(Build, knows_the_exports_without_loading_and_another_engine_loads_the_artifact) {
  Dir dir;
  std::string bytes = ReadFile(ModulePath("traps/traps.wasm"));
  wasm::Artifact a;
  {
    wasm::Engine builder(Options(dir.path, true));
    auto built = builder.Build(Bytes(bytes));
    ASSERT_TRUE(built.ok()) << built.status();
    a = *built;
    EXPECT_FALSE(a.from_cache);
    ASSERT_NE(a.FindExport("ok"), nullptr);
    EXPECT_EQ(a.FindExport("ok")->kind, wasm::ExportKind::kI32);
    EXPECT_EQ(builder.compiles(), 1u);
    auto again = builder.Build(Bytes(bytes));  // known in this process: no work
    EXPECT_EQ(again->key, a.key);
    EXPECT_EQ(builder.compiles() + builder.cache_loads(), 1u);
  }
  wasm::Engine loader(Options(dir.path, false));  // another process, sharing the cache
  auto m = loader.Load(a);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(RunExport(*m, "ok").outcome->exit_code, 42);
  auto rebuilt = loader.Build(Bytes(bytes));
  ASSERT_TRUE(rebuilt.ok());
  EXPECT_TRUE(rebuilt->from_cache);
  EXPECT_EQ(rebuilt->exports.size(), a.exports.size());
  wasm::Artifact missing = a;
  missing.key = std::string(64, '0');
  EXPECT_EQ(loader.Load(missing).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace gpuwasm::testing
