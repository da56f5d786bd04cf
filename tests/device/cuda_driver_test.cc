#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "device/cuda/driver.h"
#include "device/select.h"

namespace gpuwasm::device::cuda {
using device::DeviceInfo;
using device::DeviceKind;
using device::OpenDevice;
namespace {

class FakeCuda : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv("FAKE_CUDA_MODE"); }
  static Result<GpuProbe> ProbeIn(const char* mode) {
    setenv("FAKE_CUDA_MODE", mode, 1);
    return ProbeGpu(GPUWASM_FAKE_CUDA);
  }
};

TEST_F(FakeCuda, HealthyDriverReportsVersionAndDevice) {
  Result<GpuProbe> p = ProbeIn("ok");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->driver_version, 12080);
  EXPECT_EQ(p->device_count, 1);
  EXPECT_EQ(p->first_device_name, "Fake GPU");
}

TEST_F(FakeCuda, NoDeviceFromCuInitIsUnavailableWithTheDriversText) {
  Result<GpuProbe> p = ProbeIn("no_device");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(p.status().message().find("cuInit failed: CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device"),
            std::string::npos)
      << p.status().message();
}

TEST_F(FakeCuda, OldDriverIsRejectedNamingBothVersions) {
  Result<GpuProbe> p = ProbeIn("old_driver");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("supports CUDA 11.8; gpuwasm needs 12.0"), std::string::npos)
      << p.status().message();
}

TEST_F(FakeCuda, ZeroDevicesIsNoGpu) {
  Result<GpuProbe> p = ProbeIn("zero_devices");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("reports no devices"), std::string::npos) << p.status().message();
}

TEST_F(FakeCuda, CheckNamesCallErrorAndMapsTheCode) {
  Result<std::shared_ptr<CudaDriver>> d = CudaDriver::Load(GPUWASM_FAKE_CUDA);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE((*d)->Check(0, "cuMemAlloc").ok());
  Status oom = (*d)->Check(2, "cuMemAlloc_v2");
  EXPECT_EQ(oom.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(oom.message(), "cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory");
  // Codes the library cannot name fall back to gpuwasm's own table.
  Status fault = (*d)->Check(716, "cuEventQuery");
  EXPECT_EQ(fault.code(), StatusCode::kDeviceFault);
  EXPECT_EQ(fault.message(), "cuEventQuery failed: CUDA_ERROR_MISALIGNED_ADDRESS (716)");
  EXPECT_EQ((*d)->Check(701, "cuLaunchKernel").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ((*d)->Check(218, "cuModuleLoadDataEx").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*d)->resolved_symbols(), CudaDriver::wanted_symbols());
  EXPECT_GT(CudaDriver::wanted_symbols(), 30);
  // A library with only the probe's symbols still loads: the rest stay unresolved.
  Result<std::shared_ptr<CudaDriver>> probe_only = CudaDriver::Load(GPUWASM_FAKE_CUDA_PROBE);
  ASSERT_TRUE(probe_only.ok());
  EXPECT_EQ((*probe_only)->resolved_symbols(), 9);
}

TEST_F(FakeCuda, DeviceLimitsAreQueried) {
  Result<std::shared_ptr<CudaDriver>> d = CudaDriver::Load(GPUWASM_FAKE_CUDA);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE((*d)->Probe().ok());
  Result<DeviceInfo> info = (*d)->QueryDevice(0);
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->kind, DeviceKind::kCuda);
  EXPECT_EQ(info->name, "Fake GPU");
  EXPECT_EQ(info->compute_major, 9);
  EXPECT_EQ(info->compute_minor, 0);
  EXPECT_EQ(info->sm_count, 132u);
  EXPECT_EQ(info->max_threads_per_block, 1024u);
  EXPECT_EQ(info->max_block_dim[2], 64u);
  EXPECT_EQ(info->max_grid_dim[0], 2147483647u);
  EXPECT_EQ(info->max_grid_dim[1], 65535u);
  EXPECT_EQ(info->max_shared_per_block, 232448u);  // the opt-in limit (227 KiB), above the 48 KiB window
  EXPECT_EQ(info->total_memory, uint64_t{150754820096});

  Status bad_ordinal = (*d)->QueryDevice(1).status();
  EXPECT_EQ(bad_ordinal.message(), "cuDeviceGet failed: CUDA_ERROR_INVALID_DEVICE (101)");
  setenv("FAKE_CUDA_MODE", "bad_attribute", 1);
  Status bad_attr = (*d)->QueryDevice(0).status();
  EXPECT_EQ(bad_attr.message(),
            "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT) failed: CUDA_ERROR_INVALID_VALUE (1): invalid argument");
}

TEST(CudaDriver, MissingLibraryIsUnavailable) {
  Result<GpuProbe> p = ProbeGpu("libgpuwasm-no-such-cuda.so");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(p.status().message().find("no CUDA driver"), std::string::npos);
}

TEST(CudaDriver, LibraryWithoutCuInitIsRejected) {
  // Any shared library without the driver API: libm is always there.
  Result<std::shared_ptr<CudaDriver>> d = CudaDriver::Load("libm.so.6");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("has no cuInit"), std::string::npos) << d.status().message();
}

