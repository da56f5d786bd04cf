/* softmax: row-wise softmax of a 64 x 1024 matrix on the device (dynamic shared memory), checked
 * against a double-precision softmax computed by the guest. */
#include <math.h>

#include "example.h"
#include "softmax_ptx.h"

#define ROWS 64
#define COLS 1024
#define THREADS 128
static float in[ROWS * COLS], out[ROWS * COLS];

int main(void) {
  unsigned seed = 11;
  for (int i = 0; i < ROWS * COLS; i++) in[i] = 4.0f * example_random(&seed);
  int32_t kernel = example_kernel(softmax_ptx, softmax_ptx_len, "softmax");
  int32_t din = CHECK(wcu_mem_alloc(sizeof in)), dout = CHECK(wcu_mem_alloc(sizeof out));
  CHECK(wcu_memcpy_htod(din, 0, in, sizeof in));
  wcu_arg args[] = {wcu_arg_buffer(din, 0), wcu_arg_buffer(dout, 0), wcu_arg_u32(COLS)};
  CHECK(wcu_launch(kernel, ROWS, 1, 1, THREADS, 1, 1, THREADS * sizeof(float), args, 3));
  CHECK(wcu_memcpy_dtoh(out, dout, 0, sizeof out));
  double worst = 0;
  for (int r = 0; r < ROWS; r++) {
    double m = -INFINITY, sum = 0;
    for (int j = 0; j < COLS; j++) m = fmax(m, in[r * COLS + j]);
    for (int j = 0; j < COLS; j++) sum += exp(in[r * COLS + j] - m);
    for (int j = 0; j < COLS; j++) {
      double want = exp(in[r * COLS + j] - m) / sum;
      double rel = fabs(out[r * COLS + j] - want) / want;
      if (rel > worst) worst = rel;
    }
  }
  int ok = worst < 1e-5;
  printf("softmax: %d rows x %d on %s: worst relative error %.2e %s\n", ROWS, COLS, example_device_name(), worst,
         ok ? "OK" : "FAILED");
  return !ok;
}
