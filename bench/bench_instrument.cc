// Instrumented PTX (ptx/instrument.h) on the CPU device: what the passes add and what it costs.
//   1. Static: PTX instructions of every corpus and conformance file (sm_90) before and after.
//   2. Dynamic: corpus kernels as given and instrumented, interleaved in one run, on one thread with
//      native code and interpreting: thread-instructions executed (steady) and time (median of
//      --reps per-repetition ratios, with the spread).
// On a GPU the kernel-time overhead is measured by the GPU check (scripts/gpu-check.sh) when one
// is lent.
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
  std::printf("static: %zu files (sm_90), %zu PTX instructions as given, %zu instrumented (+%.1f %%); "
              "geomean per file x%.3f\n",
              files, before, after, 100.0 * (after - before) / before, std::exp(log_sum / files));
}

// bench::Pack, and for an instrumented kernel its hidden parameters: the whole address space as
// the window, and the control block.
template <class... A>
std::vector<uint8_t> Pack(const KernelSignature& sig, DevicePtr control, A... args) {
  if (sizeof...(A) + 3 != sig.params.size()) return bench::Pack(sig, args...);
  return bench::Pack(sig, args..., uint64_t{0}, uint64_t{1} << 62, uint64_t{control});
}

struct Case {
  const char* name;
  const char* file;
  const char* kernel;
  // Uploads inputs and returns the launch (grid, block, params) for a kernel of either form.
  std::function<std::function<void(Stream&, const device::Kernel&)>(Context&, Stream&, DevicePtr)> setup;
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

template <class T>
DevicePtr Upload(Context& c, Stream& s, const std::vector<T>& v) {
  DevicePtr p = *c.Allocate(v.size() * sizeof(T));
  (void)s.MemcpyHtoD(p, v.data(), v.size() * sizeof(T));
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 7;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--reps=", 7) == 0) reps = std::max(1, std::atoi(argv[i] + 7));
  }
  StaticCounts();
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  auto floats = [&](size_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
  };
  std::vector<Case> cases = {
      {"vector add 1M", "vector_add", "vector_add",
       [&](Context& c, Stream& s, DevicePtr ctl) {
         const unsigned n = 1 << 20;
         DevicePtr a = Upload(c, s, floats(n)), b = Upload(c, s, floats(n)), o = Upload(c, s, floats(n));
         return std::function<void(Stream&, const device::Kernel&)>([=](Stream& st, const device::Kernel& k) {
           Launch(st, k, {n / 256}, {256}, Pack(k.signature(), ctl, a, b, o, n));
         });
       }},
      {"saxpy 4M grid-stride", "saxpy", "saxpy",
       [&](Context& c, Stream& s, DevicePtr ctl) {
         const unsigned n = 1 << 22;
         DevicePtr x = Upload(c, s, floats(n)), y = Upload(c, s, floats(n));
         return std::function<void(Stream&, const device::Kernel&)>([=](Stream& st, const device::Kernel& k) {
           Launch(st, k, {256}, {256}, Pack(k.signature(), ctl, n, 2.0f, x, y));
         });
       }},
      {"matmul 128^3", "matmul", "matmul_tiled",
       [&](Context& c, Stream& s, DevicePtr ctl) {
         const unsigned n = 128;
         DevicePtr a = Upload(c, s, floats(n * n)), b = Upload(c, s, floats(n * n)), o = Upload(c, s, floats(n * n));
         return std::function<void(Stream&, const device::Kernel&)>([=](Stream& st, const device::Kernel& k) {
           Launch(st, k, {n / 16, n / 16}, {16, 16}, Pack(k.signature(), ctl, a, b, o, n));
         });
       }},
      {"block reduction 1M", "block_reduce", "block_reduce_sum",
       [&](Context& c, Stream& s, DevicePtr ctl) {
         const unsigned n = 1 << 20;
         DevicePtr in = Upload(c, s, floats(n)), out = Upload(c, s, floats(n / 256));
         return std::function<void(Stream&, const device::Kernel&)>([=](Stream& st, const device::Kernel& k) {
           Launch(st, k, {n / 256}, {256}, Pack(k.signature(), ctl, in, out, n));
         });
       }},
  };
  std::printf("%-22s %-12s %12s %12s %9s %9s %14s\n", "kernel", "tier", "insts given", "insts fenced", "ratio",
              "time x", "time spread");
  for (bool native : {true, false}) {
    auto dev = cpu::CreateCpuDevice({.threads = 1, .native = native ? cpu::NativeMode::kAlways : cpu::NativeMode::kOff});
    auto ctx = *dev->CreateContext();
    auto stream = *ctx->CreateStream();
    const DevicePtr control = *ctx->Allocate(sizeof(ptx::ControlBlock));
    for (const Case& c : cases) {
      const std::string text = ReadText(std::string(GPUWASM_BENCH_PTX_DIR) + "/" + c.file + ".sm_90.ptx");
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
