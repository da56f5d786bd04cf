// Per-warp integer sums with __shfl_down_sync, combined with a global atomicAdd.
extern "C" __global__ void warp_reduce_sum(const int* __restrict__ in, int* __restrict__ total, int* __restrict__ per_warp, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : 0;
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  if ((threadIdx.x & 31) == 0) {
    per_warp[i / 32] = v;
    atomicAdd(total, v);
  }
}
