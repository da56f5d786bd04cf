// The CUDA device over the fake driver (fake_cuda.cc: the driver API at the dlopen boundary, with
// kernels executed by the CPU device inside it). What is checked here is the CUDA device's own
// work: context binding on every thread, pool memory zeroed and trimmed, quotas, parameter packing,
// events and GPU time, the JIT log, one module per (context, PTX hash), staging through pinned
// memory, shared memory opt-in, process-fatal faults, context-fatal faults and context rebuild,
// deadlines and runaway kernels. The whole corpus also runs on it (ctest device_corpus_on_cuda).
#include "device/cuda/cuda_device.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>

#include "device/cuda/driver.h"
#include "device_contract.h"
#include "kernel_harness.h"
#include "window_contract.h"

namespace gpuwasm::testing {
namespace {

using device::cuda::CreateCudaDevice;
using device::cuda::CudaDeviceOptions;
using device::cuda::CudaDriver;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

class CudaOnFake : public ::testing::Test {
 protected:
  // Each test starts like a new process: a process-fatal error of an earlier one is forgotten.
  void SetUp() override {
    void* h = dlopen(GPUWASM_FAKE_CUDA, RTLD_NOW);
    ASSERT_NE(h, nullptr);
    reinterpret_cast<void (*)()>(dlsym(h, "gpuwasm_fake_cuda_new_process"))();
  }
  void TearDown() override { unsetenv("FAKE_CUDA_MODE"); }

