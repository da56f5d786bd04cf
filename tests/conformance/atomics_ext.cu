#include <cuda_bf16.h>
#include <cuda_fp16.h>
// sm_90's atomics: half-precision vectors (.v2/.v4/.v8 of f16/bf16 and their pairs, with .add,
// .min and .max) and 16-byte atomicExch/atomicCAS (atom.exch/cas.b128), under contention from
// two CTAs. Every result is independent of the order the atomics happen in.
// archs: sm_90

struct __align__(16) Pair {
  unsigned long long lo, hi;
};

// case: vector_and_wide_atomics grid=2 block=64 out=1040
extern "C" __global__ void vector_and_wide_atomics(unsigned* out, const unsigned* in) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned* x = in + t * 4;
  unsigned short h[8];
  for (int k = 0; k < 8; ++k) h[k] = (unsigned short)((k & 1 ? x[k / 2] >> 16 : x[k / 2]) & 0xfbff);  // no inf/NaN
  unsigned short o[8];  // old values: order-dependent, not written out
  asm volatile("atom.global.max.noftz.v8.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], {%9, %10, %11, %12, %13, %14, %15, %16};"
               : "=h"(o[0]), "=h"(o[1]), "=h"(o[2]), "=h"(o[3]), "=h"(o[4]), "=h"(o[5]), "=h"(o[6]), "=h"(o[7])
               : "l"(out), "h"(h[0]), "h"(h[1]), "h"(h[2]), "h"(h[3]), "h"(h[4]), "h"(h[5]), "h"(h[6]), "h"(h[7])
               : "memory");
  (void)o;
  unsigned b[4];
  for (int k = 0; k < 4; ++k) b[k] = x[k] & 0xff7fff7fu;  // bf16 pairs, no inf/NaN
  asm volatile("red.global.min.noftz.v4.bf16x2 [%0], {%1, %2, %3, %4};" :: "l"(out + 4), "r"(b[0]), "r"(b[1]),
               "r"(b[2]), "r"(b[3]) : "memory");
  __half2 q0 = __floats2half2_rn((float)(x[0] & 7) * 0.25f, (float)(x[1] & 7) * 0.25f);
  __half2 q1 = __floats2half2_rn((float)(x[2] & 7) * 0.25f, -(float)(x[3] & 7) * 0.25f);
  unsigned u0 = *reinterpret_cast<unsigned*>(&q0), u1 = *reinterpret_cast<unsigned*>(&q1), d0, d1;
  asm volatile("atom.global.add.noftz.v2.f16x2 {%0, %1}, [%2], {%3, %4};" : "=r"(d0), "=r"(d1) : "l"(out + 8), "r"(u0), "r"(u1)
               : "memory");
  (void)d0;
  (void)d1;
  unsigned short e[4];
  for (int k = 0; k < 4; ++k) e[k] = __bfloat16_as_ushort(__float2bfloat16((float)(x[k] >> 31)));
  asm volatile("red.global.add.noftz.v4.bf16 [%0], {%1, %2, %3, %4};" :: "l"(out + 10), "h"(e[0]), "h"(e[1]), "h"(e[2]),
               "h"(e[3]) : "memory");
  // A 16-byte counter: every thread adds (1, t) with a compare-and-swap loop.
  Pair* counter = reinterpret_cast<Pair*>(out + 12);
  Pair seen = *counter;
  for (;;) {
    Pair want{seen.lo + 1, seen.hi + t};
    Pair got = atomicCAS(counter, seen, want);
    if (got.lo == seen.lo && got.hi == seen.hi) break;
    seen = got;
  }
  // A slot of its own: a CAS that succeeds, one that fails, an exchange.
  Pair* mine = reinterpret_cast<Pair*>(out + 16) + t;
  const Pair v{(unsigned long long)x[0] << 32 | x[1], (unsigned long long)x[2] << 32 | x[3]};
  const Pair w{v.hi ^ 0x5555, v.lo + 7};
  Pair r1 = atomicCAS(mine, Pair{0, 0}, v);
  Pair r2 = atomicCAS(mine, w, w);
  Pair r3 = atomicExch(mine, w);
  unsigned* res = out + 16 + 4 * 128 + 4 * t;
  res[0] = (unsigned)(r1.lo | r1.hi) | (unsigned)((r1.lo | r1.hi) >> 32);
  res[1] = (unsigned)r2.lo ^ (unsigned)(r2.hi >> 32);
  res[2] = (unsigned)(r2.lo >> 32) ^ (unsigned)r2.hi;
  res[3] = (unsigned)r3.lo ^ (unsigned)(r3.hi >> 7);
}
