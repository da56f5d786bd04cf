// The PTX front end: every corpus file parses; each malformed file (tests/ptx/malformed/, its
// expected error in the first line) is rejected with exactly that message; syntax nvcc emits
// (directives without ';', nested scopes, vectors, calls, initialisers, debug sections) parses.
#include "ptx/parser.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "ptx_files.h"

namespace gpuwasm::ptx {
namespace {

TEST(Parser, every_corpus_kernel_parses_and_validates) {
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(GPUWASM_KERNEL_PTX_DIR)) {
    if (e.path().extension() != ".ptx") continue;
    ++files;
    auto m = Parse(ReadFile(e.path()));
    EXPECT_TRUE(m.ok()) << e.path() << ": " << m.status();
    if (m.ok()) {
      EXPECT_FALSE(m->functions.empty()) << e.path();
    }
  }
  EXPECT_GE(files, 40);  // 20+ kernels, sm_80 and sm_90
}

TEST(Parser, malformed_files_give_their_expected_error) {
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(GPUWASM_MALFORMED_DIR)) {
    std::string text = ReadFile(e.path());
    std::string first = text.substr(0, text.find('\n'));
    ASSERT_EQ(first.rfind("// expect: ", 0), 0u) << e.path() << " has no '// expect:' line";
    std::string want = first.substr(11);
    auto m = Parse(text);
    ++files;
    ASSERT_FALSE(m.ok()) << e.path() << " parsed, but should fail with: " << want;
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << e.path();
    EXPECT_EQ(m.status().message(), want) << e.path();
  }
  EXPECT_GE(files, 10);
}

constexpr const char* kSample = R"(//
// hand-written sample of the forms nvcc emits
//
.version 9.0
.target sm_90
.address_size 64

.global .align 4 .b8 table[8] = {1, 2, 3, 4, 255, 0, 0, 128};
.extern .shared .align 16 .b8 dyn[];
.file 1 "sample.cu"

.func  (.param .b32 func_retval0) helper(
	.param .b32 helper_param_0
)
{
	.reg .f32 	%f<3>;
	ld.param.f32 	%f1, [helper_param_0];
	add.f32 	%f2, %f1, 0f3F800000;
	st.param.f32 	[func_retval0+0], %f2;
	ret;
}

.visible .entry sample(
	.param .u64 sample_param_0,
	.param .u32 sample_param_1,
	.param .align 8 .b8 sample_param_2[16]
)
.maxntid 128, 1, 1
{
	.local .align 4 .b8 	__local_depot0[16];
	.reg .pred 	%p<2>;
	.reg .b16 	%rs<3>;
	.reg .b32 	%r<6>;
	.reg .f32 	%f<4>;
	.reg .b64 	%rd<4>;
	.loc 1 12 3
	ld.param.u64 	%rd1, [sample_param_0];
	mov.u32 	%r1, %tid.x;
	{ .reg .b16 c; mov.b16 c, 0x3C00U; mov.b16 %rs1, c; }
	mov.b32 	%r2, {%rs1, %rs1};
	shfl.sync.down.b32 	%r3|%p1, %r1, 1, 31, -1;
	{ // callseq 0, 0
	.param .b32 param0;
	st.param.f32 	[param0+0], %f1;
	.param .b32 retval0;
	call.uni (retval0),
	helper,
	(
	param0
	);
	ld.param.f32 	%f2, [retval0+0];
	} // callseq 0
	@!%p1 bra 	$L__BB1_2;
	.pragma "nounroll";
	st.global.v2.f32 	[%rd1+8], {%f1, %f2};
$L__BB1_2:
	ret;
}

.section	.debug_info
{
.b32 42
.b8 1, 2
}
)";

TEST(Parser, nvcc_forms_parse_with_signatures) {
  auto m = Parse(kSample);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->version, "9.0");
  EXPECT_EQ(m->target, "sm_90");
  const Function* k = m->FindFunction("sample");
  ASSERT_NE(k, nullptr);
  EXPECT_TRUE(k->is_entry);
  EXPECT_EQ(k->maxntid[0], 128u);
  ASSERT_EQ(k->params.size(), 3u);
  EXPECT_EQ(k->params[0].offset, 0u);
  EXPECT_EQ(k->params[1].offset, 8u);
  EXPECT_EQ(k->params[2].offset, 16u);  // .align 8
  EXPECT_EQ(k->params[2].size, 16u);
  EXPECT_EQ(k->param_bytes, 32u);
  const Function* f = m->FindFunction("helper");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->is_entry);
  EXPECT_EQ(f->returns.size(), 1u);
  const Variable* t = m->FindGlobal("table");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->init, (std::vector<uint8_t>{1, 2, 3, 4, 255, 0, 0, 128}));
  const Variable* d = m->FindGlobal("dyn");
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(d->is_extern);
  // The scoped register "c" is its own register, distinct from everything else.
  int scoped = 0;
  for (const Register& r : m->registers) scoped += r.name == "c";
  EXPECT_EQ(scoped, 1);
  // Dual destination and negated guard survived.
  bool saw_dual = false, saw_neg_guard = false;
  for (const Statement& s : k->body) {
    if (s.kind != Statement::Kind::kInstruction) continue;
    if (s.inst.opcode == "shfl") saw_dual = s.inst.operands[0].reg2 >= 0;
    if (s.inst.opcode == "bra") saw_neg_guard = s.inst.guard_negated;
  }
  EXPECT_TRUE(saw_dual);
  EXPECT_TRUE(saw_neg_guard);
}

