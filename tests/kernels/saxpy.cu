// y[i] = a * x[i] + y[i] with a grid-stride loop.
extern "C" __global__ void saxpy(unsigned n, float a, const float* __restrict__ x, float* __restrict__ y) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) y[i] = a * x[i] + y[i];
}
