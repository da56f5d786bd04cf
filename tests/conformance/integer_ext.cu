// Integer instructions beyond plain arithmetic: extended-precision carry chains (big-integer code,
// and the slow path of every double-precision sin/cos), dot products, SIMD video instructions,
// conversions from a wider source register. Every kernel: (unsigned* out, const unsigned* in).

// case: carry_chain_add_sub grid=1 block=64 out=512
// 128-bit add and subtract through add.cc/addc.cc/addc and sub.cc/subc.cc/subc, plus the carry out.
extern "C" __global__ void carry_chain_add_sub(unsigned* out, const unsigned* in) {
  unsigned t = threadIdx.x;
  const unsigned* a = in + t * 8;
  const unsigned* b = in + 1024 + t * 8;
  unsigned s0, s1, s2, s3, c, d0, d1, d2, d3, bw;
  asm("add.cc.u32 %0, %6, %10;\n\t"
      "addc.cc.u32 %1, %7, %11;\n\t"
      "addc.cc.u32 %2, %8, %12;\n\t"
      "addc.cc.u32 %3, %9, %13;\n\t"
      "addc.u32 %4, 0, 0;\n\t"
      "mov.u32 %5, 0;"
      : "=r"(s0), "=r"(s1), "=r"(s2), "=r"(s3), "=r"(c), "=r"(bw)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]));
  asm("sub.cc.u32 %0, %5, %9;\n\t"
      "subc.cc.u32 %1, %6, %10;\n\t"
      "subc.cc.u32 %2, %7, %11;\n\t"
      "subc.cc.u32 %3, %8, %12;\n\t"
      "subc.u32 %4, 0, 0;"
      : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3), "=r"(bw)
      : "r"(a[4]), "r"(a[5]), "r"(a[6]), "r"(a[7]), "r"(b[4]), "r"(b[5]), "r"(b[6]), "r"(b[7]));
  unsigned* o = out + t * 8;
  o[0] = s0; o[1] = s1; o[2] = s2; o[3] = s3;
  o[4] = d0 ^ c; o[5] = d1; o[6] = d2 ^ bw; o[7] = d3;
}

// case: carry_chain_mad grid=1 block=64 out=256
// A 64x64->128-bit product from 32-bit limbs with mad.lo.cc / madc.hi.cc / madc.lo / madc.hi,
// and a 64-bit add.cc.u64 / addc.u64 chain.
extern "C" __global__ void carry_chain_mad(unsigned* out, const unsigned* in) {
  unsigned t = threadIdx.x;
  unsigned a0 = in[t * 4], a1 = in[t * 4 + 1], b0 = in[t * 4 + 2], b1 = in[t * 4 + 3];
  unsigned r0, r1, r2, r3;
  asm("mul.lo.u32 %0, %4, %6;\n\t"
      "mul.hi.u32 %1, %4, %6;\n\t"
      "mad.lo.cc.u32 %1, %5, %6, %1;\n\t"
      "madc.hi.u32 %2, %5, %6, 0;\n\t"
      "mad.lo.cc.u32 %1, %4, %7, %1;\n\t"
      "madc.hi.cc.u32 %2, %4, %7, %2;\n\t"
      "addc.u32 %3, 0, 0;\n\t"
      "mad.lo.cc.u32 %2, %5, %7, %2;\n\t"
      "madc.hi.u32 %3, %5, %7, %3;"
      : "=&r"(r0), "=&r"(r1), "=&r"(r2), "=&r"(r3)
      : "r"(a0), "r"(a1), "r"(b0), "r"(b1));
  unsigned long long x = (unsigned long long)in[2048 + t * 2] << 32 | in[2049 + t * 2], lo, hi;
  asm("add.cc.u64 %0, %2, %2;\n\t"
      "addc.u64 %1, 0, 0;"
      : "=l"(lo), "=l"(hi)
      : "l"(x));
  out[t * 4] = r0;
  out[t * 4 + 1] = r1 ^ (unsigned)lo;
  out[t * 4 + 2] = r2 ^ (unsigned)(lo >> 32);
  out[t * 4 + 3] = r3 ^ (unsigned)hi;
}

