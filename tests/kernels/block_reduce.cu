// Per-block sum with a shared-memory tree (blockDim.x must be 256).
extern "C" __global__ void block_reduce_sum(const float* __restrict__ in, float* __restrict__ out, unsigned n) {
  __shared__ float s[256];
  unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}
