/* matmul: multiplies two 128 x 128 matrices on the device and checks every element against the
 * same computation in the guest (same fma order: bit-exact). */
#include <math.h>

#include "example.h"
#include "matmul_ptx.h"

#define N 128
static float a[N * N], b[N * N], c[N * N];

int main(void) {
  unsigned seed = 5;
  for (int i = 0; i < N * N; i++) {
    a[i] = example_random(&seed);
    b[i] = example_random(&seed);
  }
  int32_t kernel = example_kernel(matmul_ptx, matmul_ptx_len, "matmul");
  int32_t da = CHECK(wcu_mem_alloc(sizeof a)), db = CHECK(wcu_mem_alloc(sizeof b)), dc = CHECK(wcu_mem_alloc(sizeof c));
  CHECK(wcu_memcpy_htod(da, 0, a, sizeof a));
  CHECK(wcu_memcpy_htod(db, 0, b, sizeof b));
  wcu_arg args[] = {wcu_arg_buffer(da, 0), wcu_arg_buffer(db, 0), wcu_arg_buffer(dc, 0), wcu_arg_u32(N)};
  CHECK(wcu_launch(kernel, N / 16, N / 16, 1, 16, 16, 1, 0, args, 4));
  CHECK(wcu_memcpy_dtoh(c, dc, 0, sizeof c));
  int wrong = 0;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      float acc = 0.0f;
      for (int k = 0; k < N; k++) acc = fmaf(a[i * N + k], b[k * N + j], acc);
      wrong += c[i * N + j] != acc;
    }
  printf("matmul: %dx%d times %dx%d on %s: %d wrong %s\n", N, N, N, N, example_device_name(), wrong, wrong ? "FAILED" : "OK");
  return wrong != 0;
}
