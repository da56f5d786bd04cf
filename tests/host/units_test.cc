// The host interface's building blocks on their own: handle tables, admission, scheduler,
// the shared module cache.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "host/admission.h"
#include "host/handles.h"
#include "host/kernel_registry.h"
#include "host/scheduler.h"
#include "host_harness.h"

namespace gpuwasm::host {
namespace {

using std::chrono::milliseconds;

TEST(HandleTable, freed_and_foreign_handles_are_refused) {
  HandleTable<int> a(1, 1234), b(1, 99), other_type(2, 1234);
  int32_t h = a.Add(7);
  ASSERT_GT(h, 0);
  EXPECT_EQ(*a.Get(h), 7);
  EXPECT_EQ(other_type.Get(h), nullptr);  // a handle of another kind
  EXPECT_TRUE(a.Remove(h));
  EXPECT_EQ(a.Get(h), nullptr);  // freed
  EXPECT_FALSE(a.Remove(h));
  int32_t h2 = a.Add(8);  // same slot, new generation
  EXPECT_NE(h2, h);
  EXPECT_EQ(a.Get(h), nullptr);
  EXPECT_EQ(*a.Get(h2), 8);
  EXPECT_EQ(a.Get(0), nullptr);
  EXPECT_EQ(a.Get(-5), nullptr);
  EXPECT_EQ(a.Get(h2 ^ (1 << 16)), nullptr);           // right slot, another generation
  EXPECT_EQ(a.Get(h2 ^ (1 << 29)), nullptr);           // right slot and generation, another type tag
  EXPECT_EQ(a.Get(h2 & ~0xffff), nullptr);             // slot index 0 (indices start at 1)
  EXPECT_EQ(a.Get((h2 & ~0xffff) | 0xffff), nullptr);  // past the end of the table
  EXPECT_EQ(a.Get(static_cast<int32_t>(static_cast<uint32_t>(h2) | 0x80000000u)), nullptr);  // negative
  int32_t hb = b.Add(1);
  EXPECT_EQ(a.Get(hb), nullptr);  // another instance's table: generations differ
  EXPECT_EQ(a.size(), 1u);
}

TEST(LaunchAdmission, permits_release_exactly_once) {
  auto adm = LaunchAdmission::Create(2, milliseconds(20));
  LaunchPermit p1, p2, p3;
  EXPECT_EQ(adm->Acquire(std::nullopt, &p1), LaunchAdmission::Outcome::kAdmitted);
  EXPECT_EQ(adm->Acquire(std::nullopt, &p2), LaunchAdmission::Outcome::kAdmitted);
  EXPECT_EQ(adm->Acquire(std::nullopt, &p3), LaunchAdmission::Outcome::kBusy);
  EXPECT_EQ(adm->rejections(), 1u);
  EXPECT_EQ(adm->inflight(), 2u);
  p1.Release();
  p1.Release();  // idempotent
  EXPECT_EQ(adm->inflight(), 1u);
  { LaunchPermit moved = std::move(p2); }  // released by the destructor of the moved-to permit
  EXPECT_EQ(adm->inflight(), 0u);
}

TEST(LaunchAdmission, waits_for_a_slot_released_by_another_thread) {
  auto adm = LaunchAdmission::Create(1, milliseconds(2000));
  LaunchPermit held, next;
  ASSERT_EQ(adm->Acquire(std::nullopt, &held), LaunchAdmission::Outcome::kAdmitted);
  std::thread releaser([&] {
    std::this_thread::sleep_for(milliseconds(50));
    held.Release();
  });
  EXPECT_EQ(adm->Acquire(std::nullopt, &next), LaunchAdmission::Outcome::kAdmitted);
  releaser.join();
  EXPECT_EQ(adm->rejections(), 0u);
}

// Acquirers on several threads against a device thread releasing slots in order: the cap is
// never exceeded, every launch gets a slot (the wait is long), and nothing is left taken.
TEST(LaunchAdmission, cap_holds_under_contention_with_a_releasing_thread) {
  constexpr uint32_t kMax = 3;
  constexpr int kThreads = 4, kEach = 2000;
  auto adm = LaunchAdmission::Create(kMax, milliseconds(10'000));
  std::mutex mu;
  std::condition_variable cv;
  std::deque<LaunchPermit> queue;  // the "device": completes launches in order
  bool done = false;
  std::atomic<uint32_t> held{0}, worst{0};
  std::atomic<int> refused{0};
  std::thread device([&] {
    for (;;) {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return done || !queue.empty(); });
      if (queue.empty()) return;
      LaunchPermit t = std::move(queue.front());
      queue.pop_front();
      lock.unlock();
      held.fetch_sub(1);
      t.Release();
    }
  });
  std::vector<std::thread> guests;
  for (int g = 0; g < kThreads; ++g) {
    guests.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        LaunchPermit t;
        if (adm->Acquire(std::nullopt, &t) != LaunchAdmission::Outcome::kAdmitted) {
          ++refused;
          continue;
        }
        uint32_t now = held.fetch_add(1) + 1;
        for (uint32_t w = worst.load(); now > w && !worst.compare_exchange_weak(w, now);) {
        }
        std::lock_guard<std::mutex> lock(mu);
        queue.push_back(std::move(t));
        cv.notify_one();
      }
    });
  }
  for (auto& t : guests) t.join();
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_one();
  device.join();
  EXPECT_EQ(refused.load(), 0);
  EXPECT_LE(worst.load(), kMax);
  EXPECT_EQ(adm->inflight(), 0u);
  EXPECT_EQ(adm->rejections(), 0u);
}

