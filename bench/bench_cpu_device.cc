// CPU device benchmark: corpus kernels (tests/kernels/*.cu) on the CPU device against two
// baselines measured in the same run: PoCL running the same kernels translated to OpenCL C
// (bench/opencl/kernels.cl; skipped with a message when no OpenCL CPU device is installed) and
// native C++ loops doing the same work as a user would write and build them (native_kernels.cc,
// -O2 -march=native, one thread). Each kernel runs on 1 thread and on every core (PoCL on a
// sub-device of as many compute units), and interpreted on 1 thread. Every implementation's output
// is checked against the native one first. Then the implementations run one after another, --reps
// times (default 7): a figure is the median of its runs and a ratio the median of the per-run
// ratios, with their spread (min-max). Target: the CPU device at most as slow as PoCL (ratio <= 1);
// a row that misses it is marked MISSED.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "device/cpu/cpu_device.h"
#include "kernel_args.h"
#include "native_kernels.h"
#include "opencl_baseline.h"

using namespace gpuwasm;
using namespace gpuwasm::device;
using gpuwasm::bench::OpenClBaseline;
using gpuwasm::bench::Pack;
using Clock = std::chrono::steady_clock;

namespace {

int g_reps = 7;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string ReadText(const std::string& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "bench_cpu_device: %s\n", what.c_str());
  std::exit(1);
}

// A kernel argument: one of the case's buffers, or a scalar.
struct Arg {
  enum Kind { kBuffer, kU32, kF32 } kind = kU32;
  size_t buffer = 0;
  uint32_t u32 = 0;
  float f32 = 0;
};
Arg Buf(size_t i) { return {.kind = Arg::kBuffer, .buffer = i}; }
Arg U32(uint32_t v) { return {.kind = Arg::kU32, .u32 = v}; }
Arg F32(float v) { return {.kind = Arg::kF32, .f32 = v}; }

template <class T>
std::vector<uint8_t> Bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}
template <class T>
const T* As(const std::vector<uint8_t>& b) {
  return reinterpret_cast<const T*>(b.data());
}
template <class T>
T* As(std::vector<uint8_t>& b) {
  return reinterpret_cast<T*>(b.data());
}

// One kernel of the corpus with its launch, its buffers' initial contents, and the native loop
// doing its work on host copies of them.
struct Case {
  std::string name;   // the row's name
  std::string file;   // tests/kernels/<file>.cu
  std::string entry;  // its kernel
  uint64_t elements = 0;
  Dim3 grid{}, block{};
  uint32_t shared_bytes = 0;  // dynamic shared memory (PoCL: a __local parameter after the others)
  std::vector<std::vector<uint8_t>> buffers{};
  std::vector<Arg> args{};
  size_t output = 0;    // the buffer whose contents are checked
  bool floats = false;  // ... as floats, each within tolerance * max(|native|, floor); else exactly
  double tolerance = 0;
  float floor = 1;
  std::function<void(std::vector<std::vector<uint8_t>>&)> native{};
};

// The CPU device with `threads` workers, native code always or never.
struct Runner {
  std::shared_ptr<Device> dev;
  std::shared_ptr<Context> ctx;
  std::unique_ptr<Stream> stream;
  Runner(unsigned threads, cpu::NativeMode mode) {
    dev = cpu::CreateCpuDevice({.threads = threads, .native = mode});
    ctx = *dev->CreateContext();
    stream = *ctx->CreateStream();
  }
  std::shared_ptr<const device::Kernel> Load(const std::string& file, const std::string& name) {
    auto m = ctx->LoadModule(ReadText(std::string(GPUWASM_BENCH_PTX_DIR) + "/" + file + ".sm_80.ptx"));
    if (!m.ok()) Die(m.status().ToString());
    auto k = (*m)->GetKernel(name);
    if (!k.ok()) Die(k.status().ToString());
    return *k;
  }
  void Check(Status s) {
    if (s.ok()) s = stream->Synchronize();
    if (!s.ok()) Die(s.ToString());
  }
};

// One implementation of a case: its timed run, and a check run from the initial contents that
// returns the output buffer.
struct Impl {
  std::string label;
  std::function<void()> run;
  std::function<std::vector<uint8_t>()> check;
  std::function<void()> release;
  Runner* runner = nullptr;  // the CPU device's
};

