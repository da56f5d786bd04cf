// The runtime on the CUDA device, over the fake driver (tests/device/fake_cuda.cc): guests'
// kernels go through the driver API path, in one process. Instrumented (the default): a wild store
// ends only its own launch and a kernel that never ends stops at the deadline, nothing left behind.
// A trusted tenant's kernels run as written (instrument_ptx = false), and the driver's worst holds:
// a device fault is process-fatal (every tenant then gets a clear error), a kernel that never ends
// is reported at the invocation's deadline and its context abandoned.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "../common/guests.h"
#include "../common/temp_dir.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/driver.h"
#include "runtime/runtime.h"

namespace gpuwasm::runtime {
namespace {
namespace fs = std::filesystem;
using gpuwasm::testing::Example;
using gpuwasm::testing::Lifecycle;
using gpuwasm::testing::ReadFile;
using gpuwasm::testing::RunNeverEndingKernel;
using gpuwasm::testing::Span;
using gpuwasm::testing::TempDir;
using std::chrono::milliseconds;

std::shared_ptr<device::Device> FakeGpu() {
  auto driver = device::cuda::CudaDriver::Load(GPUWASM_FAKE_CUDA);
  EXPECT_TRUE(driver.ok()) << driver.status();
  EXPECT_TRUE((*driver)->Probe().ok());
  device::cuda::CudaDeviceOptions o;
  o.runaway_grace = milliseconds(300);
  auto d = device::cuda::CreateCudaDevice(*driver, 0, o);
  EXPECT_TRUE(d.ok()) << d.status();
  return *d;
}

class CudaRuntime : public ::testing::Test {
 protected:
  virtual bool instrumented() const { return true; }
  void SetUp() override {
    void* h = dlopen(GPUWASM_FAKE_CUDA, RTLD_NOW);
    ASSERT_NE(h, nullptr);
    reinterpret_cast<void (*)()>(dlsym(h, "gpuwasm_fake_cuda_new_process"))();
    RuntimeConfig c;
    c.store_dir = dir_.path();
    c.workers = 4;
    for (const char* name : {"acme", "beta"}) {
      TenantConfig t;
      t.name = name;
      t.instrument_ptx = instrumented();
      c.tenants.push_back(t);
    }
    RuntimeOptions o;
    device_ = FakeGpu();
    o.device = device_;
    o.engine.cache_dir = GPUWASM_RUNTIME_TEST_CACHE;
    auto rt = Runtime::Create(std::move(c), std::move(o));
    ASSERT_TRUE(rt.ok()) << rt.status();
    rt_ = std::move(*rt);
  }

