// C = A * B for n x n row-major matrices (n % 16 == 0), with 16 x 16 shared-memory tiles.
extern "C" __global__ void matmul(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, unsigned n) {
  __shared__ float ta[16][16], tb[16][16];
  unsigned row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
  float acc = 0.0f;
  for (unsigned t = 0; t < n; t += 16) {
    ta[threadIdx.y][threadIdx.x] = a[row * n + t + threadIdx.x];
    tb[threadIdx.y][threadIdx.x] = b[(t + threadIdx.y) * n + col];
    __syncthreads();
    for (int k = 0; k < 16; ++k) acc = __fmaf_rn(ta[threadIdx.y][k], tb[k][threadIdx.x], acc);
    __syncthreads();
  }
  c[row * n + col] = acc;
}