Impl NativeImpl(const Case& c) {
  auto host = std::make_shared<std::vector<std::vector<uint8_t>>>(c.buffers);
  Impl i;
  i.label = "native";
  i.run = [&c, host] {
    c.native(*host);
    asm volatile("" ::"r"(host->data()) : "memory");
  };
  i.check = [&c] {
    auto fresh = c.buffers;
    c.native(fresh);
    return fresh[c.output];
  };
  return i;
}

Impl DeviceImpl(const Case& c, Runner& r, const std::string& label) {
  auto k = r.Load(c.file, c.entry);
  auto ptrs = std::make_shared<std::vector<DevicePtr>>();
  for (const auto& b : c.buffers) {
    auto p = r.ctx->Allocate(b.size());
    if (!p.ok()) Die(p.status().ToString());
    r.Check(r.stream->MemcpyHtoD(*p, b.data(), b.size()));
    ptrs->push_back(*p);
  }
  const KernelSignature& sig = k->signature();
  if (sig.params.size() != c.args.size()) Die(c.entry + ": the case's arguments do not match its parameters");
  std::vector<uint8_t> params(sig.param_bytes);
  for (size_t i = 0; i < c.args.size(); ++i) {
    const Arg& a = c.args[i];
    uint8_t* at = params.data() + sig.params[i].offset;
    if (a.kind == Arg::kBuffer) std::memcpy(at, &(*ptrs)[a.buffer], sizeof(DevicePtr));
    if (a.kind == Arg::kU32) std::memcpy(at, &a.u32, 4);
    if (a.kind == Arg::kF32) std::memcpy(at, &a.f32, 4);
  }
  LaunchConfig config{.grid = c.grid, .block = c.block, .shared_bytes = c.shared_bytes};
  Impl i;
  i.label = label;
  i.runner = &r;
  i.run = [&r, k, config, params] { r.Check(r.stream->Launch(*k, config, params)); };
  i.check = [&c, &r, ptrs, run = i.run] {
    for (size_t b = 0; b < c.buffers.size(); ++b)
      r.Check(r.stream->MemcpyHtoD((*ptrs)[b], c.buffers[b].data(), c.buffers[b].size()));
    run();
    std::vector<uint8_t> out(c.buffers[c.output].size());
    r.Check(r.stream->MemcpyDtoH(out.data(), (*ptrs)[c.output], out.size()));
    return out;
  };
  i.release = [&r, ptrs] {
    for (DevicePtr p : *ptrs) (void)r.ctx->Free(p);
  };
  return i;
}

Impl PoclImpl(const Case& c, OpenClBaseline& cl, const std::string& label) {
  auto bufs = std::make_shared<std::vector<OpenClBaseline::Buffer>>();
  for (const auto& b : c.buffers) bufs->push_back(cl.Upload(b.data(), b.size()));
  std::vector<size_t> global, local;
  const uint32_t g[3] = {c.grid.x, c.grid.y, c.grid.z}, l[3] = {c.block.x, c.block.y, c.block.z};
  const int dims = c.grid.z * c.block.z > 1 ? 3 : c.grid.y * c.block.y > 1 ? 2 : 1;
  for (int d = 0; d < dims; ++d) {
    global.push_back(size_t{g[d]} * l[d]);
    local.push_back(l[d]);
  }
  std::vector<OpenClBaseline::Arg> args;
  for (const Arg& a : c.args) {
    if (a.kind == Arg::kBuffer) args.push_back(OpenClBaseline::ArgOf((*bufs)[a.buffer]));
    if (a.kind == Arg::kU32) args.push_back(OpenClBaseline::ArgOf(a.u32));
    if (a.kind == Arg::kF32) args.push_back(OpenClBaseline::ArgOf(a.f32));
  }
  if (c.shared_bytes != 0) args.push_back(OpenClBaseline::ArgOf(OpenClBaseline::Local{c.shared_bytes}));
  Impl i;
  i.label = label;
  i.run = [&c, &cl, global, local, args] { cl.Run(c.entry.c_str(), global, local, args); };
  i.check = [&c, &cl, bufs, run = i.run] {
    for (size_t b = 0; b < c.buffers.size(); ++b) cl.Write((*bufs)[b], c.buffers[b].data());
    run();
    std::vector<uint8_t> out(c.buffers[c.output].size());
    cl.Download((*bufs)[c.output], out.data());
    return out;
  };
  i.release = [&cl, bufs] {
    for (const auto& b : *bufs) cl.Free(b);
  };
  return i;
}

