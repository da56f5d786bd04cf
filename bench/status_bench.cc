// Cost of returning Result<T> on the success path, against a plain return in the same run:
// Result is on every guest-facing call, so its happy path must stay near free.
#include <benchmark/benchmark.h>

#include "common/status.h"

namespace {

__attribute__((noinline)) int PlainAdd(int a, int b) { return a + b; }

__attribute__((noinline)) gpuwasm::Result<int> CheckedAdd(int a, int b) {
  if (a < 0) return gpuwasm::Status::InvalidArgument("negative");
  return a + b;
}

void BM_plain_return_baseline(benchmark::State& state) {
  int x = 1;
  for (auto _ : state) {
    x = PlainAdd(x & 0xffff, 3);
    benchmark::DoNotOptimize(x);
  }
}
BENCHMARK(BM_plain_return_baseline);

void BM_result_return(benchmark::State& state) {
  int x = 1;
  for (auto _ : state) {
    auto r = CheckedAdd(x & 0xffff, 3);
    x = *r;
    benchmark::DoNotOptimize(x);
  }
}
BENCHMARK(BM_result_return);

}  // namespace

BENCHMARK_MAIN();
