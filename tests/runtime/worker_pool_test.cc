// WorkerPool: round-robin across keys and the per-key running cap.
#include "runtime/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace gpuwasm::runtime {
namespace {

TEST(WorkerPool, keys_are_served_round_robin) {
  WorkerPool pool(1, 1);
  std::promise<void> gate;
  std::shared_future<void> open = gate.get_future().share();
  std::mutex mu;
  std::vector<std::string> order;
  pool.Submit("a", [open] { open.wait(); });  // holds the only thread while the queues fill
  auto record = [&](std::string name) {
    return [&, name] {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(name);
    };
  };
  pool.Submit("a", record("a1"));
  pool.Submit("a", record("a2"));
  pool.Submit("a", record("a3"));
  pool.Submit("b", record("b1"));
  pool.Submit("c", record("c1"));
  gate.set_value();
  pool.Stop();  // runs what is queued, then joins
  EXPECT_EQ(order, (std::vector<std::string>{"b1", "c1", "a1", "a2", "a3"}));
}

TEST(WorkerPool, a_key_never_holds_more_than_its_share) {
  WorkerPool pool(3, 2);
  std::atomic<int> running_a{0}, max_a{0}, done_a{0};
  std::promise<int> b_saw_done;
  for (int i = 0; i < 6; ++i) {
    pool.Submit("a", [&] {
      int now = ++running_a;
      int seen = max_a.load();
      while (now > seen && !max_a.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      --running_a;
      ++done_a;
    });
  }
  pool.Submit("b", [&] { b_saw_done.set_value(done_a.load()); });
  // The third thread was free for b: it ran before any of a's tasks finished.
  EXPECT_EQ(b_saw_done.get_future().get(), 0);
  pool.Stop();
  EXPECT_EQ(max_a.load(), 2);
  EXPECT_EQ(done_a.load(), 6);
}

TEST(WorkerPool, submit_after_stop_is_refused) {
  WorkerPool pool(2, 2);
  pool.Stop();
  EXPECT_FALSE(pool.Submit("a", [] {}));
}

// Starters (work that ends on another thread and keeps its slot until Leave): one queued behind a
// full pool is started by the thread whose Leave frees the slot, on that thread, without blocking;
// one that cannot start so is started by a pool thread, still in that slot; keys stay round-robin.
TEST(WorkerPool, a_queued_starter_runs_in_the_slot_its_predecessor_frees) {
  WorkerPool pool(1, 1);
  ASSERT_TRUE(pool.TryEnter("a"));  // the only slot, as a running invocation holds it
  EXPECT_FALSE(pool.TryEnter("b"));
  std::mutex mu;
  std::vector<std::string> log;
  auto note = [&](std::string what) {
    std::lock_guard<std::mutex> lock(mu);
    log.push_back(std::move(what));
  };
  const std::thread::id here = std::this_thread::get_id();
  std::promise<void> blocking_started;
  pool.SubmitStarter("a", [&](bool may_block) {
    note(std::string("a2 ") + (may_block ? "blocking" : "inline") +
         (std::this_thread::get_id() == here ? " here" : " pool"));
    return true;  // started: its slot stays taken
  });
  pool.SubmitStarter("b", [&](bool may_block) {
    note(std::string("b1 ") + (may_block ? "blocking" : "inline") +
         (std::this_thread::get_id() == here ? " here" : " pool"));
    if (!may_block) return false;  // e.g. its worker must be started first
    blocking_started.set_value();
    return true;
  });
  // a's slot frees: b (round-robin after a) is taken here, cannot start without blocking, and a
  // pool thread starts it in the same slot, so a2 still waits.
  pool.Leave("a");
  ASSERT_EQ(blocking_started.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << "b was not started by a pool thread";
  EXPECT_FALSE(pool.TryEnter("c")) << "the handed-off starter's slot was given back";
  pool.Leave("b");  // b's work ends: a2 starts here
  pool.Leave("a");  // a2's work ends
  EXPECT_TRUE(pool.TryEnter("c"));
  pool.Leave("c");
  pool.Stop();
  EXPECT_EQ(log, (std::vector<std::string>{"b1 inline here", "b1 blocking pool", "a2 inline here"}));
}

}  // namespace
}  // namespace gpuwasm::runtime