// Whether `got` is the native output `want` (floats: within the case's relative tolerance).
bool Same(const Case& c, const std::string& label, const std::vector<uint8_t>& got, const std::vector<uint8_t>& want) {
  if (got.size() != want.size()) return false;
  if (!c.floats) {
    if (got == want) return true;
    std::fprintf(stderr, "%s: %s's output differs from native\n", c.name.c_str(), label.c_str());
    return false;
  }
  const float* g = As<float>(got);
  const float* w = As<float>(want);
  for (size_t i = 0; i < got.size() / 4; ++i) {
    if (!(std::fabs(g[i] - w[i]) <= c.tolerance * std::max(c.floor, std::fabs(w[i])))) {
      std::fprintf(stderr, "%s: %s's output [%zu] is %g, native %g\n", c.name.c_str(), label.c_str(), i, g[i], w[i]);
      return false;
    }
  }
  return true;
}

struct Figure {
  double median = 0, low = 0, high = 0;
};
Figure Of(const std::vector<double>& v) {
  if (v.empty()) return {};
  return {Median(v), *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end())};
}

// The cases: sizes as in the performance issue's table (#28).
std::vector<std::pair<std::string, std::function<Case()>>> Cases() {
  auto floats = [](size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return Bytes(v);
  };
  std::vector<std::pair<std::string, std::function<Case()>>> cases;
  auto vector_add = [&](unsigned n, const char* name) {
    cases.emplace_back(name, [=] {
      Case c{
          .name = name, .file = "vector_add", .entry = "vector_add", .elements = n, .grid = {n / 256}, .block = {256}};
      c.buffers = {floats(n, 1), floats(n, 2), std::vector<uint8_t>(n * 4)};
      c.args = {Buf(0), Buf(1), Buf(2), U32(n)};
      c.output = 2;
      c.floats = true;
      c.native = [n](auto& b) { bench::NativeVectorAdd(As<float>(b[0]), As<float>(b[1]), As<float>(b[2]), n); };
      return c;
    });
  };
  vector_add(1u << 20, "vector add 1M");
  vector_add(1u << 24, "vector add 16M");
  cases.emplace_back("matmul 512^3", [=] {
    const unsigned n = 512;
    Case c{.name = "matmul 512^3",
           .file = "matmul",
           .entry = "matmul_tiled",
           .elements = uint64_t{n} * n,
           .grid = {n / 16, n / 16},
           .block = {16, 16}};
    c.buffers = {floats(n * n, 3), floats(n * n, 4), std::vector<uint8_t>(n * n * 4)};
    c.args = {Buf(0), Buf(1), Buf(2), U32(n)};
    c.output = 2;
    c.floats = true;
    c.tolerance = 1e-5;  // the same fma chain in each
    c.native = [n](auto& b) { bench::NativeMatmul(As<float>(b[0]), As<float>(b[1]), As<float>(b[2]), n); };
    return c;
  });
  cases.emplace_back("block reduction 4M", [=] {
    const unsigned n = 1u << 22;
    Case c{.name = "block reduction 4M",
           .file = "block_reduce",
           .entry = "block_reduce_sum",
           .elements = n,
           .grid = {n / 256},
           .block = {256}};
    c.buffers = {floats(n, 5), std::vector<uint8_t>(n / 256 * 4)};
    c.args = {Buf(0), Buf(1), U32(n)};
    c.output = 1;
    c.floats = true;
    c.tolerance = 1e-5;
    c.native = [n](auto& b) { bench::NativeBlockReduce(As<float>(b[0]), As<float>(b[1]), n); };
    return c;
  });
  cases.emplace_back("warp reduce 4M", [=] {  // shfl.sync and a global atomic
    const unsigned n = 1u << 22;
    std::vector<int> in(n);
    for (unsigned i = 0; i < n; ++i) in[i] = static_cast<int>(i % 7);
    Case c{.name = "warp reduce 4M",
           .file = "warp_reduce",
           .entry = "warp_reduce_sum",
           .elements = n,
           .grid = {n / 256},
           .block = {256}};
    c.buffers = {Bytes(in), std::vector<uint8_t>(4), std::vector<uint8_t>(n / 32 * 4)};
    c.args = {Buf(0), Buf(1), Buf(2), U32(n)};
    c.output = 2;
    c.native = [n](auto& b) { bench::NativeWarpReduce(As<int>(b[0]), As<int>(b[1]), As<int>(b[2]), n); };
    return c;
  });
  cases.emplace_back("softmax 4096x1024", [=] {  // dynamic shared memory, ex2.approx
    const unsigned rows = 4096, cols = 1024;
    Case c{.name = "softmax 4096x1024",
           .file = "softmax",
           .entry = "softmax_rows",
           .elements = uint64_t{rows} * cols,
           .grid = {rows},
           .block = {256},
           .shared_bytes = 256 * 4};
    c.buffers = {floats(size_t{rows} * cols, 6), std::vector<uint8_t>(size_t{rows} * cols * 4)};
    c.args = {Buf(0), Buf(1), U32(cols)};
    c.output = 1;
    c.floats = true;
    c.tolerance = 1e-4;  // __expf (ex2.approx) against expf, sums in another order: relative to each value
    c.floor = 0;
    c.native = [rows, cols](auto& b) { bench::NativeSoftmax(As<float>(b[0]), As<float>(b[1]), rows, cols); };
    return c;
  });
  cases.emplace_back("histogram 16M", [=] {  // shared-memory atomics in a grid-stride loop
    const unsigned n = 1u << 24;
    std::mt19937 rng(7);
    std::vector<uint8_t> data(n);
    for (auto& x : data) x = static_cast<uint8_t>(rng());
    Case c{.name = "histogram 16M",
           .file = "histogram",
           .entry = "histogram256",
           .elements = n,
           .grid = {64},
           .block = {256}};
    c.buffers = {data, std::vector<uint8_t>(256 * 4)};
    c.args = {Buf(0), U32(n), Buf(1)};
    c.output = 1;
    c.native = [n](auto& b) { bench::NativeHistogram(b[0].data(), n, As<unsigned>(b[1])); };
    return c;
  });
  cases.emplace_back("saxpy 16M", [=] {  // grid-stride loop
    const unsigned n = 1u << 24;
    Case c{.name = "saxpy 16M", .file = "saxpy", .entry = "saxpy", .elements = n, .grid = {1024}, .block = {256}};
    c.buffers = {floats(n, 8), floats(n, 9)};
    c.args = {U32(n), F32(2.5f), Buf(0), Buf(1)};
    c.output = 1;
    c.floats = true;
    c.tolerance = 1e-6;  // a * x + y contracted to an fma, or not
    c.native = [n](auto& b) { bench::NativeSaxpy(n, 2.5f, As<float>(b[0]), As<float>(b[1])); };
    return c;
  });
  return cases;
}

