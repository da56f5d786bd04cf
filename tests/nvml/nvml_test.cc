// NVML through the real loader, against the fake library: devices, MIG, GPM sample ownership,
// metrics from two samples, and every error path.
#include "nvml/nvml.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "fake_control.h"

namespace gpuwasm::testing {
namespace {

using nvml::Device;
using nvml::GpmSample;
using nvml::Nvml;
using std::chrono::milliseconds;

std::shared_ptr<Nvml> OpenFake() {
  auto n = Nvml::Open(GPUWASM_FAKE_NVML);
  EXPECT_TRUE(n.ok()) << n.status();
  return n.ok() ? *n : nullptr;
}

TEST(Nvml, missing_library_is_unavailable_not_a_crash) {
  auto n = Nvml::Open("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(n.status().message().find("NVML is not available: /nonexistent/libnvidia-ml.so.1"), std::string::npos);
}

TEST(Nvml, environment_variable_selects_the_library) {
  setenv("GPUWASM_NVML_LIBRARY", GPUWASM_FAKE_NVML, 1);
  auto n = Nvml::Open();
  unsetenv("GPUWASM_NVML_LIBRARY");
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ((*n)->path(), GPUWASM_FAKE_NVML);
  EXPECT_EQ(*(*n)->driver_version(), "580.99-fake");
}

TEST(Nvml, init_failure_is_reported) {
  FakeNvml fake;
  fake.Inject("nvmlInit_v2", NVML_ERROR_DRIVER_NOT_LOADED, 1);
  auto n = Nvml::Open(GPUWASM_FAKE_NVML);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().message(), "nvmlInit_v2 failed: NVML_ERROR_DRIVER_NOT_LOADED (9)");
}

TEST(Nvml, devices_by_index_and_uuid) {
  FakeNvml fake;
  auto nvml = OpenFake();
  EXPECT_EQ(*nvml->device_count(), 3u);
  auto h200 = Device::ByIndex(nvml, 0);
  ASSERT_TRUE(h200.ok());
  EXPECT_EQ(*h200->name(), "NVIDIA H200");
  EXPECT_EQ(*h200->uuid(), "GPU-fake-h200-0000");
  EXPECT_EQ(*h200->architecture(), 9u);
  EXPECT_EQ(h200->memory_info()->total, 141ull << 30);
  EXPECT_EQ(h200->utilization()->gpu_percent, 37u);
  EXPECT_FALSE(*h200->mig_enabled());
  EXPECT_TRUE(h200->gpm_supported());
  auto same = Device::ByUuid(nvml, "GPU-fake-h200-0000");
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->handle(), h200->handle());
  EXPECT_EQ(Device::ByUuid(nvml, "GPU-nope").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Device::ByIndex(nvml, 9).status().message(),
            "nvmlDeviceGetHandleByIndex_v2 failed: NVML_ERROR_INVALID_ARGUMENT (2)");
  auto a100 = Device::ByIndex(nvml, 2);
  EXPECT_FALSE(a100->gpm_supported());
  EXPECT_TRUE(a100->mig_devices()->empty());
}

TEST(Nvml, mig_devices_carry_their_gpu_instance_ids) {
  FakeNvml fake;
  auto nvml = OpenFake();
  auto gpu = Device::ByIndex(nvml, 1);
  ASSERT_TRUE(*gpu->mig_enabled());
  auto migs = gpu->mig_devices();
  ASSERT_TRUE(migs.ok()) << migs.status();
  ASSERT_EQ(migs->size(), 2u);
  EXPECT_EQ((*migs)[0].gpu_instance_id, 1u);
  EXPECT_EQ((*migs)[1].gpu_instance_id, 2u);
  EXPECT_EQ(*(*migs)[0].device.uuid(), "MIG-fake-0001-gi1");
  EXPECT_EQ(gpu->utilization().status().code(), StatusCode::kUnsupported);  // as on real MIG GPUs
}

TEST(GpmSample, destructor_frees_exactly_once) {
  FakeNvml fake;
  auto nvml = OpenFake();
  long frees = fake.Frees();
  {
    auto s = Device::ByIndex(nvml, 0)->gpm_sample();
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(fake.LiveSamples(), 1);
    GpmSample moved = std::move(*s);  // moving transfers, never duplicates ownership
    EXPECT_EQ(s->handle(), nullptr);
  }
  EXPECT_EQ(fake.LiveSamples(), 0);
  EXPECT_EQ(fake.Frees(), frees + 1);
  EXPECT_EQ(fake.BadFrees(), 0);
}

TEST(GpmSample, free_reports_an_injected_error_and_is_not_repeated) {
  FakeNvml fake;
  auto nvml = OpenFake();
  auto s = GpmSample::Allocate(nvml);
  ASSERT_TRUE(s.ok());
  fake.Inject("nvmlGpmSampleFree", NVML_ERROR_UNINITIALIZED, 1);
  Status st = s->free();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_EQ(st.message(), "nvmlGpmSampleFree failed: NVML_ERROR_UNINITIALIZED (1)");
  EXPECT_EQ(s->handle(), nullptr);
  EXPECT_TRUE(s->free().ok());  // nothing left to free
  fake.Inject("nvmlGpmSampleFree", NVML_ERROR_UNKNOWN, 1);
  {
    auto t = GpmSample::Allocate(nvml);
    ASSERT_TRUE(t.ok());
  }  // the destructor ignores the injected UNKNOWN
  EXPECT_EQ(fake.BadFrees(), 0);
  EXPECT_EQ(fake.LiveSamples(), 0);
}

TEST(GpmSample, release_and_adopt_round_trip_frees_once) {
  FakeNvml fake;
  auto nvml = OpenFake();
  long frees = fake.Frees();
  nvmlGpmSample_t raw;
  {
    auto s = GpmSample::Allocate(nvml);
    raw = s->release();
    EXPECT_EQ(s->handle(), nullptr);
  }
  EXPECT_EQ(fake.Frees(), frees);  // released: not freed
  EXPECT_EQ(fake.LiveSamples(), 1);
  {
    GpmSample adopted = GpmSample::adopt(nvml, raw);
    EXPECT_EQ(adopted.handle(), raw);
    EXPECT_EQ(adopted.nvml().get(), nvml.get());
  }
  EXPECT_EQ(fake.Frees(), frees + 1);
  EXPECT_EQ(fake.LiveSamples(), 0);
  EXPECT_EQ(fake.BadFrees(), 0);
}

TEST(GpmSample, keeps_the_library_alive) {
  FakeNvml fake;
  int base = fake.InitCount();
  std::optional<GpmSample> sample;
  {
    auto nvml = OpenFake();
    EXPECT_EQ(fake.InitCount(), base + 1);
    sample.emplace(std::move(*Device::ByIndex(nvml, 0)->gpm_sample()));
  }  // the caller's Nvml is gone, the sample still owns a reference
  EXPECT_EQ(fake.InitCount(), base + 1);
  EXPECT_TRUE(sample->free().ok());  // no use after the library is gone
  sample.reset();
  EXPECT_EQ(fake.InitCount(), base);  // nvmlShutdown ran when the last owner went
  EXPECT_EQ(fake.LiveSamples(), 0);
}

TEST(GpmMetrics, computed_from_two_samples) {
  FakeNvml fake;
  auto nvml = OpenFake();
  auto dev = Device::ByIndex(nvml, 0);
  auto s1 = dev->gpm_sample();
  std::this_thread::sleep_for(milliseconds(120));
  auto s2 = dev->gpm_sample();
  auto r = nvml::GpmMetricsGet(*nvml, *s1, *s2, {2, 3, 20, 51, 999});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 5u);
  EXPECT_TRUE((*r)[0].status.ok());
  EXPECT_DOUBLE_EQ((*r)[0].value, 42.0);
  EXPECT_EQ((*r)[0].short_name, "SMACT");
  EXPECT_EQ((*r)[0].unit, "%");
  EXPECT_DOUBLE_EQ((*r)[1].value, 30.5);
  EXPECT_DOUBLE_EQ((*r)[2].value, 1000.0);
  EXPECT_EQ((*r)[2].unit, "MiB/s");
  // NaN is reported as unavailable, never hidden as a number.
  EXPECT_EQ((*r)[3].status.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(std::isnan((*r)[3].value));
  // An id this NVML does not know fails on its own; the names come from our table.
  EXPECT_EQ((*r)[4].status.message(), "GPM metric failed: NVML_ERROR_INVALID_ARGUMENT (2)");
  EXPECT_EQ((*r)[4].short_name, "");
}

TEST(GpmMetrics, samples_closer_than_100ms_are_refused) {
  FakeNvml fake;
  auto nvml = OpenFake();
  auto dev = Device::ByIndex(nvml, 0);
  auto s1 = dev->gpm_sample();
  auto s2 = dev->gpm_sample();
  auto r = nvml::GpmMetricsGet(*nvml, *s1, *s2, {2});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("ms apart; NVML needs more than 100 ms between them"), std::string::npos);
  auto empty = GpmSample::Allocate(nvml);
  EXPECT_EQ(nvml::GpmMetricsGet(*nvml, *empty, *s2, {2}).status().message(), "GPM metrics need two filled samples");
}

