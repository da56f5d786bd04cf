// What a launch or a module costs the host beyond its buffers, on the CPU device: register files,
// local depots, shared memory, module variables, copies queued behind running work. Each is
// charged to the context's quota before it is allocated, and refused with ResourceExhausted
// (WCU_ERR_QUOTA for a guest) naming what and the quota, never thrown or left behind.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "device/cpu/cpu_device.h"

namespace gpuwasm::testing {
namespace {

using std::chrono::milliseconds;

constexpr uint64_t kQuota = 256ull << 20;

struct Ctx {
  std::shared_ptr<device::Device> dev = device::cpu::CreateCpuDevice({});
  std::shared_ptr<device::Context> ctx = *dev->CreateContext({kQuota});
  std::shared_ptr<const device::Kernel> Kernel(const std::string& ptx, const std::string& name) {
    auto m = ctx->LoadModule(ptx);
    EXPECT_TRUE(m.ok()) << m.status();
    if (!m.ok()) return nullptr;
    modules.push_back(*m);
    auto k = (*m)->GetKernel(name);
    return k.ok() ? *k : nullptr;
  }
  std::vector<std::shared_ptr<const device::Module>> modules;
};

std::string Ptx(const std::string& decls, const std::string& body = "") {
  return ".version 8.0\n.target sm_80\n.address_size 64\n" + decls + ".visible .entry k(.param .u64 out)\n{\n" + body +
         "  ret;\n}\n";
}

std::vector<uint8_t> Param(uint64_t v) {
  std::vector<uint8_t> p(8);
  std::memcpy(p.data(), &v, 8);
  return p;
}

TEST(Scratch, a_register_file_beyond_the_quota_is_refused_before_it_is_allocated) {
  Ctx c;
  // 200,000 64-bit registers a thread: 1.6 GB for a CTA of 1024 threads.
  auto k = c.Kernel(Ptx("", "  .reg .b64 %rd<200000>;\n  ld.param.u64 %rd1, [out];\n"), "k");
  ASSERT_NE(k, nullptr);
  auto s = *c.ctx->CreateStream();
  device::LaunchConfig cfg;
  cfg.grid = {4};
  cfg.block = {1024};
  Status st = s->Launch(*k, cfg, Param(0));
  ASSERT_EQ(st.code(), StatusCode::kResourceExhausted) << st;
  EXPECT_NE(st.message().find("the launch of 'k' (registers, local and shared memory of "), std::string::npos) << st;
  EXPECT_NE(st.message().find("exceed the context's quota of 268435456 bytes"), std::string::npos) << st;
  EXPECT_TRUE(s->Synchronize().ok());              // refused, not failed: the stream carries on
  EXPECT_LT(c.ctx->reserved_bytes(), 1ull << 20);  // nothing of it was charged, or allocated
}

TEST(Scratch, local_depots_count_per_thread) {
  Ctx c;
  // 1 MiB of .local a thread, 1024 threads: 1 GiB for a CTA.
  auto k = c.Kernel(Ptx("",
                        "  .local .align 8 .b8 depot[1048576];\n  .reg .b64 %rd<3>;\n  mov.u64 %rd1, depot;\n"
                        "  st.local.u64 [%rd1], %rd1;\n"),
                    "k");
  ASSERT_NE(k, nullptr);
  auto s = *c.ctx->CreateStream();
  device::LaunchConfig cfg;
  cfg.grid = {1};
  cfg.block = {1024};
  Status st = s->Launch(*k, cfg, Param(0));
  ASSERT_EQ(st.code(), StatusCode::kResourceExhausted) << st;
  EXPECT_NE(st.message().find("1 CTAs of 1024 threads at once"), std::string::npos) << st;
  // The same kernel in CTAs of 32 threads fits (32 MiB a CTA), runs, and gives its charge back.
  const uint64_t before = c.ctx->reserved_bytes();
  cfg.block = {32};
  cfg.grid = {8};
  ASSERT_TRUE(s->Launch(*k, cfg, Param(0)).ok());
  ASSERT_TRUE(s->Synchronize().ok());
  EXPECT_EQ(c.ctx->reserved_bytes(), before);
}

TEST(Scratch, module_variables_are_charged_for_the_modules_life) {
  Ctx c;
  std::string big = Ptx(".global .align 8 .b8 big[268435456];\n");
  auto refused = c.ctx->LoadModule(big);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("the module (its .global and .const variables and decoded code) need "),
            std::string::npos)
      << refused.status();
  // Two of 96 MiB fit, a third does not while they live; once one is released, it does.
  auto a = c.ctx->LoadModule(Ptx(".global .align 8 .b8 a[100663296];\n"));
  auto b = c.ctx->LoadModule(Ptx(".global .align 8 .b8 b[100663296];\n"));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_GE(c.ctx->reserved_bytes(), 2 * 100663296ull);
  EXPECT_EQ(c.ctx->LoadModule(Ptx(".global .align 8 .b8 d[100663296];\n")).status().code(),
            StatusCode::kResourceExhausted);
  a->reset();
  auto d = c.ctx->LoadModule(Ptx(".global .align 8 .b8 d[100663296];\n"));
  EXPECT_TRUE(d.ok());
  // The quota covers buffers and variables together.
  EXPECT_EQ(c.ctx->Allocate(100ull << 20).status().code(), StatusCode::kResourceExhausted);
}

TEST(Scratch, copies_queued_behind_a_running_kernel_are_charged_until_they_ran) {
  Ctx c;
  auto k = c.Kernel(Ptx("",
                        "  .reg .pred %p<2>;\n  .reg .b32 %r<2>;\n  mov.u32 %r1, 0;\nL:\n  add.u32 %r1, %r1, 1;\n"
                        "  setp.ne.u32 %p1, %r1, 0;\n  @%p1 bra L;\n  bra L;\n"),
                    "k");
  ASSERT_NE(k, nullptr);
  auto buf = *c.ctx->Allocate(64ull << 20);
  auto s = *c.ctx->CreateStream();
  device::LaunchConfig cfg;
  device::LaunchOptions o;
  o.deadline = std::chrono::steady_clock::now() + milliseconds(3000);
  ASSERT_TRUE(s->Launch(*k, cfg, Param(0), std::move(o)).ok());
  std::vector<uint8_t> data(64ull << 20, 7);
  Status st;
  int queued = 0;
  while ((st = s->MemcpyHtoD(buf, data.data(), data.size())).ok()) ++queued;
  EXPECT_EQ(queued, 2);  // 64 MiB buffer + 2 x 64 MiB staged + scratch: a third would pass 256 MiB
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("a copy queued behind running work need 67108864 bytes"), std::string::npos) << st;
  s->Cancel();
  EXPECT_LT(c.ctx->reserved_bytes(), c.ctx->allocated_bytes() + (1ull << 20));  // the staged copies went
}

TEST(Scratch, the_module_map_forgets_released_modules) {
  Ctx c;
  for (int i = 0; i < 1000; ++i) {
    auto m = c.ctx->LoadModule(Ptx(".global .u32 v" + std::to_string(i) + ";\n"));
    ASSERT_TRUE(m.ok()) << m.status();
  }
  EXPECT_LE(device::cpu::ModuleEntries(*c.ctx), 128u);
  EXPECT_EQ(c.ctx->reserved_bytes(), c.ctx->allocated_bytes());  // every module's charge went with it
}

}  // namespace
}  // namespace gpuwasm::testing
