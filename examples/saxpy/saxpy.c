/* saxpy: y = 2.5 x + y for 2^20 floats with a small grid-stride launch; checks every element. */
#include <math.h>

#include "example.h"
#include "saxpy_ptx.h"

#define N (1 << 20)
static float x[N], y[N], out[N];

int main(void) {
  unsigned seed = 7;
  for (int i = 0; i < N; i++) {
    x[i] = example_random(&seed);
    y[i] = example_random(&seed);
  }
  const float alpha = 2.5f;
  int32_t kernel = example_kernel(saxpy_ptx, saxpy_ptx_len, "saxpy");
  int32_t dx = CHECK(wcu_mem_alloc(sizeof x)), dy = CHECK(wcu_mem_alloc(sizeof y));
  CHECK(wcu_memcpy_htod(dx, 0, x, sizeof x));
  CHECK(wcu_memcpy_htod(dy, 0, y, sizeof y));
  wcu_arg args[] = {wcu_arg_u32(N), wcu_arg_f32(alpha), wcu_arg_buffer(dx, 0), wcu_arg_buffer(dy, 0)};
  CHECK(wcu_launch(kernel, 64, 1, 1, 256, 1, 1, 0, args, 4));
  CHECK(wcu_memcpy_dtoh(out, dy, 0, sizeof out));
  int wrong = 0;
  for (int i = 0; i < N; i++) wrong += out[i] != fmaf(alpha, x[i], y[i]);
  printf("saxpy: %d elements on %s: %d wrong %s\n", N, example_device_name(), wrong, wrong ? "FAILED" : "OK");
  return wrong != 0;
}
