// A per-thread array indexed at run time lives in local memory (.local depot).
extern "C" __global__ void local_array(const unsigned* __restrict__ idx, int* __restrict__ out, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int tmp[16];
  for (int k = 0; k < 16; ++k) tmp[k] = (int)(i * 16 + k) * (k + 1);
  unsigned j = idx[i] & 15;
  tmp[j] += 7;
  out[i] = tmp[j] + tmp[(j + 5) & 15];
}
