// Never ends unless flag[0] becomes zero: for cancellation (deadline) tests.
extern "C" __global__ void spin(volatile int* flag, int* out) {
  int n = 0;
  while (flag[0] != 0) ++n;
  out[threadIdx.x] = n;
}
