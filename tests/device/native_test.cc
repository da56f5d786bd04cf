// Native code on the CPU device (device/cpu/native.h): which kernels get it, that they run it, and
// that a kernel the translation or the compiler cannot handle still runs, interpreted, with the
// reason kept. Results of native code are checked against the C++ references by the corpus
// (Corpus/*+native) and the fault tests (Tier/Faults.*/native).
#include "device/cpu/native.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "device/cpu/cpu_device.h"
#include "device/cpu/program.h"
#include "device/cpu/uniformity.h"
#include "device/select.h"
#include "kernel_harness.h"
#include "ptx/parser.h"

namespace gpuwasm::testing {
namespace {

using device::cpu::NativeMode;

// `text` parsed and decoded (a failure is the test's).
struct Decoded {
  ptx::Module module;
  device::cpu::Program program;
};
Decoded MustDecode(const std::string& text) {
  auto m = ptx::Parse(text);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return {};
  auto p = device::cpu::Decode(*m);
  EXPECT_TRUE(p.ok()) << p.status();
  if (!p.ok()) return {};
  return {std::move(*m), std::move(*p)};
}

// Instructions whose values are one for the whole launch are computed once (Decode's
// launch-invariant set, seeded by SpecialScope): from the launch's dimensions and %nsmid, but not
// from %ctaid (one per CTA) or %tid (one per thread), nor from a register written twice.
TEST(Uniformity, launch_invariant_instructions_follow_the_special_registers_scopes) {
  const char* text = R"(.version 7.0
.target sm_70
.address_size 64
.visible .entry k()
{
  .reg .b32 %r<9>;
  mov.u32 %r1, %nsmid;
  add.s32 %r2, %r1, 1;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %ctaid.x;
  mov.u32 %r5, %tid.x;
  add.s32 %r6, %r3, %r4;
  mov.u32 %r7, %nctaid.y;
  mov.u32 %r7, %gridid;
  ret;
}
)";
  auto [m, p] = MustDecode(text);
  ASSERT_EQ(p.launch_invariant.size(), p.code.size());
  std::map<uint32_t, bool> by_line;  // PTX line -> launch-invariant
  for (size_t pc = 0; pc < p.code.size(); ++pc) by_line[p.code[pc].line] = p.launch_invariant[pc] != 0;
  const std::map<uint32_t, bool> want = {{7, true},   {8, true},   {9, true},   {10, false},
                                         {11, false}, {12, false}, {13, false}, {14, false}};
  for (const auto& [line, invariant] : want) {
    ASSERT_TRUE(by_line.count(line)) << "no instruction from line " << line;
    EXPECT_EQ(by_line[line], invariant) << "line " << line;
  }
}

// Decode's CTA divergence analysis (uniformity.h), read by both tiers: which register slots hold one
// value for every thread of a CTA. By register name; one kernel with a call beside them.
std::map<std::string, bool> DivergentByName(const ptx::Module& m, const device::cpu::Program& p, int function) {
  std::map<std::string, bool> out;
  for (size_t r = 0; r < m.registers.size(); ++r) {
    if (m.registers[r].function == function) out[m.registers[r].name] = p.divergent[r] != 0;
  }
  return out;
}

TEST(Uniformity, cta_divergence_follows_data_control_and_calls) {
  const char* text = R"(.version 7.0
.target sm_70
.address_size 64
.func (.param .b32 ret) f(.param .b32 a)
{
  .reg .b32 %fa;
  ld.param.b32 %fa, [a];
  st.param.b32 [ret], %fa;
  ret;
}
.visible .entry k(.param .u64 p, .param .u32 n)
{
  .reg .pred %p<5>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<4>;
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ctaid.x;
  add.s32 %r4, %r1, %r3;
  add.s32 %r5, %r2, 1;
  setp.lt.u32 %p1, %r2, %r1;
  @%p1 bra L1;
  mov.u32 %r6, 7;
L1:
  add.s32 %r7, %r4, 2;
  setp.lt.u32 %p2, %r4, 10;
  @%p2 bra L2;
  mov.u32 %r8, 9;
L2:
  ld.param.u64 %rd1, [p];
  ld.global.u32 %r9, [%rd1];
  mov.u32 %r10, 0;
L3:
  add.s32 %r10, %r10, 1;
  setp.lt.u32 %p3, %r10, %r1;
  @%p3 bra L3;
  mov.u32 %r11, 0;
L4:
  add.s32 %r11, %r11, 1;
  setp.lt.u32 %p4, %r11, %r2;
  @%p4 bra L4;
  @%p1 mov.u32 %r12, 1;
  add.s32 %r13, %r7, %r9;
  ret;
}
.visible .entry c(.param .u32 n)
{
  .reg .b32 %q<4>;
  ld.param.u32 %q1, [n];
  add.s32 %q2, %q1, 1;
  {
  .param .b32 a0;
  st.param.b32 [a0], %q2;
  .param .b32 r0;
  call.uni (r0), f, (a0);
  ld.param.b32 %q3, [r0];
  }
  ret;
}
)";
  auto [m, p] = MustDecode(text);
  ASSERT_EQ(p.divergent.size(), p.slot_count);
  int k = -1, c = -1;
  for (size_t i = 0; i < m.functions.size(); ++i) {
    if (m.functions[i].name == "k") k = static_cast<int>(i);
    if (m.functions[i].name == "c") c = static_cast<int>(i);
  }
  ASSERT_GE(k, 0);
  ASSERT_GE(c, 0);
  const std::map<std::string, bool> want = {
      {"%r1", false},                                   // a kernel parameter
      {"%r2", true},                                    // %tid.x
      {"%r3", false},                                   // %ctaid.x: one per CTA
      {"%r4", false},  {"%r5", true},                   // data flow
      {"%p1", true},   {"%r6", true},                   // a constant, written on one side of a divergent branch only
      {"%r7", false},  {"%p2", false}, {"%r8", false},  // after the join; under a uniform branch
      {"%rd1", false}, {"%r9", true},                   // a load gives each thread its own
      {"%r10", false}, {"%p3", false},                  // a loop with a uniform trip count
      {"%r11", true},  {"%p4", true},                   // a loop whose trip count is per thread
      {"%r12", true},                                   // a guarded write under a divergent guard
      {"%r13", true},
  };
  auto got = DivergentByName(m, p, k);
  for (const auto& [name, divergent] : want) {
    ASSERT_TRUE(got.count(name)) << name;
    EXPECT_EQ(got[name], divergent) << name;
  }
  // Not interprocedural: every slot the kernel with a call touches is divergent, and the callee's.
  for (const auto& [name, divergent] : DivergentByName(m, p, c)) {
    if (name != "%q0") {
      EXPECT_TRUE(divergent) << name;
    }
  }
  EXPECT_TRUE(DivergentByName(m, p, 0).at("%fa"));
  // The special registers by their scope; constants are uniform.
  EXPECT_TRUE(p.divergent[p.special_base + device::cpu::kLaneId]);
  EXPECT_FALSE(p.divergent[p.special_base + device::cpu::kCtaidY]);
  EXPECT_FALSE(p.divergent[p.special_base + device::cpu::kNtidX]);
  ASSERT_FALSE(p.consts.empty());
  for (size_t i = 0; i < p.consts.size(); ++i) EXPECT_FALSE(p.divergent[p.const_base + i]);
}

