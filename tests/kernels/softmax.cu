// Row softmax with dynamic shared memory (blockDim.x floats): one block per row.
extern "C" __global__ void softmax_rows(const float* __restrict__ in, float* __restrict__ out, unsigned cols) {
  extern __shared__ float red[];
  const float* x = in + blockIdx.x * cols;
  float* y = out + blockIdx.x * cols;
  float m = -INFINITY;
  for (unsigned j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, x[j]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  float sum = 0.0f;
  for (unsigned j = threadIdx.x; j < cols; j += blockDim.x) sum += __expf(x[j] - m);
  red[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  float inv = 1.0f / red[0];
  for (unsigned j = threadIdx.x; j < cols; j += blockDim.x) y[j] = __expf(x[j] - m) * inv;
}
