// What every device that gives instance windows (Context::CreateWindow; instrumented PTX,
// docs/adr/0009-instrumented-ptx.md) must do, run against the CPU device and the test device
// (window_test.cc: cuda:0 on the GPU check) and against the fake driver (cuda_device_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "device/device.h"
#include "ptx/instrument.h"
#include "ptx/parser.h"
#include "ptx/printer.h"

namespace gpuwasm::testing::window_contract {

// poke(p, off, v): the u32 at p + off = v (PTX line 12); spin(): never ends.
inline constexpr const char* kPokePtx =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry poke(.param .u64 p, .param .u64 off, .param .u32 v)\n{\n"
    "  .reg .b32 %r<2>;\n  .reg .b64 %rd<4>;\n  ld.param.u64 %rd1, [p];\n  ld.param.u64 %rd2, [off];\n"
    "  ld.param.u32 %r1, [v];\n  add.s64 %rd3, %rd1, %rd2;\n  st.global.u32 [%rd3], %r1;\n  ret;\n}\n"
    ".visible .entry spin()\n{\nL:\n  bra L;\n}\n";

// `ptx` instrumented as the host does and loaded into `ctx`.
inline std::shared_ptr<const device::Kernel> LoadInstrumented(device::Context& ctx, const std::string& ptx,
                                                              const std::string& kernel) {
  auto parsed = ptx::Parse(ptx);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  auto inst = ptx::Instrument(*parsed);
  EXPECT_TRUE(inst.ok()) << inst.status();
  auto m = ctx.LoadModule(ptx::Print(*inst, {.keep_lines = true}));
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *(*m)->GetKernel(kernel) : nullptr;
}

// The parameter buffer: the kernel's own values, then the window and the control block.
inline std::vector<uint8_t> Pack(const device::Kernel& k, std::vector<uint64_t> own, const device::Window& w) {
  const device::KernelSignature& sig = k.signature();
  own.insert(own.end(), {w.base(), w.size(), w.control()});
  std::vector<uint8_t> buf(sig.param_bytes);
  for (size_t i = 0; i < sig.params.size(); ++i)
    std::memcpy(buf.data() + sig.params[i].offset, &own[i], sig.params[i].size);
  return buf;
}

inline void BuffersLieInTheWindowZeroedAndComeBack(device::Device& d) {
  auto ctx = *d.CreateContext({64u << 20});
  auto w = ctx->CreateWindow(16u << 20);
  ASSERT_TRUE(w.ok()) << w.status();
  device::Window& win = **w;
  EXPECT_GE(win.size(), 16u << 20);
  const uint64_t own = ctx->allocated_bytes();  // the window's own (the CPU device's control block)
  const uint64_t n = 3u << 20;                  // more than one 2 MiB granule
  auto p = win.Allocate(n);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_GE(*p, win.base());
  EXPECT_LE(*p + n, win.base() + win.size());
  EXPECT_EQ(ctx->allocated_bytes(), own + n);
  auto s = *ctx->CreateStream();
  std::vector<uint8_t> got(n, 1);
  ASSERT_TRUE(s->MemcpyDtoH(got.data(), *p, n).ok());
  EXPECT_EQ(std::count(got.begin(), got.end(), 0), static_cast<long>(n)) << "a new buffer is zero";
  std::vector<uint8_t> data(n);
  for (uint64_t i = 0; i < n; ++i) data[i] = static_cast<uint8_t>(i * 7 + 1);
  ASSERT_TRUE(s->MemcpyHtoD(*p, data.data(), n).ok());
  ASSERT_TRUE(s->MemcpyDtoH(got.data(), *p, n).ok());
  EXPECT_EQ(got, data);
  // Freed and allocated again: the window's room comes back; the quota counts only live buffers.
  ASSERT_TRUE(win.Free(*p, 0).ok());
  EXPECT_EQ(ctx->allocated_bytes(), own);
  for (int i = 0; i < 20; ++i) {
    auto q = win.Allocate(12u << 20);
    ASSERT_TRUE(q.ok()) << i << ": " << q.status();
    ASSERT_TRUE(win.Free(*q, 0).ok());
  }
  EXPECT_EQ(win.Allocate(65u << 20).status().code(), StatusCode::kResourceExhausted);
  s.reset();
  w->reset();
  EXPECT_EQ(ctx->allocated_bytes(), 0u);
}

inline void AStoreOutsideTheWindowEndsItsLaunchCleanly(device::Device& d) {
  auto ctx = *d.CreateContext({64u << 20});
  auto w = *ctx->CreateWindow(1u << 20);
  auto k = LoadInstrumented(*ctx, kPokePtx, "poke");
  ASSERT_NE(k, nullptr);
  auto a = *w->Allocate(4096);
  auto s = *ctx->CreateStream();
  device::LaunchOptions o;
  o.control = w->control_host();
  const uint64_t off = uint64_t{1} << 36;  // unmapped: on a GPU without the fence, a process-fatal fault
  ASSERT_TRUE(s->Launch(*k, {{1}, {1}, 0}, Pack(*k, {a, off, 7}, *w), std::move(o)).ok());
  Status st = s->Synchronize();
  EXPECT_EQ(st.code(), StatusCode::kDeviceFault) << st;
  char hex[24];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(a + off));
  EXPECT_EQ(st.message(), "kernel 'poke' (PTX line 12): global store of 4 bytes at " + std::string(hex) +
                              " is outside the instance's buffers");
  EXPECT_EQ(d.restart_reason(), "") << "no driver error, nothing to restart";
  EXPECT_EQ(ctx->resets(), 0u);
  // Another instance of the tenant: its own window, and its kernels run.
  auto w2 = *ctx->CreateWindow(1u << 20);
  auto b = *w2->Allocate(64);
  auto s2 = *ctx->CreateStream();
  device::LaunchOptions o2;
  o2.control = w2->control_host();
  ASSERT_TRUE(s2->Launch(*k, {{1}, {1}, 0}, Pack(*k, {b, 8, 42}, *w2), std::move(o2)).ok());
  EXPECT_TRUE(s2->Synchronize().ok());
  uint32_t v = 0;
  ASSERT_TRUE(s2->MemcpyDtoH(&v, b + 8, 4).ok());
  EXPECT_EQ(v, 42u);
}

inline void TheAbortWordEndsAKernelThatWouldNeverEnd(device::Device& d) {
  using Clock = std::chrono::steady_clock;
  auto ctx = *d.CreateContext({64u << 20});
  auto w = *ctx->CreateWindow(1u << 20);
  auto k = LoadInstrumented(*ctx, kPokePtx, "spin");
  ASSERT_NE(k, nullptr);
  auto s = *ctx->CreateStream();
  device::LaunchOptions o;
  o.control = w->control_host();  // no deadline: only the abort word can end it
  ASSERT_TRUE(s->Launch(*k, {{4}, {64}, 0}, Pack(*k, {}, *w), std::move(o)).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto raised = Clock::now();
  static_cast<std::atomic<uint32_t>*>(w->control_host())->store(1);  // as the watchdog does at the deadline
  Status st = s->Synchronize();
  EXPECT_EQ(st.code(), StatusCode::kDeadlineExceeded) << st;
  // It stops (how promptly is bench_deadline's figure): within a second even on a loaded machine.
  EXPECT_LT(Clock::now() - raised, std::chrono::milliseconds(1000));
  EXPECT_EQ(ctx->resets(), 0u);
}

}  // namespace gpuwasm::testing::window_contract
