// Conversions: float<->int with rounding modes and saturation, widening and narrowing.
extern "C" __global__ void convert(const float* __restrict__ x, int* __restrict__ out, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  out[8 * i + 0] = __float2int_rn(v);
  out[8 * i + 1] = __float2int_rz(v);
  out[8 * i + 2] = __float2int_rd(v);
  out[8 * i + 3] = __float2int_ru(v);
  out[8 * i + 4] = (int)__float2uint_rn(v);
  out[8 * i + 5] = (int)(signed char)__float2int_rz(v * 0.01f);
  out[8 * i + 6] = __float_as_int(__int2float_rn((int)i * 3 - 7) + rintf(v));
  out[8 * i + 7] = __float_as_int(__saturatef(v * 0.1f));
}
