// The work of bench_cpu_device's kernels as a C++ developer would write it for one CPU thread:
// plain loops in the better order, built with -O2 -march=native (inline FMA, auto-vectorised), in
// native_kernels.cc. Each computes what its kernel computes, in the same arithmetic order where
// the order changes the result (a float sum's tree, an element's fma chain).
#pragma once

#include <cstdint>

namespace gpuwasm::bench {

void NativeVectorAdd(const float* a, const float* b, float* c, unsigned n);
// c = a * b, n x n row-major; every c[i][j] is the fma chain over k ascending (i-k-j loop order).
void NativeMatmul(const float* a, const float* b, float* c, unsigned n);
// out[block] = the sum of in[block * 256 ...] by the kernel's halving tree.
void NativeBlockReduce(const float* in, float* out, unsigned n);
// per_warp[w] = the sum of in[w * 32 ...]; *total = the sum of all.
void NativeWarpReduce(const int* in, int* total, int* per_warp, unsigned n);
// bins[b] += the number of bytes equal to b.
void NativeHistogram(const uint8_t* data, unsigned n, unsigned* bins);
// Each row of `rows` x `cols`: y = exp(x - max) / sum(exp(x - max)).
void NativeSoftmax(const float* in, float* out, unsigned rows, unsigned cols);
// y = a * x + y.
void NativeSaxpy(unsigned n, float a, const float* x, float* y);

}  // namespace gpuwasm::bench