// The analysis's work is bounded (kMaxDivergenceWork): N branches on a per-thread value, each to the
// end, cost about N^2 (each branch's region runs to the end). Past the bound every register is
// divergent, which only costs speed; below it a parameter read first stays uniform.
TEST(Uniformity, the_analysis_is_bounded_and_past_its_bound_every_register_is_divergent) {
  auto module = [](int branches) {
    std::string t = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry big(.param .u32 n)\n{\n";
    t += "  .reg .pred %p<2>;\n  .reg .b32 %r<4>;\n  ld.param.u32 %r1, [n];\n  mov.u32 %r2, %tid.x;\n";
    t += "  setp.lt.u32 %p1, %r2, %r1;\n";
    for (int i = 0; i < branches; ++i) t += "  @%p1 bra END;\n  add.s32 %r3, %r3, 1;\n";
    return t + "END:\n  ret;\n}\n";
  };
  uint64_t past = 1;
  while (past * past <= 2 * device::cpu::kMaxDivergenceWork) past *= 2;
  for (uint64_t branches : {uint64_t{100}, past}) {
    auto [m, p] = MustDecode(module(static_cast<int>(branches)));
    ASSERT_EQ(p.divergent.size(), p.slot_count);
    auto got = DivergentByName(m, p, 0);
    EXPECT_EQ(got.at("%r1"), branches != 100) << branches << " branches";
    EXPECT_TRUE(got.at("%r3"));
    EXPECT_FALSE(p.divergent[p.special_base + device::cpu::kNtidX]);  // the specials keep their scope
  }
}

TEST(NativeCode, corpus_kernels_the_translation_covers_run_as_native_code) {
  KernelHarness h(KernelHarness::SharedNativeCpuDevice());
  struct Case {
    const char* file;
    const char* kernel;
  };
  for (Case c :
       {Case{"vector_add", "vector_add"}, Case{"block_reduce", "block_reduce_sum"}, Case{"matmul", "matmul_tiled"},
        Case{"divergence", "divergence"}, Case{"divergence", "uniform_after_divergence"}, Case{"saxpy", "saxpy"},
        Case{"oob_write", "oob_write"}, Case{"spin", "spin"}}) {
    for (const char* arch : {"sm_80", "sm_90"}) {
      auto k = h.Load(c.file, arch, c.kernel);
      ASSERT_NE(k, nullptr);
      EXPECT_EQ(device::cpu::NativeCodeWhyNot(*k), "") << c.kernel << " " << arch;
    }
  }
  // And a launch runs it.
  auto k = h.Load("oob_write", "sm_80", "oob_write");
  auto out = h.Zeros<int>(64);
  ASSERT_TRUE(h.Run(*k, {1}, {64}, Params(k->signature()).Add(out).Add(64u).Add(0u).Build()).ok());
  EXPECT_TRUE(device::cpu::LastLaunchWasNative(h.stream()));
  EXPECT_EQ(h.Download<int>(out, 64)[63], 63);
}

TEST(NativeCode, counts_the_same_thread_instructions_as_the_interpreter) {
  // Launch metrics and the benchmark's thread-instructions mean the same with either tier.
  auto interp = device::cpu::CreateCpuDevice({.native = NativeMode::kOff});
  for (const char* arch : {"sm_80", "sm_90"}) {
    uint64_t counted[2] = {0, 0};
    for (int native = 0; native < 2; ++native) {
      KernelHarness h(native ? KernelHarness::SharedNativeCpuDevice() : interp);
      auto reduce = h.Load("block_reduce", arch, "block_reduce_sum");
      auto diverge = h.Load("divergence", arch, "divergence");
      ASSERT_TRUE(reduce && diverge);
      unsigned n = 5 * 256 - 77;  // the last block has threads past n (they return early)
      std::vector<int> in(n, 3);
      auto pin = h.Upload(in), pout = h.Zeros<int>(n), porder = h.Zeros<int>(5), psum = h.Zeros<float>(5);
      ASSERT_TRUE(h.Run(*reduce, {5}, {256}, Params(reduce->signature()).Add(pin).Add(psum).Add(n).Build()).ok());
      EXPECT_EQ(device::cpu::LastLaunchWasNative(h.stream()), native == 1);
      counted[native] += device::cpu::LastLaunchInstructions(h.stream());
      ASSERT_TRUE(
          h.Run(*diverge, {5}, {256}, Params(diverge->signature()).Add(pin).Add(pout).Add(porder).Add(n).Build()).ok());
      EXPECT_EQ(device::cpu::LastLaunchWasNative(h.stream()), native == 1);
      counted[native] += device::cpu::LastLaunchInstructions(h.stream());
    }
    EXPECT_GT(counted[0], 0u);
    EXPECT_EQ(counted[0], counted[1]) << arch;
  }
}

TEST(NativeCode, thread_loops_checked_ahead_compute_and_count_what_the_interpreter_does) {
  // A block whose accesses fit and are contiguous runs unchecked after a first pass checked every
  // address (native_writer.cc, CheckedAhead): results and thread-instructions are the interpreter's,
  // over many CTAs, a last one whose threads past n skip the body, and a kernel that loads and
  // stores the same buffer (saxpy's y).
  auto interp = device::cpu::CreateCpuDevice({.native = NativeMode::kOff});
  const unsigned n = 64 * 256 - 77;
  std::vector<float> a(n), b(n);
  for (unsigned i = 0; i < n; ++i) a[i] = 0.5f * static_cast<float>(i), b[i] = 3.0f - static_cast<float>(i % 7);
  std::vector<float> sum[2], axpy[2];
  uint64_t counted[2] = {0, 0};
  for (int native = 0; native < 2; ++native) {
    KernelHarness h(native ? KernelHarness::SharedNativeCpuDevice() : interp);
    auto add = h.Load("vector_add", "sm_80", "vector_add");
    auto saxpy = h.Load("saxpy", "sm_80", "saxpy");
    ASSERT_TRUE(add && saxpy);
    auto pa = h.Upload(a), pb = h.Upload(b), pc = h.Zeros<float>(n);
    ASSERT_TRUE(h.Run(*add, {64}, {256}, Params(add->signature()).Add(pa).Add(pb).Add(pc).Add(n).Build()).ok());
    EXPECT_EQ(device::cpu::LastLaunchWasNative(h.stream()), native == 1);
    counted[native] += device::cpu::LastLaunchInstructions(h.stream());
    sum[native] = h.Download<float>(pc, n);
    ASSERT_TRUE(h.Run(*saxpy, {16}, {256}, Params(saxpy->signature()).Add(n).Add(2.0f).Add(pa).Add(pb).Build()).ok());
    EXPECT_EQ(device::cpu::LastLaunchWasNative(h.stream()), native == 1);
    counted[native] += device::cpu::LastLaunchInstructions(h.stream());
    axpy[native] = h.Download<float>(pb, n);
  }
  EXPECT_EQ(counted[0], counted[1]);
  ASSERT_EQ(sum[0].size(), n);
  for (unsigned i = 0; i < n; ++i) {
    ASSERT_EQ(sum[1][i], a[i] + b[i]) << i;
    ASSERT_EQ(sum[0][i], sum[1][i]) << i;
    ASSERT_EQ(axpy[0][i], axpy[1][i]) << i;
  }
}

// The if-region `if (i < n)` with i = base + %ctaid.x * %ntid.x + %tid.x (native_writer.cc,
// AffineRange): the threads that run it are a range of indices, found from the bound without
// a pass over the threads, and their accesses checked at the first and last thread. Where i wraps
// around in 32 bits within a CTA, the bound is signed and negative, or an access falls outside
// its buffer, the general loops run instead: results, counts and faults are the interpreter's.
TEST(NativeCode, index_ranges_and_affine_accesses_compute_count_and_fault_as_the_interpreter) {
  auto kernel = [](const char* cmp, const char* wide, bool skip3 = false) {
    return std::string(R"(.version 7.0
.target sm_70
.address_size 64
.visible .entry affine(.param .u64 out, .param .u64 in, .param .u32 n, .param .u32 base)
{
  .reg .pred %p<3>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [in];
  ld.param.u32 %r1, [n];
  ld.param.u32 %r2, [base];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r6, %r3, %r4, %r5;
  add.s32 %r7, %r6, %r2;
  setp.)") +
           cmp + R"( %p1, %r7, %r1;
)" + (skip3 ? "  setp.eq.u32 %p2, %r7, 3;\n  or.pred %p1, %p1, %p2;\n" : "") +
           R"(  @%p1 bra DONE;
  mul.wide.)" +
           wide + R"( %rd3, %r6, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.u32 %r3, [%rd4];
  add.s32 %r3, %r3, %r7;
  add.s64 %rd5, %rd1, %rd3;
  st.global.u32 [%rd5], %r3;
DONE:
  ret;
}
)";
  };
  struct Case {
    const char* cmp;
    const char* wide;
    uint32_t n, base;
    unsigned out_elems;  // fewer than the threads that store: a fault
    bool skip3 = false;  // the branch's predicate is the comparison's or i == 3 (no longer a range)
  };
  const unsigned ctas = 6, threads = 128, total = ctas * threads;
  const Case cases[] = {
      {"ge.u32", "u32", total - 77, 0, total},             // the last CTA partly
      {"ge.u32", "u32", 5, 0, total},                      // one CTA, five threads
      {"ge.u32", "u32", 0xffffff00u, 0xfffffe80u, total},  // i wraps around within CTA 2
      {"ge.s32", "s32", 300, 0xffffff00u, total},          // negative i first: a suffix of indices
      {"ge.s32", "s32", 0x80000000u, 0, total},            // a negative bound: no thread runs it
      {"lt.u32", "u32", 200, 0, total},                    // the region runs where i >= n
      {"ge.u32", "u32", total, 0, total - 40},             // the last stores fall outside `out`
      {"ge.u32", "u32", total, 0, total, /*skip3=*/true},  // thread 3 skips too
  };
  auto interp = device::cpu::CreateCpuDevice({.native = NativeMode::kOff});
  {  // the translation has the path
    auto [m, p] = MustDecode(kernel("ge.u32", "u32"));
    auto src = device::cpu::TranslateKernel(p, p.kernels[0]);
    ASSERT_TRUE(src.ok()) << src.status();
    EXPECT_NE(src->c.find("const uint32_t lo = 0, hi = e;"), std::string::npos);
    EXPECT_NE(src->c.find("if (gw_likely(hi > lo && "), std::string::npos);
  }
  std::vector<uint32_t> in(total);
  for (unsigned i = 0; i < total; ++i) in[i] = 1000u * i + 7u;
  for (const Case& c : cases) {
    const std::string where = std::string(c.cmp) + " n=" + std::to_string(c.n) + " base=" + std::to_string(c.base) +
                              (c.skip3 ? " or i == 3" : "");
    std::vector<uint32_t> out[2];
    uint64_t counted[2] = {0, 0};
    std::string fault[2];
    for (int native = 0; native < 2; ++native) {
      KernelHarness h(native ? KernelHarness::SharedNativeCpuDevice() : interp);
      auto k = h.LoadKernel(kernel(c.cmp, c.wide, c.skip3), "affine");
      ASSERT_NE(k, nullptr);
      auto pin = h.Upload(in);
      auto pout = h.Zeros<uint32_t>(c.out_elems);
      Status st = h.Run(*k, {ctas}, {threads}, Params(k->signature()).Add(pout).Add(pin).Add(c.n).Add(c.base).Build());
      EXPECT_EQ(device::cpu::LastLaunchWasNative(h.stream()), native == 1) << where;
      if (!st.ok()) {
        fault[native] = st.message().substr(0, st.message().find("0x"));
        continue;
      }
      counted[native] = device::cpu::LastLaunchInstructions(h.stream());
      out[native] = h.Download<uint32_t>(pout, c.out_elems);
    }
    EXPECT_EQ(fault[0], fault[1]) << where;
    EXPECT_EQ(counted[0], counted[1]) << where;
    ASSERT_EQ(out[0], out[1]) << where;
    if (c.out_elems < total) {
      EXPECT_NE(fault[1].find("(PTX line "), std::string::npos) << where << ": " << fault[1];
      continue;
    }
    const bool is_signed = std::string(c.cmp).find("s32") != std::string::npos;
    const bool region_where_ge = std::string(c.cmp).rfind("lt", 0) == 0;
    unsigned ran = 0;
    for (unsigned j = 0; j < total; ++j) {
      const uint32_t i = c.base + j;
      const bool ge = is_signed ? static_cast<int32_t>(i) >= static_cast<int32_t>(c.n) : i >= c.n;
      const bool runs = (region_where_ge ? ge : !ge) && !(c.skip3 && i == 3);
      ran += runs;
      ASSERT_EQ(out[1][j], runs ? in[j] + i : 0u) << where << " thread " << j;
    }
    EXPECT_EQ(ran == 0, c.n == 0x80000000u) << where << ": " << ran << " threads ran the region";
  }
}

