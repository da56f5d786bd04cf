// Bad kernels: out-of-bounds accesses fault cleanly without touching anything outside the
// instance's buffers; runaway kernels stop at their deadline or on cancel; unsupported PTX is
// refused by name and line.
//
// Under $GPUWASM_TEST_DEVICE=cuda:0 the same tests state the CUDA device's contract instead where
// a GPU differs (cuda_device.h): a fault is process-fatal, a running kernel cannot be stopped (its
// context is abandoned after the grace), and accesses out of one buffer but inside memory the
// context mapped do not fault (those tests skip). The native tier is the CPU device's: skipped.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "fault_kernels.h"
#include "kernel_harness.h"

namespace gpuwasm::testing {
namespace {

using std::chrono::milliseconds;

// Parameter: the CPU device interpreting (false), or running native code where it can (true).
class Faults : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam() && !KernelHarness::TestDeviceIsCpu()) GTEST_SKIP() << "native code is the CPU device's tier";
  }
  std::shared_ptr<device::Device> Dev() const { return GetParam() ? KernelHarness::SharedNativeCpuDevice() : nullptr; }
  static bool OnGpu() { return KernelHarness::SharedTestDevice()->info().kind == device::DeviceKind::kCuda; }
};

#define SKIP_ON_GPU_PER_BUFFER()                                                             \
  if (OnGpu())                                                                               \
  GTEST_SKIP() << "a GPU faults only outside the memory the context mapped (pool chunks of " \
                  "2 MiB or more), not outside one buffer"

TEST_P(Faults, out_of_bounds_store_faults_and_touches_nothing_outside) {
  SKIP_ON_GPU_PER_BUFFER();
  KernelHarness h{Dev()};
  auto k = h.Load("oob_write", "sm_80", "oob_write");
  ASSERT_NE(k, nullptr);
  unsigned n = 1000;
  auto canary_before = h.Upload(std::vector<int>(64, 0x5a5a5a5a));
  auto out = h.Zeros<int>(n);
  auto canary_after = h.Upload(std::vector<int>(64, 0x5a5a5a5a));
  Status s = h.Run(*k, {(n + 127) / 128}, {128}, Params(k->signature()).Add(out).Add(n).Add(1u).Build());
  ASSERT_EQ(s.code(), StatusCode::kDeviceFault) << s;
  EXPECT_NE(s.message().find("kernel 'oob_write' (PTX line "), std::string::npos) << s;
  EXPECT_NE(s.message().find("global store of 4 bytes at 0x"), std::string::npos) << s;
  EXPECT_NE(s.message().find("is outside the instance's buffers"), std::string::npos) << s;
  // The stream is poisoned (like a CUDA context after a fault)...
  EXPECT_EQ(h.stream().Synchronize().code(), StatusCode::kDeviceFault);
  // ...but its memory is intact and readable through a new stream.
  auto fresh = *h.context().CreateStream();
  std::vector<int> c1(64), c2(64);
  ASSERT_TRUE(fresh->MemcpyDtoH(c1.data(), canary_before, 256).ok());
  ASSERT_TRUE(fresh->MemcpyDtoH(c2.data(), canary_after, 256).ok());
  EXPECT_EQ(c1, std::vector<int>(64, 0x5a5a5a5a));
  EXPECT_EQ(c2, std::vector<int>(64, 0x5a5a5a5a));
}

TEST_P(Faults, in_bounds_launch_of_the_same_kernel_succeeds) {
  KernelHarness h{Dev()};
  auto k = h.Load("oob_write", "sm_80", "oob_write");
  unsigned n = 1000;
  auto out = h.Zeros<int>(n + 1);
  ASSERT_TRUE(h.Run(*k, {8}, {128}, Params(k->signature()).Add(out).Add(n).Add(1u).Build()).ok());
  EXPECT_EQ(h.Download<int>(out, n + 1)[n], static_cast<int>(n - 1));
}

