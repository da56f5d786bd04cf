#include "device/allocation_table.h"

#include <gtest/gtest.h>

namespace gpuwasm::device {
namespace {

TEST(AllocationTable, charges_within_the_quota_and_gives_back_on_remove) {
  AllocationTable<bool> t(1000);
  ASSERT_TRUE(t.Charge(600).ok());
  t.Insert(0x1000, 600, /*payload=*/true);
  Status over = t.Charge(500, /*beside=*/0, ", 7 of them held by modules");
  EXPECT_EQ(over.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(over.message().find("quota of 1000 bytes (600 in use, 7 of them held by modules)"), std::string::npos)
      << over.message();
  EXPECT_EQ(t.Charge(300, /*beside=*/200).code(), StatusCode::kResourceExhausted);
  ASSERT_TRUE(t.Charge(400).ok());  // exactly to the quota
  t.Uncharge(400);
  Result<AllocationTable<bool>::Entry> e = t.Remove(0x1000);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->size, 600u);
  EXPECT_TRUE(e->payload);
  EXPECT_EQ(t.used(), 0u);
  Result<AllocationTable<bool>::Entry> again = t.Remove(0x1000, " of the window");
  EXPECT_EQ(again.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(again.status().message().find("not a live allocation of the window"), std::string::npos);
}

TEST(AllocationTable, a_charge_larger_than_the_quota_does_not_wrap) {
  AllocationTable<bool> t(100);
  t.Hold(50);  // memory a device could not give back: charged whatever the quota says
  EXPECT_EQ(t.Charge(UINT64_MAX).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(t.Charge(51).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(t.used(), 50u);
  t.Uncharge(80);  // never below zero
  EXPECT_EQ(t.used(), 0u);
}

TEST(AllocationTable, remove_and_erase_take_only_what_accept_allows) {
  AllocationTable<bool> t(1 << 20);
  ASSERT_TRUE(t.Charge(100).ok());
  t.Insert(0x100, 100, /*payload=*/false);
  auto in_window = [](bool window) { return window; };
  EXPECT_FALSE(t.Remove(0x100, in_window).ok());
  EXPECT_FALSE(t.Erase(0x100, in_window));
  EXPECT_FALSE(t.Erase(0x200, [](bool) { return true; }));
  EXPECT_EQ(t.used(), 100u);
  EXPECT_TRUE(t.Erase(0x100, [](bool window) { return !window; }));
  EXPECT_EQ(t.used(), 0u);
  EXPECT_TRUE(t.entries().empty());
}

TEST(AllocationTable, find_and_overlaps_see_whole_ranges_only) {
  AllocationTable<int> t(1 << 20);
  t.Insert(0x1000, 0x100, 1);
  t.Insert(0x2000, 0x100, 2);
  ASSERT_NE(t.Find(0x1000, 0x100), nullptr);
  EXPECT_EQ(t.Find(0x1080, 0x80)->second.payload, 1);
  EXPECT_EQ(t.Find(0x1080, 0x81), nullptr);  // runs past the end
  EXPECT_EQ(t.Find(0x0fff, 1), nullptr);
  EXPECT_EQ(t.Find(0x1800, 1), nullptr);
  EXPECT_TRUE(t.Overlaps(0x10ff, 1));
  EXPECT_TRUE(t.Overlaps(0x1f00, 0x101));
  EXPECT_FALSE(t.Overlaps(0x1100, 0xf00));
  t.Clear();
  EXPECT_EQ(t.Find(0x1000, 1), nullptr);
}

}  // namespace
}  // namespace gpuwasm::device
