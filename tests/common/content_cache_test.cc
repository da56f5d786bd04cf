#include "common/content_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace gpuwasm {
namespace {

using Cache = ContentCache<const std::string>;
using Value = Cache::Value;

Result<Value> Make(const std::string& text, std::atomic<int>* calls) {
  calls->fetch_add(1);
  return std::make_shared<const std::string>(text);
}

TEST(ContentCache, while_held_a_value_is_made_once_and_made_again_after_release) {
  Cache cache;
  std::atomic<int> calls{0};
  auto a = cache.Get("k", [&] { return Make("one", &calls); });
  ASSERT_TRUE(a.ok());
  auto b = cache.Get("k", [&] { return Make("two", &calls); });
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(cache.Live(), 1u);
  a = Status::Cancelled("released");
  b = Status::Cancelled("released");
  EXPECT_EQ(cache.Find("k"), nullptr);
  EXPECT_EQ(cache.Live(), 0u);
  auto c = cache.Get("k", [&] { return Make("three", &calls); });
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(**c, "three");
  EXPECT_EQ(calls.load(), 2);
}

TEST(ContentCache, concurrent_gets_of_one_key_share_the_one_make_in_flight) {
  Cache cache;
  std::atomic<int> calls{0};
  std::vector<Value> got(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back([&, i] {
      auto v = cache.Get("k", [&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        return Make("value", &calls);
      });
      if (v.ok()) got[i] = *v;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(calls.load(), 1);
  for (const Value& v : got) EXPECT_EQ(v.get(), got[0].get());
  ASSERT_NE(got[0], nullptr);
}

TEST(ContentCache, a_failed_make_is_shared_by_its_waiters_but_not_kept) {
  Cache cache;
  std::atomic<int> calls{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      auto v = cache.Get("k", [&]() -> Result<Value> {
        calls.fetch_add(1);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        return Status::InvalidArgument("bad input");
      });
      if (!v.ok() && v.status().message() == "bad input") failures.fetch_add(1);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 4);
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(cache.entries(), 0u);
  auto v = cache.Get("k", [&] { return Make("fixed", &calls); });
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(calls.load(), 2);
}

TEST(ContentCache, a_make_that_throws_leaves_no_key_in_flight) {
  Cache cache;
  std::atomic<int> calls{0};
  EXPECT_THROW((void)cache.Get("k", []() -> Result<Value> { throw std::runtime_error("boom"); }), std::runtime_error);
  auto v = cache.Get("k", [&] { return Make("after", &calls); });  // would wait forever if the key were in flight
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(**v, "after");
}

TEST(ContentCache, while_held_entries_of_released_values_are_swept) {
  Cache cache;
  std::atomic<int> calls{0};
  Value held = *cache.Get("held", [&] { return Make("kept", &calls); });
  for (int i = 0; i < 1000; ++i) {
    auto v = cache.Get("k" + std::to_string(i), [&] { return Make("x", &calls); });
    ASSERT_TRUE(v.ok());
  }
  EXPECT_EQ(calls.load(), 1001);
  EXPECT_LE(cache.entries(), 64u);  // the map never doubles past its first sweep point
  EXPECT_EQ(cache.Live(), 1u);
  EXPECT_EQ(cache.Find("held"), held);
}

TEST(ContentCache, recent_keeps_the_most_recently_used_up_to_its_capacity) {
  Cache cache(Cache::Keep::kRecent, 2);
  std::atomic<int> calls{0};
  ASSERT_TRUE(cache.Get("a", [&] { return Make("a", &calls); }).ok());
  ASSERT_TRUE(cache.Get("b", [&] { return Make("b", &calls); }).ok());
  ASSERT_NE(cache.Find("a"), nullptr);  // a is now the most recent
  ASSERT_TRUE(cache.Get("c", [&] { return Make("c", &calls); }).ok());
  EXPECT_EQ(cache.entries(), 2u);
  EXPECT_EQ(cache.Find("b"), nullptr);  // the least recently used went
  ASSERT_NE(cache.Find("a"), nullptr);  // held by the cache, though no caller holds it
  ASSERT_NE(cache.Find("c"), nullptr);
  EXPECT_EQ(calls.load(), 3);
}

TEST(ContentCache, erase_forgets_a_key_and_its_holders_keep_their_value) {
  for (Cache::Keep keep : {Cache::Keep::kWhileHeld, Cache::Keep::kRecent}) {
    Cache cache(keep, 4);
    std::atomic<int> calls{0};
    Value v = *cache.Get("k", [&] { return Make("old", &calls); });
    cache.Erase("k");
    cache.Erase("never there");
    EXPECT_EQ(cache.Find("k"), nullptr);
    EXPECT_EQ(*v, "old");
    Value w = *cache.Get("k", [&] { return Make("new", &calls); });
    EXPECT_EQ(*w, "new");
    EXPECT_EQ(calls.load(), 2);
  }
}

}  // namespace
}  // namespace gpuwasm