TEST_P(Faults, pointer_of_another_context_faults) {
  KernelHarness tenant_a{Dev()}, tenant_b{Dev()};
  auto k = tenant_a.Load("oob_write", "sm_80", "oob_write");
  auto foreign = tenant_b.Zeros<int>(100);
  ASSERT_TRUE(tenant_b.stream().Synchronize().ok());  // B's upload is done before A's kernel runs
  Status s = tenant_a.Run(*k, {1}, {32}, Params(k->signature()).Add(foreign).Add(32u).Add(0u).Build());
  EXPECT_EQ(s.code(), StatusCode::kDeviceFault) << s;
  if (OnGpu()) {
    // The fault is process-fatal: the other tenant cannot even look (in production it lives in its
    // own worker process); every call says the process must be restarted.
    std::vector<int> v(100);
    Status seen = tenant_b.stream().MemcpyDtoH(v.data(), foreign, 400);
    EXPECT_EQ(seen.code(), StatusCode::kDeviceFault) << seen;
    EXPECT_NE(seen.message().find("restarted"), std::string::npos) << seen;
    return;
  }
  EXPECT_EQ(tenant_b.Download<int>(foreign, 100), std::vector<int>(100, 0));
  // The other tenant's next launch runs as if nothing happened.
  auto kb = tenant_b.Load("oob_write", "sm_80", "oob_write");
  ASSERT_TRUE(tenant_b.Run(*kb, {1}, {32}, Params(kb->signature()).Add(foreign).Add(32u).Add(0u).Build()).ok());
  EXPECT_EQ(tenant_b.Download<int>(foreign, 32)[31], 31);
}

TEST_P(Faults, deadline_stops_a_kernel_that_never_ends) {
  KernelHarness h{Dev()};
  auto k = h.Load("spin", "sm_80", "spin");
  auto out = h.Zeros<int>(64);
  // A first launch that ends at once: the native tier compiles the kernel there, before the clock.
  auto stop = h.Upload(std::vector<int>{0});
  ASSERT_TRUE(h.Run(*k, {1}, {64}, Params(k->signature()).Add(stop).Add(out).Build()).ok());
  auto flag = h.Upload(std::vector<int>{1});
  device::LaunchOptions o;
  o.deadline = std::chrono::steady_clock::now() + milliseconds(200);
  std::atomic<int64_t> reported_ms{-1};
  auto t0 = std::chrono::steady_clock::now();
  o.on_complete = [&](const Status& r) {
    EXPECT_EQ(r.code(), StatusCode::kDeadlineExceeded) << r;
    reported_ms = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0).count();
  };
  Status s = h.Run(*k, {1}, {64}, Params(k->signature()).Add(flag).Add(out).Build(), 0, std::move(o));
  auto took = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s;
  // The launch is reported at its deadline on every device.
  EXPECT_GE(reported_ms.load(), 190);
  EXPECT_LE(reported_ms.load(), 400);
  // The CPU device stops the kernel there; a GPU cannot, and the stream returns once the context
  // was abandoned after the grace.
  EXPECT_GE(took, 190);
  EXPECT_LE(took, OnGpu() ? 2500 : 400);
}

TEST_P(Faults, cancel_stops_a_running_kernel_and_the_stream_stays_usable) {
  KernelHarness h{Dev()};
  auto k = h.Load("spin", "sm_80", "spin");
  auto flag = h.Upload(std::vector<int>{1});
  auto out = h.Zeros<int>(32);
  std::atomic<bool> completed{false};
  Status seen;
  device::LaunchOptions o;
  o.on_complete = [&](const Status& s) {
    seen = s;
    completed = true;
  };
  device::LaunchConfig c;
  c.block.x = 32;
  ASSERT_TRUE(h.stream().Launch(*k, c, Params(k->signature()).Add(flag).Add(out).Build(), std::move(o)).ok());
  std::this_thread::sleep_for(milliseconds(50));
  h.stream().Cancel();
  EXPECT_TRUE(completed.load());
  EXPECT_EQ(seen.code(), StatusCode::kCancelled) << seen;
  if (OnGpu()) {
    // Nothing stops the kernel: after the grace its context is abandoned and the stream is dead;
    // the tenant's next stream gets a fresh context.
    Status s = h.stream().Synchronize();
    EXPECT_EQ(s.code(), StatusCode::kDeviceFault) << s;
    EXPECT_NE(s.message().find("a GPU cannot stop one kernel"), std::string::npos) << s;
    auto fresh = h.context().CreateStream();
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    auto p = h.context().Allocate(16);
    ASSERT_TRUE(p.ok()) << p.status();
    int v[4] = {1, 2, 3, 4};
    EXPECT_TRUE((*fresh)->MemcpyDtoH(v, *p, 16).ok());
    EXPECT_EQ(v[3], 0);
    return;
  }
  // The flag cleared, the same kernel finishes.
  int zero = 0;
  ASSERT_TRUE(h.stream().MemcpyHtoD(flag, &zero, 4).ok());
  ASSERT_TRUE(h.Run(*k, {1}, {32}, Params(k->signature()).Add(flag).Add(out).Build()).ok());
}

