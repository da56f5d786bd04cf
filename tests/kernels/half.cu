// f16, f16x2 and bf16 arithmetic.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
extern "C" __global__ void half_kernel(const __half* __restrict__ a, const __half* __restrict__ b, __half* __restrict__ out, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __hfma(a[i], b[i], __hmul(a[i], __float2half(0.5f)));
}
extern "C" __global__ void half2_kernel(const __half2* __restrict__ a, const __half2* __restrict__ b, __half2* __restrict__ out, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __hfma2(a[i], b[i], a[i]);
}
extern "C" __global__ void bf16_kernel(const __nv_bfloat16* __restrict__ a, const __nv_bfloat16* __restrict__ b, float* __restrict__ out, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __bfloat162float(__hadd(a[i], b[i]));
}
