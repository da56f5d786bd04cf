// out = transpose(in) for a rows x cols matrix, 32 x 32 tiles padded to avoid bank conflicts; blocks of 32 x 8.
extern "C" __global__ void transpose(const float* __restrict__ in, float* __restrict__ out, unsigned rows, unsigned cols) {
  __shared__ float tile[32][33];
  unsigned x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  for (unsigned j = 0; j < 32; j += 8)
    if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x;
  y = blockIdx.x * 32 + threadIdx.y;
  for (unsigned j = 0; j < 32; j += 8)
    if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}
