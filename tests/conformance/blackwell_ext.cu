#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp4.h>
#include <cuda_fp6.h>
#include <cuda_fp8.h>

#include "spread.cuh"
// The conversions sm_100 added (fp4 e2m1, fp6 e2m3/e3m2, the ue8m0 scale format, tf32 .rn/.rz
// with .satfinite) and .relu on fp8, through the toolkit's intrinsics where it has them (which
// emit the instructions for sm_100a, with .b8 registers and a {byte, 0} pack) and inline asm
// for the rest.
// archs: sm_100a

// case: narrow_floats grid=1 block=64 out=1152
extern "C" __global__ void narrow_floats(unsigned* out, const unsigned* in) {
  unsigned t = threadIdx.x;
  const float a = Spread(in[t], -3, t), b = Spread(in[t + 64], -4, t), c = Spread(in[t + 128], -5, t);
  const float raw = __uint_as_float(in[t + 192]), wide = Spread(in[t + 256], 120, t);
  const unsigned bits = in[t + 320];
  unsigned r[18];
  unsigned short s;
  r[0] = __nv_cvt_float2_to_fp4x2(make_float2(b, a), __NV_E2M1, cudaRoundNearest);
  asm("{ .reg .b8 q; cvt.rn.satfinite.relu.e2m1x2.f32 q, %1, %2; mov.b16 %0, {q, 0}; }" : "=h"(s) : "f"(a), "f"(c));
  r[1] = s;
  r[2] = __nv_cvt_float2_to_fp6x2(make_float2(c, b), __NV_E2M3, cudaRoundNearest);
  asm("cvt.rn.satfinite.relu.e3m2x2.f32 %0, %1, %2;" : "=h"(s) : "f"(b), "f"(a));
  r[3] = s;
  r[4] = __nv_cvt_float2_to_e8m0x2(make_float2(raw, wide), __NV_SATFINITE, cudaRoundZero);
  asm("cvt.rp.ue8m0x2.f32 %0, %1, %2;" : "=h"(s) : "f"(wide), "f"(raw));
  r[5] = s;
  asm("cvt.rp.satfinite.ue8m0x2.bf16x2 %0, %1;" : "=h"(s) : "r"(in[t + 192]));
  r[6] = s;
  __half2_raw h = __nv_cvt_fp4x2_to_halfraw2((__nv_fp4x2_storage_t)(bits & 0xff), __NV_E2M1);
  r[7] = h.x | (unsigned)h.y << 16;
  asm("cvt.rn.relu.f16x2.e3m2x2 %0, %1;" : "=r"(r[8]) : "h"((unsigned short)(bits & 0x3f3f)));
  h = __nv_cvt_fp6x2_to_halfraw2((__nv_fp6x2_storage_t)(bits >> 16 & 0x3f3f), __NV_E2M3);
  r[9] = h.x | (unsigned)h.y << 16;
  __nv_bfloat162_raw bf = __nv_cvt_e8m0x2_to_bf162raw((__nv_fp8x2_storage_t)(bits >> 8));
  r[10] = bf.x | (unsigned)bf.y << 16;
  asm("cvt.rn.satfinite.tf32.f32 %0, %1;" : "=r"(r[11]) : "f"(wide));
  asm("cvt.rz.relu.satfinite.tf32.f32 %0, %1;" : "=r"(r[12]) : "f"(raw));
  asm("cvt.rn.tf32.f32 %0, %1;" : "=r"(r[13]) : "f"(raw));
  asm("cvt.rn.satfinite.relu.e4m3x2.f32 %0, %1, %2;" : "=h"(s) : "f"(a), "f"(raw));
  r[14] = s;
  asm("cvt.rn.satfinite.relu.e5m2x2.f16x2 %0, %1;" : "=h"(s) : "r"(bits));
  r[15] = s;
  asm("cvt.rn.relu.f16x2.e4m3x2 %0, %1;" : "=r"(r[16]) : "h"((unsigned short)bits));
  r[17] = __float_as_uint(a);  // an input, so a failure is easy to read
  for (int k = 0; k < 18; ++k) out[t * 18 + k] = r[k];
}