// case: dot_products grid=1 block=64 out=256
// __dp4a (signed and unsigned) and __dp2a_lo / __dp2a_hi.
extern "C" __global__ void dot_products(unsigned* out, const unsigned* in) {
  unsigned t = threadIdx.x;
  unsigned a = in[t], b = in[t + 64], c = in[t + 128];
  out[t * 4] = (unsigned)__dp4a((int)a, (int)b, (int)c);
  out[t * 4 + 1] = __dp4a(a, b, c);
  out[t * 4 + 2] = (unsigned)__dp2a_lo((int)a, (int)b, (int)c);
  out[t * 4 + 3] = __dp2a_hi(a, b, c);
}

// case: simd_video grid=1 block=64 out=512
// The SIMD video instructions on packed bytes and halfwords, with and without a secondary add.
extern "C" __global__ void simd_video(unsigned* out, const unsigned* in) {
  unsigned t = threadIdx.x;
  unsigned a = in[t], b = in[t + 64], c = in[t + 128], r[8];
  asm("vabsdiff4.u32.u32.u32 %0, %1, %2, %3;" : "=r"(r[0]) : "r"(a), "r"(b), "r"(c));
  asm("vabsdiff4.u32.u32.u32.add %0, %1, %2, %3;" : "=r"(r[1]) : "r"(a), "r"(b), "r"(c));
  asm("vadd4.s32.s32.s32.sat %0, %1, %2, %3;" : "=r"(r[2]) : "r"(a), "r"(b), "r"(c));
  asm("vsub2.u32.u32.u32 %0, %1, %2, %3;" : "=r"(r[3]) : "r"(a), "r"(b), "r"(c));
  asm("vavrg4.u32.u32.u32 %0, %1, %2, %3;" : "=r"(r[4]) : "r"(a), "r"(b), "r"(c));
  asm("vmax2.s32.s32.s32 %0, %1, %2, %3;" : "=r"(r[5]) : "r"(a), "r"(b), "r"(c));
  asm("vmin4.u32.u32.u32.add %0, %1, %2, %3;" : "=r"(r[6]) : "r"(a), "r"(b), "r"(c));
  asm("vset4.u32.u32.lt %0, %1, %2, %3;" : "=r"(r[7]) : "r"(a), "r"(b), "r"(c));
  for (int k = 0; k < 8; ++k) out[t * 8 + k] = r[k];
}

// case: cvt_from_wider_register grid=1 block=64 out=256
// cvt whose source register is wider than its type (the low bits are converted), as nvcc emits it
// for casts of a value it keeps in a 64-bit register.
extern "C" __global__ void cvt_from_wider_register(unsigned* out, const unsigned* in) {
  unsigned t = threadIdx.x;
  unsigned long long x = (unsigned long long)in[t] << 32 | in[t + 64];
  long long s;
  unsigned long long u;
  unsigned short h;
  asm("cvt.s64.s32 %0, %1;" : "=l"(s) : "l"(x));
  asm("cvt.u64.u16 %0, %1;" : "=l"(u) : "l"(x));
  asm("cvt.u16.u32 %0, %1;" : "=h"(h) : "l"(x));
  out[t * 4] = (unsigned)s;
  out[t * 4 + 1] = (unsigned)(s >> 32);
  out[t * 4 + 2] = (unsigned)u ^ (unsigned)(u >> 32);
  out[t * 4 + 3] = h;
}

// case: cvt_pack_saturating grid=1 block=64 out=128
// cvt.pack.sat: two 32-bit integers saturated to u8/s8 (onto c's low bits) or u16/s16, packed.
extern "C" __global__ void cvt_pack_saturating(unsigned* out, const unsigned* in) {
  unsigned t = threadIdx.x;
  int a = (int)in[t] >> (t & 15), b = (int)in[t + 64] >> (t >> 2), c = (int)in[t + 128];
  unsigned r8, r16;
  asm("{ .reg .b32 lo; cvt.pack.sat.u8.s32.b32 lo, %2, %3, 0; cvt.pack.sat.s8.s32.b32 %0, %2, %3, lo; }"
      : "=r"(r8) : "r"(c), "r"(a), "r"(b));
  asm("cvt.pack.sat.s16.s32 %0, %1, %2;" : "=r"(r16) : "r"(a), "r"(b));
  unsigned u16;
  asm("cvt.pack.sat.u16.s32 %0, %1, %2;" : "=r"(u16) : "r"(b), "r"(c));
  out[t * 2] = r8;
  out[t * 2 + 1] = r16 ^ (u16 * 3u);
}

