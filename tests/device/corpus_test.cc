// The kernel conformance corpus (tests/kernels/*.cu) on the CPU device, for both the sm_80 and
// the sm_90 PTX nvcc produces. Each kernel is checked against a C++ reference on random inputs:
// exactly where the arithmetic is exact, within ULP bounds where it is not.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <random>

#include "kernel_harness.h"

namespace gpuwasm::testing {
namespace {

using device::Dim3;

// Parameter: the PTX's arch ("sm_80", "sm_90"), with "+native" for the CPU device running the
// kernels it can translate as native code.
class Corpus : public ::testing::TestWithParam<std::string> {
 protected:
  std::string arch() const { return GetParam().substr(0, GetParam().find('+')); }
  bool native() const { return GetParam().find("+native") != std::string::npos; }
  // "+printed": the PTX printed again from its tree; "+fenced": instrumented (ptx/instrument.h).
  PtxForm form() const {
    if (GetParam().find("+printed") != std::string::npos) return PtxForm::kPrinted;
    return GetParam().find("+fenced") != std::string::npos ? PtxForm::kInstrumented : PtxForm::kAsGiven;
  }
  // Native code is the CPU device's tier: on another test device ($GPUWASM_TEST_DEVICE=cuda:0)
  // those instances say they skip instead of running on the CPU under the other device's name.
  void SetUp() override {
    if (native() && !KernelHarness::TestDeviceIsCpu()) GTEST_SKIP() << "native code is the CPU device's tier";
  }
  KernelHarness h{native() ? KernelHarness::SharedNativeCpuDevice() : nullptr, form()};
  std::mt19937 rng{12345};
  std::vector<float> RandomFloats(size_t n, float lo, float hi) {
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng);
    return v;
  }
  std::vector<int> RandomInts(size_t n, int lo, int hi) {
    std::uniform_int_distribution<int> d(lo, hi);
    std::vector<int> v(n);
    for (auto& x : v) x = d(rng);
    return v;
  }
};

TEST_P(Corpus, vector_add) {
  auto k = h.Load("vector_add", arch(), "vector_add");
  ASSERT_NE(k, nullptr);
  unsigned n = 10000;  // not a multiple of the block: the tail threads must do nothing
  auto a = RandomFloats(n, -100, 100), b = RandomFloats(n, -100, 100);
  auto pa = h.Upload(a), pb = h.Upload(b), pc = h.Zeros<float>(n + 16);
  ASSERT_TRUE(h.Run(*k, {(n + 255) / 256}, {256}, Params(k->signature()).Add(pa).Add(pb).Add(pc).Add(n).Build()).ok());
  auto c = h.Download<float>(pc, n + 16);
  for (unsigned i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << i;
  for (unsigned i = n; i < n + 16; ++i) ASSERT_EQ(c[i], 0.0f) << "wrote past n at " << i;
}

TEST_P(Corpus, saxpy_grid_stride) {
  auto k = h.Load("saxpy", arch(), "saxpy");
  ASSERT_NE(k, nullptr);
  unsigned n = 50000;
  float alpha = 2.5f;
  auto x = RandomFloats(n, -10, 10), y = RandomFloats(n, -10, 10);
  auto px = h.Upload(x), py = h.Upload(y);
  ASSERT_TRUE(h.Run(*k, {16}, {128}, Params(k->signature()).Add(n).Add(alpha).Add(px).Add(py).Build()).ok());
  auto out = h.Download<float>(py, n);
  for (unsigned i = 0; i < n; ++i) {
    float want = alpha * x[i] + y[i];           // nvcc emits an unrounded mul+add...
    float fused = std::fma(alpha, x[i], y[i]);  // ...which ptxas may also fuse
    ASSERT_TRUE(out[i] == want || out[i] == fused) << i << ": " << out[i] << " vs " << want;
  }
}

TEST_P(Corpus, math_functions_within_cuda_ulp_bounds) {
  auto k = h.Load("mathfn", arch(), "mathfn");
  ASSERT_NE(k, nullptr);
  unsigned n = 4096;
  auto x = RandomFloats(n, -8, 8);
  x[0] = 0.0f;
  x[1] = 1.0f;
  x[2] = -3.14159f;
  x[3] = 1e-6f;
  // Large arguments take sinf's slow path: Payne-Hanek reduction with the module-scope table
  // __cudart_i2opi_f (.global with an initialiser) and a .local depot.
  x[4] = 123456.7f;
  x[5] = -98765.43f;
  x[6] = 1.0e7f;
  x[7] = 3.0e9f;
  auto px = h.Upload(x), po = h.Zeros<float>(6 * n);
  ASSERT_TRUE(h.Run(*k, {n / 128}, {128}, Params(k->signature()).Add(px).Add(po).Add(n).Build()).ok());
  auto out = h.Download<float>(po, 6 * n);
  // CUDA's documented maximum errors: expf 2, tanhf 2, logf 1, sinf 2, powf 4, sqrtf 0 ulp.
  const uint32_t bound[6] = {2, 2, 1, 2, 4, 0};
  uint32_t worst[6] = {0};
  for (unsigned i = 0; i < n; ++i) {
    double v = x[i];
    if (i >= 4 && i < 8) {  // only sinf, sqrtf and tanhf are meaningful for the large inputs
      EXPECT_LE(UlpDiff(out[6 * i + 3], static_cast<float>(std::sin(v))), 2u) << "sinf(" << x[i] << ")";
      continue;
    }
    float want[6] = {static_cast<float>(std::exp(v)),
                     static_cast<float>(std::tanh(v)),
                     static_cast<float>(std::log(std::fabs(v) + static_cast<double>(1e-3f))),
                     static_cast<float>(std::sin(v)),
                     static_cast<float>(std::pow(std::fabs(v), static_cast<double>(1.7f))),
                     static_cast<float>(std::sqrt(std::fabs(v)))};
    want[2] = static_cast<float>(std::log(static_cast<double>(std::fabs(x[i]) + 1e-3f)));
    for (int f = 0; f < 6; ++f) {
      uint32_t u = UlpDiff(out[6 * i + f], want[f]);
      worst[f] = std::max(worst[f], u);
      ASSERT_LE(u, bound[f]) << "function " << f << " at x=" << x[i] << ": " << out[6 * i + f] << " vs " << want[f];
    }
  }
  RecordProperty("worst_ulp_exp", static_cast<int>(worst[0]));
}

TEST_P(Corpus, block_reduction_shared_memory) {
  auto k = h.Load("block_reduce", arch(), "block_reduce_sum");
  ASSERT_NE(k, nullptr);
  unsigned blocks = 40, n = blocks * 256 - 100;
  auto in = RandomFloats(n, -1, 1);
  auto pin = h.Upload(in), pout = h.Zeros<float>(blocks);
  ASSERT_TRUE(h.Run(*k, {blocks}, {256}, Params(k->signature()).Add(pin).Add(pout).Add(n).Build()).ok());
  auto out = h.Download<float>(pout, blocks);
  for (unsigned b = 0; b < blocks; ++b) {
    float s[256];
    for (unsigned t = 0; t < 256; ++t) s[t] = b * 256 + t < n ? in[b * 256 + t] : 0.0f;
    for (unsigned stride = 128; stride > 0; stride >>= 1)
      for (unsigned t = 0; t < stride; ++t) s[t] += s[t + stride];
    ASSERT_EQ(out[b], s[0]) << "block " << b;  // same tree order: bit-exact
  }
}

TEST_P(Corpus, divergent_and_reconverging_control_flow) {
  auto k = h.Load("divergence", arch(), "divergence");
  ASSERT_NE(k, nullptr);
  unsigned blocks = 6, n = blocks * 256 - 100;
  auto in = RandomInts(n, -1000, 1000);
  auto pin = h.Upload(in), pout = h.Zeros<int>(n), porder = h.Zeros<int>(blocks);
  ASSERT_TRUE(h.Run(*k, {blocks}, {256}, Params(k->signature()).Add(pin).Add(pout).Add(porder).Add(n).Build()).ok());
  auto out = h.Download<int>(pout, n), order = h.Download<int>(porder, blocks);
  for (unsigned b = 0; b < blocks; ++b) {
    int s[256], w[256];
    for (unsigned t = 0; t < 256; ++t) {
      unsigned i = b * 256 + t;
      int v = i < n ? in[i] : 0;
      if (b == 1) v += 1000;
      if (t % 3 == 0) v *= 2;
      if ((t & 1) && (t & 2)) v -= 7;
      if (t % 5 == 1) {
        for (int j = 0; j < static_cast<int>(t % 7); ++j) v += j;
      }
      s[t] = v;
    }
    for (unsigned t = 0; t < 256; ++t) w[t] = s[255 - t];
    for (unsigned t = 0; t < 64; ++t) s[t] = w[t] + s[t + 64];
    for (unsigned t = 0; t < 256 && b * 256 + t < n; ++t) ASSERT_EQ(out[b * 256 + t], s[t] + w[t]) << b << " " << t;
    ASSERT_EQ(order[b], s[0]) << b;
  }
}

TEST_P(Corpus, a_value_alike_in_every_thread_stops_being_alike_when_some_threads_change_it) {
  auto k = h.Load("divergence", arch(), "uniform_after_divergence");
  ASSERT_NE(k, nullptr);
  unsigned blocks = 3;
  int factor = 11;
  auto in = RandomInts(8, -1000, 1000);
  auto pin = h.Upload(in), pout = h.Zeros<int>(blocks * 256);
  ASSERT_TRUE(h.Run(*k, {blocks}, {256}, Params(k->signature()).Add(pin).Add(pout).Add(factor).Build()).ok());
  auto out = h.Download<int>(pout, blocks * 256);
  for (unsigned b = 0; b < blocks; ++b) {
    for (unsigned t = 0; t < 256; ++t) {
      int u = static_cast<int>(b) * factor + 3;
      if (t % 3 == 0) {
        for (unsigned j = 0; j < t % 5; ++j) u += in[j];
      }
      ASSERT_EQ(out[b * 256 + t], u * 7 + factor) << "block " << b << " thread " << t;
    }
  }
}

TEST_P(Corpus, warp_reduction_with_shuffles) {
  auto k = h.Load("warp_reduce", arch(), "warp_reduce_sum");
  ASSERT_NE(k, nullptr);
  unsigned n = 8192;
  auto in = RandomInts(n, -1000, 1000);
  auto pin = h.Upload(in), ptotal = h.Zeros<int>(1), pwarp = h.Zeros<int>(n / 32);
  ASSERT_TRUE(h.Run(*k, {n / 256}, {256}, Params(k->signature()).Add(pin).Add(ptotal).Add(pwarp).Add(n).Build()).ok());
  auto per_warp = h.Download<int>(pwarp, n / 32);
  for (unsigned w = 0; w < n / 32; ++w) {
    ASSERT_EQ(per_warp[w], std::accumulate(in.begin() + w * 32, in.begin() + w * 32 + 32, 0)) << w;
  }
  EXPECT_EQ(h.Download<int>(ptotal, 1)[0], std::accumulate(in.begin(), in.end(), 0));
}

TEST_P(Corpus, tiled_matrix_multiply) {
  auto k = h.Load("matmul", arch(), "matmul_tiled");
  ASSERT_NE(k, nullptr);
  unsigned n = 64;
  auto a = RandomFloats(n * n, -1, 1), b = RandomFloats(n * n, -1, 1);
  auto pa = h.Upload(a), pb = h.Upload(b), pc = h.Zeros<float>(n * n);
  ASSERT_TRUE(
      h.Run(*k, {n / 16, n / 16}, {16, 16}, Params(k->signature()).Add(pa).Add(pb).Add(pc).Add(n).Build()).ok());
  auto c = h.Download<float>(pc, n * n);
  for (unsigned r = 0; r < n; ++r)
    for (unsigned col = 0; col < n; ++col) {
      float acc = 0;
      for (unsigned kk = 0; kk < n; ++kk) acc = std::fma(a[r * n + kk], b[kk * n + col], acc);
      ASSERT_EQ(c[r * n + col], acc) << r << "," << col;  // same fma order: bit-exact
    }
}

TEST_P(Corpus, softmax_with_dynamic_shared_memory) {
  auto k = h.Load("softmax", arch(), "softmax_rows");
  ASSERT_NE(k, nullptr);
  unsigned rows = 8, cols = 1000, threads = 128;
  auto in = RandomFloats(rows * cols, -5, 5);
  auto pin = h.Upload(in), pout = h.Zeros<float>(rows * cols);
  ASSERT_TRUE(
      h.Run(*k, {rows}, {threads}, Params(k->signature()).Add(pin).Add(pout).Add(cols).Build(), threads * sizeof(float))
          .ok());
  auto out = h.Download<float>(pout, rows * cols);
  for (unsigned r = 0; r < rows; ++r) {
    double m = *std::max_element(in.begin() + r * cols, in.begin() + (r + 1) * cols), sum = 0;
    for (unsigned j = 0; j < cols; ++j) sum += std::exp(in[r * cols + j] - m);
    double total = 0;
    for (unsigned j = 0; j < cols; ++j) {
      double want = std::exp(in[r * cols + j] - m) / sum;
      ASSERT_NEAR(out[r * cols + j], want, 1e-6 + 2e-5 * want) << r << "," << j;  // __expf is approximate
      total += out[r * cols + j];
    }
    EXPECT_NEAR(total, 1.0, 1e-4);
  }
}

TEST_P(Corpus, histogram_shared_and_global_atomics) {
  auto k = h.Load("histogram", arch(), "histogram256");
  ASSERT_NE(k, nullptr);
  unsigned n = 100000;
  std::vector<uint8_t> data(n);
  for (auto& d : data) d = static_cast<uint8_t>(rng() % 7 == 0 ? 42 : rng());
  auto pd = h.Upload(data), pb = h.Zeros<unsigned>(256);
  ASSERT_TRUE(h.Run(*k, {8}, {256}, Params(k->signature()).Add(pd).Add(n).Add(pb).Build()).ok());
  auto bins = h.Download<unsigned>(pb, 256);
  std::vector<unsigned> want(256, 0);
  for (uint8_t d : data) ++want[d];
  EXPECT_EQ(bins, want);
}

TEST_P(Corpus, exclusive_scan) {
  auto k = h.Load("scan", arch(), "exclusive_scan");
  ASSERT_NE(k, nullptr);
  unsigned n = 1000;
  auto in = RandomInts(n, -50, 50);
  auto pin = h.Upload(in), pout = h.Zeros<int>(n);
  ASSERT_TRUE(h.Run(*k, {(n + 255) / 256}, {256}, Params(k->signature()).Add(pin).Add(pout).Add(n).Build()).ok());
  auto out = h.Download<int>(pout, n);
  for (unsigned b = 0; b * 256 < n; ++b) {
    int acc = 0;
    for (unsigned t = 0; t < 256 && b * 256 + t < n; ++t) {
      ASSERT_EQ(out[b * 256 + t], acc) << b * 256 + t;
      acc += in[b * 256 + t];
    }
  }
}

TEST_P(Corpus, transpose_with_padded_tiles) {
  auto k = h.Load("transpose", arch(), "transpose");
  ASSERT_NE(k, nullptr);
  unsigned rows = 70, cols = 45;
  auto in = RandomFloats(rows * cols, -1, 1);
  auto pin = h.Upload(in), pout = h.Zeros<float>(rows * cols);
  ASSERT_TRUE(h.Run(*k, {(cols + 31) / 32, (rows + 31) / 32}, {32, 8},
                    Params(k->signature()).Add(pin).Add(pout).Add(rows).Add(cols).Build())
                  .ok());
  auto out = h.Download<float>(pout, rows * cols);
  for (unsigned r = 0; r < rows; ++r)
    for (unsigned c = 0; c < cols; ++c) ASSERT_EQ(out[c * rows + r], in[r * cols + c]) << r << "," << c;
}

// Data-driven: every kernel file of the corpus (a new tests/kernels/*.cu included, without a test
// of its own yet) loads on the device in this form, and each of its entries is found.
TEST_P(Corpus, every_corpus_file_loads_and_each_entry_is_found) {
  const char* env = std::getenv("GPUWASM_KERNEL_PTX_DIR");
  const std::string dir = env != nullptr && *env != '\0' ? env : GPUWASM_KERNEL_PTX_DIR;
  const std::string suffix = "." + arch() + ".ptx";
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    ++files;
    const std::string text = ReadText(e.path().string());
    Result<ptx::Module> parsed = ptx::Parse(text);
    ASSERT_TRUE(parsed.ok()) << name << ": " << parsed.status();
    Result<std::shared_ptr<const device::Module>> m = h.LoadText(text);
    ASSERT_TRUE(m.ok()) << name << ": " << m.status();
    int entries = 0;
    for (const ptx::Function& f : parsed->functions) {
      if (!f.is_entry) continue;
      ++entries;
      EXPECT_TRUE((*m)->GetKernel(f.name).ok()) << name << ": " << f.name;
    }
    EXPECT_GT(entries, 0) << name;
  }
  EXPECT_GE(files, 20);
}

TEST_P(Corpus, bitonic_sort) {
  auto k = h.Load("bitonic", arch(), "bitonic_sort512");
  ASSERT_NE(k, nullptr);
  unsigned blocks = 4;
  std::vector<unsigned> keys(512 * blocks);
  for (auto& x : keys) x = static_cast<unsigned>(rng());
  auto pk = h.Upload(keys);
  ASSERT_TRUE(h.Run(*k, {blocks}, {256}, Params(k->signature()).Add(pk).Build()).ok());
  auto out = h.Download<unsigned>(pk, keys.size());
  for (unsigned b = 0; b < blocks; ++b) std::sort(keys.begin() + b * 512, keys.begin() + (b + 1) * 512);
  EXPECT_EQ(out, keys);
}

TEST_P(Corpus, stencil_2d) {
  auto k = h.Load("stencil2d", arch(), "stencil5");
  ASSERT_NE(k, nullptr);
  unsigned w = 50, hgt = 37;
  auto in = RandomFloats(w * hgt, 0, 1);
  auto pin = h.Upload(in), pout = h.Zeros<float>(w * hgt);
  ASSERT_TRUE(h.Run(*k, {(w + 15) / 16, (hgt + 15) / 16}, {16, 16},
                    Params(k->signature()).Add(pin).Add(pout).Add(w).Add(hgt).Build())
                  .ok());
  auto out = h.Download<float>(pout, w * hgt);
  for (unsigned y = 0; y < hgt; ++y)
    for (unsigned x = 0; x < w; ++x) {
      unsigned i = y * w + x;
      float want = (x == 0 || y == 0 || x == w - 1 || y == hgt - 1)
                       ? in[i]
                       : 0.2f * ((((in[i] + in[i - 1]) + in[i + 1]) + in[i - w]) + in[i + w]);
      ASSERT_EQ(out[i], want) << x << "," << y;
    }
}

uint32_t Brev32(uint32_t v) {
  uint32_t r = 0;
  for (int i = 0; i < 32; ++i) r |= ((v >> i) & 1) << (31 - i);
  return r;
}

uint64_t Brev64(uint64_t v) {
  return (static_cast<uint64_t>(Brev32(static_cast<uint32_t>(v))) << 32) | Brev32(static_cast<uint32_t>(v >> 32));
}

uint32_t BytePerm(uint32_t x, uint32_t y, uint32_t s) {
  uint64_t b = (static_cast<uint64_t>(y) << 32) | x;
  uint32_t r = 0;
  for (int k = 0; k < 4; ++k) r |= static_cast<uint32_t>((b >> (8 * ((s >> (4 * k)) & 7))) & 0xff) << (8 * k);
  return r;
}

TEST_P(Corpus, bit_operations) {
  auto k = h.Load("bitops", arch(), "bitops");
  ASSERT_NE(k, nullptr);
  unsigned n = 1000;
  std::vector<unsigned> in(n);
  for (auto& x : in) x = static_cast<unsigned>(rng());
  in[0] = 0;
  in[1] = 0xffffffffu;
  in[2] = 0x80000000u;
  auto pin = h.Upload(in), pout = h.Zeros<unsigned>(8 * n), p64 = h.Zeros<unsigned long long>(2 * n);
  ASSERT_TRUE(
      h.Run(*k, {(n + 127) / 128}, {128}, Params(k->signature()).Add(pin).Add(pout).Add(p64).Add(n).Build()).ok());
  auto out = h.Download<unsigned>(pout, 8 * n);
  auto out64 = h.Download<unsigned long long>(p64, 2 * n);
  for (unsigned i = 0; i < n; ++i) {
    uint32_t v = in[i], w = in[(i + 1) % n];
    uint64_t x = (static_cast<uint64_t>(v) << 32) | w;
    uint32_t want[8] = {static_cast<uint32_t>(std::popcount(v)),
                        static_cast<uint32_t>(std::countl_zero(v)),
                        Brev32(v),
                        v == 0 ? 0u : static_cast<uint32_t>(std::countr_zero(v)) + 1,
                        BytePerm(v, w, 0x5140),
                        static_cast<uint32_t>((((static_cast<uint64_t>(w) << 32) | v) << (i & 31)) >> 32),
                        (v / 7u) ^ (v % 13u) ^ std::min(v, w) ^ std::max(v, w),
                        static_cast<uint32_t>((static_cast<uint64_t>(v) * w) >> 32) +
                            static_cast<uint32_t>(static_cast<int32_t>(v) >> (i & 31)) +
                            static_cast<uint32_t>(std::popcount(x))};
    for (int f = 0; f < 8; ++f) ASSERT_EQ(out[8 * i + f], want[f]) << "field " << f << " i=" << i << " v=" << v;
    ASSERT_EQ(out64[2 * i], x * 0x9e3779b97f4a7c15ull + (x >> 17) + static_cast<uint64_t>(std::countl_zero(x))) << i;
    ASSERT_EQ(out64[2 * i + 1],
              static_cast<uint64_t>(static_cast<int64_t>(x) / 12345) ^ Brev64(x) ^ (static_cast<uint64_t>(v) * w))
        << i;
  }
}

TEST_P(Corpus, double_precision) {
  auto k = h.Load("f64", arch(), "f64_kernel");
  ASSERT_NE(k, nullptr);
  unsigned n = 2000;
  std::vector<double> x(n);
  std::uniform_real_distribution<double> d(-50, 50);
  for (auto& v : x) v = d(rng);
  auto y = RandomFloats(n, -1, 1);
  auto px = h.Upload(x), py = h.Upload(y), po = h.Zeros<double>(5 * n);
  ASSERT_TRUE(h.Run(*k, {(n + 127) / 128}, {128}, Params(k->signature()).Add(px).Add(py).Add(po).Add(n).Build()).ok());
  auto out = h.Download<double>(po, 5 * n);
  for (unsigned i = 0; i < n; ++i) {
    double v = x[i];
    ASSERT_EQ(out[5 * i + 0], std::fma(v, 1.5, static_cast<double>(y[i]))) << i;
    ASSERT_EQ(out[5 * i + 1], v / (1.0 + std::fabs(v))) << i;
    ASSERT_EQ(out[5 * i + 2], std::sqrt(std::fabs(v))) << i;
    ASSERT_LE(UlpDiff(out[5 * i + 3], std::exp(v * 0.25)), 1u) << i;  // CUDA exp: 1 ulp
    ASSERT_EQ(out[5 * i + 4],
              static_cast<double>(static_cast<float>(v * 3.0)) + static_cast<double>(static_cast<int>(v)))
        << i;
  }
}

uint16_t H(_Float16 f) { return std::bit_cast<uint16_t>(f); }
_Float16 F16(uint16_t b) { return std::bit_cast<_Float16>(b); }

TEST_P(Corpus, half_and_half2) {
  auto k = h.Load("half", arch(), "half_kernel");
  auto k2 = h.Load("half", arch(), "half2_kernel");
  ASSERT_NE(k, nullptr);
  ASSERT_NE(k2, nullptr);
  unsigned n = 1024;
  std::vector<uint16_t> a(n), b(n);
  for (unsigned i = 0; i < n; ++i) {
    a[i] = H(static_cast<_Float16>(std::ldexp(static_cast<float>(rng() % 2000) - 1000, -6)));
    b[i] = H(static_cast<_Float16>(std::ldexp(static_cast<float>(rng() % 2000) - 1000, -8)));
  }
  auto pa = h.Upload(a), pb = h.Upload(b), po = h.Zeros<uint16_t>(n);
  ASSERT_TRUE(h.Run(*k, {n / 128}, {128}, Params(k->signature()).Add(pa).Add(pb).Add(po).Add(n).Build()).ok());
  auto out = h.Download<uint16_t>(po, n);
  for (unsigned i = 0; i < n; ++i) {
    _Float16 prod = static_cast<_Float16>(static_cast<float>(F16(a[i])) * 0.5f);  // __hmul, one rounding
    _Float16 want = static_cast<_Float16>(std::fma(static_cast<double>(F16(a[i])), static_cast<double>(F16(b[i])),
                                                   static_cast<double>(prod)));  // __hfma, one rounding
    ASSERT_EQ(out[i], H(want)) << i;
  }
  auto po2 = h.Zeros<uint32_t>(n / 2);
  ASSERT_TRUE(
      h.Run(*k2, {n / 2 / 128}, {128}, Params(k2->signature()).Add(pa).Add(pb).Add(po2).Add(n / 2).Build()).ok());
  auto out2 = h.Download<uint16_t>(po2, n);
  for (unsigned i = 0; i < n; ++i) {
    _Float16 want = static_cast<_Float16>(
        std::fma(static_cast<double>(F16(a[i])), static_cast<double>(F16(b[i])), static_cast<double>(F16(a[i]))));
    ASSERT_EQ(out2[i], H(want)) << i;
  }
}

float Bf16Round(float f) {  // round to nearest even, to bfloat16, back to float
  uint32_t u = std::bit_cast<uint32_t>(f);
  u += 0x7fff + ((u >> 16) & 1);
  return std::bit_cast<float>(u & 0xffff0000u);
}

TEST_P(Corpus, bfloat16) {
  auto k = h.Load("half", arch(), "bf16_kernel");
  ASSERT_NE(k, nullptr);
  unsigned n = 1024;
  std::vector<uint16_t> a(n), b(n);
  auto fa = RandomFloats(n, -4, 4), fb = RandomFloats(n, -4, 4);
  for (unsigned i = 0; i < n; ++i) {
    a[i] = static_cast<uint16_t>(std::bit_cast<uint32_t>(Bf16Round(fa[i])) >> 16);
    b[i] = static_cast<uint16_t>(std::bit_cast<uint32_t>(Bf16Round(fb[i])) >> 16);
  }
  auto pa = h.Upload(a), pb = h.Upload(b), po = h.Zeros<float>(n);
  ASSERT_TRUE(h.Run(*k, {n / 128}, {128}, Params(k->signature()).Add(pa).Add(pb).Add(po).Add(n).Build()).ok());
  auto out = h.Download<float>(po, n);
  for (unsigned i = 0; i < n; ++i) {
    float x = std::bit_cast<float>(static_cast<uint32_t>(a[i]) << 16),
          y = std::bit_cast<float>(static_cast<uint32_t>(b[i]) << 16);
    ASSERT_EQ(out[i], Bf16Round(x + y)) << i;  // the float sum is exact; one rounding to bf16
  }
}

TEST_P(Corpus, noinline_function_call) {
  auto k = h.Load("noinline", arch(), "calls_noinline");
  ASSERT_NE(k, nullptr);
  unsigned n = 777;
  auto x = RandomFloats(n, -3, 3);
  auto px = h.Upload(x), po = h.Zeros<float>(n);
  ASSERT_TRUE(h.Run(*k, {(n + 63) / 64}, {64}, Params(k->signature()).Add(px).Add(po).Add(n).Build()).ok());
  auto out = h.Download<float>(po, n);
  for (unsigned i = 0; i < n; ++i) {
    double want = std::pow(static_cast<double>(x[i]), 2.0) / (static_cast<double>(i) + 1.0) +
                  1.0 / (static_cast<double>(x[i]) + 1.0);
    float helper1 = static_cast<float>(static_cast<double>(x[i]) * x[i]) / (static_cast<float>(i) + 1.0f);
    float helper2 = 1.0f / (x[i] + 1.0f);
    ASSERT_LE(UlpDiff(out[i], helper1 + helper2), 8u) << i << " want~" << want;
  }
}

TEST_P(Corpus, three_dimensional_grid_and_blocks) {
  auto k = h.Load("grid3d", arch(), "grid3d");
  ASSERT_NE(k, nullptr);
  unsigned nx = 13, ny = 9, nz = 7;
  Dim3 block{4, 3, 2}, grid{(nx + 3) / 4, (ny + 2) / 3, (nz + 1) / 2};
  auto po = h.Zeros<unsigned>(nx * ny * nz);
  ASSERT_TRUE(h.Run(*k, grid, block, Params(k->signature()).Add(po).Add(nx).Add(ny).Add(nz).Build()).ok());
  auto out = h.Download<unsigned>(po, nx * ny * nz);
  for (unsigned z = 0; z < nz; ++z)
    for (unsigned y = 0; y < ny; ++y)
      for (unsigned x = 0; x < nx; ++x) {
        unsigned bx = x / 4, by = y / 3, bz = z / 2, tx = x % 4, ty = y % 3, tz = z % 2;
        unsigned want = ((bz * grid.y + by) * grid.x + bx) * 24 + (tz * 3 + ty) * 4 + tx;
        ASSERT_EQ(out[(z * ny + y) * nx + x], want) << x << "," << y << "," << z;
      }
}

TEST_P(Corpus, shuffle_vote_and_activemask) {
  auto k = h.Load("warp_ops", arch(), "warp_ops");
  ASSERT_NE(k, nullptr);
  unsigned n = 256;
  auto in = RandomInts(n, -100, 100);
  in[37] = 5000;  // one warp has a lane > 1000
  auto pin = h.Upload(in), po = h.Zeros<int>(6 * n);
  ASSERT_TRUE(h.Run(*k, {2}, {128}, Params(k->signature()).Add(pin).Add(po).Build()).ok());
  auto out = h.Download<int>(po, 6 * n);
  for (unsigned i = 0; i < n; ++i) {
    unsigned lane = i & 31, base = i - lane;
    uint32_t ballot = 0;
    bool any = false, all = true;
    for (unsigned l = 0; l < 32; ++l) {
      ballot |= static_cast<uint32_t>(in[base + l] > 0) << l;
      any |= in[base + l] > 1000;
      all &= in[base + l] > -1000;
    }
    ASSERT_EQ(out[6 * i + 0], lane >= 3 ? in[i - 3] : in[i]) << i;
    ASSERT_EQ(out[6 * i + 1], in[base + (lane ^ 5)]) << i;
    ASSERT_EQ(out[6 * i + 2], in[base + ((lane * 7) & 31)]) << i;
    ASSERT_EQ(static_cast<uint32_t>(out[6 * i + 3]), ballot) << i;
    ASSERT_EQ(out[6 * i + 4], static_cast<int>(any) * 2 + static_cast<int>(all)) << i;
    ASSERT_EQ(static_cast<uint32_t>(out[6 * i + 5]), (lane & 1) ? 0xaaaaaaaau : 0u) << i;
  }
}

TEST_P(Corpus, global_atomics) {
  auto k = h.Load("atomics", arch(), "atomics");
  ASSERT_NE(k, nullptr);
  unsigned n = 3000;
  auto in = RandomInts(n, -100000, 100000);
  std::vector<int> init = {0, INT32_MAX, INT32_MIN, -1, 0, 0, 0, 0, 0};
  auto pin = h.Upload(in), pacc = h.Upload(init), pf = h.Zeros<float>(1);
  ASSERT_TRUE(
      h.Run(*k, {(n + 255) / 256}, {256}, Params(k->signature()).Add(pin).Add(pacc).Add(pf).Add(n).Build()).ok());
  auto acc = h.Download<int>(pacc, 9);
  int sum = 0, mn = INT32_MAX, mx = INT32_MIN, an = -1, orv = 0, xr = 0;
  double fsum = 0;
  for (int v : in) {
    sum += v;
    mn = std::min(mn, v);
    mx = std::max(mx, v);
    an &= v | 0x0f0f0000;
    orv |= v & 0x00ff00ff;
    xr ^= v;
    fsum += (v & 255) * 0.25;
  }
  EXPECT_EQ(acc[0], sum);
  EXPECT_EQ(acc[1], mn);
  EXPECT_EQ(acc[2], mx);
  EXPECT_EQ(acc[3], an);
  EXPECT_EQ(acc[4], orv);
  EXPECT_EQ(acc[5], xr);
  EXPECT_EQ(acc[6], static_cast<int>(n));               // atomicInc with a limit above n counts every thread
  EXPECT_GT(acc[7], 0);                                 // one CAS winner...
  EXPECT_EQ(acc[8], acc[7]);                            // ...which alone did the exchange
  EXPECT_NEAR(h.Download<float>(pf, 1)[0], fsum, 1.0);  // float atomics: order-dependent rounding
}

TEST_P(Corpus, integer_arithmetic) {
  auto k = h.Load("intmath", arch(), "intmath");
  ASSERT_NE(k, nullptr);
  unsigned n = 2000;
  auto a = RandomInts(n, -2000000000, 2000000000), b = RandomInts(n, -70000, 70000);
  b[0] = 0;
  b[1] = -1;
  auto pa = h.Upload(a), pb = h.Upload(b), po = h.Zeros<long long>(4 * n);
  ASSERT_TRUE(h.Run(*k, {(n + 127) / 128}, {128}, Params(k->signature()).Add(pa).Add(pb).Add(po).Add(n).Build()).ok());
  auto out = h.Download<long long>(po, 4 * n);
  for (unsigned i = 0; i < n; ++i) {
    int x = a[i], y = b[i], d = y == 0 ? 1 : y;
    ASSERT_EQ(out[4 * i + 0], static_cast<long long>(x / d) * 1000 + x % d) << i;
    ASSERT_EQ(out[4 * i + 1],
              static_cast<long long>(static_cast<int>((static_cast<long long>(x) * y) >> 32) +
                                     std::abs(static_cast<int>(static_cast<unsigned>(x) - static_cast<unsigned>(y)))))
        << i;
    ASSERT_EQ(out[4 * i + 2], static_cast<long long>(x) * y + std::min(x, y) - static_cast<long long>(std::max(x, y)))
        << i;
    ASSERT_EQ(out[4 * i + 3], (static_cast<long long>(x) * (1 << 20)) / static_cast<long long>(d | 1) +
                                  static_cast<long long>(static_cast<unsigned>(x) >> 3))
        << i;
  }
}

TEST_P(Corpus, approximate_math_within_documented_bounds) {
  auto k = h.Load("fastmath", arch(), "fastmath");
  ASSERT_NE(k, nullptr);
  unsigned n = 2048;
  auto x = RandomFloats(n, -3.14f, 3.14f);
  auto px = h.Upload(x), po = h.Zeros<float>(7 * n);
  ASSERT_TRUE(h.Run(*k, {n / 128}, {128}, Params(k->signature()).Add(px).Add(po).Add(n).Build()).ok());
  auto out = h.Download<float>(po, 7 * n);
  for (unsigned i = 0; i < n; ++i) {
    double v = x[i], p = std::fabs(x[i]) + 0.5f;
    // CUDA: __expf 2 + floor(|1.16 x|) ulp; __logf, __sinf, __cosf absolute error 2^-21.41 on
    // these ranges (we allow 2^-20); __fdividef and rsqrtf 2 ulp; __fsqrt_rn and __frcp_rn exact.
    ASSERT_LE(UlpDiff(out[7 * i + 0], static_cast<float>(std::exp(v))), 2u + static_cast<uint32_t>(std::fabs(1.16 * v)))
        << i;
    ASSERT_NEAR(out[7 * i + 1], std::log(p), std::ldexp(1.0, -20) * std::max(1.0, std::fabs(std::log(p)))) << i;
    ASSERT_NEAR(out[7 * i + 2], std::sin(v), std::ldexp(1.0, -20)) << i;
    ASSERT_NEAR(out[7 * i + 3], std::cos(v), std::ldexp(1.0, -20)) << i;
    ASSERT_LE(UlpDiff(out[7 * i + 4], static_cast<float>(v / p)), 2u) << i;
    ASSERT_LE(UlpDiff(out[7 * i + 5], static_cast<float>(1.0 / std::sqrt(p))), 2u) << i;
    float pf = std::fabs(x[i]) + 0.5f;
    ASSERT_EQ(out[7 * i + 6], std::sqrt(pf) + 1.0f / pf) << i;
  }
}

TEST_P(Corpus, local_memory_array) {
  auto k = h.Load("local_array", arch(), "local_array");
  ASSERT_NE(k, nullptr);
  unsigned n = 500;
  std::vector<unsigned> idx(n);
  for (auto& v : idx) v = static_cast<unsigned>(rng());
  auto pi = h.Upload(idx), po = h.Zeros<int>(n);
  ASSERT_TRUE(h.Run(*k, {(n + 127) / 128}, {128}, Params(k->signature()).Add(pi).Add(po).Add(n).Build()).ok());
  auto out = h.Download<int>(po, n);
  for (unsigned i = 0; i < n; ++i) {
    int tmp[16];
    for (int kk = 0; kk < 16; ++kk) tmp[kk] = static_cast<int>(i * 16 + kk) * (kk + 1);
    unsigned j = idx[i] & 15;
    tmp[j] += 7;
    ASSERT_EQ(out[i], tmp[j] + tmp[(j + 5) & 15]) << i;
  }
}

TEST_P(Corpus, conversions_with_rounding_and_saturation) {
  auto k = h.Load("convert", arch(), "convert");
  ASSERT_NE(k, nullptr);
  std::vector<float> x = {0.5f,     1.5f, 2.5f,  -0.5f,  -1.5f,  -2.7f,   3.3f,          1e10f, -1e10f, NAN,
                          INFINITY, 0.0f, -0.0f, 127.9f, 300.0f, -300.0f, 4294967040.0f, 7.0f,  12.5f,  -12.5f};
  unsigned n = static_cast<unsigned>(x.size());
  auto px = h.Upload(x), po = h.Zeros<int>(8 * n);
  ASSERT_TRUE(h.Run(*k, {1}, {32}, Params(k->signature()).Add(px).Add(po).Add(n).Build()).ok());
  auto out = h.Download<int>(po, 8 * n);
  auto sat32 = [](double v) -> int {  // PTX float->int conversions saturate; NaN -> 0
    if (std::isnan(v)) return 0;
    return static_cast<int>(std::clamp(v, static_cast<double>(INT32_MIN), static_cast<double>(INT32_MAX)));
  };
  auto satu32 = [](double v) -> unsigned {
    if (std::isnan(v)) return 0;
    return static_cast<unsigned>(std::clamp(v, 0.0, 4294967295.0));
  };
  for (unsigned i = 0; i < n; ++i) {
    float v = x[i];
    ASSERT_EQ(out[8 * i + 0], sat32(std::nearbyint(v))) << v;
    ASSERT_EQ(out[8 * i + 1], sat32(std::trunc(v))) << v;
    ASSERT_EQ(out[8 * i + 2], sat32(std::floor(v))) << v;
    ASSERT_EQ(out[8 * i + 3], sat32(std::ceil(v))) << v;
    ASSERT_EQ(out[8 * i + 4], static_cast<int>(satu32(std::nearbyint(v)))) << v;
    ASSERT_EQ(out[8 * i + 5], static_cast<int>(static_cast<signed char>(sat32(std::trunc(v * 0.01f))))) << v;
    float f = static_cast<float>(static_cast<int>(i) * 3 - 7) + std::nearbyint(v);
    ASSERT_EQ(out[8 * i + 6], std::bit_cast<int>(f)) << v;
    float s = v * 0.1f;
    s = std::isnan(s) ? 0.0f : std::clamp(s, 0.0f, 1.0f);
    ASSERT_EQ(out[8 * i + 7], std::bit_cast<int>(s)) << v;
  }
}

INSTANTIATE_TEST_SUITE_P(Arch, Corpus,
                         ::testing::Values("sm_80", "sm_90", "sm_80+native", "sm_90+native", "sm_80+printed",
                                           "sm_90+fenced", "sm_90+native+fenced"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '+', '_');
                           return n;  // sm_80, sm_90_native, sm_90_native_fenced, ...
                         });

}  // namespace
}  // namespace gpuwasm::testing
