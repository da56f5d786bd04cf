// Instrumented PTX (ptx/instrument.h) on the CPU device: what the passes add and what it costs.
//   1. Static: PTX instructions of every corpus and conformance file (sm_90) before and after.
//   2. Dynamic: corpus kernels as given and instrumented, interleaved in one run, on one thread with
//      native code and interpreting: thread-instructions executed (steady) and time (median of
//      --reps per-repetition ratios, with the spread).
//   3. With --device=SPEC (cuda:0 on the GPU check, scripts/gpu-check.sh): the same kernels on that
//      device, as given and instrumented with a real instance window, interleaved; the ratio is of
//      kernel time (the stream's, CUDA events on a GPU), with its geomean.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "device/cpu/cpu_device.h"
#include "device/select.h"
#include "kernel_args.h"
#include "ptx/instrument.h"
#include "ptx/parser.h"
#include "ptx/printer.h"

using namespace gpuwasm;
using namespace gpuwasm::device;
using Clock = std::chrono::steady_clock;

namespace {

std::string ReadText(const std::string& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

size_t Instructions(const ptx::Module& m) {
  size_t n = 0;
  for (const ptx::Function& f : m.functions) {
    for (const ptx::Statement& s : f.body) n += s.kind == ptx::Statement::Kind::kInstruction;
  }
  return n;
}

std::string Instrumented(const std::string& text) {
  auto m = ptx::Parse(text);
  auto i = m.ok() ? ptx::Instrument(*m) : Result<ptx::Module>(m.status());
  if (!i.ok()) {
    std::fprintf(stderr, "%s\n", i.status().ToString().c_str());
    std::exit(1);
  }
  return ptx::Print(*i, {.keep_lines = true});
}

void StaticCounts() {
  double log_sum = 0;
  size_t files = 0, before = 0, after = 0;
  for (const char* dir : {GPUWASM_BENCH_PTX_DIR, GPUWASM_BENCH_CONFORMANCE_DIR}) {
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      if (name.find(".sm_90.ptx") == std::string::npos) continue;
      auto m = ptx::Parse(ReadText(e.path()));
      auto i = ptx::Instrument(*m);
      const size_t b = Instructions(*m), a = Instructions(*i);
      before += b;
      after += a;
      log_sum += std::log(static_cast<double>(a) / b);
      ++files;
    }
  }
  std::printf(
      "static: %zu files (sm_90), %zu PTX instructions as given, %zu instrumented (+%.1f %%); "
      "geomean per file x%.3f\n",
      files, before, after, 100.0 * (after - before) / before, std::exp(log_sum / files));
}

// bench::Pack, and for an instrumented kernel its hidden parameters: the whole address space as
// the window, and the control block.
// The instance window instrumented kernels get: all of the address space on the CPU runs (the CPU
// device checks accesses itself), the instance's window with --device.
struct Fence {
  uint64_t base = 0, size = uint64_t{1} << 62;
  DevicePtr control = 0;
};

template <class... A>
std::vector<uint8_t> Pack(const KernelSignature& sig, const Fence& f, A... args) {
  if (sizeof...(A) + 3 != sig.params.size()) return bench::Pack(sig, args...);
  return bench::Pack(sig, args..., uint64_t{f.base}, uint64_t{f.size}, uint64_t{f.control});
}

struct Case {
  const char* name;
  const char* file;
  const char* kernel;
  // Uploads inputs and returns the launch (grid, block, params) for a kernel of either form.
  std::function<std::function<void(Stream&, const device::Kernel&)>(Context&, Stream&, const Fence&)> setup;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void Launch(Stream& s, const device::Kernel& k, Dim3 grid, Dim3 block, std::vector<uint8_t> params) {
  LaunchConfig c;
  c.grid = grid;
  c.block = block;
  Status st = s.Launch(k, c, std::move(params));
  if (st.ok()) st = s.Synchronize();
  if (!st.ok()) {
    std::fprintf(stderr, "%s: %s\n", k.signature().name.c_str(), st.ToString().c_str());
    std::exit(1);
  }
}

// Where the corpus PTX is (the build's, or --ptx-dir).
std::string g_ptx_dir = GPUWASM_BENCH_PTX_DIR;

// Buffers of the run: in the instance window when there is one.
Window* g_window = nullptr;

template <class T>
DevicePtr Upload(Context& c, Stream& s, const std::vector<T>& v) {
  Result<DevicePtr> p =
      g_window != nullptr ? g_window->Allocate(v.size() * sizeof(T)) : c.Allocate(v.size() * sizeof(T));
  if (!p.ok()) {
    std::fprintf(stderr, "%s\n", p.status().ToString().c_str());
    std::exit(1);
  }
  (void)s.MemcpyHtoD(*p, v.data(), v.size() * sizeof(T));
  return *p;
}

int OnDevice(const std::string& spec, const std::vector<Case>& cases, int reps);

}  // namespace

int main(int argc, char** argv) {
  int reps = 7;
  std::string device_spec;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--reps=", 7) == 0) reps = std::max(1, std::atoi(argv[i] + 7));
    if (std::strncmp(argv[i], "--device=", 9) == 0) device_spec = argv[i] + 9;
    if (std::strncmp(argv[i], "--ptx-dir=", 10) == 0) g_ptx_dir = argv[i] + 10;  // the GPU bundle's ptx/
  }
  if (device_spec.empty()) StaticCounts();
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  auto floats = [&](size_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
  };
  std::vector<Case> cases = {
      {"vector add 1M", "vector_add", "vector_add",
       [&](Context& c, Stream& s, const Fence& ctl) {
         const unsigned n = 1 << 20;
         DevicePtr a = Upload(c, s, floats(n)), b = Upload(c, s, floats(n)), o = Upload(c, s, floats(n));
         return std::function<void(Stream&, const device::Kernel&)>([=](Stream& st, const device::Kernel& k) {
           Launch(st, k, {n / 256}, {256}, Pack(k.signature(), ctl, a, b, o, n));
         });
       }},
      {"saxpy 4M grid-stride", "saxpy", "saxpy",
       [&](Context& c, Stream& s, const Fence& ctl) {
         const unsigned n = 1 << 22;
         DevicePtr x = Upload(c, s, floats(n)), y = Upload(c, s, floats(n));
         return std::function<void(Stream&, const device::Kernel&)>([=](Stream& st, const device::Kernel& k) {
           Launch(st, k, {256}, {256}, Pack(k.signature(), ctl, n, 2.0f, x, y));
         });
       }},
      {"matmul 128^3", "matmul", "matmul_tiled",
       [&](Context& c, Stream& s, const Fence& ctl) {
         const unsigned n = 128;
         DevicePtr a = Upload(c, s, floats(n * n)), b = Upload(c, s, floats(n * n)), o = Upload(c, s, floats(n * n));
         return std::function<void(Stream&, const device::Kernel&)>([=](Stream& st, const device::Kernel& k) {
           Launch(st, k, {n / 16, n / 16}, {16, 16}, Pack(k.signature(), ctl, a, b, o, n));
         });
       }},
      {"block reduction 1M", "block_reduce", "block_reduce_sum",
       [&](Context& c, Stream& s, const Fence& ctl) {
         const unsigned n = 1 << 20;
         DevicePtr in = Upload(c, s, floats(n)), out = Upload(c, s, floats(n / 256));
         return std::function<void(Stream&, const device::Kernel&)>([=](Stream& st, const device::Kernel& k) {
           Launch(st, k, {n / 256}, {256}, Pack(k.signature(), ctl, in, out, n));
         });
       }},
  };
  if (!device_spec.empty()) return OnDevice(device_spec, cases, reps);
  std::printf("%-22s %-12s %12s %12s %9s %9s %14s\n", "kernel", "tier", "insts given", "insts fenced", "ratio",
              "time x", "time spread");
  for (bool native : {true, false}) {
    auto dev =
        cpu::CreateCpuDevice({.threads = 1, .native = native ? cpu::NativeMode::kAlways : cpu::NativeMode::kOff});
    auto ctx = *dev->CreateContext();
    auto stream = *ctx->CreateStream();
    Fence control;
    control.control = *ctx->Allocate(sizeof(ptx::ControlBlock));
    for (const Case& c : cases) {
      const std::string text = ReadText(g_ptx_dir + "/" + c.file + ".sm_90.ptx");
      auto plain = *(*ctx->LoadModule(text))->GetKernel(c.kernel);
      auto fenced = *(*ctx->LoadModule(Instrumented(text)))->GetKernel(c.kernel);
      auto run = c.setup(*ctx, *stream, control);
      run(*stream, *plain);  // warm-up (and the native compile of each)
      const uint64_t ip = cpu::LastLaunchInstructions(*stream);
      run(*stream, *fenced);
      const uint64_t ifc = cpu::LastLaunchInstructions(*stream);
      std::vector<double> ratios;
      for (int r = 0; r < reps; ++r) {
        auto t0 = Clock::now();
        run(*stream, *plain);
        auto t1 = Clock::now();
        run(*stream, *fenced);
        auto t2 = Clock::now();
        ratios.push_back(std::chrono::duration<double>(t2 - t1) / std::chrono::duration<double>(t1 - t0));
      }
      std::sort(ratios.begin(), ratios.end());
      std::printf("%-22s %-12s %12llu %12llu %9.3f %9.3f %6.3f..%-6.3f\n", c.name, native ? "native" : "interpreted",
                  static_cast<unsigned long long>(ip), static_cast<unsigned long long>(ifc),
                  static_cast<double>(ifc) / static_cast<double>(ip), Median(ratios), ratios.front(), ratios.back());
    }
  }
  return 0;
}

