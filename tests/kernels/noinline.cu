// A __noinline__ device function (.func + call), powf and division inside it.
__device__ __noinline__ float helper(float a, float b) { return powf(a, 2.0f) / (b + 1.0f); }
extern "C" __global__ void calls_noinline(const float* __restrict__ x, float* __restrict__ out, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = helper(x[i], (float)i) + helper(1.0f, x[i]);
}
