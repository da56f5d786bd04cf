// What every Device must do (device/device.h), checked the same way on the CPU device in both
// tiers (contract_test.cc), the CUDA device over the fake driver (cuda_device_test.cc) and the
// test device of the GPU check ($GPUWASM_TEST_DEVICE=cuda:0, contract_test.cc). Nothing here
// faults a real GPU: a failing stream is made with instrumented PTX, whose faults end the launch
// cleanly (docs/adr/0009-instrumented-ptx.md).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "device/device.h"
#include "window_contract.h"

namespace gpuwasm::testing::device_contract {

// busy(p, n): every thread counts to n, then thread 0 stores the sum at p. declared(): .maxntid
// as given; huge(): a .maxntid whose thread count does not fit 32 bits.
inline constexpr const char* kContractPtx =
    ".version 7.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry busy(.param .u64 p, .param .u32 n)\n{\n"
    "  .reg .pred %p<3>;\n  .reg .b32 %r<5>;\n  .reg .b64 %rd<3>;\n"
    "  ld.param.u64 %rd1, [p];\n  ld.param.u32 %r1, [n];\n  mov.u32 %r2, 0;\n  mov.u32 %r3, 0;\n"
    "L:\n  add.u32 %r3, %r3, %r2;\n  add.u32 %r2, %r2, 1;\n  setp.lt.u32 %p1, %r2, %r1;\n  @%p1 bra L;\n"
    "  mov.u32 %r4, %tid.x;\n  setp.ne.u32 %p2, %r4, 0;\n  @%p2 bra E;\n"
    "  cvta.to.global.u64 %rd2, %rd1;\n  st.global.u32 [%rd2], %r3;\nE:\n  ret;\n}\n"
    ".visible .entry declared(.param .u32 a, .param .f32 f, .param .u64 b) .maxntid 16, 16\n{\n  ret;\n}\n"
    ".visible .entry huge() .maxntid 65536, 65536, 2\n{\n  ret;\n}\n";

// Records on which threads completions ran, and with what.
class Completions {
 public:
  device::Completion Make() {
    return [this](const Status& s) {
      std::lock_guard<std::mutex> lock(mu_);
      statuses_.push_back(s);
      threads_.push_back(std::this_thread::get_id());
    };
  }
  std::vector<Status> statuses() const {
    std::lock_guard<std::mutex> lock(mu_);
    return statuses_;
  }
  // Whether none ran on `caller`.
  bool NoneOn(std::thread::id caller) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto t : threads_) {
      if (t == caller) return false;
    }
    return true;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Status> statuses_;
  std::vector<std::thread::id> threads_;
};

