// The instrumentation pass on syntax trees: what it adds where, what it refuses, and that ptxas
// takes every instrumented corpus and conformance file (when the toolkit is here).
#include "ptx/instrument.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "ptx/parser.h"
#include "ptx/printer.h"
#include "ptx_files.h"

namespace gpuwasm::ptx {
namespace {

namespace fs = std::filesystem;

constexpr const char* kHead = ".version 8.0\n.target sm_80\n.address_size 64\n";

Module MustParse(const std::string& text) {
  auto m = Parse(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *m : Module{};
}

int Count(const Function& f, std::string_view opcode) {
  int n = 0;
  for (const Statement& s : f.body) n += s.kind == Statement::Kind::kInstruction && s.inst.opcode == opcode;
  return n;
}

TEST(Instrument, kernels_get_the_hidden_parameters_after_their_own) {
  Module m = MustParse(std::string(kHead) +
                       ".visible .entry k(.param .u64 p, .param .u32 n)\n{\n .reg .b64 %rd<2>;\n"
                       " ld.param.u64 %rd1, [p];\n st.global.u32 [%rd1], 1;\n ret;\n}\n");
  auto i = Instrument(m);
  ASSERT_TRUE(i.ok()) << i.status();
  const Function& k = i->functions[0];
  ASSERT_EQ(k.params.size(), 5u);
  for (int h = 0; h < 3; ++h) {
    EXPECT_EQ(k.params[2 + h].name, kHiddenParams[h]);
    EXPECT_EQ(k.params[2 + h].offset, 16u + 8u * h);  // after n (offset 8), 8-aligned
  }
  EXPECT_EQ(k.param_bytes, 16u + kHiddenParamBytes);
  EXPECT_EQ(Count(k, "isspacep"), 0);  // a .global access: no generic slow path
  // The printed text parses to the same parameters.
  auto again = Parse(Print(*i, {.keep_lines = true}));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->functions[0].param_bytes, k.param_bytes);
}

TEST(Instrument, backward_branches_and_calls_check_the_abort_word_and_accesses_are_fenced) {
  Module m =
      MustParse(std::string(kHead) +
                ".func g()\n{\n ret;\n}\n"
                ".visible .entry k(.param .u64 p)\n{\n .reg .pred %p<2>;\n .reg .b32 %r<3>;\n .reg .b64 %rd<2>;\n"
                " ld.param.u64 %rd1, [p];\n mov.u32 %r1, 0;\n$L:\n ld.u32 %r2, [%rd1];\n"
                " add.u32 %r1, %r1, 1;\n setp.lt.u32 %p1, %r1, %r2;\n @%p1 bra $L;\n call.uni g, ();\n"
                " bra $F;\n$F:\n ret;\n}\n");
  auto i = Instrument(m);
  ASSERT_TRUE(i.ok()) << i.status();
  const Function& k = i->functions[1];
  int volatile_loads = 0;
  for (const Statement& s : k.body) {
    if (s.kind == Statement::Kind::kInstruction && s.inst.text() == "ld.volatile.global.u32") ++volatile_loads;
  }
  EXPECT_EQ(volatile_loads, 2);        // the loop's back edge and the call; not the forward bra $F
  EXPECT_EQ(Count(k, "isspacep"), 2);  // the generic load may be shared or local memory
  // The device function reads the window from the static shared copy the entry writes.
  EXPECT_NE(i->FindGlobal("__gw_ctx"), nullptr);
  EXPECT_EQ(i->functions[0].body[0].inst.text(), "ld.shared.u64");
}

TEST(Instrument, straight_line_code_checks_the_abort_word_every_budget) {
  std::string body;
  for (uint32_t k = 0; k < 2 * kStraightLineBudget + 10; ++k) body += " add.u32 %r1, %r1, 1;\n";
  Module m = MustParse(std::string(kHead) + ".visible .entry k()\n{\n .reg .b32 %r<2>;\n mov.u32 %r1, 0;\n" + body +
                       " ret;\n}\n");
  auto i = Instrument(m);
  ASSERT_TRUE(i.ok()) << i.status();
  int checks = 0;
  for (const Statement& s : i->functions[0].body) {
    checks += s.kind == Statement::Kind::kInstruction && s.inst.text() == "ld.volatile.global.u32";
  }
  EXPECT_EQ(checks, 2);
}

TEST(Instrument, instructions_a_tenant_must_not_use_are_refused_by_line) {
  Module m = MustParse(std::string(kHead) +
                       ".visible .entry k(.param .u64 p)\n{\n .reg .b64 %rd<2>;\n ld.param.u64 %rd1, [p];\n"
                       " brkpt;\n discard.global.L2 [%rd1], 128;\n pmevent 1;\n ret;\n}\n");
  auto i = Instrument(m);
  ASSERT_FALSE(i.ok());
  EXPECT_EQ(i.status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(i.status().message(),
            "line 8: 'brkpt' is not allowed in a tenant's kernel: a breakpoint stops the whole device; "
            "line 9: 'discard.global.L2' is not allowed in a tenant's kernel: discarded cache lines may be another "
            "instance's data; line 10: 'pmevent' is not allowed in a tenant's kernel: performance-monitor events "
            "belong to the operator");
}

TEST(Instrument, a_long_nanosleep_is_bounded) {
  Module m = MustParse(std::string(kHead) +
                       ".visible .entry k()\n{\n .reg .b32 %r<2>;\n mov.u32 %r1, 5000000;\n nanosleep.u32 4000000000;\n"
                       " nanosleep.u32 %r1;\n ret;\n}\n");
  auto i = Instrument(m);
  ASSERT_TRUE(i.ok()) << i.status();
  const Function& k = i->functions[0];
  int sleeps = 0;
  for (size_t s = 0; s < k.body.size(); ++s) {
    const Instruction& in = k.body[s].inst;
    if (in.opcode != "nanosleep") continue;
    ++sleeps;
    if (in.operands[0].kind == Operand::Kind::kImmediate) {
      EXPECT_EQ(in.operands[0].imm_bits, kMaxNanosleepNs);
    } else {
      EXPECT_EQ(k.body[s - 1].inst.text(), "min.u32");  // the register operand, clamped first
    }
  }
  EXPECT_EQ(sleeps, 2);
}

TEST(Instrument, a_narrow_address_register_is_widened_before_the_check) {
  Module m =
      MustParse(std::string(kHead) +
                ".visible .entry k()\n{\n .reg .b32 %r<3>;\n mov.u32 %r1, 64;\n ld.u32 %r2, [%r1+4];\n ret;\n}\n");
  auto i = Instrument(m);
  ASSERT_TRUE(i.ok()) << i.status();
  auto again = Parse(Print(*i));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(Count(again->functions[0], "cvt"), 1);
}

TEST(Instrument, an_async_copy_of_a_register_size_is_refused) {
  Module m = MustParse(std::string(kHead) +
                       ".visible .entry k(.param .u64 p)\n{\n .reg .b32 %r<2>;\n .reg .b64 %rd<2>;\n"
                       " .shared .align 16 .b8 s[64];\n ld.param.u64 %rd1, [p];\n mov.u32 %r1, s;\n"
                       " cp.async.ca.shared.global [%r1], [%rd1], 4, %r1;\n cp.async.wait_all;\n ret;\n}\n");
  auto i = Instrument(m);
  ASSERT_TRUE(i.ok()) << i.status();  // the size is the immediate; the fourth operand is src-size
  Module bad = MustParse(std::string(kHead) +
                         ".visible .entry k(.param .u64 p)\n{\n .reg .b32 %r<2>;\n .reg .b64 %rd<2>;\n"
                         " .shared .align 16 .b8 s[64];\n ld.param.u64 %rd1, [p];\n mov.u32 %r1, s;\n"
                         " cp.async.wait_all;\n ret;\n}\n");
  EXPECT_TRUE(Instrument(bad).ok());  // wait and commit have no size
}

TEST(Instrument, only_variables_whose_address_is_taken_are_let_through_the_slow_path) {
  Module m = MustParse(std::string(kHead) +
                       ".global .align 4 .b8 direct[64];\n.global .align 4 .b8 pointed[64];\n"
                       ".visible .entry k(.param .u64 p)\n{\n .reg .b32 %r<3>;\n .reg .b64 %rd<3>;\n"
                       " ld.param.u64 %rd1, [p];\n ld.global.u32 %r1, [direct+4];\n mov.u64 %rd2, pointed;\n"
                       " ld.global.u32 %r2, [%rd1];\n ret;\n}\n");
  auto i = Instrument(m);
  ASSERT_TRUE(i.ok()) << i.status();
  int direct = 0, pointed = 0;
  for (const Statement& s : i->functions[0].body) {
    for (const Operand& o : s.inst.operands) {
      direct += o.kind == Operand::Kind::kSymbol && o.symbol == "direct";
      pointed += o.kind == Operand::Kind::kSymbol && o.symbol == "pointed";
    }
  }
  EXPECT_EQ(direct, 0);   // [direct+4] is in bounds statically; no pointer can reach it
  EXPECT_EQ(pointed, 2);  // the guest's mov, and the slow path of the one fenced load
}

TEST(Instrument, a_small_module_cannot_make_a_huge_one) {
  // 300 variables with their address taken, 2000 generic loads: each load's slow path would check
  // all 300 (3 M statements). The pass stops at its bound instead.
  std::string text = kHead;
  for (int v = 0; v < 300; ++v) text += ".global .align 4 .b8 g" + std::to_string(v) + "[64];\n";
  text += ".visible .entry k(.param .u64 p)\n{\n .reg .b32 %r<2>;\n .reg .b64 %rd<3>;\n ld.param.u64 %rd1, [p];\n";
  for (int v = 0; v < 300; ++v) text += " mov.u64 %rd2, g" + std::to_string(v) + ";\n";
  for (int k = 0; k < 2000; ++k) text += " ld.u32 %r1, [%rd1];\n";
  text += " ret;\n}\n";
  ASSERT_LT(text.size(), 100u << 10);
  auto i = Instrument(MustParse(text));
  ASSERT_FALSE(i.ok());
  EXPECT_EQ(i.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(i.status().message(), "the instrumented module would have more than 524288 statements");
}

TEST(Instrument, names_of_the_instrumentation_are_reserved) {
  Module m = MustParse(std::string(kHead) + ".visible .entry k(.param .u64 __gw_control)\n{\n ret;\n}\n");
  auto i = Instrument(m);
  ASSERT_FALSE(i.ok());
  EXPECT_EQ(i.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(i.status().message().find("__gw_control is reserved"), std::string::npos) << i.status();
}

TEST(Instrument, control_faults_are_described_as_the_cpu_device_words_its_own) {
  ControlBlock b;
  b.fault = kFenceFault;
  b.line = 23;
  b.access = 1u << 16 | 4;
  b.address = 0x7f00;
  EXPECT_EQ(DescribeControlFault(b, "k"),
            "kernel 'k' (PTX line 23): global store of 4 bytes at 0x7f00 is outside the instance's buffers");
  b.access = 16;
  EXPECT_EQ(DescribeControlFault(b, "k"),
            "kernel 'k' (PTX line 23): global load of 16 bytes at 0x7f00 is outside the instance's buffers");
  b.fault = kTrapFault;
  EXPECT_EQ(DescribeControlFault(b, "k"), "kernel 'k' (PTX line 23): trap instruction executed");
}

// What the driver's JIT gets on a GPU: ptxas takes every instrumented file, for its own arch.
TEST(Instrument, ptxas_accepts_every_instrumented_corpus_and_conformance_file) {
  const Ptxas ptxas("instrument");
  if (!ptxas.available()) GTEST_SKIP() << "no ptxas (the CUDA toolkit is not installed)";
  int files = 0;
  for (const fs::path& p : CorpusAndConformancePtx()) {
    const std::string name = p.filename().string();
    auto i = Instrument(MustParse(ReadFile(p)));
    ASSERT_TRUE(i.ok()) << name << ": " << i.status();
    const std::string printed = Print(*i, {.keep_lines = true});
    auto again = Parse(printed);
    ASSERT_TRUE(again.ok()) << name << ": " << again.status();
    EXPECT_EQ(Print(*again), Print(*i)) << name << ": the printed text does not parse back to the same code";
    ptxas.ExpectAccepts(printed, name, ArchOf(p));
    ++files;
  }
  EXPECT_GE(files, 60);
}

}  // namespace
}  // namespace gpuwasm::ptx
