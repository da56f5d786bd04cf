/* reduction: sums 2^20 floats on the device (shared memory, shuffles, atomics) and compares the
 * result with a double-precision sum computed by the guest. */
#include <math.h>

#include "example.h"
#include "reduction_ptx.h"

#define N (1 << 20)
static float in[N];

int main(void) {
  unsigned seed = 3;
  double want = 0;
  for (int i = 0; i < N; i++) {
    in[i] = example_random(&seed);
    want += in[i];
  }
  int32_t kernel = example_kernel(reduction_ptx, reduction_ptx_len, "reduce_sum");
  int32_t din = CHECK(wcu_mem_alloc(sizeof in)), dtotal = CHECK(wcu_mem_alloc(sizeof(float)));
  CHECK(wcu_memcpy_htod(din, 0, in, sizeof in));
  CHECK(wcu_memset_d8(dtotal, 0, 0, sizeof(float)));
  wcu_arg args[] = {wcu_arg_buffer(din, 0), wcu_arg_buffer(dtotal, 0), wcu_arg_u32(N)};
  CHECK(wcu_launch(kernel, 128, 1, 1, 256, 1, 1, 0, args, 3));
  float got = 0;
  CHECK(wcu_memcpy_dtoh(&got, dtotal, 0, sizeof got));
  double err = fabs(got - want);
  int ok = err <= 1e-3 * (1 + fabs(want));  /* float atomics: summation order varies */
  printf("reduction: sum of %d floats on %s = %.4f (double reference %.4f) %s\n", N, example_device_name(), got, want,
         ok ? "OK" : "FAILED");
  return !ok;
}