TEST(GpmMetrics, mig_gpu_instance_sampling) {
  FakeNvml fake;
  auto nvml = OpenFake();
  auto gpu = Device::ByIndex(nvml, 1);
  auto s1 = gpu->gpm_mig_sample(2);
  ASSERT_TRUE(s1.ok()) << s1.status();
  std::this_thread::sleep_for(milliseconds(110));
  auto s2 = gpu->gpm_mig_sample(2);
  auto r = nvml::GpmMetricsGet(*nvml, *s1, *s2, {2});
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ((*r)[0].value, 42.0 * 2 / 3);  // GPU instance 2's share
  EXPECT_FALSE(gpu->gpm_mig_sample(7).ok());
}

TEST(GpmMetrics, error_paths) {
  FakeNvml fake;
  auto nvml = OpenFake();
  auto dev = Device::ByIndex(nvml, 0);
  fake.Inject("nvmlGpmSampleGet", NVML_ERROR_GPU_IS_LOST, 1);
  auto lost = dev->gpm_sample();
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.status().code(), StatusCode::kDeviceFault);
  EXPECT_EQ(lost.status().message(), "nvmlGpmSampleGet failed: NVML_ERROR_GPU_IS_LOST (15)");
  EXPECT_EQ(fake.LiveSamples(), 0);  // the sample allocated for it was freed
  fake.Inject("nvmlGpmSampleAlloc", NVML_ERROR_MEMORY, 1);
  EXPECT_EQ(dev->gpm_sample().status().code(), StatusCode::kResourceExhausted);
  auto s1 = dev->gpm_sample();
  std::this_thread::sleep_for(milliseconds(110));
  auto s2 = dev->gpm_sample();
  fake.Inject("nvmlGpmMetricsGet", NVML_ERROR_ARGUMENT_VERSION_MISMATCH, 1);
  auto r = nvml::GpmMetricsGet(*nvml, *s1, *s2, {2, 3});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].status.code(), StatusCode::kUnsupported);  // the failed call, reported per metric
  EXPECT_TRUE((*r)[1].status.ok());                            // the next call worked
  fake.Inject("nvmlGpmQueryDeviceSupport", NVML_ERROR_ARGUMENT_VERSION_MISMATCH, 1);
  EXPECT_FALSE(dev->gpm_supported());
}

