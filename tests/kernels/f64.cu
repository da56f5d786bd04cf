// Double precision: fma, division, sqrt, exp, and f32<->f64 conversions.
extern "C" __global__ void f64_kernel(const double* __restrict__ x, const float* __restrict__ y, double* __restrict__ out, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double v = x[i];
  out[5 * i + 0] = fma(v, 1.5, (double)y[i]);
  out[5 * i + 1] = v / (1.0 + fabs(v));
  out[5 * i + 2] = sqrt(fabs(v));
  out[5 * i + 3] = exp(v * 0.25);
  out[5 * i + 4] = (double)(float)(v * 3.0) + (double)(int)v;
}