// Values from earlier blocks (native_writer.cc, DefinedValue): a register the if-region's branch or
// an address reads counts as affine in the thread index only where its one reaching definition
// dominates the block and is computed from constants and the CTA's special registers, like a
// shared-memory tree's `red[tid]` across barriers while the register holding %tid.x is written again
// later (softmax). A register two definitions reach keeps the general loop.
TEST(NativeCode, values_defined_in_earlier_blocks_give_index_ranges_only_where_one_definition_reaches) {
  const std::string text = R"(.version 7.0
.target sm_70
.address_size 64
.visible .entry xblock(.param .u64 out, .param .u32 s)
{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<4>;
  .shared .align 4 .b8 sh[1024];
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r5, [s];
  mov.u32 %r1, %tid.x;
  shl.b32 %r2, %r1, 2;
  mov.u32 %r3, sh;
  add.s32 %r4, %r3, %r2;
  st.shared.u32 [%r4], %r1;
  mov.u32 %r8, %tid.x;
  setp.lt.u32 %p2, %r1, 64;
  @%p2 bra ONE;
  add.s32 %r8, %r8, 1;
ONE:
  bar.sync 0;
  setp.ge.u32 %p1, %r1, %r5;
  @%p1 bra SKIP;
  ld.shared.u32 %r6, [%r4];
  add.s32 %r6, %r6, 1000;
  st.shared.u32 [%r4], %r6;
SKIP:
  bar.sync 0;
  setp.ge.u32 %p3, %r8, %r5;
  @%p3 bra SKIP2;
  ld.shared.u32 %r9, [%r4];
  add.s32 %r9, %r9, 1;
  st.shared.u32 [%r4], %r9;
SKIP2:
  bar.sync 0;
  ld.shared.u32 %r10, [%r4];
  mov.u32 %r11, %ctaid.x;
  mov.u32 %r12, %ntid.x;
  mad.lo.s32 %r13, %r11, %r12, %r1;
  mul.wide.u32 %rd2, %r13, 4;
  add.s64 %rd3, %rd1, %rd2;
  add.s32 %r1, %r1, %r5;
  add.s32 %r10, %r10, %r1;
  st.global.u32 [%rd3], %r10;
  ret;
}
)";
  {
    auto [m, p] = MustDecode(text);
    auto src = device::cpu::TranslateKernel(p, p.kernels[0]);
    ASSERT_TRUE(src.ok()) << src.status();
    size_t ranges = 0;
    for (size_t at = src->c.find("const uint32_t lo = "); at != std::string::npos;
         at = src->c.find("const uint32_t lo = ", at + 1)) {
      ++ranges;
    }
    EXPECT_EQ(ranges, 1u) << "the first region only: %r8 has two reaching definitions";
    EXPECT_NE(src->c.find("if (gw_likely(hi > lo && "), std::string::npos);
  }
  const unsigned ctas = 3, threads = 256;
  auto interp = device::cpu::CreateCpuDevice({.native = NativeMode::kOff});
  for (uint32_t s : {100u, 0u, 256u, 64u}) {
    std::vector<uint32_t> out[2];
    uint64_t counted[2] = {0, 0};
    for (int native = 0; native < 2; ++native) {
      KernelHarness h(native ? KernelHarness::SharedNativeCpuDevice() : interp);
      auto k = h.LoadKernel(text, "xblock");
      ASSERT_NE(k, nullptr);
      auto pout = h.Zeros<uint32_t>(ctas * threads);
      ASSERT_TRUE(h.Run(*k, {ctas}, {threads}, Params(k->signature()).Add(pout).Add(s).Build()).ok());
      EXPECT_EQ(device::cpu::LastLaunchWasNative(h.stream()), native == 1);
      counted[native] = device::cpu::LastLaunchInstructions(h.stream());
      out[native] = h.Download<uint32_t>(pout, ctas * threads);
    }
    EXPECT_EQ(counted[0], counted[1]) << "s=" << s;
    for (unsigned i = 0; i < ctas * threads; ++i) {
      const uint32_t t = i % threads, r8 = t < 64 ? t : t + 1;
      const uint32_t want = t + (t < s ? 1000u : 0u) + (r8 < s ? 1u : 0u) + (t + s);
      ASSERT_EQ(out[1][i], want) << "s=" << s << " thread " << i;
      ASSERT_EQ(out[0][i], want) << "s=" << s << " thread " << i;
    }
  }
}

// Hostile PTX against the affine analysis (native_writer.cc, kMaxAffineText and friends): a
// chain that doubles a value's C text at every step, through definitions in earlier blocks too,
// translates quickly into C of a bounded size, and runs as the interpreter does.
TEST(NativeCode, the_affine_analysis_is_bounded_in_text_and_work) {
  std::string t = ".version 7.0\n.target sm_70\n.address_size 64\n";
  t += ".visible .entry chain(.param .u64 out, .param .u32 n)\n{\n  .reg .pred %p<2>;\n  .reg .b32 %r<520>;\n";
  t += "  .reg .b64 %rd<4>;\n  ld.param.u64 %rd1, [out];\n  ld.param.u32 %r0, [n];\n  mov.u32 %r1, %tid.x;\n";
  for (int i = 2; i < 250; ++i) {
    t += "  add.s32 %r" + std::to_string(i) + ", %r" + std::to_string(i - 1) + ", %r" + std::to_string(i - 1) + ";\n";
  }
  t += "  bar.sync 0;\n";
  for (int i = 250; i < 500; ++i) {
    t += "  add.s32 %r" + std::to_string(i) + ", %r" + std::to_string(i - 1) + ", %r" + std::to_string(i - 250) + ";\n";
  }
  t += "  setp.ge.u32 %p1, %r499, %r0;\n  @%p1 bra DONE;\n";
  t += "  mul.wide.u32 %rd2, %r1, 4;\n  add.s64 %rd3, %rd1, %rd2;\n  st.global.u32 [%rd3], %r499;\n";
  t += "DONE:\n  ret;\n}\n";
  auto [m, p] = MustDecode(t);
  const auto start = std::chrono::steady_clock::now();
  auto src = device::cpu::TranslateKernel(p, p.kernels[0]);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(src.ok()) << src.status();
  EXPECT_LT(src->c.size(), size_t{1} << 20);
  EXPECT_LT(took, std::chrono::seconds(5));
  auto interp = device::cpu::CreateCpuDevice({.native = NativeMode::kOff});
  std::vector<uint32_t> out[2];
  for (int native = 0; native < 2; ++native) {
    KernelHarness h(native ? KernelHarness::SharedNativeCpuDevice() : interp);
    auto k = h.LoadKernel(t, "chain");
    ASSERT_NE(k, nullptr);
    auto pout = h.Zeros<uint32_t>(128);
    ASSERT_TRUE(h.Run(*k, {1}, {128}, Params(k->signature()).Add(pout).Add(0xffffffffu).Build()).ok());
    EXPECT_EQ(device::cpu::LastLaunchWasNative(h.stream()), native == 1);
    out[native] = h.Download<uint32_t>(pout, 128);
  }
  EXPECT_EQ(out[0], out[1]);
}

