// Integer bit manipulation intrinsics and 32/64-bit integer arithmetic, eight results per element.
extern "C" __global__ void bitops(const unsigned* __restrict__ in, unsigned* __restrict__ out, unsigned long long* __restrict__ out64, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned v = in[i], w = in[(i + 1) % n];
  out[8 * i + 0] = __popc(v);
  out[8 * i + 1] = __clz(v);
  out[8 * i + 2] = __brev(v);
  out[8 * i + 3] = __ffs(v);
  out[8 * i + 4] = __byte_perm(v, w, 0x5140);
  out[8 * i + 5] = __funnelshift_l(v, w, i & 31);
  out[8 * i + 6] = (v / 7u) ^ (v % 13u) ^ min(v, w) ^ max(v, w);
  out[8 * i + 7] = __umulhi(v, w) + (unsigned)((int)v >> (i & 31)) + __popcll(((unsigned long long)v << 32) | w);
  unsigned long long x = ((unsigned long long)v << 32) | w;
  out64[2 * i + 0] = x * 0x9e3779b97f4a7c15ull + (x >> 17) + __clzll(x);
  out64[2 * i + 1] = (unsigned long long)((long long)x / 12345) ^ __brevll(x) ^ ((unsigned long long)v * w);
}