// kTwoBufferPtx (fault_kernels.h): the executor's per-instruction region must not let a lane of
// one buffer through the check of the other.
std::shared_ptr<const device::Kernel> LoadSplit(KernelHarness& h) {
  auto m = h.context().LoadModule(kTwoBufferPtx);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *(*m)->GetKernel("split") : nullptr;
}

TEST_P(Faults, lanes_of_one_instruction_may_use_different_buffers) {
  KernelHarness h{Dev()};
  auto k = LoadSplit(h);
  ASSERT_NE(k, nullptr);
  auto a = h.Zeros<int>(64), b = h.Zeros<int>(64);
  for (int launch = 0; launch < 2; ++launch) {  // the second launch starts with warm caches
    ASSERT_TRUE(h.Run(*k, {1}, {64}, Params(k->signature()).Add(a).Add(b).Add(7u).Build()).ok());
  }
  std::vector<int> ga = h.Download<int>(a, 64), gb = h.Download<int>(b, 64);
  for (int t = 0; t < 64; ++t) {
    EXPECT_EQ((t % 2 == 0 ? ga : gb)[t], 7) << t;
    EXPECT_EQ((t % 2 == 0 ? gb : ga)[t], 0) << t;
  }
}

TEST_P(Faults, values_computed_once_per_launch_are_computed_again_for_the_next) {
  // The parameter loads and their conversions are the same for every thread of a launch, and the
  // executor computes them once per launch: a second launch with other buffers must use its own.
  KernelHarness h{Dev()};
  auto k = LoadSplit(h);
  ASSERT_NE(k, nullptr);
  auto a1 = h.Zeros<int>(256), b1 = h.Zeros<int>(256), a2 = h.Zeros<int>(256), b2 = h.Zeros<int>(256);
  ASSERT_TRUE(h.Run(*k, {4}, {64}, Params(k->signature()).Add(a1).Add(b1).Add(1u).Build()).ok());
  ASSERT_TRUE(h.Run(*k, {4}, {64}, Params(k->signature()).Add(a2).Add(b2).Add(2u).Build()).ok());
  auto ga1 = h.Download<int>(a1, 64), ga2 = h.Download<int>(a2, 64), gb2 = h.Download<int>(b2, 64);
  for (int t = 0; t < 64; t += 2) {
    EXPECT_EQ(ga1[t], 1) << t;
    EXPECT_EQ(ga2[t], 2) << t;
    EXPECT_EQ(gb2[t + 1], 2) << t;
  }
}