// %ctaid in native code (NativeCtx::ctaid; the executor fills the registers only for host blocks
// and calls): every CTA of a three-dimensional grid reads its own, in C and in a host block.
TEST(NativeCode, every_cta_reads_its_own_ctaid_in_c_and_in_host_blocks) {
  for (const bool host : {false, true}) {
    // out[linear cta * ntid + tid] = ctaid.x + 10 ctaid.y + 100 ctaid.z (+ 1000 * ctaid.x from mul24,
    // a host block, when `host`)
    std::string t = R"(.version 7.0
.target sm_70
.address_size 64
.visible .entry ids(.param .u64 out)
{
  .reg .b32 %r<16>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ctaid.y;
  mov.u32 %r3, %ctaid.z;
  mov.u32 %r4, %nctaid.x;
  mov.u32 %r5, %nctaid.y;
  mad.lo.s32 %r6, %r3, %r5, %r2;
  mad.lo.s32 %r6, %r6, %r4, %r1;
  mov.u32 %r7, %ntid.x;
  mov.u32 %r8, %tid.x;
  mad.lo.s32 %r9, %r6, %r7, %r8;
  mad.lo.s32 %r10, %r2, 10, %r1;
  mad.lo.s32 %r10, %r3, 100, %r10;
)";
    if (host) t += "  mul24.lo.u32 %r11, %ctaid.x, 1000;\n  add.s32 %r10, %r10, %r11;\n";
    t += "  mul.wide.u32 %rd2, %r9, 4;\n  add.s64 %rd3, %rd1, %rd2;\n  st.global.u32 [%rd3], %r10;\n  ret;\n}\n";
    KernelHarness h(KernelHarness::SharedNativeCpuDevice());
    auto k = h.LoadKernel(t, "ids");
    ASSERT_NE(k, nullptr);
    const unsigned gx = 3, gy = 2, gz = 2, threads = 64, n = gx * gy * gz * threads;
    auto pout = h.Zeros<uint32_t>(n);
    ASSERT_TRUE(h.Run(*k, {gx, gy, gz}, {threads}, Params(k->signature()).Add(pout).Build()).ok());
    EXPECT_TRUE(device::cpu::LastLaunchWasNative(h.stream()));
    const auto out = h.Download<uint32_t>(pout, n);
    for (unsigned i = 0; i < n; ++i) {
      const unsigned cta = i / threads, x = cta % gx, y = cta / gx % gy, z = cta / (gx * gy);
      ASSERT_EQ(out[i], x + 10 * y + 100 * z + (host ? 1000 * x : 0)) << "host block " << host << ", element " << i;
    }
  }
}

// A worker keeps its threads' places (next[], count[]) from one CTA to the next while every
// thread stayed together, and starts them afresh after a CTA whose threads parted or exited apart:
// CTA 0's odd threads exit early, and every thread of CTA 1 (run next by the same, only worker)
// must still run. The store's address comes from a load, so the block's loop consults next[].
TEST(NativeCode, a_cta_after_one_whose_threads_parted_starts_with_every_thread) {
  const char* text = R"(.version 7.0
.target sm_70
.address_size 64
.visible .entry mix(.param .u64 out, .param .u64 idx)
{
  .reg .pred %p<4>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [idx];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3;
  and.b32 %r5, %r3, 1;
  setp.eq.u32 %p1, %r1, 0;
  setp.ne.u32 %p2, %r5, 0;
  and.pred %p3, %p1, %p2;
  @%p3 exit;
  mul.wide.u32 %rd3, %r4, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.u32 %r6, [%rd4];
  mul.wide.u32 %rd5, %r6, 4;
  add.s64 %rd6, %rd1, %rd5;
  add.s32 %r7, %r4, 1;
  st.global.u32 [%rd6], %r7;
  ret;
}
)";
  KernelHarness h(device::cpu::CreateCpuDevice({.threads = 1, .native = NativeMode::kAlways}));
  auto k = h.LoadKernel(text, "mix");
  ASSERT_NE(k, nullptr);
  const unsigned ctas = 4, threads = 64, n = ctas * threads;
  std::vector<uint32_t> idx(n);
  for (unsigned i = 0; i < n; ++i) idx[i] = n - 1 - i;  // a permutation: no check-ahead pattern
  auto pidx = h.Upload(idx);
  auto pout = h.Zeros<uint32_t>(n);
  ASSERT_TRUE(h.Run(*k, {ctas}, {threads}, Params(k->signature()).Add(pout).Add(pidx).Build()).ok());
  EXPECT_TRUE(device::cpu::LastLaunchWasNative(h.stream()));
  const auto out = h.Download<uint32_t>(pout, n);
  for (unsigned i = 0; i < n; ++i) {
    const bool skipped = i < threads && i % 2 == 1;
    ASSERT_EQ(out[n - 1 - i], skipped ? 0u : i + 1) << "thread " << i;
  }
}

// A shared address whose stride in the thread index is huge (tid << 57: the addresses of threads 0
// and 128 coincide modulo 2^64) must not pass the check of the range's first and last thread: the
// launch faults as in the interpreter instead of touching memory outside shared memory.
TEST(NativeCode, a_huge_stride_is_never_checked_at_the_ends_only) {
  const std::string text = R"(.version 7.0
.target sm_70
.address_size 64
.visible .entry stride(.param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<6>;
  .shared .align 4 .b8 sh[64];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  cvt.u64.u32 %rd1, %r2;
  shl.b64 %rd2, %rd1, 19;
  shl.b64 %rd3, %rd2, 19;
  shl.b64 %rd4, %rd3, 19;
  setp.ge.u32 %p1, %r2, %r1;
  @%p1 bra DONE;
  st.shared.u32 [%rd4], %r2;
DONE:
  ret;
}
)";
  auto interp = device::cpu::CreateCpuDevice({.native = NativeMode::kOff});
  std::string fault[2];
  for (int native = 0; native < 2; ++native) {
    KernelHarness h(native ? KernelHarness::SharedNativeCpuDevice() : interp);
    auto k = h.LoadKernel(text, "stride");
    ASSERT_NE(k, nullptr);
    Status st = h.Run(*k, {1}, {256}, Params(k->signature()).Add(129u).Build());
    EXPECT_EQ(device::cpu::LastLaunchWasNative(h.stream()), native == 1);
    ASSERT_FALSE(st.ok()) << (native ? "native" : "interpreted");
    fault[native] = st.message().substr(0, st.message().find("0x"));
  }
  EXPECT_EQ(fault[0], fault[1]);
  EXPECT_NE(fault[1].find("shared"), std::string::npos) << fault[1];
}

TEST(NativeCode, a_load_from_one_address_in_every_thread_may_still_differ_per_thread) {
  // Each thread's local memory is its own: the same address holds each thread's %tid.
  KernelHarness h(KernelHarness::SharedNativeCpuDevice());
  const char* ptx =
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".visible .entry loc(.param .u64 p)\n{\n  .local .align 4 .b8 __local_depot0[16];\n"
      "  .reg .b64 %SPL;\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<8>;\n"
      "  mov.u64 %SPL, __local_depot0;\n  mov.u32 %r1, %tid.x;\n  st.local.u32 [%SPL+4], %r1;\n"
      "  ld.local.u32 %r2, [%SPL+4];\n  add.u32 %r3, %r2, 1;\n  ld.param.u64 %rd2, [p];\n"
      "  cvta.to.global.u64 %rd3, %rd2;\n  mul.wide.u32 %rd4, %r1, 4;\n  add.s64 %rd5, %rd3, %rd4;\n"
      "  st.global.u32 [%rd5], %r3;\n  ret;\n}\n";
  auto m = h.context().LoadModule(ptx);
  ASSERT_TRUE(m.ok()) << m.status();
  auto k = *(*m)->GetKernel("loc");
  auto out = h.Zeros<int>(64);
  ASSERT_TRUE(h.Run(*k, {1}, {64}, Params(k->signature()).Add(out).Build()).ok());
  EXPECT_TRUE(device::cpu::LastLaunchWasNative(h.stream())) << device::cpu::NativeCodeWhyNot(*k);
  auto got = h.Download<int>(out, 64);
  for (int t = 0; t < 64; ++t) ASSERT_EQ(got[t], t + 1) << t;
}

TEST(NativeCode, warp_shuffles_and_atomics_run_in_native_code_as_host_blocks) {
  // shfl.sync and atom are blocks of their own that the executor runs warp by warp; the rest of
  // the kernel stays C.
  KernelHarness h(KernelHarness::SharedNativeCpuDevice());
  auto k = h.Load("warp_reduce", "sm_80", "warp_reduce_sum");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(device::cpu::NativeCodeWhyNot(*k), "");
  unsigned n = 256;
  std::vector<int> in(n, 1);
  auto pin = h.Upload(in), ptotal = h.Zeros<int>(1), pwarp = h.Zeros<int>(n / 32);
  ASSERT_TRUE(h.Run(*k, {1}, {256}, Params(k->signature()).Add(pin).Add(ptotal).Add(pwarp).Add(n).Build()).ok());
  EXPECT_TRUE(device::cpu::LastLaunchWasNative(h.stream()));
  EXPECT_EQ(h.Download<int>(ptotal, 1)[0], 256);
  for (int w : h.Download<int>(pwarp, n / 32)) EXPECT_EQ(w, 32);
}

