// vector_add in C++: the C example (vector_add.c) with sdk/include/wasi_cuda.hpp. The kernel's
// parameter list is part of its type: passing a buffer of the wrong element type, a host pointer
// or too few arguments does not compile.
#include <cstdio>
#include <vector>

#include "vector_add_ptx.h"
#include "wasi_cuda.hpp"

int main() {
  constexpr uint32_t n = 1 << 20;
  std::vector<float> a(n), b(n), c(n);
  unsigned seed = 1;
  auto random = [&seed] {
    seed = seed * 1103515245u + 12345u;
    return static_cast<float>((seed >> 8) & 0xffff) / 65536.0f;
  };
  for (uint32_t i = 0; i < n; ++i) {
    a[i] = random();
    b[i] = random();
  }
  wcu::Module module = wcu::Module::Load(vector_add_ptx, vector_add_ptx_len).value();
  // extern "C" __global__ void vector_add(const float* a, const float* b, float* c, unsigned n)
  auto add = module.Kernel<const float*, const float*, float*, uint32_t>("vector_add").value();
  auto da = wcu::DeviceBuffer<float>::Allocate(n).value();
  auto db = wcu::DeviceBuffer<float>::Allocate(n).value();
  auto dc = wcu::DeviceBuffer<float>::Allocate(n).value();
  da.Upload(a).value();
  db.Upload(b).value();
  add.Launch({n / 256}, {256}, da, db, dc, n).value();
  dc.Download(c).value();  // waits for the launch
  int wrong = 0;
  for (uint32_t i = 0; i < n; ++i) wrong += c[i] != a[i] + b[i];
  std::printf("vector_add (C++): %u elements on %s: %d wrong %s\n", n, wcu::DeviceInfo().value().name, wrong,
              wrong ? "FAILED" : "OK");
  return wrong != 0;
}
