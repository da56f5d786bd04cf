/* vector_add: adds two vectors of 2^20 floats on the device and checks every element. */
#include <math.h>

#include "example.h"
#include "vector_add_ptx.h"

#define N (1 << 20)
static float a[N], b[N], c[N];

int main(void) {
  unsigned seed = 1;
  for (int i = 0; i < N; i++) {
    a[i] = example_random(&seed);
    b[i] = example_random(&seed);
  }
  int32_t kernel = example_kernel(vector_add_ptx, vector_add_ptx_len, "vector_add");
  int32_t da = CHECK(wcu_mem_alloc(sizeof a)), db = CHECK(wcu_mem_alloc(sizeof b)), dc = CHECK(wcu_mem_alloc(sizeof c));
  CHECK(wcu_memcpy_htod(da, 0, a, sizeof a));
  CHECK(wcu_memcpy_htod(db, 0, b, sizeof b));
  wcu_arg args[] = {wcu_arg_buffer(da, 0), wcu_arg_buffer(db, 0), wcu_arg_buffer(dc, 0), wcu_arg_u32(N)};
  CHECK(wcu_launch(kernel, N / 256, 1, 1, 256, 1, 1, 0, args, 4));
  CHECK(wcu_memcpy_dtoh(c, dc, 0, sizeof c));
  int wrong = 0;
  for (int i = 0; i < N; i++) wrong += c[i] != a[i] + b[i];
  printf("vector_add: %d elements on %s: %d wrong %s\n", N, example_device_name(), wrong, wrong ? "FAILED" : "OK");
  return wrong != 0;
}