// Every atomic the C writer covers (32- and 64-bit, shared and global; native_writer.cc Atomic),
// one instruction per case: each thread on its own slot, so the old and new values are exact,
// and the same in both tiers. Then all threads on one slot per space, and a misaligned atomic.
std::string AtomicsPtx(const std::vector<std::pair<std::string, std::string>>& cases, bool misaligned) {
  std::string t = ".version 7.8\n.target sm_90\n.address_size 64\n";
  t += ".visible .entry atoms(.param .u64 out, .param .u64 gmem, .param .u64 total)\n{\n";
  t += "  .reg .pred %p<2>;\n  .reg .b32 %r<20>;\n  .reg .b64 %rd<20>;\n  .reg .f32 %f<4>;\n  .reg .f64 %fd<4>;\n";
  t += "  .shared .align 8 .b8 sh[2056];\n";
  t += "  ld.param.u64 %rd1, [out];\n  ld.param.u64 %rd2, [gmem];\n  ld.param.u64 %rd14, [total];\n";
  t += "  mov.u32 %r1, %tid.x;\n  mov.u32 %r2, %ctaid.x;\n  mov.u32 %r3, %ntid.x;\n";
  t += "  mad.lo.s32 %r4, %r2, %r3, %r1;\n";                                                 // i: the thread's index
  t += "  mad.lo.s32 %r5, %r1, 5, 3;\n";                                                     // init = 5t + 3
  t += "  mul.lo.s32 %r6, %r1, 7;\n  xor.b32 %r6, %r6, 13;\n";                               // b = 7t ^ 13
  t += "  mul.lo.s32 %r7, %r1, -3;\n  add.s32 %r7, %r7, 50;\n";                              // sb = 50 - 3t (signed)
  t += "  add.s32 %r8, %r1, 100;\n";                                                         // c = t + 100
  t += "  cvt.u64.u32 %rd3, %r5;\n  shl.b64 %rd4, %rd3, 33;\n  or.b64 %rd4, %rd4, %rd3;\n";  // init64
  t += "  cvt.s64.s32 %rd5, %r7;\n  shl.b64 %rd6, %rd5, 20;\n";                              // sb64
  t += "  cvt.u64.u32 %rd15, %r6;\n  shl.b64 %rd16, %rd15, 33;\n  or.b64 %rd16, %rd16, %rd15;\n";  // b64
  t += "  cvt.rn.f32.u32 %f1, %r5;\n  cvt.rn.f32.s32 %f2, %r7;\n  mul.f32 %f2, %f2, 0f3F000000;\n";
  t += "  cvt.rn.f64.u32 %fd1, %r5;\n  cvt.rn.f64.s32 %fd2, %r7;\n";
  t += "  mul.wide.u32 %rd7, %r1, 8;\n  mov.u64 %rd8, sh;\n  add.s64 %rd8, %rd8, %rd7;\n";          // the shared slot
  t += "  mul.wide.u32 %rd9, %r4, 8;\n  add.s64 %rd10, %rd2, %rd9;\n";                              // the global slot
  t += "  mul.wide.u32 %rd11, %r4, 16;\n  add.s64 %rd11, %rd1, %rd11;\n";                           // out: 2 x 8 bytes
  t += "  mov.u32 %r9, %nctaid.x;\n  mul.lo.s32 %r9, %r9, %r3;\n  mul.wide.u32 %rd12, %r9, 16;\n";  // a case's stride
  for (const auto& [space, form] : cases) {                                                         // form: op.type
    const std::string type = form.substr(form.find('.') + 1);
    const bool wide = type == "u64" || type == "s64" || type == "b64" || type == "f64";
    const std::string addr = space == "shared" ? "%rd8" : "%rd10";
    std::string init = "%r5", b = type == "s32" ? "%r7" : "%r6", c = "%r8", old = "%r10", now = "%r11";
    if (wide) init = "%rd4", b = type == "s64" ? "%rd6" : "%rd16", c = "%rd3", old = "%rd13", now = "%rd17";
    if (type == "f32") init = "%f1", b = "%f2", old = "%f3", now = "%f3";
    if (type == "f64") init = "%fd1", b = "%fd2", old = "%fd3", now = "%fd3";
    const std::string bits = wide ? "b64" : "b32";
    t += "  st." + space + "." + (type[0] == 'f' ? type : bits) + " [" + addr + "], " + init + ";\n";
    t += "  atom." + space + "." + form + " " + old + ", [" + addr + "], " + b +
         (form.rfind("cas", 0) == 0 ? ", " + c : "") + ";\n";
    if (type == "f32") t += "  mov.b32 %r10, %f3;\n", old = "%r10";
    if (type == "f64") t += "  mov.b64 %rd13, %fd3;\n", old = "%rd13";
    if (!wide) t += "  cvt.u64.u32 %rd18, " + old + ";\n", old = "%rd18";
    t += "  st.global.b64 [%rd11], " + old + ";\n";
    t += "  ld." + space + "." + bits + " " + (wide ? "%rd17" : "%r11") + ", [" + addr + "];\n";
    (void)now;
    if (!wide) t += "  cvt.u64.u32 %rd19, %r11;\n  st.global.b64 [%rd11+8], %rd19;\n";
    if (wide) t += "  st.global.b64 [%rd11+8], %rd17;\n";
    t += "  add.s64 %rd11, %rd11, %rd12;\n";
  }
  // Every thread on one slot: shared (then written out by thread 0), and global.
  t += "  mov.u64 %rd8, sh;\n  setp.eq.u32 %p1, %r1, 0;\n  @%p1 st.shared.u32 [%rd8+2048], 0;\n  bar.sync 0;\n";
  t += "  atom.shared.add.u32 %r12, [%rd8+2048], %r5;\n  bar.sync 0;\n";
  t += "  @%p1 ld.shared.u32 %r13, [%rd8+2048];\n  @%p1 atom.global.add.u32 %r14, [%rd14], %r13;\n";
  t += "  atom.global.max.s32 %r15, [%rd14+4], %r7;\n  atom.global.add.f32 %f3, [%rd14+8], %f1;\n";
  if (misaligned) t += "  atom.global.add.u32 %r16, [%rd10+2], 1;\n";
  return t + "  ret;\n}\n";
}

