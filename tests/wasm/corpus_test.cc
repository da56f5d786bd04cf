// Differential tests: every test_* export of the corpus modules must produce the same value and
// the same final memory in gpuwasm's engine as in wabt's reference interpreter.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "test_support.h"

namespace gpuwasm::testing {
namespace {

class Corpus : public ::testing::TestWithParam<std::string> {};

TEST_P(Corpus, engine_matches_wabt_interpreter) {
  const std::string rel = "corpus/" + GetParam() + ".wasm";
  std::string bytes = ReadFile(ModulePath(rel));
  auto module = CompileOrDie(rel);
  ASSERT_NE(module, nullptr);
  int cases = 0;
  for (const wasm::ExportInfo& e : module->exports()) {
    if (e.name.rfind("test_", 0) != 0) continue;
    ++cases;
    ASSERT_EQ(e.kind, wasm::ExportKind::kI32) << e.name;
    InterpResult want = InterpRun(bytes, e.name);
    GuestRun got = RunExport(module, e.name);
    ASSERT_TRUE(got.outcome.ok()) << e.name << ": " << got.outcome.status();
    ASSERT_EQ(want.trapped, !got.outcome->ok())
        << e.name << " interp: " << want.trap_message << " engine: " << wasm::TrapKindName(got.outcome->trap);
    EXPECT_EQ(static_cast<uint32_t>(got.outcome->exit_code), want.value) << GetParam() << "." << e.name;
    EXPECT_EQ(MemorySha256(*got.instance), want.memory_sha256) << GetParam() << "." << e.name << " memory";
  }
  EXPECT_GE(cases, 5) << "corpus module " << GetParam() << " has too few test_ exports";
}

// Every module built into corpus/ (tests/wasm/corpus/*.wat, and the compute guest): a new .wat is
// a new case. At least the seven the corpus started with.
std::vector<std::string> CorpusModules() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(ModulePath("corpus"), ec)) {
    if (e.path().extension() == ".wasm") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(CorpusList, has_every_module_the_corpus_started_with) {
  const std::vector<std::string> names = CorpusModules();
  for (const char* n : {"ops_i32", "ops_i64", "ops_f32", "ops_f64", "memory", "control", "compute"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Modules, Corpus, ::testing::ValuesIn(CorpusModules()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace gpuwasm::testing