TEST_P(Faults, a_lane_past_the_second_buffer_faults_after_the_first_fit) {
  // 64 threads, but b holds only 40 ints: the odd lanes >= 40 are outside every buffer.
  SKIP_ON_GPU_PER_BUFFER();
  KernelHarness h{Dev()};
  auto k = LoadSplit(h);
  ASSERT_NE(k, nullptr);
  auto a = h.Zeros<int>(64), b = h.Zeros<int>(40);
  auto canary = h.Upload(std::vector<int>(64, 0x5a5a5a5a));
  Status s = h.Run(*k, {1}, {64}, Params(k->signature()).Add(a).Add(b).Add(7u).Build());
  ASSERT_EQ(s.code(), StatusCode::kDeviceFault) << s;
  EXPECT_NE(s.message().find("kernel 'split' (PTX line 20)"), std::string::npos) << s;
  EXPECT_NE(s.message().find("global store of 4 bytes at 0x"), std::string::npos) << s;
  auto fresh = *h.context().CreateStream();
  std::vector<int> c(64);
  ASSERT_TRUE(fresh->MemcpyDtoH(c.data(), canary, 256).ok());
  EXPECT_EQ(c, std::vector<int>(64, 0x5a5a5a5a));
}

// The deadline is checked between CTAs too, by the clock: a grid of CTAs each shorter than the
// in-CTA check interval stops at its deadline, whatever its shape (docs/reliability.md has the
// overshoot, measured: bench_launch --deadlines).
TEST_P(Faults, a_grid_of_tiny_blocks_stops_at_its_deadline) {
  if (OnGpu()) GTEST_SKIP() << "a GPU cannot stop a kernel: the context is abandoned after the grace";
  KernelHarness h{Dev()};
  const char* ptx =
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".visible .entry tiny(.param .u64 out)\n{\n  .reg .b32 %r<3>;\n  .reg .b64 %rd<4>;\n"
      "  ld.param.u64 %rd1, [out];\n  cvta.to.global.u64 %rd2, %rd1;\n  mov.u32 %r1, %ctaid.x;\n"
      "  and.b32 %r2, %r1, 63;\n  mul.wide.u32 %rd3, %r2, 4;\n  add.s64 %rd2, %rd2, %rd3;\n"
      "  st.global.u32 [%rd2], %r1;\n  ret;\n}\n";
  auto m = h.context().LoadModule(ptx);
  ASSERT_TRUE(m.ok()) << m.status();
  auto k = (*m)->GetKernel("tiny");
  ASSERT_TRUE(k.ok());
  auto out = h.Zeros<int>(64);
  ASSERT_TRUE(h.Run(**k, {64}, {1}, Params((*k)->signature()).Add(out).Build()).ok());  // native: compiled here
  for (device::Dim3 grid : {device::Dim3{2147483647, 65535, 65535}, device::Dim3{20'000'000, 1, 1}}) {
    auto stream = *h.context().CreateStream();  // one whose last launch did not fail
    device::LaunchOptions o;
    auto t0 = std::chrono::steady_clock::now();
    o.deadline = t0 + milliseconds(100);
    device::LaunchConfig c;
    c.grid = grid;
    c.block = {1};
    Status s = stream->Launch(**k, c, Params((*k)->signature()).Add(out).Build(), std::move(o));
    if (s.ok()) s = stream->Synchronize();
    auto took = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s;
    EXPECT_GE(took, 95) << s;
    EXPECT_LE(took, 100 + 300) << grid.x;  // 50 ms on a quiet machine; slack for a loaded one
  }
}

TEST_P(Faults, a_trap_ends_the_launch_with_a_fault_naming_its_line) {
  if (OnGpu()) GTEST_SKIP() << "on a GPU a trap is a sticky device error (cuda_device.h)";
  // Thread 5 of every block traps after the others stored: native code runs it as a host block.
  KernelHarness h{Dev()};
  auto m = h.context().LoadModule(kTrapperPtx);
  ASSERT_TRUE(m.ok()) << m.status();
  auto k = *(*m)->GetKernel("trapper");
  if (GetParam()) {
    EXPECT_EQ(device::cpu::NativeCodeWhyNot(*k), "");
  }
  auto out = h.Zeros<int>(64);
  Status s = h.Run(*k, {1}, {64}, Params(k->signature()).Add(out).Build());
  ASSERT_EQ(s.code(), StatusCode::kDeviceFault) << s;
  EXPECT_NE(s.message().find("kernel 'trapper' (PTX line 16)"), std::string::npos) << s;
  EXPECT_NE(s.message().find("trap instruction executed"), std::string::npos) << s;
}

