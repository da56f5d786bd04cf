// Bitonic sort of 512 keys per block in shared memory (256 threads, 2 keys each).
extern "C" __global__ void bitonic_sort512(unsigned* __restrict__ keys) {
  __shared__ unsigned s[512];
  unsigned* k = keys + blockIdx.x * 512;
  unsigned t = threadIdx.x;
  s[t] = k[t];
  s[t + 256] = k[t + 256];
  __syncthreads();
  for (unsigned size = 2; size <= 512; size <<= 1) {
    for (unsigned stride = size / 2; stride > 0; stride >>= 1) {
      unsigned pos = 2 * t - (t & (stride - 1));
      bool up = ((pos & size) == 0);
      unsigned a = s[pos], b = s[pos + stride];
      if ((a > b) == up) { s[pos] = b; s[pos + stride] = a; }
      __syncthreads();
    }
  }
  k[t] = s[t];
  k[t + 256] = s[t + 256];
}
