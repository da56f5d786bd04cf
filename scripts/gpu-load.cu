// gpu-load SECONDS: keeps every SM of GPU 0 busy (spinning on clock64, one resident block per SM
// slot) for about SECONDS, so scripts/gpu-check.sh can sample GPM under load. Needs nvcc; it is
// not part of the gpuwasm build.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

__global__ void Spin(long long cycles, float* sink) {
  long long start = clock64();
  float acc = threadIdx.x;
  while (clock64() - start < cycles) acc = acc * 1.0000001f + 1.0f;
  if (acc == -1.0f) *sink = acc;  // never true; keeps the loop
}

int main(int argc, char** argv) {
  double seconds = argc > 1 ? std::atof(argv[1]) : 5.0;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    std::fprintf(stderr, "gpu-load: no CUDA device\n");
    return 1;
  }
  float* sink = nullptr;
  cudaMalloc(&sink, sizeof(float));
  int clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  long long cycles_per_launch = static_cast<long long>(clock_khz) * 1000 / 10;  // ~100 ms
  int launches = static_cast<int>(seconds * 10);
  for (int i = 0; i < launches; ++i) Spin<<<prop.multiProcessorCount * 8, 256>>>(cycles_per_launch, sink);
  cudaError_t e = cudaDeviceSynchronize();
  std::printf("gpu-load: %d launches on %s: %s\n", launches, prop.name, cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