TEST(NativeCode, atomics_run_as_c_with_the_interpreters_results_and_faults) {
  std::vector<std::pair<std::string, std::string>> cases;
  for (const char* space : {"shared", "global"}) {
    for (const char* form :
         {"add.u32", "min.u32",  "max.u32", "inc.u32", "dec.u32", "and.b32", "or.b32",  "xor.b32", "exch.b32",
          "cas.b32", "add.s32",  "min.s32", "max.s32", "add.u64", "min.u64", "max.u64", "and.b64", "or.b64",
          "xor.b64", "exch.b64", "cas.b64", "min.s64", "max.s64", "add.f32", "add.f64"}) {
      cases.emplace_back(space, form);
    }
  }
  const unsigned ctas = 3, threads = 256, n = ctas * threads;
  const std::string text = AtomicsPtx(cases, /*misaligned=*/false);
  // The translation writes them as C: no host block in the kernel.
  {
    auto [m, p] = MustDecode(text);
    auto src = device::cpu::TranslateKernel(p, p.kernels[0]);
    ASSERT_TRUE(src.ok()) << src.status();
    size_t atoms = 0;
    for (const auto& in : p.code) atoms += in.op == device::cpu::Op::kAtom;
    EXPECT_EQ(atoms, cases.size() + 4);
    for (size_t at = src->c.find("host_exec(c, "); at != std::string::npos; at = src->c.find("host_exec(c, ", at + 1)) {
      const auto pc = std::stoul(src->c.substr(at + 13));
      ASSERT_LT(pc, p.code.size());
      EXPECT_NE(p.code[pc].op, device::cpu::Op::kAtom) << "PTX line " << p.code[pc].line << " is a host block";
    }
  }
  auto interp = device::cpu::CreateCpuDevice({.native = NativeMode::kOff});
  std::vector<uint64_t> out[2];
  std::vector<uint32_t> total[2];
  for (int native = 0; native < 2; ++native) {
    KernelHarness h(native ? KernelHarness::SharedNativeCpuDevice() : interp);
    auto k = h.LoadKernel(text, "atoms");
    ASSERT_NE(k, nullptr);
    auto pout = h.Zeros<uint64_t>(2 * n * cases.size()), pg = h.Zeros<uint64_t>(n), pt = h.Zeros<uint32_t>(3);
    ASSERT_TRUE(h.Run(*k, {ctas}, {threads}, Params(k->signature()).Add(pout).Add(pg).Add(pt).Build()).ok());
    EXPECT_EQ(device::cpu::LastLaunchWasNative(h.stream()), native == 1);
    out[native] = h.Download<uint64_t>(pout, 2 * n * cases.size());
    total[native] = h.Download<uint32_t>(pt, 3);
  }
  for (size_t c = 0; c < cases.size(); ++c) {
    for (unsigned i = 0; i < n; ++i) {
      const size_t at = (c * n + i) * 2;
      ASSERT_EQ(out[1][at], out[0][at]) << cases[c].first << " " << cases[c].second << " thread " << i << " old";
      ASSERT_EQ(out[1][at + 1], out[0][at + 1]) << cases[c].first << " " << cases[c].second << " thread " << i;
    }
  }
  // A few values against the ISA: add.u32 on the shared slot of thread 5 (init 28, b 7*5^13 = 46).
  EXPECT_EQ(out[0][(0 * n + 5) * 2], 28u);
  EXPECT_EQ(out[0][(0 * n + 5) * 2 + 1], 74u);
  // cas.b32 (case 9): init 28 != b 46, so memory keeps 28.
  EXPECT_EQ(out[0][(9 * n + 5) * 2 + 1], 28u);
  uint32_t sum = 0;
  for (unsigned t = 0; t < threads; ++t) sum += 5 * t + 3;
  for (int native = 0; native < 2; ++native) {
    EXPECT_EQ(total[native][0], ctas * sum) << native;
    EXPECT_EQ(static_cast<int32_t>(total[native][1]), 50) << native;  // max of 50 - 3t
    float f;
    std::memcpy(&f, &total[native][2], 4);
    EXPECT_EQ(f, static_cast<float>(ctas * sum)) << native;  // exact: every partial sum is an integer below 2^24
  }
  // A misaligned atomic faults alike in both tiers.
  std::string fault[2];
  for (int native = 0; native < 2; ++native) {
    KernelHarness h(native ? KernelHarness::SharedNativeCpuDevice() : interp);
    auto k = h.LoadKernel(AtomicsPtx({{"global", "add.u32"}}, /*misaligned=*/true), "atoms");
    ASSERT_NE(k, nullptr);
    auto pout = h.Zeros<uint64_t>(2 * threads), pg = h.Zeros<uint64_t>(threads), pt = h.Zeros<uint32_t>(3);
    Status st = h.Run(*k, {1}, {threads}, Params(k->signature()).Add(pout).Add(pg).Add(pt).Build());
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("misaligned atomic at 0x"), std::string::npos) << st;
    fault[native] = st.message().substr(0, st.message().find("0x"));  // (each context has its addresses)
  }
  EXPECT_EQ(fault[0], fault[1]);
  EXPECT_NE(fault[0].find("(PTX line "), std::string::npos) << fault[0];
}

// Float division, min, max, negation, absolute value, square roots, reciprocals, the transcendental
// approximations and copysign in C (native_writer.cc Float): the interpreter's bits for every pair of
// special values (NaNs, infinities, signed zeros, subnormals), and none of them a host block.
TEST(NativeCode, float_math_runs_as_c_with_the_interpreters_bits) {
  const std::vector<std::string> f32 = {
      "div.rn.f32",     "div.approx.f32", "div.full.f32",   "min.f32",        "max.f32",         "neg.f32",
      "abs.f32",        "rcp.rn.f32",     "rcp.approx.f32", "sqrt.rn.f32",    "sqrt.approx.f32", "rsqrt.approx.f32",
      "sin.approx.f32", "cos.approx.f32", "ex2.approx.f32", "lg2.approx.f32", "tanh.approx.f32", "copysign.f32"};
  const std::vector<std::string> f64 = {"div.rn.f64", "min.f64",     "max.f64",          "neg.f64",     "abs.f64",
                                        "rcp.rn.f64", "sqrt.rn.f64", "rsqrt.approx.f64", "copysign.f64"};
  auto unary = [](const std::string& op) {
    for (const char* u : {"neg", "abs", "rcp", "sqrt", "rsqrt", "sin", "cos", "ex2", "lg2", "tanh"}) {
      if (op.rfind(std::string(u) + ".", 0) == 0) return true;
    }
    return false;
  };
  // Thread t: a = in[t % 16], b = in[t / 16]; out[op * 256 + t].
  std::string t = ".version 7.8\n.target sm_90\n.address_size 64\n";
  t += ".visible .entry fmath(.param .u64 out, .param .u64 in32, .param .u64 in64)\n{\n";
  t += "  .reg .b32 %r<8>;\n  .reg .b64 %rd<16>;\n  .reg .f32 %f<4>;\n  .reg .f64 %fd<4>;\n";
  t += "  ld.param.u64 %rd1, [out];\n  ld.param.u64 %rd2, [in32];\n  ld.param.u64 %rd3, [in64];\n";
  t += "  mov.u32 %r1, %tid.x;\n  and.b32 %r2, %r1, 15;\n  shr.u32 %r3, %r1, 4;\n";
  t += "  mul.wide.u32 %rd4, %r2, 4;\n  add.s64 %rd5, %rd2, %rd4;\n  ld.global.f32 %f1, [%rd5];\n";
  t += "  mul.wide.u32 %rd4, %r3, 4;\n  add.s64 %rd5, %rd2, %rd4;\n  ld.global.f32 %f2, [%rd5];\n";
  t += "  mul.wide.u32 %rd4, %r2, 8;\n  add.s64 %rd5, %rd3, %rd4;\n  ld.global.f64 %fd1, [%rd5];\n";
  t += "  mul.wide.u32 %rd4, %r3, 8;\n  add.s64 %rd5, %rd3, %rd4;\n  ld.global.f64 %fd2, [%rd5];\n";
  t += "  mul.wide.u32 %rd6, %r1, 8;\n  add.s64 %rd7, %rd1, %rd6;\n";
  size_t k = 0;
  for (const bool is64 : {false, true}) {
    const std::vector<std::string>& list = is64 ? f64 : f32;
    const std::string a = is64 ? "%fd1" : "%f1", b = is64 ? "%fd2" : "%f2", d = is64 ? "%fd3" : "%f3";
    for (const std::string& op : list) {
      t += "  " + op + " " + d + ", " + a + (unary(op) ? "" : ", " + b) + ";\n";
      t += "  st.global." + std::string(is64 ? "f64" : "f32") + " [%rd7+" + std::to_string(k++ * 256 * 8) + "], " + d +
           ";\n";
    }
  }
  t += "  ret;\n}\n";
  const size_t ops = f32.size() + f64.size();
  {
    auto [m, p] = MustDecode(t);
    auto src = device::cpu::TranslateKernel(p, p.kernels[0]);
    ASSERT_TRUE(src.ok()) << src.status();
    EXPECT_EQ(src->c.find("host_exec(c, "), std::string::npos) << "a float instruction is a host block";
  }
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> in32 = {0.0f, -0.0f, 1.0f,   -1.0f,   2.5f,    -3.75f, inf,  -inf,
                                   nan,  -nan,  1e-40f, -1e-40f, 3.4e38f, 1e-30f, 0.1f, 7.0f};
  std::vector<double> in64;
  for (float f : in32) in64.push_back(f == 7.0f ? 1e-310 : static_cast<double>(f) * 1.000000001);
  auto interp = device::cpu::CreateCpuDevice({.native = NativeMode::kOff});
  std::vector<uint64_t> out[2];
  for (int native = 0; native < 2; ++native) {
    KernelHarness h(native ? KernelHarness::SharedNativeCpuDevice() : interp);
    auto kern = h.LoadKernel(t, "fmath");
    ASSERT_NE(kern, nullptr);
    auto pout = h.Zeros<uint64_t>(ops * 256);
    auto p32 = h.Upload(in32);
    auto p64 = h.Upload(in64);
    ASSERT_TRUE(h.Run(*kern, {1}, {256}, Params(kern->signature()).Add(pout).Add(p32).Add(p64).Build()).ok());
    EXPECT_EQ(device::cpu::LastLaunchWasNative(h.stream()), native == 1);
    out[native] = h.Download<uint64_t>(pout, ops * 256);
  }
  for (size_t o = 0; o < ops; ++o) {
    const std::string& name = o < f32.size() ? f32[o] : f64[o - f32.size()];
    for (unsigned i = 0; i < 256; ++i) {
      ASSERT_EQ(out[1][o * 256 + i], out[0][o * 256 + i]) << name << " a=in[" << i % 16 << "] b=in[" << i / 16 << "]";
    }
  }
  // A few against the ISA: max(NaN, 1) = 1, min(-0, +0) = -0, max(-0, +0) = +0.
  auto f32_at = [&](const std::string& op, unsigned ai, unsigned bi) {
    const size_t o = std::find(f32.begin(), f32.end(), op) - f32.begin();
    float f;
    const uint32_t bits = static_cast<uint32_t>(out[1][o * 256 + bi * 16 + ai]);
    std::memcpy(&f, &bits, 4);
    return f;
  };
  EXPECT_EQ(f32_at("max.f32", 8, 2), 1.0f);
  EXPECT_TRUE(std::signbit(f32_at("min.f32", 1, 0)) && f32_at("min.f32", 1, 0) == 0.0f);
  EXPECT_TRUE(!std::signbit(f32_at("max.f32", 1, 0)) && f32_at("max.f32", 1, 0) == 0.0f);
  EXPECT_TRUE(std::isnan(f32_at("max.f32", 8, 9)));
}

