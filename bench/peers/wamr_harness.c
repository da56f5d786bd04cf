/* Same-run comparison of WAMR's LLVM AOT with native code on the engine benchmark's workload
 * (bench/programs/workload.c): each program's median time as a WAMR AOT guest and built natively
 * with -O2, interleaved, and the geomean of the ratios. Built and run by bench/peers/wamr.sh
 * against a WAMR checkout beside the project (never part of the build). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>

#include "wasm_export.h"

/* The programs, and whether each returns float bits (bench_engine.cc's list). */
#define PROGRAMS(X)                                                                              \
  X(matmul, 1) X(sort, 0) X(hash, 0) X(parse, 0) X(crc32, 0) X(nbody, 1) X(lz, 0) X(graph, 0)    \
  X(bignum, 0) X(words, 0)
#define DECLARE(name, fp) int32_t bench_##name(void);
PROGRAMS(DECLARE)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Exactly, or for float bits within a relative 1e-4: native code may fuse multiply-adds. */
static int same_result(int32_t a, int32_t b, int fp) {
  if (!fp) return a == b;
  float x, y;
  memcpy(&x, &a, sizeof x);
  memcpy(&y, &b, sizeof y);
  return fabsf(x - y) <= 1e-4f * fmaxf(fabsf(x), fabsf(y));
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return v[n / 2];
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s workload.aot [reps]\n", argv[0]);
    return 2;
  }
  int reps = argc > 2 ? atoi(argv[2]) : 15;
  if (reps < 1 || reps > 1000) reps = 15;
  FILE* f = fopen(argv[1], "rb");
  if (f == NULL) {
    perror(argv[1]);
    return 1;
  }
  static uint8_t buf[16 << 20];
  uint32_t size = (uint32_t)fread(buf, 1, sizeof buf, f);
  fclose(f);
  char err[256];
  if (!wasm_runtime_init()) return 1;
  wasm_module_t module = wasm_runtime_load(buf, size, err, sizeof err);
  if (module == NULL) {
    fprintf(stderr, "load: %s\n", err);
    return 1;
  }
  wasm_module_inst_t inst = wasm_runtime_instantiate(module, 256 << 10, 0, err, sizeof err);
  if (inst == NULL) {
    fprintf(stderr, "instantiate: %s\n", err);
    return 1;
  }
  wasm_exec_env_t env = wasm_runtime_create_exec_env(inst, 256 << 10);
  struct {
    const char* name;
    int fp;
    int32_t (*native)(void);
  } programs[] = {
#define ENTRY(name, fp) {"bench_" #name, fp, bench_##name},
      PROGRAMS(ENTRY)};
  double geo = 1;
  int n = (int)(sizeof programs / sizeof programs[0]);
  printf("%-14s %12s %12s %10s\n", "program", "WAMR AOT", "native -O2", "ratio");
  for (int p = 0; p < n; p++) {
    wasm_function_inst_t fn = wasm_runtime_lookup_function(inst, programs[p].name);
    if (fn == NULL) {
      fprintf(stderr, "%s: not exported\n", programs[p].name);
      return 1;
    }
    double* tw = calloc((size_t)reps, sizeof(double));
    double* tn = calloc((size_t)reps, sizeof(double));
    int32_t want = programs[p].native();
    for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
      uint32_t args[1] = {0};
      double t0 = now();
      if (!wasm_runtime_call_wasm(env, fn, 0, args)) {
        fprintf(stderr, "%s: %s\n", programs[p].name, wasm_runtime_get_exception(inst));
        return 1;
      }
      double t1 = now();
      int32_t got = (int32_t)args[0];
      programs[p].native();
      double t2 = now();
      if (!same_result(got, want, programs[p].fp)) {
        fprintf(stderr, "%s: WAMR computed %d, native %d\n", programs[p].name, got, want);
        return 1;
      }
      if (r >= 0) tw[r] = t1 - t0, tn[r] = t2 - t1;
    }
    double* ratio = calloc((size_t)reps, sizeof(double));
    for (int r = 0; r < reps; r++) ratio[r] = tw[r] / tn[r];
    double q = median(ratio, reps), w = median(tw, reps), nat = median(tn, reps);
    geo *= q; /* the median of the per-run ratios, as bench_engine reports gpuwasm's */
    printf("%-14s %9.2f ms %9.2f ms %9.2fx\n", programs[p].name, w * 1e3, nat * 1e3, q);
    free(ratio);
    free(tw);
    free(tn);
  }
  printf("%-14s %12s %12s %9.2fx\n", "geomean", "", "", pow(geo, 1.0 / n));
  return 0;
}
