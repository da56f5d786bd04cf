// 5-point Jacobi step on a w x h grid; the border is copied unchanged. 2-D grid of 16 x 16 blocks.
extern "C" __global__ void stencil5(const float* __restrict__ in, float* __restrict__ out, unsigned w, unsigned h) {
  unsigned x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  unsigned i = y * w + x;
  if (x == 0 || y == 0 || x == w - 1 || y == h - 1) { out[i] = in[i]; return; }
  out[i] = 0.2f * (in[i] + in[i - 1] + in[i + 1] + in[i - w] + in[i + w]);
}
