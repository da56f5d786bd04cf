// Row-wise softmax; one block per row, blockDim.x floats of dynamic shared memory for reductions.
extern "C" __global__ void softmax(const float* __restrict__ in, float* __restrict__ out, unsigned cols) {
  extern __shared__ float scratch[];
  const float* x = in + blockIdx.x * cols;
  float* y = out + blockIdx.x * cols;
  unsigned t = threadIdx.x;
  float m = -INFINITY;
  for (unsigned j = t; j < cols; j += blockDim.x) m = fmaxf(m, x[j]);
  scratch[t] = m;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) scratch[t] = fmaxf(scratch[t], scratch[t + s]);
    __syncthreads();
  }
  m = scratch[0];
  __syncthreads();
  float sum = 0.0f;
  for (unsigned j = t; j < cols; j += blockDim.x) sum += expf(x[j] - m);
  scratch[t] = sum;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) scratch[t] += scratch[t + s];
    __syncthreads();
  }
  float inv = 1.0f / scratch[0];
  for (unsigned j = t; j < cols; j += blockDim.x) y[j] = expf(x[j] - m) * inv;
}
