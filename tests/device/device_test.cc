// The CPU device's own limits and launch checks (the contract every device keeps is
// device_contract.h, run by contract_test.cc).
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "device/cpu/cpu_device.h"
#include "kernel_harness.h"

namespace gpuwasm::testing {
namespace {

// The workers claim runs of CTAs, each a share of what is left (exec.cc Work): over grids whose
// size is no multiple of the runs, on one to three threads, in both tiers, every CTA runs exactly
// once and the thread-instructions add up alike.
TEST(CpuDevice, every_cta_runs_once_however_the_workers_claim_them) {
  const char* text = R"(.version 7.0
.target sm_70
.address_size 64
.visible .entry count(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %ctaid.x;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  atom.global.add.u32 %r2, [%rd3], 1;
  ret;
}
)";
  for (unsigned ctas : {1u, 255u, 1000u, 10007u}) {
    std::set<uint64_t> counted;
    for (unsigned threads : {1u, 2u, 3u}) {
      for (auto native : {device::cpu::NativeMode::kOff, device::cpu::NativeMode::kAlways}) {
        KernelHarness h(device::cpu::CreateCpuDevice({.threads = threads, .native = native}));
        auto k = h.LoadKernel(text, "count");
        ASSERT_NE(k, nullptr);
        auto out = h.Zeros<uint32_t>(ctas);
        ASSERT_TRUE(h.Run(*k, {ctas}, {32}, Params(k->signature()).Add(out).Build()).ok());
        const auto got = h.Download<uint32_t>(out, ctas);
        for (unsigned c = 0; c < ctas; ++c) ASSERT_EQ(got[c], 32u) << "CTA " << c << " of " << ctas;
        counted.insert(device::cpu::LastLaunchInstructions(h.stream()));
      }
    }
    ASSERT_EQ(counted.size(), 1u) << ctas << " CTAs";
    EXPECT_EQ(*counted.begin(), uint64_t{ctas} * 32 * 6);
  }
}

// A stream's kernel time grows while its kernel runs (an instance's GPU time is live in
// /v1/instances and top), and ends as the time the launch took.
TEST(CpuDevice, kernel_time_counts_the_running_kernel) {
  KernelHarness h(device::cpu::CreateCpuDevice({.threads = 1}));
  auto k = h.Load("spin", "sm_80", "spin");
  ASSERT_NE(k, nullptr);
  auto flag = h.Upload(std::vector<int>{1});
  auto out = h.Zeros<int>(32);
  device::LaunchOptions o;
  o.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(600);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(h.stream().Launch(*k, {{1}, {32}}, Params(k->signature()).Add(flag).Add(out).Build(), std::move(o)).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto live = h.stream().kernel_time();
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(live, std::chrono::milliseconds(200)) << "kernel time while it runs: " << live.count() << " ns";
  EXPECT_LE(live, waited);
  EXPECT_EQ(h.stream().Synchronize().code(), StatusCode::kDeadlineExceeded);
  EXPECT_GE(h.stream().kernel_time(), std::chrono::milliseconds(550));
  EXPECT_GE(h.stream().kernel_time(), live);
}

TEST(CpuDevice, reports_its_limits) {
  auto d = KernelHarness::SharedCpuDevice();
  const device::DeviceInfo& i = d->info();
  EXPECT_EQ(i.kind, device::DeviceKind::kCpu);
  EXPECT_EQ(i.warp_size, 32u);
  EXPECT_EQ(i.max_threads_per_block, 1024u);
  EXPECT_GE(i.sm_count, 1u);
  EXPECT_GT(i.total_memory, 0u);
  EXPECT_NE(i.name.find("CPU device"), std::string::npos);
}

TEST(CpuDevice, launch_configuration_is_checked_against_limits) {
  KernelHarness h;
  auto k = h.Load("vector_add", "sm_80", "vector_add");
  ASSERT_NE(k, nullptr);
  auto p = h.Zeros<float>(4);
  auto params = Params(k->signature()).Add(p).Add(p).Add(p).Add(4u).Build();
  device::LaunchConfig c;
  c.block.x = 2048;
  Status s = h.stream().Launch(*k, c, params);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "block x = 2048 exceeds the device limit 1024");
  c.block = {32, 32, 2};
  EXPECT_EQ(h.stream().Launch(*k, c, params).message(), "block of 2048 threads exceeds the device limit of 1024");
  c.block = {32, 1, 1};
  c.grid.y = 70000;
  EXPECT_EQ(h.stream().Launch(*k, c, params).message(), "grid y = 70000 exceeds the device limit 65535");
  c.grid.y = 1;
  c.shared_bytes = 1 << 20;
  EXPECT_NE(h.stream().Launch(*k, c, params).message().find("shared memory of 1048576 bytes"), std::string::npos);
  c.shared_bytes = 0;
  EXPECT_EQ(h.stream().Launch(*k, c, std::vector<uint8_t>(3)).message(),
            "kernel 'vector_add' takes 28 bytes of parameters, got 3");
}

TEST(CpuDevice, fast_launch_check_agrees_with_the_explaining_one) {
  // LaunchConfigFits is the launch paths' yes/no; CheckLaunchConfig says why. They must never
  // disagree: every combination of values around each limit.
  device::DeviceInfo info;
  info.max_threads_per_block = 1024;
  info.max_block_dim[0] = 1024, info.max_block_dim[1] = 512, info.max_block_dim[2] = 64;
  info.max_grid_dim[0] = 0x7fffffff, info.max_grid_dim[1] = 65535, info.max_grid_dim[2] = 65535;
  info.max_shared_per_block = 48 * 1024;
  const uint32_t dims[] = {0,   1,    2,    63,    64,    65,         511,         512,
                           513, 1024, 1025, 65535, 65536, 0x7fffffff, 0x80000000u, 0xffffffffu};
  const uint32_t shared[] = {0, 1024, 48 * 1024 - 256, 48 * 1024, 48 * 1024 + 1, 0xffffffffu};
  device::KernelSignature sig;
  int fits = 0, refused = 0;
  uint32_t rng = 12345;
  auto pick = [&](auto& a) {
    rng = rng * 1103515245u + 12345u;
    return a[(rng >> 8) % std::size(a)];
  };
  for (int n = 0; n < 200000; ++n) {
    device::LaunchConfig c;
    c.grid = {pick(dims), pick(dims), pick(dims)};
    c.block = {pick(dims), pick(dims), pick(dims)};
    if (n % 3 == 0) c.block = {pick(dims), 1, 1};
    if (n % 3 == 1) c.grid = {pick(dims), 1, 1};
    c.shared_bytes = pick(shared);
    sig.static_shared_bytes = n % 4 == 0 ? 256 : 0;
    sig.max_threads = n % 5 == 0 ? 256 : 0;
    bool ok = device::LaunchConfigFits(info, sig, c);
    Status s = device::CheckLaunchConfig(info, sig, c);
    ASSERT_EQ(ok, s.ok()) << s.message();
    if (!ok) {
      ASSERT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
    }
    (ok ? fits : refused)++;
  }
  EXPECT_GT(fits, 1000);
  EXPECT_GT(refused, 1000);
}

}  // namespace
}  // namespace gpuwasm::testing
