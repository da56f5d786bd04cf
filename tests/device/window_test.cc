// The window contract (window_contract.h) on the test device: the CPU device, or cuda:0 on the GPU
// check (GPUWASM_TEST_DEVICE), where a store outside the window must not become a fault of the
// process and a kernel that never ends must stop at its abort word.
#include "device/window_ranges.h"
#include "kernel_harness.h"
#include "window_contract.h"

namespace gpuwasm::testing {
namespace {

std::shared_ptr<device::Device> WindowDevice() {
  auto d = KernelHarness::SharedTestDevice();
  return d->info().instance_windows ? d : nullptr;
}

TEST(WindowRanges, first_fit_and_freed_ranges_merge_with_both_neighbours) {
  device::WindowRanges r(100);
  EXPECT_EQ(*r.Take(30, 30), 0u);
  EXPECT_EQ(*r.Take(30, 30), 30u);
  EXPECT_EQ(*r.Take(30, 30), 60u);
  EXPECT_EQ(r.Take(30, 25).status().message(),
            "no free range of 25 bytes left in the instance's address window of 100 bytes");
  EXPECT_TRUE(r.Taken(30));
  r.Give(0);
  r.Give(60);
  EXPECT_EQ(r.Take(41, 41).status().code(), StatusCode::kResourceExhausted);  // 30 and 40 free, apart
  r.Give(30);                                                                 // joins both
  EXPECT_FALSE(r.Taken(30));
  EXPECT_EQ(*r.Take(100, 100), 0u);
  r.Give(7);  // not taken: nothing
  int taken = 0;
  r.ForEachTaken([&](uint64_t off) { taken += off == 0; });
  EXPECT_EQ(taken, 1);
}

TEST(Windows, buffers_lie_in_the_window_zeroed_and_come_back) {
  auto d = WindowDevice();
  if (d == nullptr) GTEST_SKIP() << "the test device gives no instance windows";
  window_contract::BuffersLieInTheWindowZeroedAndComeBack(*d);
}

TEST(Windows, a_store_outside_the_window_ends_its_launch_cleanly) {
  auto d = WindowDevice();
  if (d == nullptr) GTEST_SKIP() << "the test device gives no instance windows";
  window_contract::AStoreOutsideTheWindowEndsItsLaunchCleanly(*d);
}

TEST(Windows, the_abort_word_ends_a_kernel_that_would_never_end) {
  auto d = WindowDevice();
  if (d == nullptr) GTEST_SKIP() << "the test device gives no instance windows";
  window_contract::TheAbortWordEndsAKernelThatWouldNeverEnd(*d);
}

}  // namespace
}  // namespace gpuwasm::testing
