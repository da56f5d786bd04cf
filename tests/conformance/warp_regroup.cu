// Warp reconvergence: lanes that split at a branch must be one warp again for the warp-wide
// instructions that follow (shfl.sync, __syncwarp, a shared-memory tree), whatever path each took.
// Every kernel: (unsigned* out, const unsigned* in); `in` holds the runner's pattern.

// case: loop_once_more_then_shfl grid=1 block=32 out=33
// Lanes 0-2 run the loop once more than the others (35 values over 32 lanes), then all shuffle.
extern "C" __global__ void loop_once_more_then_shfl(unsigned* out, const unsigned* in) {
  unsigned lane = threadIdx.x & 31;
  unsigned v = 0;
  for (unsigned j = lane; j < 35; j += 32) v += in[j] & 0xff;
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  out[lane] = v;
  if (lane == 0) out[32] = v;
}

// case: syncwarp_tree grid=1 block=32 out=32
// The guest guide's form: a warp tree in ordinary shared memory with __syncwarp() between steps.
extern "C" __global__ void syncwarp_tree(unsigned* out, const unsigned* in) {
  __shared__ unsigned s[32];
  unsigned lane = threadIdx.x;
  s[lane] = lane;
  __syncwarp();
  for (unsigned off = 16; off > 0; off >>= 1) {
    if (lane < off) s[lane] += s[lane + off];
    __syncwarp();
  }
  out[lane] = s[lane];
}

// case: warp_size_generic grid=2 block=96 out=200
// warpSize (WARP_SZ in PTX) used for lane arithmetic and a warp-size-generic reduction.
extern "C" __global__ void warp_size_generic(unsigned* out, const unsigned* in) {
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
  unsigned v = in[t] & 0xffff;
  for (int off = warpSize / 2; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  out[t] = v + (lane << 24);
  if (lane == 0) out[192 + blockIdx.x * 4 + warp] = warpSize;
}

// case: divergent_depth_then_ballot grid=1 block=64 out=64
// A data-dependent loop count per lane (0..7 iterations), then a ballot and a shuffle by index.
extern "C" __global__ void divergent_depth_then_ballot(unsigned* out, const unsigned* in) {
  unsigned t = threadIdx.x;
  unsigned v = in[t];
  for (unsigned k = 0; k < (in[t] & 7); ++k) v = v * 3 + k;
  unsigned b = __ballot_sync(0xffffffffu, v & 1);
  unsigned other = __shfl_sync(0xffffffffu, v, (t + 5) & 31);
  out[t] = b ^ other;
}

// case: threadfence_two_pass grid=8 block=64 out=9
// A two-pass sum: each block writes its partial, fences, and the last block to finish adds them up
// (the threadFenceReduction sample's pattern), with a warp-shuffle reduction inside each block.
__device__ unsigned g_done;
extern "C" __global__ void threadfence_two_pass(unsigned* out, const unsigned* in) {
  __shared__ unsigned warp_sums[2];
  __shared__ bool last;
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
  unsigned v = in[t] & 0xfff;
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  if (lane == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    out[blockIdx.x] = warp_sums[0] + warp_sums[1];
    __threadfence();
    unsigned ticket = atomicInc(&g_done, gridDim.x);
    last = ticket == gridDim.x - 1;
  }
  __syncthreads();
  if (last && threadIdx.x < 32) {
    unsigned s = threadIdx.x < gridDim.x ? ((volatile unsigned*)out)[threadIdx.x] : 0;
    for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
    if (threadIdx.x == 0) out[gridDim.x] = s;
  }
}
