// GpmMonitor against the fake NVML: targets, gauges in Prometheus text with gpu/uuid/gpu_instance
// labels (ours and DCGM's names), errors marking metrics unavailable and logged once, recovery.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "fake_control.h"
#include "telemetry/gpm_monitor.h"
#include "telemetry/registry.h"

namespace gpuwasm::testing {
namespace {

using std::chrono::milliseconds;
using telemetry::GpmMonitor;
using telemetry::GpmMonitorOptions;
using telemetry::MetricRegistry;

struct Fixture {
  FakeNvml fake;
  std::shared_ptr<nvml::Nvml> nvml = *nvml::Nvml::Open(GPUWASM_FAKE_NVML);
  MetricRegistry registry;
  std::vector<std::string> logs;
  GpmMonitorOptions Options(bool background = false) {
    GpmMonitorOptions o;
    o.interval = milliseconds(120);
    o.background = background;
    o.log = [this](const std::string& m) { logs.push_back(m); };
    return o;
  }
};

const telemetry::Labels kGpu0 = {{"gpu", "0"}, {"uuid", "GPU-fake-h200-0000"}, {"gpu_instance", ""}};

TEST(GpmMetrics, samples_print_as_the_shortest_decimal_that_reads_back) {
  using telemetry::MetricRegistry;
  EXPECT_EQ(MetricRegistry::FormatSample(0.42), "0.42");
  EXPECT_EQ(MetricRegistry::FormatSample(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(MetricRegistry::FormatSample(3), "3");
  EXPECT_EQ(MetricRegistry::FormatSample(-2.5), "-2.5");
  EXPECT_EQ(MetricRegistry::FormatSample(1e-7), "1e-07");
  EXPECT_EQ(MetricRegistry::FormatSample(1e300), "1e+300");
  EXPECT_EQ(MetricRegistry::FormatSample(std::nan("")), "NaN");
  EXPECT_EQ(MetricRegistry::FormatSample(-INFINITY), "-Inf");
  for (double v : {0.001, 123.456, 1.0 / 3, 6.02214076e23, 5e-324}) {
    EXPECT_EQ(std::strtod(MetricRegistry::FormatSample(v).c_str(), nullptr), v) << v;
  }
}

TEST(GpmMonitor, interval_under_100ms_is_refused) {
  Fixture f;
  GpmMonitorOptions o = f.Options();
  o.interval = milliseconds(99);
  auto m = GpmMonitor::Start(f.nvml, f.registry, o);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            "GPM interval of 99 ms is too short: it must be at least 100 ms (NVML refreshes every 100 ms)");
  o.interval = milliseconds(100);
  EXPECT_TRUE(GpmMonitor::Start(f.nvml, f.registry, o).ok());
  o.interval = milliseconds(500);
  o.metrics = {2, 14};
  EXPECT_EQ(GpmMonitor::Start(f.nvml, f.registry, o).status().message(), "unknown GPM metric id 14");
}

TEST(GpmMonitor, publishes_gauges_for_gpus_and_mig_instances) {
  Fixture f;
  auto m = GpmMonitor::Start(f.nvml, f.registry, f.Options());
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ((*m)->targets().size(), 4u);  // GPU 0, GPU 1, its GPU instances 1 and 2; GPU 2 has no GPM
  EXPECT_EQ((*m)->targets()[2].gpu_instance, 1u);
  ASSERT_EQ(f.logs.size(), 1u);
  EXPECT_EQ(f.logs[0], "GPU 2 (NVIDIA A100-SXM4-40GB) does not support GPM");
  EXPECT_TRUE(std::isnan(f.registry.Get("gpuwasm_gpm_sm_util", kGpu0)));  // one sample: nothing yet
  std::this_thread::sleep_for(milliseconds(130));
  auto results = (*m)->Round();
  ASSERT_EQ(results.size(), 4u);
  EXPECT_DOUBLE_EQ(f.registry.Get("gpuwasm_gpm_sm_util", kGpu0), 42.0);
  EXPECT_DOUBLE_EQ(f.registry.Get("DCGM_FI_PROF_SM_ACTIVE", kGpu0), 0.42);
  EXPECT_DOUBLE_EQ(f.registry.Get("DCGM_FI_PROF_PCIE_TX_BYTES", kGpu0), 1000.0 * 1048576);
  EXPECT_DOUBLE_EQ(f.registry.Get("gpuwasm_gpm_up", kGpu0), 1.0);
  telemetry::Labels gi2 = {{"gpu", "1"}, {"uuid", "GPU-fake-h200-0001"}, {"gpu_instance", "2"}};
  EXPECT_DOUBLE_EQ(f.registry.Get("gpuwasm_gpm_sm_occupancy", gi2), 30.5 * 2 / 3);
  std::string text = f.registry.RenderPrometheus();
  EXPECT_NE(text.find("# TYPE DCGM_FI_PROF_DRAM_ACTIVE gauge\n"), std::string::npos);
  EXPECT_NE(text.find("gpuwasm_gpm_sm_util{gpu=\"0\",uuid=\"GPU-fake-h200-0000\",gpu_instance=\"\"} 42\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# HELP gpuwasm_gpm_sm_util NVML GPM SM_UTIL (%)\n"), std::string::npos);
}

TEST(GpmMonitor, a_lost_gpu_is_marked_logged_once_and_recovers) {
  Fixture f;
  auto m = GpmMonitor::Start(f.nvml, f.registry, f.Options());
  ASSERT_TRUE(m.ok());
  std::this_thread::sleep_for(milliseconds(130));
  (*m)->Round();
  ASSERT_DOUBLE_EQ(f.registry.Get("gpuwasm_gpm_sm_util", kGpu0), 42.0);
  f.fake.Inject("nvmlGpmSampleGet", NVML_ERROR_GPU_IS_LOST);
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(milliseconds(130));
    auto r = (*m)->Round();
    EXPECT_EQ(r[0].status.code(), StatusCode::kDeviceFault);
  }
  EXPECT_DOUBLE_EQ(f.registry.Get("gpuwasm_gpm_up", kGpu0), 0.0);
  EXPECT_TRUE(std::isnan(f.registry.Get("gpuwasm_gpm_sm_util", kGpu0)));  // unavailable, not stale
  int lost_logs = 0;
  for (const std::string& l : f.logs) lost_logs += l == "GPU 0: nvmlGpmSampleGet failed: NVML_ERROR_GPU_IS_LOST (15)";
  EXPECT_EQ(lost_logs, 1);  // logged once, although every round and target failed
  f.fake.Reset();
  for (int i = 0; i < 2; ++i) {
    std::this_thread::sleep_for(milliseconds(130));
    (*m)->Round();
  }
  EXPECT_DOUBLE_EQ(f.registry.Get("gpuwasm_gpm_up", kGpu0), 1.0);
  EXPECT_DOUBLE_EQ(f.registry.Get("gpuwasm_gpm_sm_util", kGpu0), 42.0);
}

TEST(GpmMonitor, unavailable_metrics_are_not_published) {
  Fixture f;
  GpmMonitorOptions o = f.Options();
  o.metrics = {2, 51};  // 51 comes back NaN
  auto m = GpmMonitor::Start(f.nvml, f.registry, o);
  std::this_thread::sleep_for(milliseconds(130));
  (*m)->Round();
  EXPECT_DOUBLE_EQ(f.registry.Get("gpuwasm_gpm_sm_util", kGpu0), 42.0);
  EXPECT_TRUE(std::isnan(f.registry.Get("gpuwasm_gpm_nvofa_1_util", kGpu0)));
  bool logged = false;
  for (const std::string& l : f.logs) logged |= l.find("metric OFA1 unavailable") != std::string::npos;
  EXPECT_TRUE(logged);
}

TEST(GpmMonitor, background_thread_samples_every_interval) {
  Fixture f;
  auto m = GpmMonitor::Start(f.nvml, f.registry, f.Options(/*background=*/true));
  ASSERT_TRUE(m.ok());
  std::this_thread::sleep_for(milliseconds(450));
  EXPECT_GE((*m)->rounds(), 3u);
  EXPECT_DOUBLE_EQ(f.registry.Get("gpuwasm_gpm_fp32_util", kGpu0), 20.0);
  m->reset();                          // stops and joins the thread
  EXPECT_EQ(f.fake.LiveSamples(), 0);  // every sample freed
}

}  // namespace
}  // namespace gpuwasm::testing
