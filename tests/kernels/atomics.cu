// Global atomics: add (int, float), min, max, exch, cas, and, or, xor, inc.
extern "C" __global__ void atomics(const int* __restrict__ in, int* __restrict__ acc, float* __restrict__ facc, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = in[i];
  atomicAdd(&acc[0], v);
  atomicMin(&acc[1], v);
  atomicMax(&acc[2], v);
  atomicAnd(&acc[3], v | 0x0f0f0000);
  atomicOr(&acc[4], v & 0x00ff00ff);
  atomicXor(&acc[5], v);
  atomicInc((unsigned*)&acc[6], 1000000u);
  atomicAdd(&facc[0], (float)(v & 255) * 0.25f);
  int old = atomicCAS(&acc[7], 0, (int)i + 1);      // exactly one thread wins
  if (old == 0) atomicExch(&acc[8], (int)i + 1);
}
