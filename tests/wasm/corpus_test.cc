// Differential tests: every test_* export of the corpus modules must produce the same value and
// the same final memory in gpuwasm's engine as in wabt's reference interpreter.
#include <gtest/gtest.h>

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

INSTANTIATE_TEST_SUITE_P(Modules, Corpus,
                         ::testing::Values("ops_i32", "ops_i64", "ops_f32", "ops_f64", "memory", "control", "compute"));

}  // namespace
}  // namespace gpuwasm::testing
