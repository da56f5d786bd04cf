// Many instances at once: exact per-instance counters, and snapshots read from another thread
// while a guest runs are consistent (monotonic counters never decrease, no torn values).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "host_harness.h"

namespace gpuwasm::testing {
namespace {

std::string Count(int32_t n) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &n, 4);
  return s;
}

TEST(Concurrency, sixteen_instances_launch_with_exact_counters) {
  auto shared = std::make_shared<host::TenantContext>(*Cpu()->CreateContext());
  std::vector<std::unique_ptr<GuestInstance>> guests;
  for (int i = 0; i < 16; ++i)
    guests.push_back(std::make_unique<GuestInstance>("abi.wasm", host::WasiCudaOptions{}, Count(5 + i), shared));
  std::vector<int32_t> results(16, -1);
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&, i] { results[i] = guests[i]->Call("test_launch_many"); });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(results[i], 0) << "instance " << i;
    host::InstanceMetricsSnapshot m = guests[i]->Metrics();
    EXPECT_EQ(m.kernels_launched, static_cast<uint64_t>(5 + i)) << i;
    EXPECT_EQ(m.yield_count, static_cast<uint32_t>(5 + i)) << i;
    EXPECT_EQ(m.device_bytes_allocated, 4096u) << i;
    EXPECT_EQ(m.bytes_pinned, PtxBytes("vector_add")) << i;
    EXPECT_EQ(m.back_pressure_rejections, 0u) << i;
  }
  EXPECT_EQ(shared->compiles(), 1u);  // one PTX text, one compile for all 16
  guests.clear();
  EXPECT_EQ(shared->context().allocated_bytes(), 0u);
}

TEST(Concurrency, snapshot_from_another_thread_is_consistent) {
  GuestInstance g("abi.wasm", {}, Count(300));
  const uint64_t pinned = PtxBytes("vector_add");
  std::atomic<bool> done{false};
  std::atomic<int> samples{0}, bad{0};
  std::thread watcher([&] {
    host::InstanceMetricsSnapshot last;
    while (!done.load()) {
      host::InstanceMetricsSnapshot s = g.env->cuda->metrics_snapshot_with_scheduler(g.env->scheduler);
      if (s.kernels_launched < last.kernels_launched || s.yield_count < last.yield_count ||
          s.back_pressure_rejections < last.back_pressure_rejections) {
        ++bad;
      }
      if (s.device_bytes_allocated != 0 && s.device_bytes_allocated != 4096) ++bad;  // only whole states
      if (s.bytes_pinned != 0 && s.bytes_pinned != pinned) ++bad;
      if (s.kernels_launched > 300 || s.yield_count > 300) ++bad;
      last = s;
      ++samples;
    }
  });
  EXPECT_EQ(g.Call("test_launch_many"), 0);
  done = true;
  watcher.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(samples.load(), 10);
  EXPECT_EQ(g.Metrics().kernels_launched, 300u);
}

}  // namespace
}  // namespace gpuwasm::testing