  std::string Deploy(const std::string& tenant, const std::string& name, const fs::path& wasm,
                     const std::string& entry = "") {
    std::string bytes = ReadFile(wasm);
    auto rec = rt_->Deploy(tenant, name, Span(bytes), entry);
    EXPECT_TRUE(rec.ok()) << rec.status();
    auto ready = rt_->WaitReady(tenant, rec->id, milliseconds(120'000));
    EXPECT_TRUE(ready.ok() && ready->status == store::DeployStatus::kReady);
    return rec->id;
  }

  InvokeResult Invoke(const std::string& tenant, const std::string& fn, InvokeRequest req = {}) {
    auto r = rt_->Invoke(tenant, fn, std::move(req));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : InvokeResult{};
  }

  InvokeResult Forever(const std::string& life, milliseconds deadline) {
    InvokeRequest forever;
    forever.entry = "never_ending_kernel";
    forever.deadline = deadline;
    return Invoke("acme", life, forever);
  }

  void ExpectNothingLeft() {
    EXPECT_TRUE(rt_->Instances().empty());
    for (const TenantStats& t : rt_->Stats().tenants) {
      EXPECT_EQ(t.totals.running, 0u) << t.tenant;
      EXPECT_EQ(t.context_device_bytes, 0u) << t.tenant;
      EXPECT_EQ(t.context_modules, 0u) << t.tenant;
    }
  }

  TempDir dir_;
  std::shared_ptr<device::Device> device_;
  std::unique_ptr<Runtime> rt_;
};

TEST_F(CudaRuntime, a_wild_store_is_caught_by_the_fence_and_the_gpu_stays_usable_for_every_tenant) {
  std::string life = Deploy("acme", "life", Lifecycle(), "echo");
  std::string beta_add = Deploy("beta", "vector_add", Example("vector_add"));
  InvokeRequest wild;
  wild.entry = "wild_store";
  InvokeResult r = Invoke("acme", life, wild);
  EXPECT_EQ(r.status, InvocationStatus::kExitError);
  EXPECT_EQ(r.exit_status, 3);  // the guest saw WCU_ERR_DEVICE
  EXPECT_NE(r.output.find("kernel 'oob_write' (PTX line "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("global store of 4 bytes at 0x"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("is outside the instance's buffers"), std::string::npos) << r.output;
  EXPECT_EQ(r.metrics.kernel_faults, 1u);
  EXPECT_EQ(device_->restart_reason(), "") << "no driver error: nothing to restart";
  EXPECT_EQ(Invoke("beta", beta_add).status, InvocationStatus::kOk);
  InvokeRequest echo;
  echo.input = "still here";
  EXPECT_EQ(Invoke("acme", life, echo).output, "still here");
  for (const TenantStats& t : rt_->Stats().tenants) {
    EXPECT_EQ(t.context_resets, 0u) << t.tenant;
    EXPECT_EQ(t.totals.kernel_faults, t.tenant == "acme" ? 1u : 0u) << t.tenant;
  }
  ExpectNothingLeft();
}

// The first deadline of the never-ending kernel (RunNeverEndingKernel doubles it when the guest
// did not reach its launch in time: under TSan 300 ms passed before the launch).
constexpr milliseconds kForeverDeadline{500};

TEST_F(CudaRuntime, a_kernel_that_never_ends_stops_at_the_deadline_and_nothing_is_left_behind) {
  std::string life = Deploy("acme", "life", Lifecycle(), "echo");
  milliseconds deadline = kForeverDeadline;
  InvokeResult r = RunNeverEndingKernel([&](milliseconds d) { return Forever(life, d); }, &deadline);
  EXPECT_EQ(r.exit_status, 10);  // the guest's synchronize returned WCU_ERR_DEADLINE
  EXPECT_EQ(r.metrics.kernels_launched, 1u);
  EXPECT_GE(r.duration, deadline - milliseconds(10));
  InvokeRequest trap;
  trap.entry = "trap_mid_launch";
  r = Invoke("acme", life, trap);
  EXPECT_EQ(r.status, InvocationStatus::kTrap);
  EXPECT_LT(r.duration, milliseconds(4000));       // the 5 s kernel was stopped by its abort word
  std::this_thread::sleep_for(milliseconds(400));  // past the runaway grace
  EXPECT_EQ(device_->restart_reason(), "") << "no kernel was left running";
  ExpectNothingLeft();
}

// A trusted tenant's kernels run as written: what the CUDA driver documents then holds.
class CudaRuntimeTrusted : public CudaRuntime {
 protected:
  bool instrumented() const override { return false; }
};

TEST_F(CudaRuntimeTrusted, in_one_process_a_fault_loses_the_gpu_for_every_tenant_and_says_so) {
  // What the CUDA driver documents, and what the fake does: after an illegal address no CUDA work
  // of the process succeeds. In one process (isolation off) every tenant loses the GPU, clearly.
  std::string life = Deploy("acme", "life", Lifecycle(), "echo");
  std::string beta_add = Deploy("beta", "vector_add", Example("vector_add"));

  InvokeResult ok = Invoke("beta", beta_add);
  EXPECT_EQ(ok.status, InvocationStatus::kOk) << ok.stderr_text;
  EXPECT_EQ(ok.device, "Fake GPU");
  EXPECT_GT(ok.gpu_time.count(), 0);

  InvokeRequest fault;
  fault.entry = "fault";
  InvokeResult r = Invoke("acme", life, fault);
  EXPECT_EQ(r.status, InvocationStatus::kExitError);
  EXPECT_EQ(r.exit_status, 3);  // the guest saw WCU_ERR_DEVICE
  EXPECT_NE(device_->restart_reason().find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos)
      << device_->restart_reason();

  InvokeResult lost = Invoke("beta", beta_add);
  EXPECT_NE(lost.status, InvocationStatus::kOk);
  EXPECT_NE(lost.stderr_text.find("the GPU is unusable in this process"), std::string::npos) << lost.stderr_text;
  EXPECT_TRUE(rt_->Instances().empty());
}

TEST_F(CudaRuntime, a_block_too_large_for_the_compiled_kernel_is_a_dimension_error) {
  std::string add = Deploy("acme", "vector_add", Example("vector_add"));
  setenv("FAKE_CUDA_MODE", "few_registers", 1);  // the "JIT" allows 128 threads per block
  InvokeResult r = Invoke("acme", add);
  unsetenv("FAKE_CUDA_MODE");
  EXPECT_EQ(r.status, InvocationStatus::kExitError);
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_NE(r.stderr_text.find("failed with -7: launch of 'vector_add': block of 256 threads exceeds what kernel "
                               "'vector_add' allows on this GPU (128, limited by its registers)"),
            std::string::npos)
      << r.stderr_text;
  ExpectNothingLeft();
}

TEST_F(CudaRuntimeTrusted, a_kernel_that_never_ends_is_reported_at_the_deadline_and_left_behind) {
  std::string life = Deploy("acme", "life", Lifecycle(), "echo");
  std::string beta_add = Deploy("beta", "vector_add", Example("vector_add"));
  milliseconds deadline = kForeverDeadline;
  InvokeResult r = RunNeverEndingKernel([&](milliseconds d) { return Forever(life, d); }, &deadline);
  EXPECT_EQ(r.exit_status, 10);  // the guest's synchronize returned WCU_ERR_DEADLINE
  EXPECT_EQ(r.metrics.kernels_launched, 1u);
  EXPECT_GE(r.duration, deadline - milliseconds(10));
  EXPECT_LT(r.duration, deadline + milliseconds(4000));

  InvokeRequest trap;
  trap.entry = "trap_mid_launch";
  r = Invoke("acme", life, trap);
  EXPECT_EQ(r.status, InvocationStatus::kTrap);
  EXPECT_LT(r.duration, milliseconds(4000));  // the 5 s kernel was not waited for

  // Both kernels were left running in abandoned contexts, whose memory stays charged to acme
  // until the process ends (a worker process would be restarted); the process must be restarted.
  EXPECT_NE(device_->restart_reason().find("only ending the process does"), std::string::npos)
      << device_->restart_reason();
  for (const TenantStats& t : rt_->Stats().tenants) {
    EXPECT_EQ(t.totals.running, 0u) << t.tenant;
    if (t.tenant == "acme") {
      EXPECT_GT(t.context_device_bytes, 0u);
    }
  }

  EXPECT_EQ(Invoke("beta", beta_add).status, InvocationStatus::kOk);
  InvokeRequest echo;
  echo.input = "still here";
  EXPECT_EQ(Invoke("acme", life, echo).output, "still here");
  EXPECT_TRUE(rt_->Instances().empty());
}

}  // namespace
}  // namespace gpuwasm::runtime