  // One of the fake's counters.
  static int FakeCount(const char* name) {
    void* h = dlopen(GPUWASM_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
    auto fn = h != nullptr ? reinterpret_cast<int (*)()>(dlsym(h, name)) : nullptr;
    EXPECT_NE(fn, nullptr) << name;
    return fn != nullptr ? fn() : -1;
  }
  static uint64_t FakeCount64(const char* name) {
    void* h = dlopen(GPUWASM_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
    auto fn = h != nullptr ? reinterpret_cast<uint64_t (*)()>(dlsym(h, name)) : nullptr;
    EXPECT_NE(fn, nullptr) << name;
    return fn != nullptr ? fn() : 0;
  }

  static std::shared_ptr<CudaDriver> Driver() {
    static std::shared_ptr<CudaDriver> d = [] {
      auto r = CudaDriver::Load(GPUWASM_FAKE_CUDA);
      EXPECT_TRUE(r.ok()) << r.status();
      EXPECT_TRUE((*r)->Probe().ok());
      return *r;
    }();
    return d;
  }

  // A device over the fake driver; `fatal`, when given, collects what on_fatal is told.
  static std::shared_ptr<device::Device> Device(milliseconds grace = milliseconds(1000),
                                                std::vector<std::string>* fatal = nullptr) {
    CudaDeviceOptions o;
    o.runaway_grace = grace;
    if (fatal != nullptr) o.on_fatal = [fatal](const std::string& why) { fatal->push_back(why); };
    auto d = CreateCudaDevice(Driver(), 0, o);
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? *d : nullptr;
  }

  // Contexts the fake driver has not seen destroyed.
  static int LiveContexts() {
    void* h = dlopen(GPUWASM_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
    EXPECT_NE(h, nullptr);
    auto fn = reinterpret_cast<int (*)()>(dlsym(h, "gpuwasm_fake_cuda_live_contexts"));
    int n = fn != nullptr ? fn() : -1;
    dlclose(h);
    return n;
  }
};

// The Device contract (device_contract.h), as the CPU device keeps it (contract_test.cc).
TEST_F(CudaOnFake, contract_allocations_are_zeroed_counted_and_quota_checked) {
  device_contract::AllocationsAreZeroedCountedAndQuotaChecked(*Device());
}
TEST_F(CudaOnFake, contract_copies_are_bounds_checked) { device_contract::CopiesAreBoundsChecked(*Device()); }
TEST_F(CudaOnFake, contract_kernel_signatures_come_from_the_declaration) {
  device_contract::KernelSignaturesComeFromTheDeclaration(*Device());
}
TEST_F(CudaOnFake, contract_work_after_a_failure_completes_on_the_devices_threads) {
  device_contract::WorkAfterAFailureCompletesOnTheDevicesThreads(*Device());
}
TEST_F(CudaOnFake, contract_cancel_completes_what_it_stopped_on_the_devices_threads) {
  device_contract::CancelCompletesWhatItStoppedOnTheDevicesThreads(*Device());
}

TEST_F(CudaOnFake, device_limits_come_from_the_driver) {
  auto d = Device();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->info().kind, device::DeviceKind::kCuda);
  EXPECT_EQ(d->info().name, "Fake GPU");
  EXPECT_EQ(d->info().sm_count, 132u);
  EXPECT_EQ(d->info().max_shared_per_block, 232448u);  // the opt-in limit, not the 48 KiB window
}

TEST_F(CudaOnFake, vector_add_runs_with_packed_parameters_and_gpu_time) {
  KernelHarness h(Device());
  auto k = h.Load("vector_add", "sm_90", "vector_add");
  ASSERT_NE(k, nullptr);
  unsigned n = 5000;
  std::vector<float> a(n), b(n);
  for (unsigned i = 0; i < n; ++i) a[i] = static_cast<float>(i) * 0.5f, b[i] = 3.0f - static_cast<float>(i);
  auto pa = h.Upload(a), pb = h.Upload(b), pc = h.Zeros<float>(n + 8);
  std::atomic<int> completions{0};
  device::LaunchOptions o;
  o.on_complete = [&](const Status& s) {
    EXPECT_TRUE(s.ok()) << s;
    ++completions;
  };
  ASSERT_TRUE(h.Run(*k, {(n + 255) / 256}, {256}, Params(k->signature()).Add(pa).Add(pb).Add(pc).Add(n).Build(), 0,
                    std::move(o))
                  .ok());
  EXPECT_EQ(completions.load(), 1);
  auto c = h.Download<float>(pc, n + 8);
  for (unsigned i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << i;
  for (unsigned i = n; i < n + 8; ++i) ASSERT_EQ(c[i], 0.0f) << i;
  EXPECT_GT(h.stream().kernel_time().count(), 0);
}

TEST_F(CudaOnFake, new_buffers_are_zeroed_counted_and_within_the_quota) {
  auto d = Device();
  device::ContextOptions o;
  o.max_bytes = 1 << 20;
  auto ctx = *d->CreateContext(o);
  auto stream = *ctx->CreateStream();
  // The fake's pool hands out dirty memory (0xA5), as a real pool recycles freed buffers.
  auto p = ctx->Allocate(4096);
  ASSERT_TRUE(p.ok()) << p.status();
  std::vector<uint8_t> bytes(4096, 1);
  ASSERT_TRUE(stream->MemcpyDtoH(bytes.data(), *p, bytes.size()).ok());
  EXPECT_EQ(bytes, std::vector<uint8_t>(4096, 0));
  EXPECT_EQ(ctx->allocated_bytes(), 4096u);
  auto big = ctx->Allocate(1 << 20);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(big.status().message().find("quota of 1048576 bytes (4096 in use)"), std::string::npos) << big.status();
  // Copies outside a live allocation are refused before they reach the driver.
  uint8_t x[16] = {};
  EXPECT_EQ(stream->MemcpyHtoD(*p + 4090, x, 16).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(stream->MemcpyDtoH(x, *p + 4096, 1).code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(ctx->Free(*p).ok());
  EXPECT_EQ(ctx->allocated_bytes(), 0u);
  EXPECT_EQ(ctx->Free(*p).code(), StatusCode::kInvalidArgument);
}

TEST_F(CudaOnFake, a_context_is_usable_from_any_thread) {
  auto d = Device();
  auto ctx = *d->CreateContext();
  // The fake refuses calls whose context is not current on the calling thread.
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto s = ctx->CreateStream();
      auto p = ctx->Allocate(256);
      if (!s.ok() || !p.ok()) return;
      std::vector<int> v(64, t);
      if (!(*s)->MemcpyHtoD(*p, v.data(), 256).ok()) return;
      std::vector<int> back(64);
      if ((*s)->MemcpyDtoH(back.data(), *p, 256).ok() && back == v) ++ok;
      (void)ctx->Free(*p);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 4);
}

TEST_F(CudaOnFake, a_context_made_current_elsewhere_on_the_thread_is_noticed) {
  auto d = Device();
  auto ctx = *d->CreateContext();
  auto p = *ctx->Allocate(64);
  // Other code in the process (a library, a raw driver loop) changes this thread's current context.
  void* h = dlopen(GPUWASM_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(h, nullptr);
  auto set_current = reinterpret_cast<int (*)(void*)>(dlsym(h, "cuCtxSetCurrent"));
  ASSERT_EQ(set_current(nullptr), 0);
  dlclose(h);
  auto q = ctx->Allocate(64);
  EXPECT_TRUE(q.ok()) << q.status();
  EXPECT_TRUE(ctx->Free(p).ok());
}

TEST_F(CudaOnFake, identical_ptx_is_compiled_once_per_context) {
  auto d = Device();
  auto a = *d->CreateContext(), b = *d->CreateContext();
  std::string ptx = ReadText(KernelPtxPath("saxpy", "sm_80"));
  auto m1 = a->LoadModule(ptx), m2 = a->LoadModule(ptx), m3 = b->LoadModule(ptx);
  ASSERT_TRUE(m1.ok() && m2.ok() && m3.ok());
  EXPECT_EQ(m1->get(), m2->get());
  EXPECT_NE(m1->get(), m3->get());
  auto k = (*m1)->GetKernel("saxpy");
  ASSERT_TRUE(k.ok());
  EXPECT_EQ((*k)->signature().params.size(), 4u);
}

TEST_F(CudaOnFake, malformed_ptx_gets_the_front_ends_error_and_a_jit_refusal_its_log) {
  auto ctx = *Device()->CreateContext();
  auto bad =
      ctx->LoadModule(".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n  frobnicate;\n}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 6"), std::string::npos) << bad.status();
  setenv("FAKE_CUDA_MODE", "jit_reject", 1);
  auto refused = ctx->LoadModule(ReadText(KernelPtxPath("vector_add", "sm_90")));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("the CUDA driver's JIT rejected the PTX: ptxas fatal   : fake JIT refuses"),
            std::string::npos)
      << refused.status();
  EXPECT_NE(refused.status().message().find("CUDA_ERROR_INVALID_PTX (218)"), std::string::npos) << refused.status();
}

TEST_F(CudaOnFake, block_size_is_checked_against_the_compiled_kernels_limit) {
  setenv("FAKE_CUDA_MODE", "few_registers", 1);
  KernelHarness h(Device());
  auto k = h.Load("vector_add", "sm_90", "vector_add");
  auto p = h.Zeros<float>(256);
  Status s = h.Run(*k, {1}, {256}, Params(k->signature()).Add(p).Add(p).Add(p).Add(256u).Build());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("allows on this GPU (128, limited by its registers)"), std::string::npos) << s;
  EXPECT_TRUE(h.Run(*k, {2}, {128}, Params(k->signature()).Add(p).Add(p).Add(p).Add(256u).Build()).ok());
}

TEST_F(CudaOnFake, an_illegal_address_makes_the_gpu_unusable_in_the_process_and_says_so) {
  // cuda.h: after CUDA_ERROR_ILLEGAL_ADDRESS "any further CUDA work will return the same error. To
  // continue using CUDA, the process must be terminated and relaunched". The fake does exactly that.
  std::vector<std::string> fatal;
  auto d = Device(milliseconds(1000), &fatal);
  KernelHarness a(d), b(d);
  auto ka = a.Load("oob_write", "sm_80", "oob_write");
  auto kb = b.Load("vector_add", "sm_80", "vector_add");
  ASSERT_TRUE(ka && kb);
  auto out = a.Zeros<int>(100);
  auto pb = b.Upload(std::vector<float>(64, 2.0f));
  ASSERT_TRUE(a.stream().Synchronize().ok() && b.stream().Synchronize().ok());
  int live = LiveContexts();
  Status s = a.Run(*ka, {8}, {128}, Params(ka->signature()).Add(out).Add(1000u).Add(1u).Build());
  EXPECT_EQ(s.code(), StatusCode::kDeviceFault) << s;
  // Faults are asynchronous: the launch's completion reports it ("kernel 'oob_write' failed"), or,
  // when the fake's kernel faults before the launch's end event is enqueued, that enqueue does
  // ("... seen while enqueueing kernel 'oob_write'"). Either names the kernel and the reason.
  EXPECT_NE(s.message().find("kernel 'oob_write'"), std::string::npos) << s;
  EXPECT_NE(s.message().find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << s;
  // Told once, and asked for a restart.
  ASSERT_EQ(fatal.size(), 1u);
  EXPECT_NE(fatal[0].find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << fatal[0];
  EXPECT_EQ(d->restart_reason(), fatal[0]);
  // Every other context of the process fails at once, naming the first error, without a driver
  // call that could hang; nothing is destroyed.
  Status other = b.Run(*kb, {1}, {64}, Params(kb->signature()).Add(pb).Add(pb).Add(pb).Add(64u).Build());
  EXPECT_EQ(other.code(), StatusCode::kDeviceFault) << other;
  auto fresh = d->CreateContext();
  ASSERT_FALSE(fresh.ok());
  EXPECT_NE(fresh.status().message().find("the GPU is unusable in this process: "), std::string::npos)
      << fresh.status();
  EXPECT_NE(fresh.status().message().find("requires the process to be restarted"), std::string::npos) << fresh.status();
  EXPECT_EQ(b.context().Allocate(64).status().code(), StatusCode::kDeviceFault);
  EXPECT_EQ(a.context().resets(), 0u);
  EXPECT_EQ(LiveContexts(), live);
  EXPECT_EQ(fatal.size(), 1u);
}

TEST_F(CudaOnFake, a_device_assert_ends_only_its_context_which_is_then_rebuilt) {
  setenv("FAKE_CUDA_MODE", "fault_is_assert", 1);  // CUDA_ERROR_ASSERT: the context, not the process
  std::vector<std::string> fatal;
  auto d = Device(milliseconds(1000), &fatal);
  int before = LiveContexts();
  KernelHarness a(d), b(d);
  auto ka = a.Load("oob_write", "sm_80", "oob_write");
  auto kb = b.Load("vector_add", "sm_80", "vector_add");
  ASSERT_TRUE(ka && kb);
  auto out = a.Zeros<int>(100);
  auto idle = *a.context().CreateStream();  // another instance of the tenant, not using the GPU now
  auto pb = b.Upload(std::vector<float>(64, 2.0f));
  ASSERT_TRUE(a.stream().Synchronize().ok());  // so the fault is the kernel's, not a copy's
  Status s = a.Run(*ka, {8}, {128}, Params(ka->signature()).Add(out).Add(1000u).Add(1u).Build());
  EXPECT_EQ(s.code(), StatusCode::kDeviceFault) << s;
  EXPECT_NE(s.message().find("CUDA_ERROR_ASSERT"), std::string::npos) << s;
  EXPECT_EQ(a.context().resets(), 1u);
  // Later work on the poisoned stream fails at once.
  std::atomic<bool> failed{false};
  device::LaunchOptions o;
  o.on_complete = [&](const Status& r) { failed = r.code() == StatusCode::kDeviceFault; };
  EXPECT_TRUE(a.stream()
                  .Launch(*ka, {{1}, {32}}, Params(ka->signature()).Add(out).Add(32u).Add(0u).Build(), std::move(o))
                  .ok());
  EXPECT_EQ(a.stream().Synchronize().code(), StatusCode::kDeviceFault);
  EXPECT_TRUE(failed.load());
  // The driver refused to free the asserted context's buffer: it stays charged to the tenant (a
  // faulting tenant cannot leak its quota again and again), and the process is asked to restart.
  EXPECT_EQ(a.context().allocated_bytes(), 400u);
  ASSERT_EQ(fatal.size(), 1u);
  EXPECT_NE(fatal[0].find("400 bytes of device memory of a reset GPU context could not be freed"), std::string::npos)
      << fatal[0];
  // The other tenant never noticed.
  ASSERT_TRUE(b.Run(*kb, {1}, {64}, Params(kb->signature()).Add(pb).Add(pb).Add(pb).Add(64u).Build()).ok());
  EXPECT_EQ(b.Download<float>(pb, 64), std::vector<float>(64, 4.0f));
  EXPECT_EQ(b.context().resets(), 0u);
  // The poisoned tenant's next instance gets a fresh context; the module is compiled again there.
  auto fresh = *a.context().CreateStream();
  auto buf = *a.context().Allocate(32 * 4);
  device::LaunchConfig c;
  c.block.x = 32;
  ASSERT_TRUE(fresh->Launch(*ka, c, Params(ka->signature()).Add(buf).Add(32u).Add(0u).Build()).ok());
  ASSERT_TRUE(fresh->Synchronize().ok());
  std::vector<int> got(32);
  ASSERT_TRUE(fresh->MemcpyDtoH(got.data(), buf, 128).ok());
  EXPECT_EQ(got[0], 0);
  // The idle instance's stream belonged to the destroyed context: its work fails, and it does not
  // touch (or reset, or rebuild) the new one.
  int created = FakeCount("gpuwasm_fake_cuda_contexts_created");
  EXPECT_TRUE(idle->Memset(buf, 0xff, 128).ok());
  EXPECT_EQ(idle->Synchronize().code(), StatusCode::kDeviceFault);
  EXPECT_EQ(a.context().resets(), 1u);
  EXPECT_EQ(FakeCount("gpuwasm_fake_cuda_contexts_created"), created);
  ASSERT_TRUE(fresh->MemcpyDtoH(got.data(), buf, 128).ok());
  EXPECT_EQ(got[1], 1);
  // The destroyed one goes (on a thread of its own), its replacement is live.
  auto until = Clock::now() + std::chrono::seconds(5);
  while (LiveContexts() != before + 2 && Clock::now() < until) std::this_thread::sleep_for(milliseconds(5));
  EXPECT_EQ(LiveContexts(), before + 2);
}

TEST_F(CudaOnFake, a_reset_waiting_in_cuCtxDestroy_holds_up_none_of_the_tenants_other_streams) {
  // The fake's cuCtxDestroy waits for the context's running kernels (here a 600 ms one on another
  // stream). The watcher resets outside its stream list's lock, so the tenant's next stream is
  // made, and runs, meanwhile.
  setenv("FAKE_CUDA_MODE", "fault_is_assert", 1);
  KernelHarness h(Device());
  auto slow = h.Load("delay", "sm_80", "delay");
  auto bad = h.Load("oob_write", "sm_80", "oob_write");
  auto out = h.Zeros<int>(10);
  ASSERT_TRUE(h.stream().Synchronize().ok());
  auto other = *h.context().CreateStream();
  ASSERT_TRUE(other->Launch(*slow, {{1}, {1}}, Params(slow->signature()).Add(int64_t{600'000'000}).Build()).ok());
  std::this_thread::sleep_for(milliseconds(50));  // the slow kernel runs
  ASSERT_TRUE(h.stream().Launch(*bad, {{1}, {128}}, Params(bad->signature()).Add(out).Add(1000u).Add(1u).Build()).ok());
  std::this_thread::sleep_for(milliseconds(150));
  // The reset is now in cuCtxDestroy, behind the slow kernel (until ~600 ms).
  auto t0 = Clock::now();
  auto next = h.context().CreateStream();
  ASSERT_TRUE(next.ok()) << next.status();
  auto buf = h.context().Allocate(64);
  ASSERT_TRUE(buf.ok()) << buf.status();
  std::vector<int> v(16, 3);
  ASSERT_TRUE((*next)->MemcpyHtoD(*buf, v.data(), 64).ok());
  ASSERT_TRUE((*next)->Synchronize().ok());
  auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - t0).count();
  EXPECT_LT(took, 300) << "the new stream waited for the old context's destruction";
  EXPECT_EQ(h.stream().Synchronize().code(), StatusCode::kDeviceFault);
  EXPECT_EQ(h.context().resets(), 1u);
  (void)other->Synchronize();
}

TEST_F(CudaOnFake, a_free_from_before_a_reset_frees_nothing_of_the_new_context) {
  setenv("FAKE_CUDA_MODE", "fault_is_assert", 1);
  KernelHarness h(Device());
  auto k = h.Load("oob_write", "sm_80", "oob_write");
  uint64_t old_gen = 0;
  auto old_buf = h.context().Allocate(128, &old_gen);
  ASSERT_TRUE(old_buf.ok());
  auto out = h.Zeros<int>(10);
  EXPECT_EQ(h.Run(*k, {1}, {128}, Params(k->signature()).Add(out).Add(1000u).Add(1u).Build()).code(),
            StatusCode::kDeviceFault);
  unsetenv("FAKE_CUDA_MODE");
  uint64_t new_gen = 0;
  auto fresh = *h.context().CreateStream();
  auto new_buf = h.context().Allocate(128, &new_gen);
  ASSERT_TRUE(new_buf.ok()) << new_buf.status();
  EXPECT_NE(new_gen, old_gen);
  uint64_t charged = h.context().allocated_bytes();
  // A stale owner frees its old pointer (whatever address the new context gave out): nothing of the
  // new generation goes.
  EXPECT_TRUE(h.context().FreeIfCurrent(*old_buf, old_gen).ok());
  EXPECT_TRUE(h.context().FreeIfCurrent(*new_buf, old_gen).ok());
  EXPECT_EQ(h.context().allocated_bytes(), charged);
  std::vector<uint8_t> back(128, 1);
  EXPECT_TRUE(fresh->MemcpyDtoH(back.data(), *new_buf, 128).ok());
  EXPECT_TRUE(h.context().FreeIfCurrent(*new_buf, new_gen).ok());
  EXPECT_EQ(h.context().allocated_bytes(), charged - 128);
}

TEST_F(CudaOnFake, a_failing_context_creation_is_an_error_not_a_crash) {
  for (const char* mode : {"exclusive_process", "no_memory"}) {
    setenv("FAKE_CUDA_MODE", mode, 1);
    auto ctx = Device()->CreateContext();  // contexts are built on first use
    ASSERT_TRUE(ctx.ok());
    auto p = (*ctx)->Allocate(64);
    ASSERT_FALSE(p.ok()) << mode;
    EXPECT_EQ(p.status().code(),
              std::string(mode) == "no_memory" ? StatusCode::kResourceExhausted : StatusCode::kUnavailable)
        << p.status();
    EXPECT_NE(p.status().message().find("cuCtxCreate"), std::string::npos) << p.status();
    EXPECT_FALSE((*ctx)->CreateStream().ok());
    EXPECT_FALSE((*ctx)->LoadModule(ReadText(KernelPtxPath("saxpy", "sm_80"))).ok());
  }
  // A dead stream (its context asserted) whose tenant cannot get a new context reports its death
  // without trying to build one.
  setenv("FAKE_CUDA_MODE", "fault_is_assert", 1);
  KernelHarness h(Device());
  auto k = h.Load("oob_write", "sm_80", "oob_write");
  auto out = h.Zeros<int>(10);
  EXPECT_EQ(h.Run(*k, {1}, {128}, Params(k->signature()).Add(out).Add(1000u).Add(1u).Build()).code(),
            StatusCode::kDeviceFault);
  setenv("FAKE_CUDA_MODE", "no_memory", 1);
  int created = FakeCount("gpuwasm_fake_cuda_contexts_created");
  int x = 0;
  EXPECT_TRUE(h.stream().MemcpyHtoD(out, &x, 4).code() == StatusCode::kOutOfRange || h.stream().Memset(out, 0, 4).ok());
  EXPECT_EQ(h.stream().Synchronize().code(), StatusCode::kDeviceFault);
  EXPECT_EQ(FakeCount("gpuwasm_fake_cuda_contexts_created"), created);
}

TEST_F(CudaOnFake, a_kernel_past_its_deadline_fails_at_once_and_its_context_is_abandoned_after_the_grace) {
  std::vector<std::string> fatal;
  auto d = Device(milliseconds(300), &fatal);
  KernelHarness other(d);
  auto ok_buf = other.Upload(std::vector<int>{7});
  auto h = std::make_unique<KernelHarness>(d);
  auto k = h->Load("spin", "sm_80", "spin");
  auto flag = h->Upload(std::vector<int>{1});
  auto out = h->Zeros<int>(32);
  Status seen;
  Clock::time_point seen_at;
  device::LaunchOptions o;
  o.deadline = Clock::now() + milliseconds(150);
  o.on_complete = [&](const Status& s) {
    seen = s;
    seen_at = Clock::now();
  };
  auto t0 = Clock::now();
  Status s = h->Run(*k, {1}, {32}, Params(k->signature()).Add(flag).Add(out).Build(), 0, std::move(o));
  auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - t0).count();
  EXPECT_EQ(seen.code(), StatusCode::kDeadlineExceeded) << seen;
  auto reported = std::chrono::duration_cast<milliseconds>(seen_at - t0).count();
  EXPECT_GE(reported, 140);
  EXPECT_LT(reported, 1000);  // well before the grace ends (150 ms + 300 ms), with room for slow CI
  // Synchronize returns once the grace is over: the kernel still runs (the fake's never ends, and
  // its cuCtxDestroy would wait for it for ever), so the context is abandoned, not destroyed.
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s;
  EXPECT_GE(took, 400);
  EXPECT_EQ(h->context().resets(), 1u);
  ASSERT_EQ(fatal.size(), 1u);
  EXPECT_NE(fatal[0].find("kernel 'spin' kept running 300 ms past its deadline"), std::string::npos) << fatal[0];
  EXPECT_NE(fatal[0].find("only ending the process does"), std::string::npos) << fatal[0];
  // Its memory is still held on the GPU: still charged. The tenant's next instance gets a new context.
  EXPECT_EQ(h->context().allocated_bytes(), 4u + 128u);
  auto fresh = *h->context().CreateStream();
  auto buf = *h->context().Allocate(64);
  std::vector<int> back(16, 1);
  ASSERT_TRUE(fresh->MemcpyDtoH(back.data(), buf, 64).ok());
  EXPECT_EQ(back, std::vector<int>(16, 0));
  EXPECT_EQ(other.context().resets(), 0u);
  EXPECT_EQ(other.Download<int>(ok_buf, 1), std::vector<int>{7});
  // Tearing the tenant down does not wait for the kernel (it would hang here if cuCtxDestroy were
  // called on the abandoned context).
  fresh.reset();
  h.reset();
}

TEST_F(CudaOnFake, cancel_reports_at_once_and_a_kernel_that_keeps_running_is_abandoned) {
  std::vector<std::string> fatal;
  auto d = Device(milliseconds(200), &fatal);
  KernelHarness h(d);
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
  std::this_thread::sleep_for(milliseconds(30));
  auto t0 = Clock::now();
  h.stream().Cancel();
  EXPECT_TRUE(completed.load());  // reported by the watcher (a device thread) before Cancel() returned
  EXPECT_EQ(seen.code(), StatusCode::kCancelled) << seen;
  Status s = h.stream().Synchronize();
  auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - t0).count();
  EXPECT_EQ(s.code(), StatusCode::kDeviceFault) << s;
  EXPECT_NE(s.message().find("a GPU cannot stop one kernel"), std::string::npos) << s;
  EXPECT_GE(took, 150);
  EXPECT_LT(took, 2000);
  EXPECT_EQ(fatal.size(), 1u);
}

// Kernel time is live on a GPU too: from when the watcher saw the launch's start event done.
TEST_F(CudaOnFake, kernel_time_counts_the_running_kernel) {
  KernelHarness h(Device(milliseconds(100)));
  auto k = h.Load("spin", "sm_80", "spin");
  auto flag = h.Upload(std::vector<int>{1});
  auto out = h.Zeros<int>(32);
  ASSERT_TRUE(h.stream().Synchronize().ok());
  EXPECT_EQ(h.stream().kernel_time().count(), 0);
  device::LaunchOptions o;
  o.deadline = Clock::now() + milliseconds(500);
  const auto t0 = Clock::now();
  ASSERT_TRUE(h.stream().Launch(*k, {{1}, {32}}, Params(k->signature()).Add(flag).Add(out).Build(), std::move(o)).ok());
  std::this_thread::sleep_for(milliseconds(300));
  const auto live = h.stream().kernel_time();
  EXPECT_GE(live, milliseconds(150)) << "kernel time while it runs: " << live.count() << " ns";
  EXPECT_LE(live, Clock::now() - t0);
  EXPECT_EQ(h.stream().Synchronize().code(), StatusCode::kDeadlineExceeded);
}

TEST_F(CudaOnFake, a_host_copy_behind_a_kernel_that_never_ends_returns_at_once) {
  // A copy from pageable memory may wait in the driver for the kernel before it (the fake waits):
  // the CUDA device stages copies through pinned memory, so the caller is never held there.
  auto d = Device(milliseconds(100));
  KernelHarness h(d);
  auto k = h.Load("spin", "sm_80", "spin");
  auto flag = h.Upload(std::vector<int>{1});
  auto out = h.Zeros<int>(32);
  auto dst = h.Zeros<uint8_t>(3 << 20);
  ASSERT_TRUE(h.stream().Synchronize().ok());
  int pageable = FakeCount("gpuwasm_fake_cuda_pageable_copies");
  device::LaunchOptions o;
  o.deadline = Clock::now() + milliseconds(300);
  ASSERT_TRUE(h.stream().Launch(*k, {{1}, {32}}, Params(k->signature()).Add(flag).Add(out).Build(), std::move(o)).ok());
  std::vector<uint8_t> src(3 << 20, 9);  // six chunks of the staging memory
  auto t0 = Clock::now();
  ASSERT_TRUE(h.stream().MemcpyHtoD(dst, src.data(), src.size()).ok());
  auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - t0).count();
  EXPECT_LT(took, 150);
  EXPECT_EQ(FakeCount("gpuwasm_fake_cuda_pageable_copies"), pageable);
  EXPECT_EQ(h.stream().Synchronize().code(), StatusCode::kDeadlineExceeded);
}

TEST_F(CudaOnFake, copies_larger_than_the_staging_memory_arrive_whole) {
  KernelHarness h(Device());
  std::vector<uint32_t> v((20 << 20) / 4);  // 20 MiB: more chunks than staging slots
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint32_t>(i * 2654435761u);
  auto p = h.Upload(v);
  EXPECT_EQ(h.Download<uint32_t>(p, v.size()), v);
}

TEST_F(CudaOnFake, an_idle_context_gives_its_pool_memory_back_and_teardown_frees_everything) {
  CudaDeviceOptions o;
  o.pool_trim_after = milliseconds(50);
  auto d = *CreateCudaDevice(Driver(), 0, o);
  uint64_t before = FakeCount64("gpuwasm_fake_cuda_pool_bytes");
  {
    auto ctx = *d->CreateContext();
    auto stream = *ctx->CreateStream();
    auto p = *ctx->Allocate(8 << 20);
    ASSERT_TRUE(stream->Memset(p, 1, 8 << 20).ok());
    ASSERT_TRUE(stream->Synchronize().ok());
    ASSERT_TRUE(ctx->Free(p).ok());
    EXPECT_GE(ctx->reserved_bytes(), uint64_t{8} << 20);  // kept for the next allocation
    EXPECT_EQ(ctx->allocated_bytes(), 0u);
    auto until = Clock::now() + std::chrono::seconds(5);
    while (ctx->reserved_bytes() != 0 && Clock::now() < until) std::this_thread::sleep_for(milliseconds(10));
    EXPECT_EQ(ctx->reserved_bytes(), 0u);
    // A buffer its owner never freed goes with the context.
    auto left = *ctx->Allocate(1 << 20);
    (void)left;
    EXPECT_EQ(FakeCount64("gpuwasm_fake_cuda_pool_bytes"), before + (1 << 20));
  }
  EXPECT_EQ(FakeCount64("gpuwasm_fake_cuda_pool_bytes"), before);
}

TEST_F(CudaOnFake, shared_memory_beyond_48_kib_is_opted_in_up_to_the_devices_limit) {
  KernelHarness h(Device());
  // Each thread writes its id into dynamic shared memory at a stride covering 64 KiB, then reads it.
  const char* ptx =
      ".version 8.0\n.target sm_90\n.address_size 64\n"
      ".extern .shared .align 16 .b8 smem[];\n"
      ".visible .entry fill(.param .u64 out)\n{\n"
      "  .reg .b32 %r<6>;\n  .reg .b64 %rd<6>;\n"
      "  ld.param.u64 %rd1, [out];\n  cvta.to.global.u64 %rd1, %rd1;\n"
      "  mov.u32 %r1, %tid.x;\n  shl.b32 %r2, %r1, 8;\n  mov.u32 %r3, smem;\n  add.s32 %r4, %r3, %r2;\n"
      "  st.shared.u32 [%r4], %r1;\n  bar.sync 0;\n  ld.shared.u32 %r5, [%r4];\n"
      "  mul.wide.u32 %rd2, %r1, 4;\n  add.s64 %rd3, %rd1, %rd2;\n  st.global.u32 [%rd3], %r5;\n  ret;\n}\n";
  auto m = h.context().LoadModule(ptx);
  ASSERT_TRUE(m.ok()) << m.status();
  auto k = *(*m)->GetKernel("fill");
  auto out = h.Zeros<int>(256);
  ASSERT_TRUE(h.Run(*k, {1}, {256}, Params(k->signature()).Add(out).Build(), 64 << 10).ok());
  auto got = h.Download<int>(out, 256);
  for (int i = 0; i < 256; ++i) ASSERT_EQ(got[i], i) << i;
  Status too_big = h.Run(*k, {1}, {256}, Params(k->signature()).Add(out).Build(), 232448 + 1);
  EXPECT_EQ(too_big.code(), StatusCode::kInvalidArgument) << too_big;
}

TEST_F(CudaOnFake, a_driver_without_the_device_api_is_not_a_cuda_device) {
  auto probe_only = CudaDriver::Load(GPUWASM_FAKE_CUDA_PROBE);
  ASSERT_TRUE(probe_only.ok());
  ASSERT_TRUE((*probe_only)->Probe().ok());
  auto d = CreateCudaDevice(*probe_only, 0);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(d.status().message().find("lacks cuCtxCreate_v4 or cuCtxCreate_v2"), std::string::npos) << d.status();
}

// Instrumented PTX on a GPU (docs/adr/0009-instrumented-ptx.md): the window contract
// (window_contract.h) over the fake driver, and what only the fake can show.
class CudaWindows : public CudaOnFake {};

TEST_F(CudaWindows, buffers_lie_in_the_window_zeroed_and_copies_cross_its_granules) {
  auto d = Device();
  ASSERT_TRUE(d->info().instance_windows);
  window_contract::BuffersLieInTheWindowZeroedAndComeBack(*d);
}

TEST_F(CudaWindows, a_store_outside_the_window_ends_its_launch_cleanly_and_the_gpu_stays_usable) {
  window_contract::AStoreOutsideTheWindowEndsItsLaunchCleanly(*Device());
}

TEST_F(CudaWindows, the_abort_word_ends_a_kernel_that_would_never_end_and_nothing_is_abandoned) {
  auto d = Device(milliseconds(300));
  window_contract::TheAbortWordEndsAKernelThatWouldNeverEnd(*d);
  std::this_thread::sleep_for(milliseconds(400));  // past the grace: nothing was left running
  EXPECT_EQ(d->restart_reason(), "");
}

TEST_F(CudaWindows, granules_are_backed_as_buffers_need_them_and_given_back_with_the_window) {
  auto d = Device();
  auto ctx = *d->CreateContext({64u << 20});
  auto w = *ctx->CreateWindow(16u << 20);
  EXPECT_LT(ctx->reserved_bytes(), 2u << 20) << "nothing backed before a buffer";
  auto p = *w->Allocate(3u << 20);
  EXPECT_GE(ctx->reserved_bytes(), 4u << 20) << "the granules backing it";
  ASSERT_TRUE(w->Free(p, 0).ok());
  EXPECT_GE(ctx->reserved_bytes(), 4u << 20) << "kept mapped while the window lives";
  w.reset();
  EXPECT_LT(ctx->reserved_bytes(), 2u << 20) << "given back with the window";
}

TEST_F(CudaWindows, a_driver_without_virtual_memory_management_gives_no_windows) {
  setenv("FAKE_CUDA_MODE", "no_vmm", 1);
  auto d = Device();
  EXPECT_FALSE(d->info().instance_windows);
  auto ctx = *d->CreateContext({});
  EXPECT_EQ(ctx->CreateWindow(1u << 20).status().code(), StatusCode::kUnsupported);
}

}  // namespace
}  // namespace gpuwasm::testing