// case: mul24_sad grid=1 block=64 out=768
// 24-bit multiplies (__mul24 and __umul24, which nvcc writes as mul.lo of the extended low 24
// bits, and mul24/mad24 .hi/.lo with mad24.hi.sat), and sad (__sad, __usad, 16- and 64-bit).
extern "C" __global__ void mul24_sad(unsigned* out, const unsigned* in) {
  unsigned t = threadIdx.x;
  unsigned a = in[t], b = in[t + 64], c = in[t + 128];
  unsigned r[12];
  r[0] = (unsigned)__mul24((int)a, (int)b);
  r[1] = __umul24(a, b);
  asm("mul24.lo.s32 %0, %1, %2;" : "=r"(r[2]) : "r"(a), "r"(b));
  r[3] = __sad((int)a, (int)b, c);
  r[4] = __usad(a, b, c);
  asm("mul24.hi.s32 %0, %1, %2;" : "=r"(r[5]) : "r"(a), "r"(b));
  asm("mul24.hi.u32 %0, %1, %2;" : "=r"(r[6]) : "r"(a), "r"(b));
  asm("mad24.hi.sat.s32 %0, %1, %2, %3;" : "=r"(r[7]) : "r"(a), "r"(b), "r"(c));
  asm("mad24.lo.u32 %0, %1, %2, %3;" : "=r"(r[8]) : "r"(a), "r"(b), "r"(c));
  unsigned short h;
  asm("sad.u16 %0, %1, %2, %3;" : "=h"(h) : "h"((unsigned short)a), "h"((unsigned short)b), "h"((unsigned short)c));
  r[9] = h;
  unsigned long long w;
  asm("sad.s64 %0, %1, %2, %3;" : "=l"(w) : "l"((long long)(int)a * 7), "l"((long long)(int)b << 20), "l"((unsigned long long)c));
  r[10] = (unsigned)w;
  r[11] = (unsigned)(w >> 32);
  for (int k = 0; k < 12; ++k) out[t * 12 + k] = r[k];
}

// case: bit_masks grid=1 block=64 out=512
// __fns (the n-th set bit from a base, up, down or at it), szext and bmsk in both modes, with
// widths and positions past 31.
extern "C" __global__ void bit_masks(unsigned* out, const unsigned* in) {
  unsigned t = threadIdx.x;
  unsigned a = in[t], b = in[t + 64] & 63, c = in[t + 128] & 63;
  unsigned r[8];
  r[0] = __fns(a, t & 31, (int)(in[t + 192] % 9) - 4);
  r[1] = __fns(a, (t * 7) & 31, 0);
  asm("szext.clamp.s32 %0, %1, %2;" : "=r"(r[2]) : "r"(a), "r"(b));
  asm("szext.wrap.s32 %0, %1, %2;" : "=r"(r[3]) : "r"(a), "r"(b));
  asm("szext.clamp.u32 %0, %1, %2;" : "=r"(r[4]) : "r"(a), "r"(c));
  asm("szext.wrap.u32 %0, %1, %2;" : "=r"(r[5]) : "r"(a), "r"(c));
  asm("bmsk.clamp.b32 %0, %1, %2;" : "=r"(r[6]) : "r"(b), "r"(c));
  asm("bmsk.wrap.b32 %0, %1, %2;" : "=r"(r[7]) : "r"(b), "r"(c));
  for (int k = 0; k < 8; ++k) out[t * 8 + k] = r[k];
}

