// Control flow that splits and rejoins a thread block in every way the CPU device's CTA-wide
// executor handles differently: a uniform if, an if some threads take (a region), an if inside an
// if, a loop inside an if, a guarded store, an early return of some threads, and barriers after
// each. Every thread writes one result; blockDim.x must be 256.
extern "C" __global__ void divergence(const int* __restrict__ in, int* __restrict__ out, int* __restrict__ order,
                                      unsigned n) {
  __shared__ int s[256];
  unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  int v = i < n ? in[i] : 0;
  if (blockIdx.x == 1) v += 1000;  // uniform over the block
  if (t % 3 == 0) v *= 2;          // some threads
  if (t & 1) {
    if (t & 2) v -= 7;  // nested
  }
  if (t % 5 == 1) {
    for (int k = 0; k < (int)(t % 7); ++k) v += k;  // a loop inside the if
  }
  s[t] = v;
  __syncthreads();
  int w = s[255 - t];
  __syncthreads();                   // (threads 192..255 read what threads 0..63 write next)
  if (t < 64) s[t] = w + s[t + 64];  // guarded store
  __syncthreads();
  if (i >= n) return;  // some threads of the last block leave
  out[i] = s[t] + w;
  if (t == 0) order[blockIdx.x] = s[0];
}

// A value every thread computes alike, changed by some threads in a loop inside an if (which the
// CTA-wide executor hands to the warps), then used by every thread after a barrier: from there on
// it is no longer one value for the block. blockDim.x must be 256.
extern "C" __global__ void uniform_after_divergence(const int* __restrict__ in, int* __restrict__ out, int k) {
  unsigned t = threadIdx.x;
  int u = static_cast<int>(blockIdx.x) * k + 3;  // alike in every thread of the block
  if (t % 3 == 0) {
    for (unsigned j = 0; j < t % 5; ++j) u += in[j];
  }
  __syncthreads();
  int v = u * 7 + k;
  out[blockIdx.x * blockDim.x + t] = v;
}
