// y = alpha * x + y, with a grid-stride loop (any grid size covers all n elements).
extern "C" __global__ void saxpy(unsigned n, float alpha, const float* __restrict__ x, float* __restrict__ y) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    y[i] = __fmaf_rn(alpha, x[i], y[i]);
  }
}