TEST_P(Faults, an_async_copy_outside_the_buffers_faults_and_copies_nothing_there) {
  SKIP_ON_GPU_PER_BUFFER();
  KernelHarness h{Dev()};
  auto m = h.context().LoadModule(kCopierPtx);
  ASSERT_TRUE(m.ok()) << m.status();
  auto k = *(*m)->GetKernel("copier");
  auto src = h.Upload(std::vector<uint32_t>(16 * 4, 7));  // 16 threads' worth of 16 bytes
  auto dst = h.Zeros<uint32_t>(64 * 4);
  ASSERT_TRUE(h.Run(*k, {1}, {16}, Params(k->signature()).Add(src).Add(dst).Build()).ok());
  auto got = h.Download<uint32_t>(dst, 64);
  EXPECT_EQ(got[0], 7u);
  EXPECT_EQ(got[60], 7u);  // thread 15's first word
  Status s = h.Run(*k, {1}, {64}, Params(k->signature()).Add(src).Add(dst).Build());
  ASSERT_EQ(s.code(), StatusCode::kDeviceFault) << s;
  EXPECT_NE(s.message().find("global load of 16 bytes at 0x"), std::string::npos) << s;
}

INSTANTIATE_TEST_SUITE_P(Tier, Faults, ::testing::Values(false, true), [](const auto& info) {
  return info.param ? std::string("native") : std::string("interpreted");
});

TEST(Unsupported, instruction_is_named_with_its_line) {
  KernelHarness h;
  const char* ptx =
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".visible .entry k(.param .u64 p)\n{\n  .reg .b32 %r<4>;\n"
      "  bar.arrive 1, 64;\n  ret;\n}\n";
  auto m = h.context().LoadModule(ptx);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(m.status().message(),
            "line 7: unsupported instruction 'bar.arrive': only barrier 0 without a thread count is supported");
}

TEST(Unsupported, every_unsupported_construct_of_a_module_is_named_at_once) {
  // A module's author learns all that this device lacks from one load, not one line per try.
  KernelHarness h;
  const char* ptx =
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".visible .entry k(.param .u64 p)\n{\n  .reg .b32 %r<4>;\n"
      "  bar.arrive 1, 64;\n  pmevent 1;\n  ret;\n}\n"
      ".visible .entry k2(.param .u64 p)\n{\n  .reg .b32 %r<4>;\n"
      "  mov.u32 %r1, 7;\n  bar.arrive 2, 64;\n  ret;\n}\n";
  auto m = h.context().LoadModule(ptx);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(m.status().message(),
            "3 unsupported constructs: line 7: unsupported instruction 'bar.arrive': only barrier 0 without a thread "
            "count is supported; line 8: unsupported instruction 'pmevent'; line 15: unsupported instruction "
            "'bar.arrive': only barrier 0 without a thread count is supported");
}

TEST(Unsupported, valid_instructions_of_the_isa_the_device_lacks_are_unsupported_not_bad_ptx) {
  KernelHarness h;
  const char* ptx =
      ".version 8.0\n.target sm_90\n.address_size 64\n"
      ".visible .entry k(.param .u64 p)\n{\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<4>;\n"
      "  mapa.u64 %rd1, %rd2, %r1;\n  movmatrix.sync.aligned.m8n8.trans.b16 %r1, %r2;\n  ret;\n}\n";
  auto m = h.context().LoadModule(ptx);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kUnsupported) << m.status();
  EXPECT_NE(m.status().message().find("line 8: unsupported instruction 'mapa.u64'"), std::string::npos) << m.status();
  EXPECT_NE(m.status().message().find("line 9: unsupported instruction 'movmatrix"), std::string::npos) << m.status();
}

