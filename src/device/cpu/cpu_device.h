// CpuDevice: the Device that executes PTX on the host's CPUs (the embedded default).
//
// Device memory is host memory behind a per-context address space: every kernel access is
// checked against the context's live allocations (and its module's globals), so a kernel can
// neither reach host memory nor another context's buffers. Thread blocks of a launch run on a
// pool of host threads sized to the machine, plus the launching stream's own thread.
//
// Thread-safety: as documented in device/device.h.
#pragma once

#include <memory>

#include "device/cpu/native.h"
#include "device/device.h"

namespace gpuwasm::device::cpu {

struct CpuDeviceOptions {
  unsigned threads = 0;  // CTA worker threads (0: hardware concurrency)
  // Native code for kernels (native.h): by default a kernel is compiled in the background once
  // the interpreter ran native_threshold of its thread-instructions and native_payback times the
  // compile's estimated CPU time on it (summed over launches and over loads of the same PTX in
  // this process); later launches run the compiled code.
  NativeMode native = NativeMode::kAuto;
  uint64_t native_threshold = 100'000'000;
  double native_payback = 10;
  std::string cc = "cc";  // the C compiler (searched on PATH)
};

std::shared_ptr<Device> CreateCpuDevice(const CpuDeviceOptions& options = {});

// The number of thread-instructions executed by the last launch on `stream` (a CPU stream), for
// benchmarks; 0 for other streams.
uint64_t LastLaunchInstructions(const Stream& stream);

// Whether the last launch on `stream` (a CPU stream) ran native code.
bool LastLaunchWasNative(const Stream& stream);

// Entries of the context's module map (loaded PTX by its hash; those of released modules are
// swept as it grows), for tests.
size_t ModuleEntries(const Context& context);

// Why `kernel` (of a CPU device) has no native code: the instruction the translation does not
// cover, or the compiler's error; "" when it has (or may still get) native code.
std::string NativeCodeWhyNot(const Kernel& kernel);

// For the fake CUDA driver of the tests (tests/device/fake_cuda_device.inc), which keeps its
// "GPU" memory in a CPU device context: a zero-filled allocation of `bytes` at `at` (a range of a
// window of `context` that nothing else uses, as cuMemMap places memory), and an allocation whose
// bytes are the caller's `host` memory (as cuMemHostRegister maps host memory; the caller keeps it
// alive until the allocation is freed). Both are freed with Context::Free.
Result<DevicePtr> AllocateAt(Context& context, DevicePtr at, uint64_t bytes);
Result<DevicePtr> MapHostMemory(Context& context, void* host, uint64_t bytes);

}  // namespace gpuwasm::device::cpu
