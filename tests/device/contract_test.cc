// The Device contract (device_contract.h) on the CPU device, interpreting and with native code,
// and on the test device when $GPUWASM_TEST_DEVICE names another (cuda:0 on the GPU check).
#include "device/cpu/cpu_device.h"
#include "device_contract.h"
#include "kernel_harness.h"

namespace gpuwasm::testing {
namespace {

class Contract : public ::testing::TestWithParam<std::string> {
 protected:
  std::shared_ptr<device::Device> Device() {
    const std::string& which = GetParam();
    if (which == "interpreted") {
      static auto d = device::cpu::CreateCpuDevice({.native = device::cpu::NativeMode::kOff});
      return d;
    }
    if (which == "native") return KernelHarness::SharedNativeCpuDevice();
    if (KernelHarness::TestDeviceIsCpu()) return nullptr;  // the two above cover it
    return KernelHarness::SharedTestDevice();
  }
};

#define GPUWASM_CONTRACT_TEST(name, fn)                                    \
  TEST_P(Contract, name) {                                                 \
    auto d = Device();                                                     \
    if (d == nullptr) GTEST_SKIP() << "the test device is the CPU device"; \
    device_contract::fn(*d);                                               \
  }

GPUWASM_CONTRACT_TEST(allocations_are_zeroed_counted_and_quota_checked, AllocationsAreZeroedCountedAndQuotaChecked)
GPUWASM_CONTRACT_TEST(copies_are_bounds_checked, CopiesAreBoundsChecked)
GPUWASM_CONTRACT_TEST(kernel_signatures_come_from_the_declaration, KernelSignaturesComeFromTheDeclaration)
GPUWASM_CONTRACT_TEST(work_after_a_failure_completes_on_the_devices_threads,
                      WorkAfterAFailureCompletesOnTheDevicesThreads)
GPUWASM_CONTRACT_TEST(cancel_completes_what_it_stopped_on_the_devices_threads,
                      CancelCompletesWhatItStoppedOnTheDevicesThreads)

#undef GPUWASM_CONTRACT_TEST

INSTANTIATE_TEST_SUITE_P(Device, Contract, ::testing::Values("interpreted", "native", "test_device"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace gpuwasm::testing
