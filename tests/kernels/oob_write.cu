// Writes out[i + offset] for i < n: with offset > 0 the last threads write past the buffer.
extern "C" __global__ void oob_write(int* out, unsigned n, unsigned offset) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i + offset] = (int)i;
}
