// The Device/Context/Stream contract on the CPU device: memory, quotas, copies, limits.
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

TEST(CpuDevice, allocations_are_zeroed_counted_and_quota_checked) {
  auto ctx = *KernelHarness::SharedCpuDevice()->CreateContext({.max_bytes = 1000});
  auto a = ctx->Allocate(600);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(ctx->allocated_bytes(), 600u);
  auto b = ctx->Allocate(500);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(b.status().message(), "allocating 500 bytes would exceed the context's quota of 1000 bytes (600 in use)");
  EXPECT_EQ(ctx->Allocate(0).status().code(), StatusCode::kInvalidArgument);
  auto s = *ctx->CreateStream();
  std::vector<uint8_t> v(600, 1);
  ASSERT_TRUE(s->MemcpyDtoH(v.data(), *a, 600).ok());
  EXPECT_EQ(v, std::vector<uint8_t>(600, 0));
  ASSERT_TRUE(ctx->Free(*a).ok());
  EXPECT_EQ(ctx->allocated_bytes(), 0u);
  EXPECT_EQ(ctx->Free(*a).code(), StatusCode::kInvalidArgument);  // double free
  EXPECT_TRUE(ctx->Allocate(1000).ok());
}

TEST(CpuDevice, copies_are_bounds_checked) {
  auto ctx = *KernelHarness::SharedCpuDevice()->CreateContext();
  auto p = *ctx->Allocate(100);
  auto s = *ctx->CreateStream();
  std::vector<uint8_t> buf(200);
  EXPECT_EQ(s->MemcpyHtoD(p, buf.data(), 101).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(s->MemcpyHtoD(p + 50, buf.data(), 51).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(s->MemcpyDtoH(buf.data(), p - 1, 10).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(s->Memset(p + 90, 0, 20).code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(s->Memset(p + 90, 7, 10).ok());
  auto q = *ctx->Allocate(100);
  EXPECT_TRUE(s->MemcpyDtoD(q, p + 90, 10).ok());
  ASSERT_TRUE(s->MemcpyDtoH(buf.data(), q, 10).ok());
  EXPECT_EQ(buf[0], 7);
  EXPECT_EQ(buf[9], 7);
  // Another context's pointer is not this context's memory.
  auto other = *KernelHarness::SharedCpuDevice()->CreateContext();
  auto foreign = *other->Allocate(100);
  EXPECT_EQ(s->MemcpyHtoD(foreign, buf.data(), 10).code(), StatusCode::kOutOfRange);
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

TEST(CpuDevice, kernel_signature_lists_parameters) {
  KernelHarness h;
  auto k = h.Load("saxpy", "sm_90", "saxpy");
  ASSERT_NE(k, nullptr);
  const auto& sig = k->signature();
  ASSERT_EQ(sig.params.size(), 4u);
  EXPECT_EQ(sig.params[0].type, ptx::Type::kU32);
  EXPECT_EQ(sig.params[1].type, ptx::Type::kF32);
  EXPECT_EQ(sig.params[2].size, 8u);
  EXPECT_EQ(sig.params[2].offset, 8u);
  EXPECT_EQ(sig.params[3].offset, 16u);
  EXPECT_EQ(sig.param_bytes, 24u);
}

TEST(CpuDevice, identical_ptx_is_compiled_once_per_context) {
  KernelHarness h;
  std::string ptx = ReadText(KernelPtxPath("matmul", "sm_80"));
  auto a = h.context().LoadModule(ptx), b = h.context().LoadModule(ptx);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_EQ((*a)->GetKernel("nope").status().code(), StatusCode::kNotFound);
  EXPECT_EQ((*a)->KernelNames(), std::vector<std::string>{"matmul_tiled"});
}

}  // namespace
}  // namespace gpuwasm::testing
