/* The engine benchmark's workload, compiled twice: natively (-O2) and as a guest. Each bench_*
 * does a fixed amount of deterministic work and returns a checksum, so the two builds can be
 * checked to compute the same thing. Freestanding: no libc, no imports. */
#include <stdint.h>

#ifdef __wasm__
#define EXPORT(name) __attribute__((export_name(#name)))
#else
#define EXPORT(name)
#endif

#define N 96
static float A[N * N], B[N * N], C[N * N];

EXPORT(bench_matmul) int32_t bench_matmul(void) {
  uint32_t s = 1;
  for (int i = 0; i < N * N; i++) {
    s = s * 1664525u + 1013904223u;
    A[i] = (float)(s >> 16) / 65536.0f;
    s = s * 1664525u + 1013904223u;
    B[i] = (float)(s >> 16) / 65536.0f;
  }
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      float acc = 0.0f;
      for (int k = 0; k < N; k++) acc += A[i * N + k] * B[k * N + j];
      C[i * N + j] = acc;
    }
  union { float f; uint32_t u; } u = {C[N * N / 2 + 7]};
  return (int32_t)u.u;
}

#define M 40000
static int32_t V[M];
static void sort(int32_t* a, int lo, int hi) {
  while (hi - lo > 16) {
    int32_t p = a[(lo + hi) / 2];
    int i = lo, j = hi;
    while (i <= j) {
      while (a[i] < p) i++;
      while (a[j] > p) j--;
      if (i <= j) { int32_t t = a[i]; a[i] = a[j]; a[j] = t; i++; j--; }
    }
    if (j - lo < hi - i) { sort(a, lo, j); lo = i; } else { sort(a, i, hi); hi = j; }
  }
  for (int i = lo + 1; i <= hi; i++) {
    int32_t v = a[i];
    int j = i - 1;
    while (j >= lo && a[j] > v) { a[j + 1] = a[j]; j--; }
    a[j + 1] = v;
  }
}

EXPORT(bench_sort) int32_t bench_sort(void) {
  uint32_t s = 7;
  for (int i = 0; i < M; i++) { s ^= s << 13; s ^= s >> 17; s ^= s << 5; V[i] = (int32_t)s; }
  sort(V, 0, M - 1);
  return V[M / 3] ^ V[M - 1];
}

static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

/* A SHA-256-style compression loop over generated data: integer, rotate and memory heavy. */
EXPORT(bench_hash) int32_t bench_hash(void) {
  static uint32_t w[64];
  uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  for (uint32_t block = 0; block < 6000; block++) {
    for (int i = 0; i < 16; i++) w[i] = block * 2654435761u + (uint32_t)i * 40503u;
    for (int i = 16; i < 64; i++) {
      uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
      uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + w[i] + 0x428a2f98u * (uint32_t)i;
      uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
  }
  return (int32_t)(h[0] ^ h[7]);
}
