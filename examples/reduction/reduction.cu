// Sum of n floats: each block reduces 256 values in shared memory, the last warp with shuffles,
// and adds its partial sum to *total.
extern "C" __global__ void reduce_sum(const float* __restrict__ in, float* __restrict__ total, unsigned n) {
  __shared__ float part[256];
  unsigned t = threadIdx.x;
  float v = 0.0f;
  for (unsigned i = blockIdx.x * 256 + t; i < n; i += 256 * gridDim.x) v += in[i];
  part[t] = v;
  __syncthreads();
  for (unsigned s = 128; s >= 32; s >>= 1) {
    if (t < s) part[t] += part[t + s];
    __syncthreads();
  }
  if (t < 32) {
    v = part[t];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if (t == 0) atomicAdd(total, v);
  }
}