// case: set_slct grid=1 block=64 out=640
// set (a comparison as all ones or 1.0f, with a predicate combined), setp with the unsigned
// comparisons lo/ls/hi and two destinations, slct on an s32 or f32 (with and without .ftz).
extern "C" __global__ void set_slct(unsigned* out, const unsigned* in) {
  unsigned t = threadIdx.x;
  unsigned a = in[t], b = in[t + 64], c = in[t + 128];
  float fa = __fmul_rn((float)(int)a, 1e-9f), fb = __fmul_rn((float)(int)b, 1e-9f);
  unsigned r[10];
  asm("set.lt.u32.s32 %0, %1, %2;" : "=r"(r[0]) : "r"(a), "r"(b));
  asm("set.hi.u32.u32 %0, %1, %2;" : "=r"(r[1]) : "r"(a), "r"(b));
  asm("set.ge.f32.f32 %0, %1, %2;" : "=r"(r[2]) : "f"(fa), "f"(fb));
  asm("{ .reg .pred p; setp.ls.u32 p, %3, 0x80000000; set.gtu.and.s32.f32 %0, %1, %2, !p; }"
      : "=r"(r[3]) : "f"(fa), "f"(fb), "r"(c));
  asm("{ .reg .pred p, q; setp.lo.u32 p|q, %1, %2; selp.u32 %0, 1, 2, q; }" : "=r"(r[4]) : "r"(a), "r"(b));
  asm("slct.u32.s32 %0, %1, %2, %3;" : "=r"(r[5]) : "r"(a), "r"(b), "r"(c));
  float f;
  asm("slct.f32.f32 %0, %1, %2, %3;" : "=f"(f) : "f"(fa), "f"(fb), "f"(__fsub_rn(fa, fb)));
  r[6] = __float_as_uint(f);
  asm("slct.ftz.u32.f32 %0, %1, %2, %3;" : "=r"(r[7]) : "r"(a), "r"(b), "f"(__uint_as_float(c & 0x807fffff)));
  asm("slct.u32.f32 %0, %1, %2, %3;" : "=r"(r[8]) : "r"(a), "r"(b), "f"(__uint_as_float(c & 0x807fffff)));
  asm("set.ne.xor.u32.u16 %0, %1, %2, 1;" : "=r"(r[9]) : "h"((unsigned short)a), "h"((unsigned short)(a >> 3)));
  for (int k = 0; k < 10; ++k) out[t * 10 + k] = r[k];
}

// case: scalar_video grid=1 block=64 out=1152
// The scalar video instructions with byte/halfword selectors, .sat, the secondary .add/.min/.max,
// the merge into c at a destination selector, vshl/vshr .clamp/.wrap, vset, and vmad with
// negated operands, .po and the .shr7/.shr15 scales.
extern "C" __global__ void scalar_video(unsigned* out, const unsigned* in) {
  unsigned t = threadIdx.x;
  unsigned a = in[t], b = in[t + 64], c = in[t + 128], sh = in[t + 192] & 63, r[18];
  asm("vadd.s32.u32.s32.sat %0, %1.b0, %2.h1;" : "=r"(r[0]) : "r"(a), "r"(b));
  asm("vsub.u32.s32.s32.sat.add %0, %1, %2, %3;" : "=r"(r[1]) : "r"(a), "r"(b), "r"(c));
  asm("vabsdiff.u32.u32.u32.min %0, %1.h0, %2.h1, %3;" : "=r"(r[2]) : "r"(a), "r"(b), "r"(c));
  asm("vmin.s32.s32.s32.max %0, %1, %2.b2, %3;" : "=r"(r[3]) : "r"(a), "r"(b), "r"(c));
  asm("vmax.u32.u32.s32 %0.h1, %1.b3, %2, %3;" : "=r"(r[4]) : "r"(a), "r"(b), "r"(c));
  asm("vadd.s32.s32.s32.sat %0.b2, %1.h0, %2.h1, %3;" : "=r"(r[5]) : "r"(a), "r"(b), "r"(c));
  asm("vshl.u32.u32.u32.clamp.sat %0, %1.b1, %2;" : "=r"(r[6]) : "r"(a), "r"(sh));
  asm("vshr.s32.s32.u32.wrap %0, %1, %2;" : "=r"(r[7]) : "r"(a), "r"(sh));
  asm("vshl.s32.s32.u32.wrap.add %0, %1.h1, %2, %3;" : "=r"(r[8]) : "r"(a), "r"(sh), "r"(c));
  asm("vset.u32.s32.lt %0, %1.b1, %2.b1;" : "=r"(r[9]) : "r"(a), "r"(b));
  asm("vset.s32.u32.ne.add %0, %1.h0, %2.h0, %3;" : "=r"(r[10]) : "r"(a), "r"(b), "r"(c));
  asm("vset.u32.u32.ge %0.b3, %1, %2, %3;" : "=r"(r[11]) : "r"(a), "r"(b), "r"(c));
  asm("vmad.u32.u32.u32.shr15 %0, %1.h0, %2.h0, %3;" : "=r"(r[12]) : "r"(a), "r"(b), "r"(c));
  asm("vmad.s32.s32.u32.sat %0, %1.b1, %2.h0, -%3;" : "=r"(r[13]) : "r"(a), "r"(b), "r"(c));
  asm("vmad.s32.u32.u32 %0, -%1.h1, %2.b0, %3;" : "=r"(r[14]) : "r"(a), "r"(b), "r"(c));
  asm("vmad.u32.u32.u32.po.sat.shr7 %0, %1, %2.b2, %3;" : "=r"(r[15]) : "r"(a), "r"(b), "r"(c));
  asm("vshr.u32.u32.u32.clamp.max %0, %1, %2, %3;" : "=r"(r[16]) : "r"(a), "r"(sh), "r"(c));
  asm("vmax.s32.s32.s32.sat %0, %1, %2;" : "=r"(r[17]) : "r"(a), "r"(b));
  for (int k = 0; k < 18; ++k) out[t * 18 + k] = r[k];
}