namespace {

// Kernel time of the next launch `run` makes on `s`.
double KernelSeconds(Stream& s, const device::Kernel& k,
                     const std::function<void(Stream&, const device::Kernel&)>& run) {
  const auto before = s.kernel_time();
  run(s, k);
  return std::chrono::duration<double>(s.kernel_time() - before).count();
}

int OnDevice(const std::string& spec, const std::vector<Case>& cases, int reps) {
  auto dev = OpenDevice(spec);
  if (!dev.ok()) {
    std::fprintf(stderr, "--device=%s: %s\n", spec.c_str(), dev.status().ToString().c_str());
    return 1;
  }
  auto ctx = *(*dev)->CreateContext();
  auto stream = *ctx->CreateStream();
  std::unique_ptr<Window> window;
  Fence fence;
  if ((*dev)->info().instance_windows) {
    window = *ctx->CreateWindow(uint64_t{256} << 20);
    g_window = window.get();
    fence = {window->base(), window->size(), window->control()};
  } else {
    fence.control = *ctx->Allocate(sizeof(ptx::ControlBlock));
  }
  std::printf("%s (%s): kernel time instrumented / as given, median of %d interleaved pairs\n",
              (*dev)->info().name.c_str(), window ? "instance window" : "no windows: the whole address space", reps);
  std::printf("%-22s %12s %12s %9s %14s\n", "kernel", "given us", "fenced us", "time x", "spread");
  double log_sum = 0;
  for (const Case& c : cases) {
    const std::string text = ReadText(g_ptx_dir + "/" + c.file + ".sm_90.ptx");
    auto plain = *(*ctx->LoadModule(text))->GetKernel(c.kernel);
    auto fenced = *(*ctx->LoadModule(Instrumented(text)))->GetKernel(c.kernel);
    auto run = c.setup(*ctx, *stream, fence);
    run(*stream, *plain);  // warm-up: JIT and caches
    run(*stream, *fenced);
    std::vector<double> ratios, given, instrumented;
    for (int r = 0; r < reps; ++r) {
      given.push_back(KernelSeconds(*stream, *plain, run));
      instrumented.push_back(KernelSeconds(*stream, *fenced, run));
      ratios.push_back(instrumented.back() / given.back());
    }
    std::sort(ratios.begin(), ratios.end());
    log_sum += std::log(Median(ratios));
    std::printf("%-22s %12.1f %12.1f %9.3f %6.3f..%-6.3f\n", c.name, Median(given) * 1e6, Median(instrumented) * 1e6,
                Median(ratios), ratios.front(), ratios.back());
  }
  std::printf("instrumented kernel time, geomean of %zu kernels: x%.3f\n", cases.size(),
              std::exp(log_sum / static_cast<double>(cases.size())));
  return 0;
}

}  // namespace
