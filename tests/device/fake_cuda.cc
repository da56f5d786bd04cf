// A fake libcuda, a test fixture at the dlopen boundary: the driver API's C symbols, scripted by
// $FAKE_CUDA_MODE, so tests exercise CudaDriver and the CUDA device through the real boundary.
// Built twice: fake_cuda (everything; kernels really run, on gpuwasm's CPU device: see
// fake_cuda_device.inc) and fake_cuda_probe (FAKE_CUDA_PROBE_ONLY: only what Probe uses).
//   ok (default)  driver 12.8, one device "Fake GPU"
//   no_device     cuInit -> CUDA_ERROR_NO_DEVICE
//   old_driver    driver 11.8
//   zero_devices  cuDeviceGetCount -> 0
//   bad_attribute cuDeviceGetAttribute(MULTIPROCESSOR_COUNT) -> CUDA_ERROR_INVALID_VALUE
//   jit_reject    cuModuleLoadDataEx -> CUDA_ERROR_INVALID_PTX with a JIT error log
//   few_registers cuFuncGetAttribute(MAX_THREADS_PER_BLOCK) -> 128
//   fault_is_assert  a kernel's fault is CUDA_ERROR_ASSERT (710, its context only), not 700
//   exclusive_process  cuCtxCreate -> CUDA_ERROR_DEVICE_UNAVAILABLE (another process has the GPU)
//   no_memory     cuCtxCreate -> CUDA_ERROR_OUT_OF_MEMORY
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace {
std::string_view Mode() {
  const char* m = std::getenv("FAKE_CUDA_MODE");
  return m != nullptr ? m : "ok";
}
}  // namespace

extern "C" {
int cuInit(unsigned int flags) {
  if (flags != 0) return 1;
  return Mode() == "no_device" ? 100 : 0;
}
int cuDriverGetVersion(int* v) {
  *v = Mode() == "old_driver" ? 11080 : 12080;
  return 0;
}
int cuDeviceGetCount(int* n) {
  *n = Mode() == "zero_devices" ? 0 : 1;
  return 0;
}
int cuDeviceGet(int* d, int ordinal) {
  if (ordinal != 0) return 101;
  *d = 0;
  return 0;
}
int cuDeviceGetName(char* name, int len, int dev) {
  if (dev != 0) return 101;
  std::strncpy(name, "Fake GPU", static_cast<size_t>(len));
  return 0;
}
// H200-like limits; an attribute the fake does not know is CUDA_ERROR_INVALID_VALUE, and
// FAKE_CUDA_MODE=bad_attribute makes the SM count query fail.
int cuDeviceGetAttribute(int* v, int attr, int dev) {
  if (dev != 0) return 101;
  switch (attr) {
    case 1: *v = 1024; return 0;
    case 2: *v = 1024; return 0;
    case 3: *v = 1024; return 0;
    case 4: *v = 64; return 0;
    case 5: *v = 2147483647; return 0;
    case 6: *v = 65535; return 0;
    case 7: *v = 65535; return 0;
    case 8: *v = 49152; return 0;
    case 10: *v = 32; return 0;
    case 13: *v = 1000000; return 0;  // CLOCK_RATE in kHz: 1 GHz, so %clock64 (ns on the CPU device) is cycles
    case 16:
      if (Mode() == "bad_attribute") return 1;
      *v = 132;
      return 0;
    case 75: *v = 9; return 0;
    case 97: *v = 232448; return 0;  // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 227 KiB
    case 76: *v = 0; return 0;
    case 102: *v = Mode() == "no_vmm" ? 0 : 1; return 0;  // VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
    default: return 1;
  }
}
int cuDeviceTotalMem_v2(size_t* bytes, int dev) {
  if (dev != 0) return 101;
  *bytes = size_t{150754820096};
  return 0;
}
struct KnownError {
  int code;
  const char* name;
  const char* text;
};
constexpr KnownError kErrors[] = {
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {710, "CUDA_ERROR_ASSERT", "device-side assert triggered"},
};
// Like the driver, for the codes it knows; others are left to gpuwasm's own table.
static int Describe(int r, const char** s, bool text) {
  for (const KnownError& e : kErrors) {
    if (e.code == r) {
      *s = text ? e.text : e.name;
      return 0;
    }
  }
  return 1;
}
int cuGetErrorName(int r, const char** s) { return Describe(r, s, false); }
int cuGetErrorString(int r, const char** s) { return Describe(r, s, true); }
}

#ifndef FAKE_CUDA_PROBE_ONLY
#include "fake_cuda_device.inc"
#endif
