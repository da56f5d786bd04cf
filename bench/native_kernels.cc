#include "native_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace gpuwasm::bench {

void NativeVectorAdd(const float* a, const float* b, float* c, unsigned n) {
  for (unsigned i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

void NativeMatmul(const float* a, const float* b, float* c, unsigned n) {
  for (unsigned i = 0; i < n; ++i) {
    float* row = c + static_cast<size_t>(i) * n;
    std::fill(row, row + n, 0.0f);
    for (unsigned k = 0; k < n; ++k) {
      const float aik = a[static_cast<size_t>(i) * n + k];
      const float* bk = b + static_cast<size_t>(k) * n;
      for (unsigned j = 0; j < n; ++j) row[j] = std::fma(aik, bk[j], row[j]);
    }
  }
}

void NativeBlockReduce(const float* in, float* out, unsigned n) {
  for (unsigned block = 0; block < n / 256; ++block) {
    float s[256];
    std::memcpy(s, in + static_cast<size_t>(block) * 256, sizeof s);
    for (unsigned stride = 128; stride > 0; stride >>= 1)
      for (unsigned t = 0; t < stride; ++t) s[t] += s[t + stride];
    out[block] = s[0];
  }
}

void NativeWarpReduce(const int* in, int* total, int* per_warp, unsigned n) {
  int sum = 0;
  for (unsigned w = 0; w < n / 32; ++w) {
    int v = 0;
    for (unsigned l = 0; l < 32; ++l) v += in[w * 32 + l];
    per_warp[w] = v;
    sum += v;
  }
  *total += sum;
}

void NativeHistogram(const uint8_t* data, unsigned n, unsigned* bins) {
  unsigned local[256] = {};
  for (unsigned i = 0; i < n; ++i) ++local[data[i]];
  for (int b = 0; b < 256; ++b) bins[b] += local[b];
}

void NativeSoftmax(const float* in, float* out, unsigned rows, unsigned cols) {
  for (unsigned r = 0; r < rows; ++r) {
    const float* x = in + static_cast<size_t>(r) * cols;
    float* y = out + static_cast<size_t>(r) * cols;
    float m = -INFINITY;
    for (unsigned j = 0; j < cols; ++j) m = std::fmax(m, x[j]);
    float sum = 0.0f;
    for (unsigned j = 0; j < cols; ++j) {
      y[j] = std::exp(x[j] - m);
      sum += y[j];
    }
    const float inv = 1.0f / sum;
    for (unsigned j = 0; j < cols; ++j) y[j] *= inv;
  }
}

void NativeSaxpy(unsigned n, float a, const float* x, float* y) {
  for (unsigned i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
}

}  // namespace gpuwasm::bench
