// The PTX printer: every corpus and conformance file printed and parsed again gives the same tree
// (Diff), printing is a fixpoint, and ptxas accepts the printed text (when the toolkit is here).
#include "ptx/printer.h"

#include <gtest/gtest.h>

#include "ptx/parser.h"
#include "ptx_files.h"

namespace gpuwasm::ptx {
namespace {

namespace fs = std::filesystem;

TEST(Printer, every_corpus_and_conformance_file_prints_back_to_the_same_tree) {
  int files = 0;
  for (const fs::path& p : CorpusAndConformancePtx()) {
    auto m = Parse(ReadFile(p));
    ASSERT_TRUE(m.ok()) << p << ": " << m.status();
    const std::string printed = Print(*m);
    auto again = Parse(printed);
    ASSERT_TRUE(again.ok()) << p << ": the printed text does not parse: " << again.status();
    EXPECT_EQ(Diff(*m, *again), "") << p;
    EXPECT_EQ(Print(*again), printed) << p << ": printing is not a fixpoint";
    ++files;
  }
  EXPECT_GE(files, 60);  // 20+ corpus kernels and 10+ conformance files, two or three archs each
}

TEST(Printer, scopes_registers_calls_and_initialisers_print_as_declared) {
  const char* text = R"(.version 8.0
.target sm_80, texmode_independent
.address_size 64
.global .align 4 .u32 table[4] = {1, 2, 4294967295, 0};
.global .align 4 .f32 pi = 0f40490FDB;
.extern .shared .align 16 .b8 dyn[];
.func (.param .b32 r) f(.param .b32 a);
.visible .entry k(.param .u64 p, .param .align 8 .b8 s[16])
.maxntid 128, 0, 2
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>, x;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [s+-4];
  { .reg .b32 t; .param .b32 a0; .param .b32 r0; st.param.b32 [a0], %r1;
    call.uni (r0), f, (a0); ld.param.b32 %r2, [r0]; }
  { .reg .b32 t; mov.b32 t, -1; }
  setp.lt.s32 %p1, %r2, -7;
  @!%p1 st.global.v2.u32 [%rd1+8], {%r2, _};
  add.cc.u32 %r3|%p1, %r2, 1;
  ret;
}
.func (.param .b32 r) f(.param .b32 a)
{
  .reg .b32 v;
  ld.param.b32 v, [a];
  st.param.b32 [r], v;
  ret;
}
)";
  auto m = Parse(text);
  ASSERT_TRUE(m.ok()) << m.status();
  const std::string printed = Print(*m);
  auto again = Parse(printed);
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << printed;
  EXPECT_EQ(Diff(*m, *again), "") << printed;
  for (const char* want : {".target sm_80, texmode_independent", "{1, 2, 4294967295, 0}", "= 0f40490FDB",
                           ".extern .shared .align 16 .b8 dyn[];", ".reg .b32 %r<4>;", ".reg .b32 x;", "[s+-4]",
                           "call.uni (r0), f, (a0);", "mov.b32 t, -1;", "@!%p1 st.global.v2.u32 [%rd1+8], {%r2, _};",
                           "%r3|%p1", ".maxntid 128, 0, 2", ".func (\n\t.param .b32 r\n) f(\n\t.param .b32 a\n);"}) {
    EXPECT_NE(printed.find(want), std::string::npos) << want << " in\n" << printed;
  }
  // Both scoped `t` registers are declared in their own braces again.
  EXPECT_EQ(m->registers.size(), again->registers.size());
}

TEST(Printer, a_definition_after_its_prototype_keeps_register_owners) {
  auto m = Parse(
      ".version 8.0\n.target sm_80\n.address_size 64\n.func g();\n"
      ".visible .entry k()\n{\n .reg .b32 a;\n mov.u32 a, 1;\n call.uni g, ();\n ret;\n}\n"
      ".func g()\n{\n .reg .b32 b;\n mov.u32 b, 2;\n ret;\n}\n");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->functions.size(), 2u);
  for (const Register& r : m->registers) {
    EXPECT_EQ(m->functions[static_cast<size_t>(r.function)].name, r.name == "a" ? "k" : "g") << r.name;
  }
}

// ptxas (the toolkit's assembler) takes the printed text: what the driver's JIT gets on a GPU.
TEST(Printer, ptxas_accepts_the_printed_corpus) {
  const Ptxas ptxas("printer");
  if (!ptxas.available()) GTEST_SKIP() << "no ptxas (the CUDA toolkit is not installed)";
  int files = 0;
  for (const fs::path& p : CorpusAndConformancePtx()) {
    if (ArchOf(p) != "sm_90") continue;  // one arch: ptxas takes ~0.1 s a file
    auto m = Parse(ReadFile(p));
    ASSERT_TRUE(m.ok()) << p;
    ptxas.ExpectAccepts(Print(*m), p.filename().string(), "sm_90");
    ++files;
  }
  EXPECT_GE(files, 30);
}

}  // namespace
}  // namespace gpuwasm::ptx