TEST(Parser, pointer_parameter_attributes_describe_the_pointee_not_the_layout) {
  // nvcc for sm_100 writes `.param .u64 .ptr .align 1 p`: the .align is the pointee's.
  auto m = Parse(
      ".version 9.0\n.target sm_100a\n.address_size 64\n"
      ".visible .entry k(.param .u64 .ptr .align 1 a, .param .u32 n, .param .u64 .ptr .global .align 16 b)\n"
      "{\n  ret;\n}\n");
  ASSERT_TRUE(m.ok()) << m.status();
  const Function* k = m->FindFunction("k");
  ASSERT_NE(k, nullptr);
  ASSERT_EQ(k->params.size(), 3u);
  EXPECT_EQ(k->params[0].align, 8u);
  EXPECT_EQ(k->params[1].offset, 8u);
  EXPECT_EQ(k->params[2].offset, 16u);
  EXPECT_EQ(k->param_bytes, 24u);
  EXPECT_FALSE(Parse(".version 9.0\n.target sm_100a\n.address_size 64\n"
                     ".visible .entry k(.param .u64 .ptr .align 3 a)\n{\n  ret;\n}\n")
                   .ok());
}

TEST(Parser, limits_bound_untrusted_input) {
  ParseLimits small;
  small.max_bytes = 100;
  auto m = Parse(kSample, small);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("exceeds the limit of 100"), std::string::npos);
  std::string deep = ".version 9.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n";
  for (int i = 0; i < 100; ++i) deep += "{";
  EXPECT_NE(Parse(deep).status().message().find("scopes nested too deeply"), std::string::npos);
  std::string huge =
      ".version 9.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n.reg .b32 %r<99999999>;\n}\n";
  EXPECT_NE(Parse(huge).status().message().find("too many registers"), std::string::npos);
  // A range count near 2^64 must not wrap the limit check (it used to, and then declared forever).
  std::string wrap =
      ".version 9.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n.reg .b32 %a;\n"
      ".reg .b32 %r<18446744073709551615>;\n}\n";
  EXPECT_EQ(Parse(wrap).status().message(), "line 7, column 11: too many registers (at most 262144 in the module)");
}

// What one statement may cost: operands, bytes, nesting (a hostile 15 MiB statement used to take
// 32x its size in memory, and '!' or '{' repeated recursed without bound).
TEST(Parser, statements_are_bounded) {
  const std::string head =
      ".version 9.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n.reg .b32 %r<4>;\n.reg .pred %p;\n";
  std::string many = head + "add.s32 %r1";
  for (int i = 0; i < 40; ++i) many += ", %r2";
  many += ";\n}\n";
  EXPECT_NE(Parse(many).status().message().find("too many operands for add.s32 (at most 32)"), std::string::npos)
      << Parse(many).status();
  std::string list = head + "mov.b32 %r1, {";
  for (int i = 0; i < 40; ++i) list += std::string(i ? ", " : "") + "%r2";
  list += "};\n}\n";
  EXPECT_NE(Parse(list).status().message().find("too many operands"), std::string::npos) << Parse(list).status();
  std::string bangs = head + "@" + std::string(1 << 20, '!') + "%p bra L;\n}\n";
  EXPECT_FALSE(Parse(bangs).ok());
  std::string neg = head + "not.pred %p, " + std::string(1 << 20, '!') + "%p;\n}\n";
  EXPECT_NE(Parse(neg).status().message().find("unexpected '!'"), std::string::npos) << Parse(neg).status();
  std::string nest = head + "mov.b32 %r1, " + std::string(1 << 20, '{') + ";\n}\n";
  EXPECT_NE(Parse(nest).status().message().find("operand lists do not nest"), std::string::npos)
      << Parse(nest).status();
  std::string longer = head + "add.s32 %r1, %r2, " + std::string(70'000, 'a') + ";\n}\n";
  EXPECT_NE(Parse(longer).status().message().find("instruction longer than 65536 bytes"), std::string::npos)
      << Parse(longer).status();
  ParseLimits few;
  few.max_statements = 10;
  std::string two =
      head + "ret;\nret;\nret;\nret;\nret;\nret;\n}\n.visible .entry j()\n{\nret;\nret;\nret;\nret;\nret;\nret;\n}\n";
  EXPECT_NE(Parse(two, few).status().message().find("too many statements (more than 10 in the module)"),
            std::string::npos)
      << Parse(two, few).status();
}

TEST(Parser, wide_multiply_with_missing_operands_is_an_error_not_a_crash) {
  // Found by fuzz_ptx: the validator read operand 0 of an operand-less mul.wide (an uncaught throw).
  const std::string head =
      ".version 9.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n"
      ".reg .b32 %r<2>;\n.reg .b64 %rd<2>;\n";
  auto m = Parse(head + "mul.wide.u32 ;\nret;\n}\n");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), "line 8, column 1: mul.wide.u32 needs 3 operands");
  m = Parse(head + "mad.wide.u32 %rd0, %r0, %r1;\nret;\n}\n");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), "line 8, column 1: mad.wide.u32 needs 4 operands");
  EXPECT_TRUE(Parse(head + "mad.wide.u32 %rd0, %r0, %r1, %rd1;\nret;\n}\n").ok());
}

}  // namespace
}  // namespace gpuwasm::ptx