// shfl.sync in C (native_writer.cc Shuffle): every mode, with b and c alike for every thread
// (constants in registers: read once) and per thread, whole warps and segments of 8, the
// predicate too; the same values as the interpreter's.
TEST(NativeCode, shuffles_run_as_c_with_the_interpreters_results) {
  std::string t = ".version 7.0\n.target sm_80\n.address_size 64\n";
  t += ".visible .entry shuffles(.param .u64 out)\n{\n  .reg .pred %p<2>;\n  .reg .b32 %r<16>;\n  .reg .b64 %rd<6>;\n";
  t += "  ld.param.u64 %rd1, [out];\n  mov.u32 %r1, %tid.x;\n  mov.u32 %r2, %ctaid.x;\n  mov.u32 %r3, %ntid.x;\n";
  t += "  mad.lo.s32 %r4, %r2, %r3, %r1;\n  mul.lo.s32 %r5, %r4, 2654435761;\n";  // a value per thread
  t +=
      "  and.b32 %r6, %r1, 7;\n  and.b32 %r7, %r1, 1;\n  shl.b32 %r7, %r7, 12;\n  or.b32 %r7, %r7, 31;\n";  // per-thread
                                                                                                            // b, c
  t += "  mov.u32 %r8, 3;\n  mov.u32 %r9, 31;\n  mov.u32 %r10, 6175;\n  mov.u32 %r11, 0;\n";  // 6175: clamp 31, segment
                                                                                              // mask 24
  t += "  mul.wide.u32 %rd2, %r4, 8;\n  add.s64 %rd3, %rd1, %rd2;\n  mov.u32 %r12, %nctaid.x;\n";
  t += "  mul.lo.s32 %r12, %r12, %r3;\n  mul.wide.u32 %rd4, %r12, 8;\n";
  int cases = 0;
  for (const char* mode : {"up", "down", "bfly", "idx"}) {
    for (const char* operands : {"%r8, %r9", "%r8, %r10", "%r6, %r7", "%r8, %r11"}) {
      const std::string ops = std::string(operands) == "%r8, %r9" && std::string(mode) == "up" ? "%r8, %r11" : operands;
      t += std::string("  shfl.sync.") + mode + ".b32 %r13|%p1, %r5, " + ops + ", -1;\n";
      t += "  selp.u32 %r14, 1, 0, %p1;\n  cvt.u64.u32 %rd5, %r13;\n  shl.b64 %rd5, %rd5, 1;\n";
      t += "  cvt.u64.u32 %rd2, %r14;\n  or.b64 %rd5, %rd5, %rd2;\n  st.global.u64 [%rd3], %rd5;\n";
      t += "  add.s64 %rd3, %rd3, %rd4;\n";
      ++cases;
    }
  }
  t += "  ret;\n}\n";
  {
    auto [m, p] = MustDecode(t);
    auto src = device::cpu::TranslateKernel(p, p.kernels[0]);
    ASSERT_TRUE(src.ok()) << src.status();
    size_t in_c = 0;
    for (size_t at = 0; (at = src->c.find("v[l] = (uint32_t)a[w + (uint32_t)j]", at)) != std::string::npos; ++at)
      ++in_c;
    EXPECT_EQ(in_c, static_cast<size_t>(cases));
  }
  const unsigned ctas = 2, threads = 128, n = ctas * threads;
  auto interp = device::cpu::CreateCpuDevice({.native = NativeMode::kOff});
  std::vector<uint64_t> out[2];
  for (int native = 0; native < 2; ++native) {
    KernelHarness h(native ? KernelHarness::SharedNativeCpuDevice() : interp);
    auto k = h.LoadKernel(t, "shuffles");
    ASSERT_NE(k, nullptr);
    auto pout = h.Zeros<uint64_t>(n * cases);
    ASSERT_TRUE(h.Run(*k, {ctas}, {threads}, Params(k->signature()).Add(pout).Build()).ok());
    EXPECT_EQ(device::cpu::LastLaunchWasNative(h.stream()), native == 1);
    out[native] = h.Download<uint64_t>(pout, n * cases);
  }
  EXPECT_EQ(out[1], out[0]);
  // Against the ISA: down by 3, whole warp (case 4): lane 30 has no source (keeps its own, p = 0);
  // lane 5 takes lane 8's value. Segments of 8 (case 5): lane 5 has none, lane 4 takes lane 7's.
  auto value = [](unsigned i) { return static_cast<uint32_t>(i * 2654435761u); };
  EXPECT_EQ(out[0][4 * n + 30], uint64_t{value(30)} << 1);
  EXPECT_EQ(out[0][4 * n + 5], (uint64_t{value(8)} << 1) | 1);
  EXPECT_EQ(out[0][5 * n + 5], uint64_t{value(5)} << 1);
  EXPECT_EQ(out[0][5 * n + 4], (uint64_t{value(7)} << 1) | 1);
}

TEST(NativeCode, a_kernel_with_calls_runs_in_native_code) {
  // call and a .func's ret are host blocks (the interpreter's frames); the bodies are C.
  KernelHarness h(KernelHarness::SharedNativeCpuDevice());
  const char* ptx =
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".func (.param .b32 r) twice(.param .b32 a)\n{\n  .reg .b32 %v<3>;\n  ld.param.b32 %v1, [a];\n"
      "  add.u32 %v2, %v1, %v1;\n  st.param.b32 [r], %v2;\n  ret;\n}\n"
      ".visible .entry calls(.param .u64 p)\n{\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<4>;\n"
      "  ld.param.u64 %rd1, [p];\n  cvta.to.global.u64 %rd2, %rd1;\n  mov.u32 %r1, %tid.x;\n"
      "  { .param .b32 a0; .param .b32 r0; st.param.b32 [a0], %r1;\n"
      "  call.uni (r0), twice, (a0);\n  ld.param.b32 %r2, [r0]; }\n"
      "  mul.wide.u32 %rd3, %r1, 4;\n  add.s64 %rd2, %rd2, %rd3;\n  st.global.u32 [%rd2], %r2;\n  ret;\n}\n";
  auto m = h.context().LoadModule(ptx);
  ASSERT_TRUE(m.ok()) << m.status();
  auto k = *(*m)->GetKernel("calls");
  EXPECT_EQ(device::cpu::NativeCodeWhyNot(*k), "");
  auto out = h.Zeros<int>(64);
  ASSERT_TRUE(h.Run(*k, {1}, {64}, Params(k->signature()).Add(out).Build()).ok());
  EXPECT_TRUE(device::cpu::LastLaunchWasNative(h.stream()));
  auto got = h.Download<int>(out, 64);
  for (int t = 0; t < 64; ++t) EXPECT_EQ(got[t], 2 * t) << t;
}

TEST(NativeCode, b128_registers_move_load_and_store_as_two_halves) {
  // sm_90 code keeps 16-byte values in .b128 registers: mov to and from 64-bit pairs, ld/st.b128.
  for (bool native : {false, true}) {
    KernelHarness h(native ? KernelHarness::SharedNativeCpuDevice() : nullptr);
    const char* ptx =
        ".version 8.3\n.target sm_90\n.address_size 64\n"
        ".visible .entry wide(.param .u64 p)\n{\n  .reg .b128 %q<3>;\n  .reg .b64 %rd<8>;\n"
        "  ld.param.u64 %rd1, [p];\n  cvta.to.global.u64 %rd2, %rd1;\n  ld.global.b128 %q1, [%rd2];\n"
        "  mov.b128 {%rd3, %rd4}, %q1;\n  add.s64 %rd3, %rd3, 1;\n  mov.b128 %q2, {%rd4, %rd3};\n"
        "  st.global.b128 [%rd2+16], %q2;\n  mov.b128 %q1, %q2;\n  st.global.b128 [%rd2+32], %q1;\n  ret;\n}\n";
    auto m = h.context().LoadModule(ptx);
    ASSERT_TRUE(m.ok()) << m.status();
    auto k = *(*m)->GetKernel("wide");
    auto buf = h.Upload(std::vector<uint64_t>{0x1111222233334444ull, 0x5555666677778888ull, 0, 0, 0, 0});
    ASSERT_TRUE(h.Run(*k, {1}, {1}, Params(k->signature()).Add(buf).Build()).ok());
    EXPECT_EQ(device::cpu::LastLaunchWasNative(h.stream()), native);
    auto got = h.Download<uint64_t>(buf, 6);
    EXPECT_EQ(got[2], 0x5555666677778888ull);
    EXPECT_EQ(got[3], 0x1111222233334445ull);
    EXPECT_EQ(got[4], got[2]);
    EXPECT_EQ(got[5], got[3]);
  }
  KernelHarness h;
  auto m = h.context().LoadModule(
      ".version 8.3\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n"
      "  .reg .b128 %q<3>;\n  .reg .b64 %rd<2>;\n  red.global.add.b128 [%rd1], %q1;\n  ret;\n}\n");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("a .b128 atomic is atom.exch or atom.cas"), std::string::npos) << m.status();
}

