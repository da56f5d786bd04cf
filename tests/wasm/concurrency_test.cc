// Deadlines, interruption, concurrent instances and instance churn.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>

#include "test_support.h"
#include "wasm/watchdog.h"

namespace gpuwasm::testing {
namespace {

using std::chrono::milliseconds;

TEST(Deadline, infinite_loop_stops_within_deadline_plus_50ms) {
  auto module = CompileOrDie("traps/traps.wasm");
  ASSERT_NE(module, nullptr);
  for (const char* name : {"spin", "spin_counting"}) {
    auto t0 = wasm::Clock::now();
    GuestRun r = RunExport(module, name, {}, {}, milliseconds(100));
    auto took = std::chrono::duration_cast<milliseconds>(wasm::Clock::now() - t0);
    ASSERT_TRUE(r.outcome.ok()) << r.outcome.status();
    EXPECT_EQ(r.outcome->trap, wasm::TrapKind::kDeadlineExceeded) << name;
    EXPECT_GE(took.count(), 100) << name;
    EXPECT_LE(took.count(), 150) << name;
  }
  EXPECT_EQ(wasm::Watchdog::Get().armed(), 0u);
}

// The watchdog thread is woken only by a timer earlier than it was going to wake for anyway; a
// later one, armed while it sleeps towards a timer since disarmed, still fires on time.
TEST(Deadline, a_timer_armed_while_the_watchdog_sleeps_towards_a_disarmed_one_fires_on_time) {
  wasm::Watchdog& w = wasm::Watchdog::Get();
  std::atomic<uint32_t> early{0}, later{0}, sooner{0};
  auto t0 = wasm::Clock::now();
  w.Disarm(w.Arm(t0 + milliseconds(100), &early, 1));  // the thread now sleeps until t0 + 100 ms
  w.Arm(t0 + milliseconds(250), &later, 1);            // later than that: no wake-up needed
  auto far = w.Arm(t0 + std::chrono::seconds(60), &early, 1);
  w.Arm(t0 + milliseconds(50), &sooner, 1);  // earlier than any: wakes it
  while (sooner.load() == 0 && wasm::Clock::now() - t0 < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_EQ(sooner.load(), 1u);
  EXPECT_LT(wasm::Clock::now() - t0, milliseconds(2000));
  while (later.load() == 0 && wasm::Clock::now() - t0 < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  auto took = wasm::Clock::now() - t0;
  EXPECT_EQ(later.load(), 1u);
  EXPECT_GE(took, milliseconds(250));
  EXPECT_LT(took, milliseconds(2000));  // not at the 60 s timer: the thread re-read the earliest
  EXPECT_EQ(early.load(), 0u);
  w.Disarm(far);
  EXPECT_EQ(w.armed(), 0u);
}

TEST(Deadline, already_passed_deadline_traps_without_running) {
  auto module = CompileOrDie("traps/traps.wasm");
  host::HostEnv env({});
  auto inst = wasm::Instance::Create(module, &env, {});
  ASSERT_TRUE(inst.ok());
  auto out = (*inst)->Call("ok", wasm::Clock::now() - milliseconds(1));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->trap, wasm::TrapKind::kDeadlineExceeded);
}

TEST(Deadline, finished_calls_are_not_affected_by_their_deadline) {
  auto module = CompileOrDie("traps/traps.wasm");
  host::HostEnv env({});
  auto inst = wasm::Instance::Create(module, &env, {});
  ASSERT_TRUE(inst.ok());
  for (int i = 0; i < 3; ++i) {
    auto out = (*inst)->Call("ok", wasm::Clock::now() + milliseconds(20));
    ASSERT_TRUE(out.ok());
    EXPECT_TRUE(out->ok());
    EXPECT_EQ(out->exit_code, 42);
  }
  EXPECT_EQ(wasm::Watchdog::Get().armed(), 0u);
}

TEST(Interrupt, another_thread_can_stop_a_running_guest) {
  auto module = CompileOrDie("traps/traps.wasm");
  host::HostEnv env({});
  auto inst = wasm::Instance::Create(module, &env, {});
  ASSERT_TRUE(inst.ok());
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(50));
    (*inst)->Interrupt();
  });
  auto out = (*inst)->Call("spin");
  stopper.join();
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->trap, wasm::TrapKind::kInterrupted);
  EXPECT_TRUE((*inst)->poisoned());
}

TEST(Concurrency, eight_threads_running_instances_get_correct_results) {
  auto module = CompileOrDie("corpus/compute.wasm");
  ASSERT_NE(module, nullptr);
  std::string bytes = ReadFile(ModulePath("corpus/compute.wasm"));
  const std::vector<std::string> exports = {"test_sieve", "test_sort", "test_matmul_f32", "test_int64_mix"};
  std::map<std::string, uint32_t> expected;
  for (const auto& e : exports) expected[e] = InterpRun(bytes, e).value;
  std::atomic<int> wrong{0}, done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 12; ++i) {
        const std::string& name = exports[(t + i) % exports.size()];
        GuestRun r = RunExport(module, name);
        if (!r.outcome.ok() || !r.outcome->ok() || static_cast<uint32_t>(r.outcome->exit_code) != expected[name]) {
          ++wrong;
        }
        ++done;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(done.load(), 96);
  EXPECT_EQ(wrong.load(), 0);
}

TEST(Concurrency, traps_in_one_thread_do_not_disturb_another) {
  auto module = CompileOrDie("traps/traps.wasm");
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0}, ok_runs{0};
  std::thread good([&] {
    while (!stop) {
      GuestRun r = RunExport(module, "ok");
      if (!r.outcome.ok() || r.outcome->exit_code != 42) ++bad;
      ++ok_runs;
    }
  });
  for (int i = 0; i < 200; ++i) {
    GuestRun r = RunExport(module, i % 2 ? "oob_load" : "stack_exhaustion");
    if (!r.outcome.ok() || r.outcome->ok()) ++bad;
  }
  stop = true;
  good.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(ok_runs.load(), 0);
}

TEST(Churn, twenty_thousand_instances_leave_mapped_memory_flat) {
  auto module = CompileOrDie("corpus/memory.wasm");
  ASSERT_NE(module, nullptr);
  host::HostEnv env({});
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(wasm::Instance::Create(module, &env, {}).ok());  // warm-up
  uint64_t before = VirtualMemoryBytes();
  for (int i = 0; i < 20000; ++i) {
    auto inst = wasm::Instance::Create(module, &env, {});
    ASSERT_TRUE(inst.ok()) << i << ": " << inst.status();
  }
  uint64_t after = VirtualMemoryBytes();
  // Each instance reserves 8 GiB: a single leaked reservation would show.
  EXPECT_LT(after, before + (64ull << 20)) << "VmSize grew from " << before << " to " << after;
}

}  // namespace
}  // namespace gpuwasm::testing
