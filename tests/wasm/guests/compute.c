/* compute: a freestanding guest (no libc, no imports) whose exported test_* functions return
 * hashes of deterministic computations. The differential test runs each in wabt's interpreter
 * and in gpuwasm's engine and requires equal results. */
#include <stdint.h>

#define EXPORT(name) __attribute__((export_name(#name))) int32_t name(void)

static uint32_t fnv(uint32_t h, uint32_t v) { return (h ^ v) * 16777619u; }

static uint32_t lcg_state;
static uint32_t lcg(void) { return lcg_state = lcg_state * 1664525u + 1013904223u; }

static uint8_t sieve[20000];
EXPORT(test_sieve) {
  for (int i = 0; i < 20000; i++) sieve[i] = 1;
  uint32_t count = 0, h = 2166136261u;
  for (int i = 2; i < 20000; i++) {
    if (!sieve[i]) continue;
    count++;
    h = fnv(h, (uint32_t)i);
    for (int j = i * 2; j < 20000; j += i) sieve[j] = 0;
  }
  return (int32_t)fnv(h, count);
}

static int32_t arr[3000];
static void quicksort(int32_t* a, int lo, int hi) {
  while (lo < hi) {
    int32_t p = a[(lo + hi) / 2];
    int i = lo, j = hi;
    while (i <= j) {
      while (a[i] < p) i++;
      while (a[j] > p) j--;
      if (i <= j) { int32_t t = a[i]; a[i] = a[j]; a[j] = t; i++; j--; }
    }
    if (j - lo < hi - i) { quicksort(a, lo, j); lo = i; } else { quicksort(a, i, hi); hi = j; }
  }
}
EXPORT(test_sort) {
  lcg_state = 12345;
  for (int i = 0; i < 3000; i++) arr[i] = (int32_t)lcg();
  quicksort(arr, 0, 2999);
  uint32_t h = 2166136261u;
  for (int i = 0; i < 3000; i++) {
    if (i > 0 && arr[i - 1] > arr[i]) return -1;
    h = fnv(h, (uint32_t)arr[i]);
  }
  return (int32_t)h;
}

static float ma[32 * 32], mb[32 * 32], mc[32 * 32];
EXPORT(test_matmul_f32) {
  lcg_state = 99;
  for (int i = 0; i < 32 * 32; i++) {
    ma[i] = (float)(lcg() % 1000) / 250.0f - 2.0f;
    mb[i] = (float)(lcg() % 1000) / 125.0f - 4.0f;
  }
  for (int i = 0; i < 32; i++)
    for (int j = 0; j < 32; j++) {
      float s = 0.0f;
      for (int k = 0; k < 32; k++) s += ma[i * 32 + k] * mb[k * 32 + j];
      mc[i * 32 + j] = s;
    }
  uint32_t h = 2166136261u;
  for (int i = 0; i < 32 * 32; i++) {
    union { float f; uint32_t u; } c = {mc[i]};
    h = fnv(h, c.u);
  }
  return (int32_t)h;
}

EXPORT(test_f64_series) {
  double s = 0.0, t = 1.0;
  for (int i = 1; i < 2000; i++) {
    t = t * 0.999 + 1.0 / (double)(i * i);
    s += (i & 1) ? t / (double)i : -t / (double)(i + 1);
  }
  union { double d; uint64_t u; } r = {s};
  return (int32_t)(r.u ^ (r.u >> 32));
}

EXPORT(test_int64_mix) {
  uint64_t x = 0x9e3779b97f4a7c15ull, acc = 0;
  for (int i = 0; i < 5000; i++) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    acc += (x % 1000003ull) * (uint64_t)(i + 1);
    acc ^= (uint64_t)((int64_t)x / 77);
  }
  return (int32_t)(acc ^ (acc >> 32));
}
