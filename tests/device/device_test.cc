// The CPU device's own limits and launch checks (the contract every device keeps is
// device_contract.h, run by contract_test.cc).
#include <gtest/gtest.h>

#include "kernel_harness.h"

namespace gpuwasm::testing {
namespace {

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
