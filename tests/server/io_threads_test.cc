// IoThreads: a thread held by a long call hands its place in the loop to a spare, spares are
// parked and reused, and the number of threads stays within its bound.
#include "server/io_threads.h"

#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <chrono>
#include <future>
#include <optional>
#include <thread>

namespace gpuwasm::server {
namespace {
namespace net = boost::asio;
using std::chrono::milliseconds;
using std::chrono::seconds;

// A handler that holds its thread (IoThreads::Held) until released; `nested`: from inside a second
// hold of the same thread, which must leave it held.
struct Hold {
  std::promise<void> started, release;
  std::shared_future<void> released = release.get_future().share();
  void Post(net::io_context& io, bool nested = false) {
    // The handler keeps its own reference to the release: it may still be waking up when the
    // test, released, ends and destroys this Hold.
    net::post(io, [this, nested, released = released] {
      IoThreads::Held held;
      std::optional<IoThreads::Held> inner;
      if (nested) inner.emplace();
      started.set_value();
      released.wait_for(seconds(10));
    });
  }
};

// Whether a handler posted now runs within `within`.
bool Answers(net::io_context& io, milliseconds within) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> f = done->get_future();
  net::post(io, [done] { done->set_value(); });
  return f.wait_for(within) == std::future_status::ready;
}

TEST(IoThreads, a_held_thread_hands_its_place_to_a_spare_that_is_parked_and_reused) {
  net::io_context io;
  auto guard = net::make_work_guard(io);
  IoThreads threads(io, 1, 4);
  EXPECT_EQ(threads.threads(), 1u);
  { IoThreads::Held not_an_io_thread; }  // on a thread of no IoThreads it does nothing
  Hold first;
  first.Post(io);
  first.started.get_future().wait();
  // The only serving thread is held: another handler runs all the same, on a spare.
  EXPECT_TRUE(Answers(io, seconds(2)));
  EXPECT_EQ(threads.handoffs(), 1u);
  EXPECT_EQ(threads.threads(), 2u);
  first.release.set_value();
  EXPECT_TRUE(Answers(io, seconds(2)));
  std::this_thread::sleep_for(milliseconds(50));  // the first parks once its handler returns
  // A second hold: the parked thread serves again, no new one is made.
  Hold second;
  second.Post(io, /*nested=*/true);
  second.started.get_future().wait();
  EXPECT_TRUE(Answers(io, seconds(2)));
  EXPECT_EQ(threads.handoffs(), 2u);
  EXPECT_EQ(threads.threads(), 2u);
  second.release.set_value();
  EXPECT_TRUE(Answers(io, seconds(2)));
}

TEST(IoThreads, threads_stay_within_serving_plus_max_held) {
  net::io_context io;
  auto guard = net::make_work_guard(io);
  IoThreads threads(io, 1, 1);
  Hold a, b;
  a.Post(io);
  a.started.get_future().wait();
  b.Post(io);  // runs on the spare, which is held in turn
  b.started.get_future().wait();
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(threads.threads(), 2u);
  EXPECT_FALSE(Answers(io, milliseconds(100)));  // every thread is held: nothing serves
  a.release.set_value();
  EXPECT_TRUE(Answers(io, seconds(2)));
  b.release.set_value();
  EXPECT_TRUE(Answers(io, seconds(2)));
  EXPECT_EQ(threads.threads(), 2u);
}

}  // namespace
}  // namespace gpuwasm::server
