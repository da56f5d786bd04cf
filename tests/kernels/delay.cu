// Busy-waits `ns` clock units (nanoseconds on the CPU device, cycles on a GPU): a slow kernel of a
// known duration for back-pressure and deadline tests.
extern "C" __global__ void delay(long long ns) {
  long long t0 = clock64();
  while (clock64() - t0 < ns) {
  }
}
