// Large modules (engine.h, ADR 0019): C split into parts compiled in parallel, and the quick tier
// (tcc) that serves a large module until its optimising compile is swapped in. Quick-tier code
// must compute exactly what optimised code computes: the differential corpus and every trap kind
// run through it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "host/guest_io.h"
#include "test_support.h"
#include "wasm/split.h"
#include "wasm/translate.h"

namespace gpuwasm::testing {
namespace {

namespace fs = std::filesystem;

std::span<const uint8_t> Bytes(const std::string& s) {
  return std::span(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

bool OnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && ::access((fs::path(dir) / program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

#define REQUIRE_TCC()                                                                \
  if (!OnPath("tcc"))                                                                \
  GTEST_SKIP() << "tcc is not installed (scripts/install-deps.sh installs it): the " \
                  "quick tier is off and large modules compile with cc"

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/gpuwasm-tiers-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

wasm::EngineOptions OptionsIn(const fs::path& dir) {
  wasm::EngineOptions o;
  o.cache_dir = dir;
  o.imports = host::GuestImports();
  return o;
}

// An engine whose quick tier takes every module, however small.
wasm::EngineOptions QuickOptions(const fs::path& dir) {
  wasm::EngineOptions o = OptionsIn(dir);
  o.quick_tier_min_bytes = 1;
  return o;
}

std::string StdoutOf(std::shared_ptr<const wasm::Module> module) {
  GuestRun r = RunExport(std::move(module), "_start");
  if (!r.outcome.ok()) return "error: " + r.outcome.status().ToString();
  if (!r.outcome->ok()) return std::string("trap: ") + std::string(wasm::TrapKindName(r.outcome->trap));
  return r.env->io.stdout_text();
}

const std::string& LargeModule() {
  static const std::string bytes = ReadFile(ModulePath("guests/large_200.wasm"));
  return bytes;
}

// What the generated module prints when compiled the usual way (one part, optimised).
const std::string& ExpectedOutput() {
  static const std::string out = StdoutOf(CompileOrDie("guests/large_200.wasm"));
  return out;
}

TEST(Split, every_function_is_defined_once_across_the_parts) {
  Result<wasm::Translation> t = wasm::Translate(Bytes(LargeModule()), host::GuestImports());
  ASSERT_TRUE(t.ok()) << t.status();
  std::vector<std::string> parts = wasm::SplitTranslation(t->c_source, 6);
  ASSERT_EQ(parts.size(), 6u);
  std::multiset<std::string> defined;
  size_t largest = 0, smallest = t->c_source.size();
  for (const std::string& p : parts) {
    largest = std::max(largest, p.size());
    smallest = std::min(smallest, p.size());
    std::istringstream lines(p);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("__attribute__((visibility(\"hidden\"))) ", 0) == 0 && line.ends_with(") {")) {
        defined.insert(line.substr(0, line.find('(', 40)));
      }
      EXPECT_FALSE(line.rfind("static u32 func_types[", 0) == 0) << "the type table must be shared: " << line;
    }
  }
  // The generated functions f0..f199 and the C library's, each once.
  EXPECT_GE(defined.size(), 200u);
  for (const std::string& d : defined) EXPECT_EQ(defined.count(d), 1u) << d;
  // About equal parts; part 0 keeps the glue.
  EXPECT_LT(largest, 2 * smallest + 64 * 1024) << largest << " vs " << smallest;
  EXPECT_NE(parts[0].find("gpuwasm_instantiate"), std::string::npos);
  for (size_t i = 1; i < parts.size(); ++i) EXPECT_EQ(parts[i].find("gpuwasm_instantiate"), std::string::npos);
  // One part, or a source not in wasm2c's shape, is returned as it is.
  EXPECT_EQ(wasm::SplitTranslation(t->c_source, 1), std::vector<std::string>{t->c_source});
  EXPECT_EQ(wasm::SplitTranslation("int main(void) { return 0; }\n", 4).size(), 1u);
}

TEST(Split, a_module_compiled_in_parts_computes_what_it_computes_whole) {
  ASSERT_NE(ExpectedOutput().find("checksum"), std::string::npos) << ExpectedOutput();
  TempDir dir;
  wasm::EngineOptions o = OptionsIn(dir.path);
  o.part_bytes = 256 * 1024;  // 1.8 MB of C: 8 parts
  wasm::Engine engine(o);
  Result<std::shared_ptr<const wasm::Module>> m = engine.Compile(Bytes(LargeModule()));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE((*m)->artifact_path().ends_with("-quick.so"));
  EXPECT_EQ(StdoutOf(*m), ExpectedOutput());
}

TEST(Split, a_split_the_compiler_refuses_is_compiled_whole) {
  TempDir dir;
  // A compiler that refuses every part (-c) and compiles a whole module.
  fs::path cc = dir.path / "refuses-parts-cc";
  {
    std::ofstream script(cc);
    script << "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = -c ] && { echo 'refuses-parts-cc: no' >&2; exit 1; }; done\n"
              "exec cc \"$@\"\n";
  }
  fs::permissions(cc, fs::perms::owner_all);
  wasm::EngineOptions o = OptionsIn(dir.path / "cache");
  o.cc = cc.string();
  o.part_bytes = 256 * 1024;
  wasm::Engine engine(o);
  Result<std::shared_ptr<const wasm::Module>> m = engine.Compile(Bytes(LargeModule()));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(StdoutOf(*m), ExpectedOutput());
}

TEST(QuickTier, a_large_module_runs_quick_code_first_then_optimised_code) {
  REQUIRE_TCC();
  TempDir dir;
  wasm::Engine engine(QuickOptions(dir.path));
  Result<wasm::Artifact> quick = engine.Build(Bytes(LargeModule()));
  ASSERT_TRUE(quick.ok()) << quick.status();
  EXPECT_TRUE(quick->quick);
  EXPECT_TRUE(quick->key.ends_with("-quick")) << quick->key;
  EXPECT_EQ(engine.quick_compiles(), 1u);
  Result<std::shared_ptr<const wasm::Module>> first = engine.Load(*quick);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(StdoutOf(*first), ExpectedOutput());

  engine.WaitForBackgroundCompiles();
  std::optional<wasm::Artifact> optimized = engine.Optimized(*quick);
  ASSERT_TRUE(optimized.has_value());
  EXPECT_FALSE(optimized->quick);
  EXPECT_EQ(optimized->key + "-quick", quick->key);
  EXPECT_EQ(engine.background_compiles(), 1u);
  EXPECT_FALSE(engine.Optimized(*optimized).has_value());
  Result<std::shared_ptr<const wasm::Module>> second = engine.Load(*optimized);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(StdoutOf(*second), ExpectedOutput());

  // Another process with the same cache finds the optimised artifact at once.
  wasm::Engine later(QuickOptions(dir.path));
  Result<wasm::Artifact> again = later.Build(Bytes(LargeModule()));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->quick);
  EXPECT_EQ(later.quick_compiles(), 0u);
}

TEST(QuickTier, a_node_that_stopped_before_the_optimising_compile_queues_it_again) {
  REQUIRE_TCC();
  TempDir dir;
  std::string quick_key;
  {
    wasm::Engine engine(QuickOptions(dir.path));
    Result<wasm::Artifact> quick = engine.Build(Bytes(LargeModule()));
    ASSERT_TRUE(quick.ok()) << quick.status();
    quick_key = quick->key;
    // Destroyed at once: the background compile is cancelled.
  }
  std::string key = quick_key.substr(0, quick_key.size() - 6);
  if (fs::exists(dir.path / (key + ".so"))) GTEST_SKIP() << "the optimising compile finished before the engine ended";
  wasm::Engine engine(QuickOptions(dir.path));
  Result<wasm::Artifact> found = engine.Build(Bytes(LargeModule()));
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_TRUE(found->quick);
  EXPECT_TRUE(found->from_cache);
  EXPECT_EQ(engine.quick_compiles(), 0u);
  engine.WaitForBackgroundCompiles();
  EXPECT_TRUE(engine.Optimized(*found).has_value());
  EXPECT_TRUE(fs::exists(dir.path / (key + ".so")));
}

TEST(QuickTier, a_one_shot_engine_starts_no_optimising_compile) {
  REQUIRE_TCC();
  TempDir dir;
  wasm::EngineOptions o = QuickOptions(dir.path);
  o.optimize_in_background = false;  // gpuwasm run
  wasm::Engine engine(o);
  std::string bytes = ReadFile(ModulePath("traps/traps.wasm"));
  Result<wasm::Artifact> a = engine.Build(Bytes(bytes));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->quick);
  engine.WaitForBackgroundCompiles();
  EXPECT_FALSE(engine.Optimized(*a).has_value());
  EXPECT_EQ(engine.background_compiles(), 0u);
  EXPECT_FALSE(fs::exists(dir.path / (a->key.substr(0, a->key.size() - 6) + ".so")));
}

TEST(QuickTier, a_quick_compiler_that_fails_leaves_the_module_to_cc) {
  TempDir dir;
  wasm::EngineOptions o = QuickOptions(dir.path);
  o.quick_cc = "false";  // exits 1, as a compiler refusing the C would
  wasm::Engine engine(o);
  Result<wasm::Artifact> a = engine.Build(Bytes(LargeModule()));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(a->quick);
  EXPECT_EQ(engine.quick_compiles(), 0u);
  Result<std::shared_ptr<const wasm::Module>> m = engine.Load(*a);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(StdoutOf(*m), ExpectedOutput());
}

// Quick-tier code against wabt's interpreter: every test_* export of the differential corpus
// (bit counting, conversions, memory, control flow), the same check corpus_test.cc makes of
// optimised code.
TEST(QuickTier, the_corpus_matches_the_wabt_interpreter) {
  REQUIRE_TCC();
  TempDir dir;
  wasm::Engine engine(QuickOptions(dir.path));
  int modules = 0, cases = 0;
  for (const auto& e : fs::directory_iterator(ModulePath("corpus"))) {
    if (e.path().extension() != ".wasm") continue;
    ++modules;
    std::string bytes = ReadFile(e.path().string());
    Result<wasm::Artifact> a = engine.Build(Bytes(bytes));
    ASSERT_TRUE(a.ok()) << e.path() << ": " << a.status();
    ASSERT_TRUE(a->quick) << e.path();
    Result<std::shared_ptr<const wasm::Module>> m = engine.Load(*a);
    ASSERT_TRUE(m.ok()) << m.status();
    for (const wasm::ExportInfo& x : (*m)->exports()) {
      if (x.name.rfind("test_", 0) != 0) continue;
      ++cases;
      InterpResult want = InterpRun(bytes, x.name);
      GuestRun got = RunExport(*m, x.name);
      ASSERT_TRUE(got.outcome.ok()) << x.name << ": " << got.outcome.status();
      ASSERT_EQ(want.trapped, !got.outcome->ok()) << e.path().stem() << "." << x.name;
      EXPECT_EQ(static_cast<uint32_t>(got.outcome->exit_code), want.value) << e.path().stem() << "." << x.name;
      EXPECT_EQ(MemorySha256(*got.instance), want.memory_sha256) << e.path().stem() << "." << x.name;
    }
  }
  EXPECT_GE(modules, 7);
  EXPECT_GE(cases, 100);
}

TEST(QuickTier, traps_and_deadlines_stop_quick_code) {
  REQUIRE_TCC();
  TempDir dir;
  wasm::Engine engine(QuickOptions(dir.path));
  std::string bytes = ReadFile(ModulePath("traps/traps.wasm"));
  Result<wasm::Artifact> a = engine.Build(Bytes(bytes));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(a->quick);
  Result<std::shared_ptr<const wasm::Module>> m = engine.Load(*a);
  ASSERT_TRUE(m.ok()) << m.status();
  const std::pair<const char*, wasm::TrapKind> cases[] = {
      {"oob_load", wasm::TrapKind::kOutOfBounds},
      {"oob_load_far", wasm::TrapKind::kOutOfBounds},
      {"oob_store", wasm::TrapKind::kOutOfBounds},
      {"fill_oob", wasm::TrapKind::kOutOfBounds},
      {"unreachable", wasm::TrapKind::kUnreachable},
      {"div_zero", wasm::TrapKind::kIntegerDivideByZero},
      {"rem_zero", wasm::TrapKind::kIntegerDivideByZero},
      {"int_overflow", wasm::TrapKind::kIntegerOverflow},
      {"invalid_conversion", wasm::TrapKind::kInvalidConversion},
      {"trunc_overflow", wasm::TrapKind::kIntegerOverflow},
      {"call_indirect_null", wasm::TrapKind::kIndirectCallMismatch},
      {"call_indirect_type", wasm::TrapKind::kIndirectCallMismatch},
      {"call_indirect_range", wasm::TrapKind::kIndirectCallMismatch},
      {"stack_exhaustion", wasm::TrapKind::kStackExhausted},
  };
  for (const auto& [name, kind] : cases) {
    GuestRun r = RunExport(*m, name);
    ASSERT_TRUE(r.outcome.ok()) << name << ": " << r.outcome.status();
    EXPECT_EQ(r.outcome->trap, kind) << name << ": " << wasm::TrapKindName(r.outcome->trap);
  }
  // The interrupt check in quick code reads the flag through a call (tcc has no thread-locals).
  GuestRun spin = RunExport(*m, "spin", {}, {}, std::chrono::milliseconds(100));
  ASSERT_TRUE(spin.outcome.ok()) << spin.outcome.status();
  EXPECT_EQ(spin.outcome->trap, wasm::TrapKind::kDeadlineExceeded);
  GuestRun ok = RunExport(*m, "ok");
  ASSERT_TRUE(ok.outcome.ok());
  EXPECT_EQ(ok.outcome->exit_code, 42);
}

}  // namespace
}  // namespace gpuwasm::testing
