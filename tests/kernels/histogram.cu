// 256-bin byte histogram: shared-memory atomics per block, then global atomics.
extern "C" __global__ void histogram256(const unsigned char* __restrict__ data, unsigned n, unsigned* __restrict__ bins) {
  __shared__ unsigned local[256];
  local[threadIdx.x] = 0;
  __syncthreads();
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) atomicAdd(&local[data[i]], 1u);
  __syncthreads();
  if (local[threadIdx.x]) atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}