TEST(GpmMetrics, a_missing_symbol_disables_only_its_call) {
  auto old = Nvml::Open(GPUWASM_FAKE_NVML_OLD);
  ASSERT_TRUE(old.ok()) << old.status();
  auto gpu = Device::ByIndex(*old, 1);
  auto mig = gpu->gpm_mig_sample(1);
  ASSERT_FALSE(mig.ok());
  EXPECT_EQ(mig.status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(mig.status().message(), "nvmlGpmMigSampleGet is not available in this NVML library");
  EXPECT_TRUE(gpu->gpm_sample().ok());  // everything else works
}

TEST(GpmMetricTable, lists_all_302_ids_with_units) {
  const auto& all = nvml::AllGpmMetrics();
  EXPECT_EQ(all.size(), 302u);
  EXPECT_EQ(static_cast<uint32_t>(nvml::GpmMetricId::kSM_OCCUPANCY), 3u);
  EXPECT_EQ(static_cast<uint32_t>(nvml::GpmMetricId::kNVLINK_L35_TX), 332u);
  EXPECT_STREQ(nvml::FindGpmMetric(20)->name, "PCIE_TX_PER_SEC");
  EXPECT_STREQ(nvml::FindGpmMetric(20)->unit, "MiB/s");
  EXPECT_STREQ(nvml::FindGpmMetric("nvlink_l35_tx")->unit, "bytes");
  EXPECT_EQ(nvml::FindGpmMetric(332)->id, 332u);
  EXPECT_EQ(nvml::FindGpmMetric(14), nullptr);  // an unused value
}

// A GpmSample is not thread-safe; two threads filling one at once are caught.
void FillConcurrently() {
  FakeNvml fake;
  fake.Delay("nvmlGpmSampleGet", 300);
  auto nvml = OpenFake();
  auto dev = Device::ByIndex(nvml, 0);
  auto s = GpmSample::Allocate(nvml);
  std::thread other([&] { (void)s->Fill(*dev); });
  std::this_thread::sleep_for(milliseconds(50));
  (void)s->Fill(*dev);
  other.join();
}

TEST(GpmSampleDeathTest, concurrent_use_is_caught) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(FillConcurrently(), "a GpmSample was used from two threads at once");
}

}  // namespace
}  // namespace gpuwasm::testing
