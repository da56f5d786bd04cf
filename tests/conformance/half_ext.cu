#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include "spread.cuh"
// Packed half conversions and half-precision atomics; double sin/cos (their slow path is an
// extended-precision carry chain).

// case: pack_halves grid=1 block=64 out=128
extern "C" __global__ void pack_halves(unsigned* out, const unsigned* in) {
  unsigned t = threadIdx.x;
  float a = (float)(int)in[t] / 65536.0f, b = (float)(int)in[t + 64] / 1048576.0f;
  __half2 h = __floats2half2_rn(a, b);
  __nv_bfloat162 bf = __floats2bfloat162_rn(a, b);
  out[t * 2] = *reinterpret_cast<unsigned*>(&h);
  out[t * 2 + 1] = *reinterpret_cast<unsigned*>(&bf);
}

// case: half_atomics grid=2 block=64 out=8
// Every thread adds small values whose partial sums stay exact in the type, so any order of the
// atomic adds gives the same sums.
extern "C" __global__ void half_atomics(unsigned* out, const unsigned* in) {
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  float x = (float)(in[t] & 7) * 0.25f, y = (float)(in[t] & 1);
  atomicAdd(reinterpret_cast<__half*>(out), __float2half(x));
  atomicAdd(reinterpret_cast<__half2*>(out + 1), __floats2half2_rn(x, 2 * x));
  atomicAdd(reinterpret_cast<__nv_bfloat16*>(out + 2), __float2bfloat16(y));
  atomicAdd(reinterpret_cast<__nv_bfloat162*>(out + 3), __floats2bfloat162_rn(y, -y));
}

// case: double_sin_cos grid=1 block=64 out=256 cmp=f64ulp:2
// Arguments from tiny to 1e300 (the huge ones take the Payne-Hanek slow path).
extern "C" __global__ void double_sin_cos(unsigned* out, const unsigned* in) {
  unsigned t = threadIdx.x;
  double m = (double)(in[t] >> 8) / 16777216.0;
  int e = (int)(in[t + 64] % 1000) - 10;
  double x = ldexp(m, t < 16 ? e % 8 : t < 48 ? e % 64 : e);
  if (t & 1) x = -x;
  double s = sin(x), c = cos(x);
  unsigned long long sb = __double_as_longlong(s), cb = __double_as_longlong(c);
  out[t * 4] = (unsigned)sb;
  out[t * 4 + 1] = (unsigned)(sb >> 32);
  out[t * 4 + 2] = (unsigned)cb;
  out[t * 4 + 3] = (unsigned)(cb >> 32);
}

// case: fp8_pairs grid=1 block=64 out=192
// fp8 pairs (e4m3, e5m2) from two floats, saturating, and back to halves: on sm_90 the cvt
// instructions, on sm_80 the toolkit's own integer emulation of them.
extern "C" __global__ void fp8_pairs(unsigned* out, const unsigned* in) {
  unsigned t = threadIdx.x;
  float2 v = make_float2((float)(int)in[t] / 4194304.0f, (float)(int)in[t + 64] / 67108864.0f);
  if (t >= 56) v.x = (float)(int)in[t] / 1024.0f;  // beyond the largest finite values: saturated
  __nv_fp8x2_storage_t a = __nv_cvt_float2_to_fp8x2(v, __NV_SATFINITE, __NV_E4M3);
  __nv_fp8x2_storage_t b = __nv_cvt_float2_to_fp8x2(v, __NV_SATFINITE, __NV_E5M2);
  __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(a, __NV_E4M3);
  __half2_raw g = __nv_cvt_fp8x2_to_halfraw2(b, __NV_E5M2);
  out[t * 3] = a | (unsigned)b << 16;
  out[t * 3 + 1] = h.x | (unsigned)h.y << 16;
  out[t * 3 + 2] = g.x | (unsigned)g.y << 16;
}

// case: vector_atomics grid=2 block=64 out=8
// atomicAdd on float2 and float4 (sm_90: atom.global.add.v2.f32 / .v4.f32; sm_80: per element),
// with small exact values so that any order gives the same sums; old values unused.
extern "C" __global__ void vector_atomics(unsigned* out, const unsigned* in) {
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  float x = (float)(in[t] & 7) * 0.25f;
  float* f = reinterpret_cast<float*>(out);
#if __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float2*>(f), make_float2(x, 1.0f));
  atomicAdd(reinterpret_cast<float4*>(f + 4), make_float4(x, -x, 2.0f * x, 0.5f));
#else  // (sm_80 has no vector atomics: the same adds one by one)
  atomicAdd(f, x);
  atomicAdd(f + 1, 1.0f);
  atomicAdd(f + 4, x);
  atomicAdd(f + 5, -x);
  atomicAdd(f + 6, 2.0f * x);
  atomicAdd(f + 7, 0.5f);
#endif
}

// case: cvt_relu_satfinite grid=1 block=64 out=640
// f32 to f16/bf16 (and the packed pairs) with .relu and .satfinite, .rz packing, and f32 to tf32
// rounding to nearest with ties away (.rna), with and without .satfinite.
extern "C" __global__ void cvt_relu_satfinite(unsigned* out, const unsigned* in) {
  unsigned t = threadIdx.x;
  float a = Spread(in[t], 10, t), b = Spread(in[t + 64], -20, t), c = Spread(in[t + 128], 120, t);
  unsigned short h[4];
  unsigned w[6];
  asm("cvt.rn.relu.f16.f32 %0, %1;" : "=h"(h[0]) : "f"(a));
  asm("cvt.rz.relu.satfinite.bf16.f32 %0, %1;" : "=h"(h[1]) : "f"(c));
  asm("cvt.rn.satfinite.f16.f32 %0, %1;" : "=h"(h[2]) : "f"(a));
  asm("cvt.rn.satfinite.bf16.f32 %0, %1;" : "=h"(h[3]) : "f"(c));
  asm("cvt.rn.relu.f16x2.f32 %0, %1, %2;" : "=r"(w[0]) : "f"(a), "f"(b));
  asm("cvt.rz.satfinite.bf16x2.f32 %0, %1, %2;" : "=r"(w[1]) : "f"(c), "f"(b));
  asm("cvt.rz.f16x2.f32 %0, %1, %2;" : "=r"(w[2]) : "f"(a), "f"(b));
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(w[3]) : "f"(c));
  asm("cvt.rna.satfinite.tf32.f32 %0, %1;" : "=r"(w[4]) : "f"(c));
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(w[5]) : "f"(b));
  out[t * 10] = h[0] | (unsigned)h[1] << 16;
  out[t * 10 + 1] = h[2] | (unsigned)h[3] << 16;
  for (int k = 0; k < 6; ++k) out[t * 10 + 2 + k] = w[k];
  out[t * 10 + 8] = __float_as_uint(a);  // the inputs, so a failure is easy to read
  out[t * 10 + 9] = __float_as_uint(c);
}