// case: simd_video_selectors grid=1 block=64 out=384
// SIMD video with element selectors on a and b (any element of {b, a}) and a mask on d (the
// unmasked elements keep c's), with and without the secondary .add.
extern "C" __global__ void simd_video_selectors(unsigned* out, const unsigned* in) {
  unsigned t = threadIdx.x;
  unsigned a = in[t], b = in[t + 64], c = in[t + 128], r[6];
  asm("vadd2.u32.u32.u32.sat %0.h1, %1.h32, %2.h01, %3;" : "=r"(r[0]) : "r"(a), "r"(b), "r"(c));
  asm("vsub4.s32.s32.s32 %0.b31, %1.b7654, %2.b0123, %3;" : "=r"(r[1]) : "r"(a), "r"(b), "r"(c));
  asm("vmin2.s32.s32.s32.add %0.h0, %1.h11, %2.h22, %3;" : "=r"(r[2]) : "r"(a), "r"(b), "r"(c));
  asm("vabsdiff4.u32.u32.u32.add %0.b320, %1.b2301, %2.b4567, %3;" : "=r"(r[3]) : "r"(a), "r"(b), "r"(c));
  asm("vset2.u32.u32.gt %0.h1, %1.h01, %2.h32, %3;" : "=r"(r[4]) : "r"(a), "r"(b), "r"(c));
  asm("vavrg4.u32.u32.u32 %0.b0, %1.b0000, %2.b7777, %3;" : "=r"(r[5]) : "r"(a), "r"(b), "r"(c));
  for (int k = 0; k < 6; ++k) out[t * 6 + k] = r[k];
}

// case: cvt_pack_narrow grid=1 block=64 out=128
// cvt.pack.sat to 4- and 2-bit types: a and b saturated, a above b, c's low bits above them.
extern "C" __global__ void cvt_pack_narrow(unsigned* out, const unsigned* in) {
  unsigned t = threadIdx.x;
  int a = (int)in[t] >> (24 + (t & 7)), b = (int)in[t + 64] >> (26 + (t >> 3 & 3)), c = (int)in[t + 128];
  unsigned r4, r2;
  asm("{ .reg .b32 lo; cvt.pack.sat.u4.s32.b32 lo, %2, %3, %1; cvt.pack.sat.s4.s32.b32 %0, %3, %2, lo; }"
      : "=r"(r4) : "r"(c), "r"(a), "r"(b));
  asm("{ .reg .b32 lo; cvt.pack.sat.s2.s32.b32 lo, %2, %3, %1; cvt.pack.sat.u2.s32.b32 %0, %2, %3, lo; }"
      : "=r"(r2) : "r"(c), "r"(a), "r"(b));
  out[t * 2] = r4;
  out[t * 2 + 1] = r2;
}
