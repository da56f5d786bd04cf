// Exclusive prefix sum of each 256-element block (Hillis-Steele in shared memory, double buffered).
extern "C" __global__ void exclusive_scan(const int* __restrict__ in, int* __restrict__ out, unsigned n) {
  __shared__ int buf[2][256];
  unsigned t = threadIdx.x, i = blockIdx.x * 256 + t;
  int src = 0;
  buf[0][t] = (t > 0 && i - 1 < n) ? in[i - 1] : 0;
  __syncthreads();
  for (unsigned off = 1; off < 256; off <<= 1) {
    int v = buf[src][t];
    if (t >= off) v += buf[src][t - off];
    buf[1 - src][t] = v;
    src = 1 - src;
    __syncthreads();
  }
  if (i < n) out[i] = buf[src][t];
}