TEST(CudaDriver, EnvironmentVariableChoosesTheLibrary) {
  setenv("GPUWASM_CUDA_LIBRARY", GPUWASM_FAKE_CUDA, 1);
  Result<std::shared_ptr<CudaDriver>> d = CudaDriver::Load();
  unsetenv("GPUWASM_CUDA_LIBRARY");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ((*d)->path(), GPUWASM_FAKE_CUDA);
}

TEST(CudaDriver, ToolkitStubLibraryIsNamedAsSuch) {
  const std::string stub = GPUWASM_CUDA_STUB;
  if (stub.empty()) GTEST_SKIP() << "no CUDA toolkit stub library on this machine";
  Result<std::shared_ptr<CudaDriver>> d = CudaDriver::Load(stub);
  ASSERT_TRUE(d.ok()) << d.status().message();
  // The real stub exports every symbol gpuwasm wants, so the versioned names are right.
  EXPECT_EQ((*d)->resolved_symbols(), CudaDriver::wanted_symbols());
  Result<GpuProbe> p = (*d)->Probe();
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("stub library"), std::string::npos) << p.status().message();
}

// Device selection over the probe: "auto" falls back to the CPU device and says why; "cuda:N" fails
// with the reason. $GPUWASM_CUDA_LIBRARY points the probe at the fake driver.
class Selection : public ::testing::Test {
 protected:
  void SetUp() override { setenv("GPUWASM_CUDA_LIBRARY", GPUWASM_FAKE_CUDA, 1); }
  void TearDown() override {
    unsetenv("GPUWASM_CUDA_LIBRARY");
    unsetenv("FAKE_CUDA_MODE");
  }
};

TEST_F(Selection, AutoWithoutDeviceUsesCpuAndSaysWhy) {
  setenv("FAKE_CUDA_MODE", "no_device", 1);
  std::string why;
  auto dev = OpenDevice("auto", &why);
  ASSERT_TRUE(dev.ok()) << dev.status().message();
  EXPECT_EQ((*dev)->info().kind, DeviceKind::kCpu);
  EXPECT_NE(why.find("CUDA_ERROR_NO_DEVICE"), std::string::npos) << why;
  EXPECT_NE(why.find("using the CPU device"), std::string::npos) << why;
}

TEST_F(Selection, AutoWithUsableGpuPicksTheCudaDevice) {
  std::string why = "untouched";
  auto dev = OpenDevice("auto", &why);
  ASSERT_TRUE(dev.ok()) << dev.status().message();
  EXPECT_EQ((*dev)->info().kind, DeviceKind::kCuda);
  EXPECT_EQ((*dev)->info().name, "Fake GPU");
  EXPECT_EQ(why, "untouched");
  auto forced = OpenDevice("cuda:0");
  ASSERT_TRUE(forced.ok()) << forced.status().message();
  EXPECT_EQ((*forced)->info().kind, DeviceKind::kCuda);
}

TEST_F(Selection, AutoWithADriverLackingTheDeviceApiUsesCpuAndSaysWhy) {
  setenv("GPUWASM_CUDA_LIBRARY", GPUWASM_FAKE_CUDA_PROBE, 1);
  std::string why;
  auto dev = OpenDevice("auto", &why);
  ASSERT_TRUE(dev.ok());
  EXPECT_EQ((*dev)->info().kind, DeviceKind::kCpu);
  EXPECT_NE(why.find("a GPU is usable (1 device(s), first: Fake GPU, CUDA 12.8) but the CUDA device did not start: "
                     "the CUDA driver at "),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("lacks cuCtxCreate_v4 or cuCtxCreate_v2: using the CPU device"), std::string::npos) << why;
  auto forced = OpenDevice("cuda:0");
  ASSERT_FALSE(forced.ok());
  EXPECT_EQ(forced.status().code(), StatusCode::kUnavailable);
}

TEST_F(Selection, CpuIsForcedWithoutProbing) {
  setenv("GPUWASM_CUDA_LIBRARY", "libgpuwasm-no-such-cuda.so", 1);
  std::string why = "untouched";
  ASSERT_TRUE(OpenDevice("cpu", &why).ok());
  EXPECT_EQ(why, "untouched");
}

TEST_F(Selection, CudaOrdinalFailsClearly) {
  setenv("FAKE_CUDA_MODE", "old_driver", 1);
  auto old = OpenDevice("cuda:0");
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(old.status().message().find("device 'cuda:0' is not available: no GPU: the CUDA driver supports CUDA 11.8"),
            std::string::npos)
      << old.status().message();
  setenv("FAKE_CUDA_MODE", "ok", 1);
  auto missing = OpenDevice("cuda:3");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "device 'cuda:3' does not exist: the CUDA driver reports 1 device(s)");
  for (const char* bad : {"cuda:", "cuda:x", "cuda:-1", "cuda:0x"}) {
    auto r = OpenDevice(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace gpuwasm::device::cuda