TEST(LaunchAdmission, a_completion_owns_its_permit_and_dropping_it_gives_the_slot_back) {
  auto adm = LaunchAdmission::Create(1, milliseconds(10));
  LaunchPermit p;
  ASSERT_EQ(adm->Acquire(std::nullopt, &p), LaunchAdmission::Outcome::kAdmitted);
  int calls = 0;
  device::Completion done = [permit = std::move(p), &calls](const Status&) mutable {
    ++calls;
    permit.Release();
  };
  device::Completion moved = std::move(done);
  EXPECT_FALSE(static_cast<bool>(done));
  EXPECT_EQ(adm->inflight(), 1u);
  moved(Status::Ok());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(adm->inflight(), 0u);
  // A device that drops a launch without calling its completion still gives the slot back.
  ASSERT_EQ(adm->Acquire(std::nullopt, &p), LaunchAdmission::Outcome::kAdmitted);
  {
    device::Completion dropped = [permit = std::move(p)](const Status&) mutable { permit.Release(); };
    EXPECT_EQ(adm->inflight(), 1u);
  }
  EXPECT_EQ(adm->inflight(), 0u);
  // Callables larger than the inline room go to the heap and behave the same.
  ASSERT_EQ(adm->Acquire(std::nullopt, &p), LaunchAdmission::Outcome::kAdmitted);
  {
    std::array<uint64_t, 8> big{};
    device::Completion heap = [permit = std::move(p), big](const Status&) mutable { permit.Release(); };
    device::Completion again = std::move(heap);
    EXPECT_EQ(adm->inflight(), 1u);
  }
  EXPECT_EQ(adm->inflight(), 0u);
}

TEST(LaunchAdmission, passed_deadline_is_refused_even_with_free_slots) {
  auto adm = LaunchAdmission::Create(4, milliseconds(1000));
  LaunchPermit p;
  EXPECT_EQ(adm->Acquire(std::chrono::steady_clock::now() - milliseconds(1), &p), LaunchAdmission::Outcome::kDeadline);
  EXPECT_EQ(adm->rejections(), 1u);
  EXPECT_FALSE(p.valid());
}

TEST(LaunchAdmission, a_tripped_flag_stands_for_the_clock_and_is_set_by_a_wait_that_reaches_the_deadline) {
  auto adm = LaunchAdmission::Create(1, milliseconds(10000));
  std::atomic<uint32_t> tripped{0};
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(100);
  LaunchPermit a, b;
  // Not tripped: admitted without reading the clock.
  ASSERT_EQ(adm->Acquire(deadline, &a, &tripped), LaunchAdmission::Outcome::kAdmitted);
  // Full: waits until the deadline (not the 10 s limit), refuses, and sets the flag itself.
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(adm->Acquire(deadline, &b, &tripped), LaunchAdmission::Outcome::kDeadline);
  EXPECT_GE(std::chrono::steady_clock::now(), deadline);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(5000));
  EXPECT_EQ(tripped.load(), 1u);
  a.Release();
  // A free slot, but the flag says the deadline passed: refused at once, counted.
  EXPECT_EQ(adm->Acquire(deadline, &b, &tripped), LaunchAdmission::Outcome::kDeadline);
  EXPECT_EQ(adm->rejections(), 2u);
  EXPECT_EQ(adm->inflight(), 0u);
  // The flag is what is asked: cleared, the same call is admitted (the clock is not read).
  tripped.store(0);
  EXPECT_EQ(adm->Acquire(deadline, &b, &tripped), LaunchAdmission::Outcome::kAdmitted);
  b.Release();
}

TEST(SchedulerContext, reports_deadline_states) {
  SchedulerContext none;
  EXPECT_EQ(none.Yield(), SchedulerContext::kContinue);
  EXPECT_EQ(none.DeadlineRemainingMs(), -1);
  auto now = std::chrono::steady_clock::now();
  SchedulerContext near(now + milliseconds(50), milliseconds(100));
  EXPECT_EQ(near.Yield(), SchedulerContext::kDeadlineNear);
  SchedulerContext passed(now - milliseconds(1));
  EXPECT_EQ(passed.Yield(), SchedulerContext::kDeadlinePassed);
  EXPECT_EQ(passed.DeadlineRemainingMs(), 0);
  SchedulerContext far(now + std::chrono::seconds(10));
  EXPECT_EQ(far.Yield(), SchedulerContext::kContinue);
  EXPECT_GT(far.DeadlineRemainingMs(), 9000);
  EXPECT_EQ(near.yield_count() + passed.yield_count() + far.yield_count(), 3u);
}

TEST(TenantContext, concurrent_loads_of_one_text_compile_once) {
  auto cache = std::make_shared<TenantContext>(*testing::Cpu()->CreateContext());
  std::string ptx = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n ret;\n}\n";
  std::vector<std::shared_ptr<const device::Module>> got(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) threads.emplace_back([&, i] { got[i] = *cache->Load(ptx); });
  for (auto& t : threads) t.join();
  for (int i = 1; i < 8; ++i) EXPECT_EQ(got[0].get(), got[i].get());
  EXPECT_EQ(cache->compiles(), 1u);
  EXPECT_FALSE(cache->Load("garbage").ok());
}

}  // namespace
}  // namespace gpuwasm::host
