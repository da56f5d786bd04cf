// Test access to the fake NVML's control functions (same library the loader opened).
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

namespace gpuwasm::testing {

struct FakeNvml {
  void* h = dlopen(GPUWASM_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
  template <class F>
  F* Fn(const char* name) {
    auto* f = reinterpret_cast<F*>(dlsym(h, name));
    EXPECT_NE(f, nullptr) << name;
    return f;
  }
  void Inject(const char* fn, int ret, int times = -1) {
    Fn<void(const char*, int, int)>("fake_nvml_inject")(fn, ret, times);
  }
  void Delay(const char* fn, int ms) { Fn<void(const char*, int)>("fake_nvml_delay")(fn, ms); }
  void Reset() { Fn<void()>("fake_nvml_reset")(); }
  long LiveSamples() { return Fn<long()>("fake_nvml_live_samples")(); }
  long Frees() { return Fn<long()>("fake_nvml_frees")(); }
  long BadFrees() { return Fn<long()>("fake_nvml_bad_frees")(); }
  int InitCount() { return Fn<int()>("fake_nvml_init_count")(); }
  FakeNvml() { Reset(); }
  ~FakeNvml() {
    Reset();
    dlclose(h);
  }
};

}  // namespace gpuwasm::testing
