// References of tests/conformance/realworld.cu (floats in double where the kernel's order of
// rounding is the compiler's: the cases compare within a tolerance).
#include <algorithm>
#include <bit>
#include <cmath>

#include "reference.h"

namespace gpuwasm::conformance {
namespace {

REFERENCE(realworld, spmv_csr_warp_per_row) {
  for (unsigned row = 0; row < 8; ++row) {
    const unsigned nnz = in[row] % 40, start = row * 40;
    // The kernel's order: each lane sums its strided share, then a shuffle tree over the lanes.
    std::vector<uint32_t> lanes(32);
    for (unsigned lane = 0; lane < 32; ++lane) {
      float sum = 0.0f;
      for (unsigned j = lane; j < nnz; j += 32) {
        const unsigned col = in[1024 + start + j] % 64;
        const float a = static_cast<float>(in[2048 + start + j] & 0xff) / 16.0f;
        const float x = static_cast<float>(in[3072 + col] & 0xff) / 32.0f;
        sum = std::fma(a, x, sum);
      }
      lanes[lane] = std::bit_cast<uint32_t>(sum);
    }
    for (unsigned off = 16; off > 0; off >>= 1) {
      auto o = ShflDown(lanes, off);
      for (unsigned l = 0; l < 32; ++l) {
        lanes[l] = std::bit_cast<uint32_t>(std::bit_cast<float>(lanes[l]) + std::bit_cast<float>(o[l]));
      }
    }
    out[row] = lanes[0];
  }
}

REFERENCE(realworld, nbody_accel) {
  double x[64], y[64], z[64], w[64];
  for (unsigned t = 0; t < 64; ++t) {
    x[t] = static_cast<float>(in[t * 4] & 0xfff) / 256.0f;
    y[t] = static_cast<float>(in[t * 4 + 1] & 0xfff) / 256.0f;
    z[t] = static_cast<float>(in[t * 4 + 2] & 0xfff) / 256.0f;
    w[t] = 1.0 + (in[t * 4 + 3] & 0xf);
  }
  for (unsigned t = 0; t < 64; ++t) {
    double ax = 0, ay = 0, az = 0;
    for (unsigned j = 0; j < 64; ++j) {
      const double dx = x[j] - x[t], dy = y[j] - y[t], dz = z[j] - z[t];
      const double inv = 1.0 / std::sqrt(dx * dx + dy * dy + dz * dz + 0.01);
      const double s = w[j] * inv * inv * inv;
      ax += std::fabs(dx) * s;
      ay += std::fabs(dy) * s;
      az += std::fabs(dz) * s;
    }
    out[t * 3] = std::bit_cast<uint32_t>(static_cast<float>(ax));
    out[t * 3 + 1] = std::bit_cast<uint32_t>(static_cast<float>(ay));
    out[t * 3 + 2] = std::bit_cast<uint32_t>(static_cast<float>(az));
  }
}

REFERENCE(realworld, stencil_1d_halo) {
  const int n = 256;
  for (int g = 0; g < n; ++g) {
    uint32_t s = 0;
    for (int k = -3; k <= 3; ++k) s += in[std::clamp(g + k, 0, n - 1)] & 0xffff;
    out[g] = s;
  }
}

}  // namespace
}  // namespace gpuwasm::conformance
