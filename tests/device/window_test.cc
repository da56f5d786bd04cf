// The window contract (window_contract.h) on the test device: the CPU device, or cuda:0 on the GPU
// check (GPUWASM_TEST_DEVICE), where a store outside the window must not become a fault of the
// process and a kernel that never ends must stop at its abort word.
#include "kernel_harness.h"
#include "window_contract.h"

namespace gpuwasm::testing {
namespace {

std::shared_ptr<device::Device> WindowDevice() {
  auto d = KernelHarness::SharedTestDevice();
  return d->info().instance_windows ? d : nullptr;
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