inline void AllocationsAreZeroedCountedAndQuotaChecked(device::Device& d) {
  auto ctx = *d.CreateContext({.max_bytes = 1 << 20});
  auto a = ctx->Allocate(600 << 10);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(ctx->allocated_bytes(), 600u << 10);
  auto b = ctx->Allocate(500 << 10);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(b.status().message(),
            "allocating 512000 bytes would exceed the context's quota of 1048576 bytes (614400 in use)");
  EXPECT_EQ(ctx->Allocate(0).status().code(), StatusCode::kInvalidArgument);
  auto s = *ctx->CreateStream();
  std::vector<uint8_t> v(600 << 10, 1);
  ASSERT_TRUE(s->MemcpyDtoH(v.data(), *a, v.size()).ok());
  EXPECT_EQ(v, std::vector<uint8_t>(600 << 10, 0));
  ASSERT_TRUE(ctx->Free(*a).ok());
  EXPECT_EQ(ctx->allocated_bytes(), 0u);
  Status twice = ctx->Free(*a);
  EXPECT_EQ(twice.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(twice.message().find("which is not a live allocation"), std::string::npos) << twice;
  EXPECT_TRUE(ctx->Allocate(1 << 20).ok());
}

inline void CopiesAreBoundsChecked(device::Device& d) {
  auto ctx = *d.CreateContext();
  auto p = *ctx->Allocate(100);
  auto s = *ctx->CreateStream();
  std::vector<uint8_t> buf(200);
  EXPECT_EQ(s->MemcpyHtoD(p, buf.data(), 101).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(s->MemcpyHtoD(p + 50, buf.data(), 51).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(s->MemcpyDtoH(buf.data(), p - 1, 10).code(), StatusCode::kOutOfRange);
  Status past = s->Memset(p + 90, 0, 20);
  EXPECT_EQ(past.code(), StatusCode::kOutOfRange);
  EXPECT_NE(past.message().find("+20) is not inside one live allocation"), std::string::npos) << past;
  EXPECT_TRUE(s->Memset(p + 90, 7, 10).ok());
  auto q = *ctx->Allocate(100);
  EXPECT_TRUE(s->MemcpyDtoD(q, p + 90, 10).ok());
  ASSERT_TRUE(s->MemcpyDtoH(buf.data(), q, 10).ok());
  EXPECT_EQ(buf[0], 7);
  EXPECT_EQ(buf[9], 7);
  // Another context's pointer is not this context's memory.
  auto other = *d.CreateContext();
  auto foreign = *other->Allocate(100);
  EXPECT_EQ(s->MemcpyHtoD(foreign, buf.data(), 10).code(), StatusCode::kOutOfRange);
}

inline void KernelSignaturesComeFromTheDeclaration(device::Device& d) {
  auto ctx = *d.CreateContext();
  auto m = ctx->LoadModule(kContractPtx);
  ASSERT_TRUE(m.ok()) << m.status();
  auto again = ctx->LoadModule(kContractPtx);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(m->get(), again->get()) << "identical PTX is loaded once per context";
  auto other = (*d.CreateContext())->LoadModule(kContractPtx);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(m->get(), other->get()) << "a context's modules are its own";
  EXPECT_EQ((*m)->KernelNames(), (std::vector<std::string>{"busy", "declared", "huge"}));
  Result<std::shared_ptr<const device::Kernel>> none = (*m)->GetKernel("nope");
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  const std::shared_ptr<const device::Kernel> declared = *(*m)->GetKernel("declared");  // sig lives in it
  const device::KernelSignature& sig = declared->signature();
  EXPECT_EQ(sig.name, "declared");
  ASSERT_EQ(sig.params.size(), 3u);
  EXPECT_EQ(sig.params[0].type, ptx::Type::kU32);
  EXPECT_EQ(sig.params[1].type, ptx::Type::kF32);
  EXPECT_EQ(sig.params[1].offset, 4u);
  EXPECT_EQ(sig.params[2].size, 8u);
  EXPECT_EQ(sig.params[2].offset, 8u);
  EXPECT_EQ(sig.param_bytes, 16u);
  EXPECT_EQ(sig.max_threads, 256u);
  EXPECT_EQ((*(*m)->GetKernel("huge"))->signature().max_threads, UINT32_MAX) << "clamped, not wrapped";
  EXPECT_EQ((*(*m)->GetKernel("busy"))->signature().max_threads, 0u);
  auto s = *ctx->CreateStream();
  const auto k = *(*m)->GetKernel("declared");
  EXPECT_EQ(s->Launch(*k, {{1}, {1}, 0}, std::vector<uint8_t>(3)).message(),
            "kernel 'declared' takes 16 bytes of parameters, got 3");
  EXPECT_EQ(s->Launch(*k, {{1}, {32, 32, 1}, 0}, std::vector<uint8_t>(16)).message(),
            "block of 1024 threads exceeds the kernel's .maxntid of 256");
  EXPECT_EQ(s->Launch(*k, {{1}, {2048}, 0}, std::vector<uint8_t>(16)).message(),
            "block x = 2048 exceeds the device limit " + std::to_string(d.info().max_block_dim[0]));
  EXPECT_TRUE(s->Launch(*k, {{2}, {16, 16, 1}, 0}, std::vector<uint8_t>(16)).ok());
  EXPECT_TRUE(s->Synchronize().ok());
}

// Completions run on the device's threads, also once the stream has failed.
inline void WorkAfterAFailureCompletesOnTheDevicesThreads(device::Device& d) {
  if (!d.info().instance_windows) GTEST_SKIP() << "the device gives no instance windows";
  auto ctx = *d.CreateContext({64u << 20});
  auto w = *ctx->CreateWindow(1u << 20);
  auto k = window_contract::LoadInstrumented(*ctx, window_contract::kPokePtx, "poke");
  ASSERT_NE(k, nullptr);
  auto a = *w->Allocate(4096);
  auto s = *ctx->CreateStream();
  Completions done;
  const auto caller = std::this_thread::get_id();
  for (uint64_t off : {uint64_t{1} << 36, uint64_t{0}, uint64_t{4}}) {  // the first fails; the others after it
    device::LaunchOptions o;
    o.control = w->control_host();
    o.on_complete = done.Make();
    ASSERT_TRUE(s->Launch(*k, {{1}, {1}, 0}, window_contract::Pack(*k, {a, off, 7}, *w), std::move(o)).ok());
  }
  EXPECT_EQ(s->Synchronize().code(), StatusCode::kDeviceFault);
  const std::vector<Status> st = done.statuses();
  ASSERT_EQ(st.size(), 3u);
  for (const Status& x : st) EXPECT_EQ(x.code(), StatusCode::kDeviceFault) << x;
  // Enqueued after Synchronize() saw the failure: still not on the caller's thread.
  device::LaunchOptions o;
  o.control = w->control_host();
  o.on_complete = done.Make();
  ASSERT_TRUE(s->Launch(*k, {{1}, {1}, 0}, window_contract::Pack(*k, {a, 0, 7}, *w), std::move(o)).ok());
  EXPECT_EQ(s->Synchronize().code(), StatusCode::kDeviceFault);
  EXPECT_EQ(done.statuses().size(), 4u);
  EXPECT_TRUE(done.NoneOn(caller)) << "a completion ran on the thread that enqueued its work";
}

// Cancel() completes what it stopped on the device's threads, each once, before Synchronize() returns.
inline void CancelCompletesWhatItStoppedOnTheDevicesThreads(device::Device& d) {
  auto ctx = *d.CreateContext();
  auto m = *ctx->LoadModule(kContractPtx);
  auto k = *m->GetKernel("busy");
  auto p = *ctx->Allocate(4);
  auto s = *ctx->CreateStream();
  Completions done;
  const auto caller = std::this_thread::get_id();
  std::vector<uint8_t> params(k->signature().param_bytes);
  const uint32_t n = 200000;
  std::memcpy(params.data(), &p, 8);
  std::memcpy(params.data() + 8, &n, 4);
  for (int i = 0; i < 3; ++i) {
    device::LaunchOptions o;
    o.on_complete = done.Make();
    ASSERT_TRUE(s->Launch(*k, {{1}, {32}, 0}, params, std::move(o)).ok());
  }
  s->Cancel();
  (void)s->Synchronize();
  const std::vector<Status> st = done.statuses();
  ASSERT_EQ(st.size(), 3u) << "each completion once";
  int cancelled = 0;
  for (const Status& x : st) {
    EXPECT_TRUE(x.ok() || x.code() == StatusCode::kCancelled) << x;
    cancelled += x.code() == StatusCode::kCancelled;
  }
  EXPECT_GE(cancelled, 1) << "the last launch was still queued";
  EXPECT_TRUE(done.NoneOn(caller)) << "a completion ran on the thread that called Cancel()";
}

}  // namespace gpuwasm::testing::device_contract
