// C = A * B for n x n row-major matrices with 16 x 16 shared-memory tiles (n % 16 == 0).
#define TILE 16
extern "C" __global__ void matmul_tiled(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, unsigned n) {
  __shared__ float ta[TILE][TILE], tb[TILE][TILE];
  unsigned row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.0f;
  for (unsigned t = 0; t < n / TILE; ++t) {
    ta[threadIdx.y][threadIdx.x] = a[row * n + t * TILE + threadIdx.x];
    tb[threadIdx.y][threadIdx.x] = b[(t * TILE + threadIdx.y) * n + col];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc = __fmaf_rn(ta[threadIdx.y][k], tb[k][threadIdx.x], acc);
    __syncthreads();
  }
  c[row * n + col] = acc;
}
