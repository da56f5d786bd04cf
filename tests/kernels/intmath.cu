// Signed integer arithmetic: division and remainder by variables, mul.hi, mad.wide, abs, min/max.
extern "C" __global__ void intmath(const int* __restrict__ a, const int* __restrict__ b, long long* __restrict__ out, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i], y = b[i];
  int d = y == 0 ? 1 : y;
  out[4 * i + 0] = (long long)(x / d) * 1000 + x % d;
  out[4 * i + 1] = __mulhi(x, y) + abs(x - y);
  out[4 * i + 2] = (long long)x * (long long)y + (long long)min(x, y) - (long long)max(x, y);
  out[4 * i + 3] = ((long long)x << 20) / (long long)(d | 1) + (long long)((unsigned)x >> 3);
}
