// The runtime on the CUDA device, over the fake driver (tests/device/fake_cuda.cc): guests'
// kernels go through the driver API path. A device fault poisons only its tenant's context (that
// tenant's next invocation gets a rebuilt one), a kernel that never ends is reported at the
// invocation's deadline and stopped by a context reset, and nothing is left behind.
#include <gtest/gtest.h>

#include "../common/guests.h"
#include "../common/temp_dir.h"

#include <chrono>

#include "device/cuda/cuda_device.h"
#include "device/cuda/driver.h"
#include "runtime/runtime.h"

namespace gpuwasm::runtime {
namespace {
namespace fs = std::filesystem;
using gpuwasm::testing::Example;
using gpuwasm::testing::Lifecycle;
using gpuwasm::testing::ReadFile;
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
  void SetUp() override {
    RuntimeConfig c;
    c.store_dir = dir_.path();
    c.workers = 4;
    for (const char* name : {"acme", "beta"}) {
      TenantConfig t;
      t.name = name;
      c.tenants.push_back(t);
    }
    RuntimeOptions o;
    o.device = FakeGpu();
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

  void ExpectNothingLeft() {
    EXPECT_TRUE(rt_->Instances().empty());
    for (const TenantStats& t : rt_->Stats().tenants) {
      EXPECT_EQ(t.totals.running, 0u) << t.tenant;
      EXPECT_EQ(t.context_device_bytes, 0u) << t.tenant;
      EXPECT_EQ(t.context_modules, 0u) << t.tenant;
    }
  }

  TempDir dir_;
  std::unique_ptr<Runtime> rt_;
};

TEST_F(CudaRuntime, examples_run_and_a_fault_stays_in_its_tenant) {
  std::string life = Deploy("acme", "life", Lifecycle(), "echo");
  std::string acme_add = Deploy("acme", "vector_add", Example("vector_add"));
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
  ExpectNothingLeft();
  for (const TenantStats& t : rt_->Stats().tenants) EXPECT_EQ(t.context_resets, t.tenant == "acme" ? 1u : 0u) << t.tenant;

  // The other tenant never noticed; the faulting tenant's next invocation runs on a new context.
  for (const auto& [tenant, fn] : {std::pair{"beta", beta_add}, std::pair{"acme", acme_add}}) {
    InvokeResult again = Invoke(tenant, fn);
    EXPECT_EQ(again.status, InvocationStatus::kOk) << tenant << ": " << again.stderr_text;
    EXPECT_NE(again.stdout_text.find(" OK"), std::string::npos) << again.stdout_text;
  }
  ExpectNothingLeft();
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

TEST_F(CudaRuntime, a_kernel_that_never_ends_is_reported_at_the_deadline_and_stopped) {
  std::string life = Deploy("acme", "life", Lifecycle(), "echo");
  std::string beta_add = Deploy("beta", "vector_add", Example("vector_add"));
  InvokeRequest forever;
  forever.entry = "never_ending_kernel";
  forever.deadline = milliseconds(300);
  InvokeResult r = Invoke("acme", life, forever);
  EXPECT_EQ(r.exit_status, 10);  // the guest's synchronize returned WCU_ERR_DEADLINE
  EXPECT_GE(r.duration, milliseconds(290));
  EXPECT_LT(r.duration, milliseconds(5000));

  InvokeRequest trap;
  trap.entry = "trap_mid_launch";
  r = Invoke("acme", life, trap);
  EXPECT_EQ(r.status, InvocationStatus::kTrap);
  EXPECT_LT(r.duration, milliseconds(4000));  // the 5 s kernel was stopped, not waited for
  ExpectNothingLeft();

  EXPECT_EQ(Invoke("beta", beta_add).status, InvocationStatus::kOk);
  InvokeRequest echo;
  echo.input = "still here";
  EXPECT_EQ(Invoke("acme", life, echo).output, "still here");
  ExpectNothingLeft();
}

}  // namespace
}  // namespace gpuwasm::runtime