TEST(Unsupported, stochastic_rounding_conversions_are_unsupported_naming_the_form) {
  // sm_100a's .rs conversions take random bits whose use the device does not model (yet).
  KernelHarness h;
  const char* ptx =
      ".version 8.7\n.target sm_100a\n.address_size 64\n"
      ".visible .entry k(.param .u64 p)\n{\n  .reg .b32 %r<4>;\n  .reg .f32 %f<5>;\n  .reg .b16 %rs<2>;\n"
      "  cvt.rs.f16x2.f32 %r1, %f1, %f2, %r2;\n"
      "  cvt.rs.satfinite.e4m3x4.f32 %r1, {%f1, %f2, %f3, %f4}, %r2;\n  ret;\n}\n";
  auto m = h.context().LoadModule(ptx);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kUnsupported) << m.status();
  EXPECT_NE(m.status().message().find("line 9: unsupported instruction 'cvt.rs.f16x2.f32': stochastic rounding (.rs)"),
            std::string::npos)
      << m.status();
  EXPECT_NE(
      m.status().message().find("line 10: unsupported instruction 'cvt.rs.satfinite.e4m3x4.f32': stochastic rounding"),
      std::string::npos)
      << m.status();
}

TEST(BadPtx, video_forms_that_ptxas_refuses_are_bad_ptx_naming_the_line) {
  // ptxas: "Clamp modifier required for instruction 'vshl'", "Operand negation limited to either
  // (source A xor source B) or source C"; a selector names an element of {b, a} only.
  struct Bad {
    const char* inst;
    const char* why;
  };
  const Bad kBad[] = {
      {"vshl.u32.u32.u32 %r1, %r2, %r3;", "vshl.u32.u32.u32: vshl needs .clamp or .wrap"},
      {"vmad.s32.u32.u32 %r1, -%r2, %r3, -%r1;", "vmad negates the product or c, not both"},
      {"vadd4.u32.u32.u32 %r1, %r2.b765, %r3, %r1;", "selector .b765 (vadd4 selects 4 bytes"},
      {"vadd2.u32.u32.u32 %r1.h01, %r2, %r3, %r1;", "mask .h01"},
      {"vadd.u32.u32.u32.add %r1, %r2, %r3;", "missing operand c"},
      {"vmax.u32.u32.u32 %r1, %r2.h2, %r3;", "selector .h2"},
  };
  for (const Bad& b : kBad) {
    KernelHarness h;
    const std::string ptx = std::string(".version 8.0\n.target sm_90\n.address_size 64\n") +
                            ".visible .entry k(.param .u64 p)\n{\n  .reg .b32 %r<4>;\n  " + b.inst + "\n  ret;\n}\n";
    auto m = h.context().LoadModule(ptx);
    ASSERT_FALSE(m.ok()) << b.inst;
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << b.inst << ": " << m.status();
    EXPECT_NE(m.status().message().find("line 7, column 3: "), std::string::npos) << m.status();
    EXPECT_NE(m.status().message().find(b.why), std::string::npos) << b.inst << ": " << m.status();
  }
}

TEST(Unsupported, a_huge_call_parameter_is_refused_before_anything_is_allocated) {
  // Call parameters are registers of every thread: each is bounded (the parser bounds a
  // function's to 4096 elements, the decoder every one to 4 KiB).
  KernelHarness h;
  const char* ptx =
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".func (.param .align 8 .b64 r[1024]) f()\n{\n  ret;\n}\n"
      ".visible .entry k()\n{\n  .param .align 8 .b8 big[1048576];\n  call.uni (big), f, ();\n  ret;\n}\n";
  auto m = h.context().LoadModule(ptx);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kUnsupported) << m.status();
  EXPECT_NE(m.status().message().find("function 'f': a call parameter of 8192 bytes (at most 4096)"), std::string::npos)
      << m.status();
  EXPECT_NE(m.status().message().find("line 10: a call parameter of 1048576 bytes (at most 4096)"), std::string::npos)
      << m.status();
}

TEST(Unsupported, recursion_is_refused) {
  KernelHarness h;
  const char* ptx =
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".func f()\n{\n  call.uni f, ();\n  ret;\n}\n"
      ".visible .entry k()\n{\n  call.uni f, ();\n  ret;\n}\n";
  auto m = h.context().LoadModule(ptx);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), "recursive call to 'f' is not supported by the CPU device");
}

}  // namespace
}  // namespace gpuwasm::testing