// --policy: the default native-code policy (compile in the background once a kernel ran 100 M
// thread-instructions and 10 times the compile's estimated CPU time) against interpreting, for
// runs of n launches of vector add 1M on every core, interleaved, median of the reps. Each auto
// run gets a kernel no run compiled before (a unique constant in its PTX), and waits for its
// compile to end before the next run is timed.
int PolicyBench(int reps) {
  const std::string base = ReadText(std::string(GPUWASM_BENCH_PTX_DIR) + "/vector_add.sm_80.ptx");
  const size_t body = base.find("{", base.find(".entry vector_add"));
  if (body == std::string::npos) return 1;
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const unsigned n = 1 << 20;
  std::vector<float> a(n, 1.0f), b(n, 2.0f);
  std::printf("%-10s %14s %14s %8s %s\n", "launches", "auto (default)", "interpreted", "ratio",
              "(median of reps, all cores)");
  int unique = 0;
  for (int launches : {4, 8, 24, 64, 160, 400}) {
    std::vector<double> t_auto, t_off, ratios;
    for (int rep = 0; rep < reps; ++rep) {
      std::string ptx = base;
      ptx.insert(body + 1,
                 "\n .reg .b32 %uniq<2>;\n mov.u32 %uniq1, " + std::to_string(++unique + 1000 * getpid()) + ";\n");
      double t[2] = {0, 0};
      for (int mode = 0; mode < 2; ++mode) {  // auto first, then off, alternating by rep
        const bool is_auto = (mode == 0) == (rep % 2 == 0);
        auto dev = cpu::CreateCpuDevice(
            {.threads = cores, .native = is_auto ? cpu::NativeMode::kAuto : cpu::NativeMode::kOff});
        auto ctx = *dev->CreateContext();
        auto stream = *ctx->CreateStream();
        auto m = ctx->LoadModule(ptx);
        if (!m.ok()) {
          std::fprintf(stderr, "%s\n", m.status().ToString().c_str());
          return 1;
        }
        auto k = *(*m)->GetKernel("vector_add");
        DevicePtr pa = *ctx->Allocate(n * 4), pb = *ctx->Allocate(n * 4), pc = *ctx->Allocate(n * 4);
        (void)stream->MemcpyHtoD(pa, a.data(), n * 4);
        (void)stream->MemcpyHtoD(pb, b.data(), n * 4);
        (void)stream->Synchronize();
        LaunchConfig c;
        c.grid = {n / 256};
        c.block = {256};
        auto params = Pack(k->signature(), pa, pb, pc, n);
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < launches; ++i) {
          Status st = stream->Launch(*k, c, params);
          if (st.ok()) st = stream->Synchronize();
          if (!st.ok()) return 1;
        }
        t[is_auto ? 0 : 1] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        // Let a background compile end before anything else is timed.
        for (int i = 0; is_auto && i < 2000 && !cpu::LastLaunchWasNative(*stream) && cpu::NativeCodeWhyNot(*k).empty();
             ++i) {
          (void)stream->Launch(*k, c, params);
          (void)stream->Synchronize();
        }
      }
      t_auto.push_back(t[0]);
      t_off.push_back(t[1]);
      ratios.push_back(t[0] / t[1]);
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    std::printf("%-10d %11.1f ms %11.1f ms %7.2fx (spread %.2f-%.2f)\n", launches, median(t_auto), median(t_off),
                median(ratios), *std::min_element(ratios.begin(), ratios.end()),
                *std::max_element(ratios.begin(), ratios.end()));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string only;
  bool one_thread = false, no_interp = false, no_pocl = false, policy = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--reps=", 7) == 0) g_reps = std::max(1, std::atoi(argv[i] + 7));
    if (std::strncmp(argv[i], "--only=", 7) == 0) only = argv[i] + 7;
    if (std::strcmp(argv[i], "--one-thread") == 0) one_thread = true;
    if (std::strcmp(argv[i], "--no-interp") == 0) no_interp = true;
    if (std::strcmp(argv[i], "--no-pocl") == 0) no_pocl = true;
    if (std::strcmp(argv[i], "--policy") == 0) policy = true;
    if (std::strcmp(argv[i], "--help") == 0) {
      std::printf(
          "usage: bench_cpu_device [--reps=N] [--only=NAME] [--one-thread] [--no-interp] [--no-pocl] [--policy]\n"
          "  --reps=N      runs per implementation (default 7); medians and per-run ratios\n"
          "  --only=NAME   the cases whose name contains NAME (vector, matmul, reduction, warp, softmax,\n"
          "                histogram, saxpy)\n"
          "  --one-thread  skip the all-cores runs; --no-interp the interpreter's; --no-pocl PoCL's\n"
          "  --policy      the default native-code policy against interpreting, vector add 1M\n");
      return 0;
    }
  }
  if (policy) return PolicyBench(g_reps);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  Runner one(1, cpu::NativeMode::kAlways), all(cores, cpu::NativeMode::kAlways), interp(1, cpu::NativeMode::kOff);
  std::unique_ptr<OpenClBaseline> pocl1, pocln;
  if (!no_pocl) {
    const std::string source = ReadText(GPUWASM_BENCH_OPENCL_KERNELS);
    std::string why;
    pocl1 = OpenClBaseline::Open(1, source, &why);
    if (pocl1 && !one_thread) pocln = OpenClBaseline::Open(cores, source, &why);
    if (!pocl1) std::printf("PoCL baseline skipped: %s\n", why.c_str());
    if (pocl1) std::printf("PoCL baseline: %s\n", pocl1->device_name().c_str());
  }
  const std::string n_label = std::to_string(cores);
  std::printf("%d runs each, interleaved; median (spread of the per-run ratios). Target: gpuwasm / PoCL <= 1.\n\n",
              g_reps);
  std::printf("%-20s %3s %10s %10s %10s %-26s %-22s %11s %-22s %6s  %s\n", "kernel", "thr", "native C++", "PoCL",
              "gpuwasm", "gpuwasm/PoCL", "gpuwasm/native", "interpreted", "interp/PoCL", "PTX/el", "tier");
  int missed = 0, met = 0;
  for (auto& [name, make] : Cases()) {
    if (!only.empty() && name.find(only) == std::string::npos) continue;
    const Case c = make();
    std::vector<Impl> impls;
    impls.push_back(NativeImpl(c));
    const size_t native = 0;
    std::optional<size_t> p1, d1, in1, pn, dn;
    auto add = [&](Impl i) {
      impls.push_back(std::move(i));
      return impls.size() - 1;
    };
    if (pocl1) p1 = add(PoclImpl(c, *pocl1, "PoCL 1 thread"));
    d1 = add(DeviceImpl(c, one, "gpuwasm 1 thread"));
    if (!no_interp) in1 = add(DeviceImpl(c, interp, "interpreter"));
    if (!one_thread && cores > 1) {
      if (pocln) pn = add(PoclImpl(c, *pocln, "PoCL " + n_label + " threads"));
      dn = add(DeviceImpl(c, all, "gpuwasm " + n_label + " threads"));
    }
    // Every implementation computes what native code computes (and is warm).
    const std::vector<uint8_t> want = impls[native].check();
    for (size_t i = 1; i < impls.size(); ++i) {
      if (!Same(c, impls[i].label, impls[i].check(), want)) return 1;
    }
    const bool native_code = cpu::LastLaunchWasNative(*one.stream);
    std::vector<std::vector<double>> t(impls.size());
    for (int rep = 0; rep < g_reps; ++rep) {
      for (size_t i = 0; i < impls.size(); ++i) {
        auto t0 = Clock::now();
        impls[i].run();
        t[i].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      }
    }
    const uint64_t insts = cpu::LastLaunchInstructions(*one.stream);
    if (in1 && cpu::LastLaunchInstructions(*interp.stream) != insts) {
      std::fprintf(stderr, "%s: native code and the interpreter counted different instructions\n", name.c_str());
      return 1;
    }
    auto ratios = [&](size_t a, size_t b) {
      std::vector<double> r;
      for (int rep = 0; rep < g_reps; ++rep) r.push_back(t[a][rep] / t[b][rep]);
      return Of(r);
    };
    auto ms = [&](std::optional<size_t> i) {
      char b[32] = "-";
      if (i) std::snprintf(b, sizeof b, "%.2f ms", Median(t[*i]) * 1e3);
      return std::string(b);
    };
    auto ratio_text = [&](std::optional<size_t> a, std::optional<size_t> b, bool target) {
      char buf[64] = "-";
      if (a && b) {
        Figure f = ratios(*a, *b);
        std::snprintf(buf, sizeof buf, "%.2fx (%.2f-%.2f)%s", f.median, f.low, f.high,
                      !target        ? ""
                      : f.median > 1 ? " MISSED"
                                     : " met");
        if (target) ++(f.median > 1 ? missed : met);
      }
      return std::string(buf);
    };
    std::string tier =
        native_code ? "native code" : "interpreted: " + cpu::NativeCodeWhyNot(*one.Load(c.file, c.entry));
    const double per_element = static_cast<double>(insts) / static_cast<double>(c.elements);
    std::printf("%-20s %3d %10s %10s %10s %-26s %-22s %11s %-22s %6.1f  %s\n", name.c_str(), 1, ms(native).c_str(),
                ms(p1).c_str(), ms(d1).c_str(), ratio_text(d1, p1, true).c_str(), ratio_text(d1, native, false).c_str(),
                ms(in1).c_str(), ratio_text(in1, p1, false).c_str(), per_element, tier.c_str());
    if (dn) {
      std::printf("%-20s %3u %10s %10s %10s %-26s %-22s\n", name.c_str(), cores, "-", ms(pn).c_str(), ms(dn).c_str(),
                  ratio_text(dn, pn, true).c_str(), ratio_text(dn, native, false).c_str());
    }
    std::fflush(stdout);
    for (Impl& i : impls) {
      if (i.release) i.release();
    }
  }
  if (met + missed > 0) {
    std::printf("\ntarget gpuwasm <= PoCL: met by %d of %d rows%s\n", met, met + missed,
                missed > 0 ? " (MISSED rows are marked)" : "");
  }
  return 0;
}
