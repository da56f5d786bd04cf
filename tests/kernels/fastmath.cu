// The .approx instructions through intrinsics: __expf, __logf, __sinf, __cosf, __fdividef, rsqrtf, __fsqrt_rn.
extern "C" __global__ void fastmath(const float* __restrict__ x, float* __restrict__ out, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i], p = fabsf(v) + 0.5f;
  out[7 * i + 0] = __expf(v);
  out[7 * i + 1] = __logf(p);
  out[7 * i + 2] = __sinf(v);
  out[7 * i + 3] = __cosf(v);
  out[7 * i + 4] = __fdividef(v, p);
  out[7 * i + 5] = rsqrtf(p);
  out[7 * i + 6] = __fsqrt_rn(p) + __frcp_rn(p);
}
