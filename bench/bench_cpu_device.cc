// CPU device benchmark: corpus kernels against native C++ loops doing the same work, in the same
// run. Reports time, thread-instructions per second and the ratio to native, on one worker thread
// with native code, interpreted, and on all cores. Each figure is the median of --reps runs
// (default 5); native and device runs alternate and a ratio is the median of per-run ratios.
//   vector add   n = 2^20            (vector_add.cu)
//   matmul       256 x 256 x 256     (matmul.cu, 16 x 16 tiles)
//   reduction    n = 2^22, 256/block (block_reduce.cu)
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "device/cpu/cpu_device.h"
#include "kernel_args.h"

using namespace gpuwasm;
using namespace gpuwasm::device;
using Clock = std::chrono::steady_clock;

namespace {

int g_reps = 5;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Native and device runs alternate, so that both see the same machine (this VM's speed drifts by
// 2x between minutes): the ratio is the median of the per-repetition ratios.
struct Paired {
  double native, dev, ratio;
};
Paired TimePaired(const std::function<void()>& native, const std::function<void()>& dev) {
  native();  // warm-up (first-touch page faults; a native-code compile)
  dev();
  std::vector<double> tn, td, ratio;
  for (int i = 0; i < g_reps; ++i) {
    auto t0 = Clock::now();
    native();
    auto t1 = Clock::now();
    dev();
    auto t2 = Clock::now();
    tn.push_back(std::chrono::duration<double>(t1 - t0).count());
    td.push_back(std::chrono::duration<double>(t2 - t1).count());
    ratio.push_back(td.back() / tn.back());
  }
  return {Median(tn), Median(td), Median(ratio)};
}

std::string ReadText(const std::string& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Runner {
  std::shared_ptr<Device> dev;
  std::shared_ptr<Context> ctx;
  std::unique_ptr<Stream> stream;
  Runner(unsigned threads, cpu::NativeMode mode) {
    dev = cpu::CreateCpuDevice({.threads = threads, .native = mode});
    ctx = *dev->CreateContext();
    stream = *ctx->CreateStream();
  }
  std::shared_ptr<const device::Kernel> Load(const char* file, const char* name) {
    auto m = ctx->LoadModule(ReadText(std::string(GPUWASM_BENCH_PTX_DIR) + "/" + file + ".sm_80.ptx"));
    if (!m.ok()) {
      std::fprintf(stderr, "%s\n", m.status().ToString().c_str());
      std::exit(1);
    }
    return *(*m)->GetKernel(name);
  }
  template <class T>
  DevicePtr Upload(const std::vector<T>& v) {
    DevicePtr p = *ctx->Allocate(v.size() * sizeof(T));
    (void)stream->MemcpyHtoD(p, v.data(), v.size() * sizeof(T));
    return p;
  }
  void Launch(const device::Kernel& k, Dim3 grid, Dim3 block, std::vector<uint8_t> params) {
    LaunchConfig c;
    c.grid = grid;
    c.block = block;
    Status s = stream->Launch(k, c, std::move(params));
    if (s.ok()) s = stream->Synchronize();
    if (!s.ok()) {
      std::fprintf(stderr, "launch failed: %s\n", s.ToString().c_str());
      std::exit(1);
    }
    if (!cpu::LastLaunchWasNative(*stream) && want_native) {
      std::fprintf(stderr, "kernel '%s' ran interpreted: %s\n", k.signature().name.c_str(),
                   cpu::NativeCodeWhyNot(k).c_str());
      std::exit(1);
    }
  }
  bool want_native = false;
};

using bench::Pack;

struct Row {
  std::string name;
  double native = 0, dev1 = 0, devn = 0, interp = 0;  // median times
  double r1 = 0, rn = 0, ri = 0;                      // median ratios to native
  uint64_t insts = 0;
};

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
  bool one_thread = false, no_interp = false, policy = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--reps=", 7) == 0) g_reps = std::max(1, std::atoi(argv[i] + 7));
    if (std::strncmp(argv[i], "--only=", 7) == 0) only = argv[i] + 7;
    if (std::strcmp(argv[i], "--one-thread") == 0) one_thread = true;
    if (std::strcmp(argv[i], "--no-interp") == 0) no_interp = true;
    if (std::strcmp(argv[i], "--policy") == 0) policy = true;
  }
  if (policy) return PolicyBench(g_reps);
  // --policy measures the default native-code policy against interpreting (PolicyBench);
  // --only=vector|matmul|reduction|warp reduce|histogram runs one kernel; --one-thread skips the all-cores run,
  // --no-interp the interpreter's (all for profiling, e.g. under callgrind).
  auto wanted = [&](const char* name) { return only.empty() || std::string(name).find(only) != std::string::npos; };
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  // One thread and all cores with native code (compiled before the first, warm-up, launch), and
  // one thread interpreting.
  Runner one(1, cpu::NativeMode::kAlways), all(cores, cpu::NativeMode::kAlways), interp(1, cpu::NativeMode::kOff);
  one.want_native = all.want_native = true;
  std::vector<Runner*> runners = {&one};
  if (!no_interp) runners.push_back(&interp);
  if (!one_thread) runners.push_back(&all);
  auto slot = [&](Runner* run, Row& r) -> double& { return run == &one ? r.dev1 : run == &all ? r.devn : r.interp; };
  auto ratio = [&](Runner* run, Row& r) -> double& { return run == &one ? r.r1 : run == &all ? r.rn : r.ri; };
  // Keeps run's figures in r; false when the interpreter counted other thread-instructions than
  // native code (the one-thread run, measured first).
  auto record = [&](Runner* run, Row& r, const Paired& t) {
    slot(run, r) = t.dev;
    ratio(run, r) = t.ratio;
    if (run == &one) r.native = t.native;
    const uint64_t insts = cpu::LastLaunchInstructions(*run->stream);
    if (run == &interp && r.insts != insts) {
      std::fprintf(stderr, "%s: native code and interpreter counted different instructions\n", r.name.c_str());
      return false;
    }
    r.insts = insts;
    return true;
  };
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<Row> rows;

  if (wanted("vector add")) {
    unsigned n = 1 << 20;
    std::vector<float> a(n), b(n), c(n);
    for (unsigned i = 0; i < n; ++i) a[i] = dist(rng), b[i] = dist(rng);
    Row r{.name = "vector add 1M"};
    std::function<void()> native = [&] {
      for (unsigned i = 0; i < n; ++i) c[i] = a[i] + b[i];
      asm volatile("" ::"r"(c.data()) : "memory");
    };
    for (Runner* run : runners) {
      auto k = run->Load("vector_add", "vector_add");
      DevicePtr pa = run->Upload(a), pb = run->Upload(b), pc = run->Upload(c);
      Paired t = TimePaired(native, [&] { run->Launch(*k, {n / 256}, {256}, Pack(k->signature(), pa, pb, pc, n)); });
      if (!record(run, r, t)) return 1;
    }
    rows.push_back(r);
  }
  if (wanted("matmul")) {
    unsigned n = 256;
    std::vector<float> a(n * n), b(n * n), c(n * n);
    for (auto& x : a) x = dist(rng);
    for (auto& x : b) x = dist(rng);
    Row r{.name = "matmul 256^3"};
    std::function<void()> native = [&] {  // the same arithmetic: one fma per product, k ascending
      for (unsigned i = 0; i < n; ++i)
        for (unsigned j = 0; j < n; ++j) {
          float acc = 0;
          for (unsigned k = 0; k < n; ++k) acc = __builtin_fmaf(a[i * n + k], b[k * n + j], acc);
          c[i * n + j] = acc;
        }
      asm volatile("" ::"r"(c.data()) : "memory");
    };
    for (Runner* run : runners) {
      auto k = run->Load("matmul", "matmul_tiled");
      DevicePtr pa = run->Upload(a), pb = run->Upload(b), pc = run->Upload(c);
      Paired t = TimePaired(native, [&] {
        run->Launch(*k, {n / 16, n / 16}, {16, 16}, Pack(k->signature(), pa, pb, pc, n));
      });
      if (!record(run, r, t)) return 1;
    }
    rows.push_back(r);
  }
  if (wanted("reduction")) {
    unsigned n = 1 << 22, blocks = n / 256;
    std::vector<float> in(n), out(blocks);
    for (auto& x : in) x = dist(rng);
    Row r{.name = "reduction 4M"};
    std::function<void()> native = [&] {  // the same tree per block of 256
      for (unsigned bl = 0; bl < blocks; ++bl) {
        float s[256];
        std::memcpy(s, &in[bl * 256], sizeof s);
        for (unsigned stride = 128; stride > 0; stride >>= 1)
          for (unsigned t = 0; t < stride; ++t) s[t] += s[t + stride];
        out[bl] = s[0];
      }
      asm volatile("" ::"r"(out.data()) : "memory");
    };
    for (Runner* run : runners) {
      auto k = run->Load("block_reduce", "block_reduce_sum");
      DevicePtr pin = run->Upload(in), pout = run->Upload(out);
      Paired t = TimePaired(native, [&] { run->Launch(*k, {blocks}, {256}, Pack(k->signature(), pin, pout, n)); });
      if (!record(run, r, t)) return 1;
    }
    rows.push_back(r);
  }

  if (wanted("warp reduce")) {  // shfl.sync and global atomics: host blocks in native code
    unsigned n = 1 << 22;
    std::vector<int> in(n);
    for (unsigned i = 0; i < n; ++i) in[i] = static_cast<int>(i % 7);
    std::vector<int> total(1), per_warp(n / 32);
    Row r{.name = "warp reduce 4M"};
    std::function<void()> native = [&] {
      int sum = 0;
      for (unsigned w = 0; w < n / 32; ++w) {
        int v = 0;
        for (unsigned l = 0; l < 32; ++l) v += in[w * 32 + l];
        per_warp[w] = v;
        sum += v;
      }
      total[0] = sum;
      asm volatile("" ::"r"(per_warp.data()) : "memory");
    };
    for (Runner* run : runners) {
      auto k = run->Load("warp_reduce", "warp_reduce_sum");
      DevicePtr pin = run->Upload(in), ptotal = run->Upload(total), pwarp = run->Upload(per_warp);
      Paired t =
          TimePaired(native, [&] { run->Launch(*k, {n / 256}, {256}, Pack(k->signature(), pin, ptotal, pwarp, n)); });
      if (!record(run, r, t)) return 1;
    }
    rows.push_back(r);
  }
  if (wanted("histogram")) {  // shared-memory atomics in a grid-stride loop
    unsigned n = 1 << 24, blocks = 64;
    std::vector<uint8_t> data(n);
    for (auto& x : data) x = static_cast<uint8_t>(rng());
    std::vector<unsigned> bins(256);
    Row r{.name = "histogram 16M"};
    std::function<void()> native = [&] {
      unsigned local[256] = {};
      for (uint8_t x : data) ++local[x];
      for (int i = 0; i < 256; ++i) bins[i] += local[i];
      asm volatile("" ::"r"(bins.data()) : "memory");
    };
    for (Runner* run : runners) {
      auto k = run->Load("histogram", "histogram256");
      DevicePtr pdata = run->Upload(data), pbins = run->Upload(bins);
      Paired t = TimePaired(native, [&] { run->Launch(*k, {blocks}, {256}, Pack(k->signature(), pdata, n, pbins)); });
      if (!record(run, r, t)) return 1;
    }
    rows.push_back(r);
  }

  std::string all_label = "cpu " + std::to_string(cores) + " thr";
  std::printf("%-16s %11s %12s %8s %11s %13s %8s %14s %8s %12s\n", "kernel", "native C++", "cpu 1 thr", "ratio",
              "Ginst/s 1t", "interp 1 thr", "ratio", all_label.c_str(), "ratio", "thread-insts");
  for (const Row& r : rows) {
    std::printf("%-16s %8.2f ms %9.2f ms %7.1fx %11.2f %10.2f ms %7.1fx %11.2f ms %7.1fx %12llu\n", r.name.c_str(),
                r.native * 1e3, r.dev1 * 1e3, r.r1, r.insts / r.dev1 / 1e9, r.interp * 1e3, r.ri, r.devn * 1e3, r.rn,
                static_cast<unsigned long long>(r.insts));
  }
  return 0;
}
