// A fake libcuda: the driver API's C symbols (the few Probe uses), scripted by $FAKE_CUDA_MODE so
// tests exercise CudaDriver through the real dlopen boundary.
//   ok (default)  driver 12.8, one device "Fake GPU"
//   no_device     cuInit -> CUDA_ERROR_NO_DEVICE
//   old_driver    driver 11.8
//   zero_devices  cuDeviceGetCount -> 0
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
int cuGetErrorName(int r, const char** s) {
  switch (r) {
    case 100:
      *s = "CUDA_ERROR_NO_DEVICE";
      return 0;
    case 2:
      *s = "CUDA_ERROR_OUT_OF_MEMORY";
      return 0;
    default:
      return 1;
  }
}
int cuGetErrorString(int r, const char** s) {
  switch (r) {
    case 100:
      *s = "no CUDA-capable device is detected";
      return 0;
    case 2:
      *s = "out of memory";
      return 0;
    default:
      return 1;
  }
}
}
