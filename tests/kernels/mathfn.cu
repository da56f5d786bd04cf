// Accurate single-precision library math: expf, tanhf, logf, sinf, powf, sqrtf.
extern "C" __global__ void mathfn(const float* __restrict__ x, float* __restrict__ out, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  out[6 * i + 0] = expf(v);
  out[6 * i + 1] = tanhf(v);
  out[6 * i + 2] = logf(fabsf(v) + 1e-3f);
  out[6 * i + 3] = sinf(v);
  out[6 * i + 4] = powf(fabsf(v), 1.7f);
  out[6 * i + 5] = sqrtf(fabsf(v));
}
