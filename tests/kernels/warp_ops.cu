// shfl (up, xor, idx), vote (any, all, ballot) and __activemask in divergent code.
extern "C" __global__ void warp_ops(const int* __restrict__ in, int* __restrict__ out) {
  unsigned lane = threadIdx.x & 31, i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  int up = __shfl_up_sync(0xffffffffu, v, 3);
  int x = __shfl_xor_sync(0xffffffffu, v, 5);
  int idx = __shfl_sync(0xffffffffu, v, (lane * 7) & 31);
  unsigned ballot = __ballot_sync(0xffffffffu, v > 0);
  int any = __any_sync(0xffffffffu, v > 1000);
  int all = __all_sync(0xffffffffu, v > -1000);
  unsigned active = 0;
  if (lane & 1) active = __activemask();
  out[6 * i + 0] = up;
  out[6 * i + 1] = x;
  out[6 * i + 2] = idx;
  out[6 * i + 3] = (int)ballot;
  out[6 * i + 4] = any * 2 + all;
  out[6 * i + 5] = (int)active;
}