TEST(NativeCode, warp_synchronous_volatile_shared_memory_runs_interpreted_and_says_why) {
  // Such code relies on the lanes of a warp running in lockstep without __syncwarp(); native code
  // runs a block's threads one after another, so the kernel stays interpreted.
  KernelHarness h(KernelHarness::SharedNativeCpuDevice());
  const char* ptx =
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".visible .entry vol(.param .u64 p)\n{\n  .reg .b32 %r<6>;\n  .reg .b64 %rd<4>;\n"
      "  .shared .align 4 .b8 s[256];\n  mov.u32 %r1, %tid.x;\n  shl.b32 %r2, %r1, 2;\n"
      "  mov.u32 %r3, s;\n  add.u32 %r3, %r3, %r2;\n  st.volatile.shared.u32 [%r3], %r1;\n"
      "  ld.volatile.shared.u32 %r4, [%r3];\n  ld.param.u64 %rd1, [p];\n  cvta.to.global.u64 %rd2, %rd1;\n"
      "  mul.wide.u32 %rd3, %r1, 4;\n  add.s64 %rd2, %rd2, %rd3;\n  st.global.u32 [%rd2], %r4;\n  ret;\n}\n";
  auto m = h.context().LoadModule(ptx);
  ASSERT_TRUE(m.ok()) << m.status();
  auto k = *(*m)->GetKernel("vol");
  auto out = h.Zeros<int>(32);
  ASSERT_TRUE(h.Run(*k, {1}, {32}, Params(k->signature()).Add(out).Build()).ok());
  EXPECT_FALSE(device::cpu::LastLaunchWasNative(h.stream()));
  EXPECT_EQ(h.Download<int>(out, 32)[31], 31);
  const std::string why = device::cpu::NativeCodeWhyNot(*k);
  EXPECT_EQ(why.rfind("native code: volatile shared memory access", 0), 0u) << why;
  EXPECT_NE(why.find("(PTX line 13)"), std::string::npos) << why;
}

TEST(NativeCode, a_compiler_that_fails_leaves_the_kernel_interpreted) {
  // `false` exits 1 whatever it is given: the compile fails, the launch still runs.
  auto dev = device::cpu::CreateCpuDevice({.native = NativeMode::kAlways, .cc = "false"});
  KernelHarness h(dev);
  // A translation no other test compiles (the process shares compiled code by its source).
  const char* ptx =
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".visible .entry seven(.param .u64 p)\n{\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<4>;\n"
      "  ld.param.u64 %rd1, [p];\n  cvta.to.global.u64 %rd2, %rd1;\n  mov.u32 %r1, 7777;\n"
      "  st.global.u32 [%rd2], %r1;\n  ret;\n}\n";
  auto m = h.context().LoadModule(ptx);
  ASSERT_TRUE(m.ok()) << m.status();
  auto k = *(*m)->GetKernel("seven");
  auto out = h.Zeros<int>(1);
  ASSERT_TRUE(h.Run(*k, {1}, {1}, Params(k->signature()).Add(out).Build()).ok());
  EXPECT_FALSE(device::cpu::LastLaunchWasNative(h.stream()));
  EXPECT_EQ(h.Download<int>(out, 1)[0], 7777);
  EXPECT_NE(device::cpu::NativeCodeWhyNot(*k).find("compiling a kernel's native code failed"), std::string::npos)
      << device::cpu::NativeCodeWhyNot(*k);
}

TEST(NativeCode, by_default_a_kernel_is_compiled_in_the_background_once_it_ran_enough) {
  auto dev = device::cpu::CreateCpuDevice({.native = NativeMode::kAuto, .native_threshold = 5000, .native_payback = 0});
  KernelHarness h(dev);
  const char* ptx =  // again a source of its own: no other test compiled it already
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".visible .entry fill(.param .u64 p)\n{\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<6>;\n"
      "  ld.param.u64 %rd1, [p];\n  cvta.to.global.u64 %rd2, %rd1;\n  mov.u32 %r1, %tid.x;\n"
      "  mul.wide.u32 %rd3, %r1, 4;\n  add.s64 %rd4, %rd2, %rd3;\n  add.u32 %r2, %r1, 4242;\n"
      "  st.global.u32 [%rd4], %r2;\n  ret;\n}\n";
  auto m = h.context().LoadModule(ptx);
  ASSERT_TRUE(m.ok()) << m.status();
  auto k = *(*m)->GetKernel("fill");
  auto out = h.Zeros<int>(256);
  // 256 threads x 8 instructions = 2048 per launch: the first three launches are interpreted.
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(h.Run(*k, {1}, {256}, Params(k->signature()).Add(out).Build()).ok());
    EXPECT_FALSE(device::cpu::LastLaunchWasNative(h.stream())) << i;
  }
  bool native = false;
  for (int i = 0; i < 600 && !native; ++i) {  // the compile takes well under a minute
    ASSERT_TRUE(h.Run(*k, {1}, {256}, Params(k->signature()).Add(out).Build()).ok());
    native = device::cpu::LastLaunchWasNative(h.stream());
    if (!native) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(native) << device::cpu::NativeCodeWhyNot(*k);
  EXPECT_EQ(h.Download<int>(out, 256)[255], 255 + 4242);
}

TEST(NativeCode, by_default_a_compile_waits_until_interpreting_cost_ten_times_its_estimate) {
  // A compile of a small kernel is estimated at tens of milliseconds: a few launches of a tiny
  // kernel, far past the instruction threshold, are far from paying it back, so none starts.
  auto dev = device::cpu::CreateCpuDevice({.native = NativeMode::kAuto, .native_threshold = 1});
  KernelHarness h(dev);
  const char* ptx =  // a source of its own: no other test compiled it already
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".visible .entry fill(.param .u64 p)\n{\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<6>;\n"
      "  ld.param.u64 %rd1, [p];\n  cvta.to.global.u64 %rd2, %rd1;\n  mov.u32 %r1, %tid.x;\n"
      "  mul.wide.u32 %rd3, %r1, 4;\n  add.s64 %rd4, %rd2, %rd3;\n  add.u32 %r2, %r1, 2424;\n"
      "  st.global.u32 [%rd4], %r2;\n  ret;\n}\n";
  auto m = h.context().LoadModule(ptx);
  ASSERT_TRUE(m.ok()) << m.status();
  auto k = *(*m)->GetKernel("fill");
  auto out = h.Zeros<int>(32);
  EXPECT_GT(device::cpu::EstimatedCompileCost(4096), std::chrono::milliseconds(10));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(h.Run(*k, {1}, {32}, Params(k->signature()).Add(out).Build()).ok());
  std::this_thread::sleep_for(std::chrono::seconds(2));  // a started compile would be done
  ASSERT_TRUE(h.Run(*k, {1}, {32}, Params(k->signature()).Add(out).Build()).ok());
  EXPECT_FALSE(device::cpu::LastLaunchWasNative(h.stream()));
  EXPECT_EQ(h.Download<int>(out, 32)[31], 31 + 2424);
}

TEST(NativeCode, off_never_compiles) {
  auto dev = device::cpu::CreateCpuDevice({.native = NativeMode::kOff});
  KernelHarness h(dev);
  auto k = h.Load("oob_write", "sm_80", "oob_write");
  auto out = h.Zeros<int>(64);
  ASSERT_TRUE(h.Run(*k, {1}, {64}, Params(k->signature()).Add(out).Add(64u).Add(0u).Build()).ok());
  EXPECT_FALSE(device::cpu::LastLaunchWasNative(h.stream()));
}

TEST(NativeCode, the_environment_chooses_the_mode_and_a_wrong_value_is_refused) {
  struct Restore {
    ~Restore() { unsetenv("GPUWASM_CPU_NATIVE"); }
  } restore;
  for (const char* mode : {"off", "always"}) {
    setenv("GPUWASM_CPU_NATIVE", mode, 1);
    auto dev = device::OpenDevice("cpu");
    ASSERT_TRUE(dev.ok()) << dev.status();
    KernelHarness h(*dev);
    auto k = h.Load("oob_write", "sm_90", "oob_write");
    auto out = h.Zeros<int>(32);
    ASSERT_TRUE(h.Run(*k, {1}, {32}, Params(k->signature()).Add(out).Add(32u).Add(0u).Build()).ok());
    EXPECT_EQ(device::cpu::LastLaunchWasNative(h.stream()), std::string(mode) == "always") << mode;
  }
  setenv("GPUWASM_CPU_NATIVE", "fast", 1);
  auto dev = device::OpenDevice("cpu");
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.status().message(), "GPUWASM_CPU_NATIVE is 'fast': use off, auto or always");
}

}  // namespace
}  // namespace gpuwasm::testing
