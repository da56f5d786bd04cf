// Wasm engine benchmark. Every figure is reported next to a baseline measured in the same run:
//   1. guest vs native: the same C workload built natively (-O2) and as a guest   (target <= 1.3)
//   2. instantiate + destroy of a compiled module, vs the bare mmap/munmap floor   (target <= 20 us)
//   3. guest->host call cost: a loop with vs without a trivial import call         (target <= 5 ns)
//   4. interrupt checks: the workload compiled with vs without them                (target <= 7 %)
//   5. frames for backtraces: -fno-inline-functions-called-once vs plain -O1        (target <= 3 %)
//   6. deploy a 1.4 MB module (quick tier), vs compiling it with cc                 (target <= 5 s)
// Each timing is the median of --reps runs (default 7). Prints a table; --json for one object.
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "host/guest_io.h"
#include "host/host_env.h"
#include "wasm/engine.h"
#include "wasm/instance.h"

extern "C" {
int32_t bench_matmul(void);  // native -O2
int32_t bench_sort(void);
int32_t bench_hash(void);
int32_t scalar_bench_matmul(void);  // native -O2 -fno-tree-vectorize: what MVP wasm can express
int32_t scalar_bench_sort(void);
int32_t scalar_bench_hash(void);
}

namespace {

using namespace gpuwasm;
using Clock = std::chrono::steady_clock;

int g_reps = 15;

double Seconds(const std::function<void()>& fn) {
  auto t0 = Clock::now();
  fn();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Medians of each function's run time, measured interleaved (a, b, c, a, b, c, ...) so that
// drift in machine speed hits every contender alike.
std::vector<double> Compare(const std::vector<std::function<void()>>& fns) {
  std::vector<std::vector<double>> t(fns.size());
  for (const auto& f : fns) f();  // warm-up
  for (int i = 0; i < g_reps; ++i) {
    for (size_t k = 0; k < fns.size(); ++k) t[k].push_back(Seconds(fns[k]));
  }
  std::vector<double> med;
  for (auto& v : t) med.push_back(Median(v));
  return med;
}

std::string ReadFile(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::shared_ptr<const wasm::Module> Compile(wasm::Engine& engine, const char* path) {
  std::string bytes = ReadFile(path);
  auto m = engine.Compile(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  if (!m.ok()) {
    std::fprintf(stderr, "compile %s: %s\n", path, m.status().ToString().c_str());
    std::exit(1);
  }
  return *m;
}

struct GuestFn {
  std::unique_ptr<host::HostEnv> env;
  std::unique_ptr<wasm::Instance> inst;
  int32_t Call(const char* name) {
    auto r = inst->Call(name);
    if (!r.ok() || !r->ok()) {
      std::fprintf(stderr, "guest call %s failed\n", name);
      std::exit(1);
    }
    return r->exit_code;
  }
};

GuestFn Instantiate(std::shared_ptr<const wasm::Module> m) {
  GuestFn g;
  g.env = std::make_unique<host::HostEnv>(host::GuestIoOptions{});
  g.inst = std::move(*wasm::Instance::Create(m, g.env.get(), {}));
  g.env->io.Attach(g.inst.get());
  return g;
}

struct Row {
  std::string metric, value, baseline, ratio, target;
};

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) json = true;
    if (std::strncmp(argv[i], "--reps=", 7) == 0) g_reps = std::max(1, std::atoi(argv[i] + 7));
  }
  wasm::EngineOptions o;
  o.cache_dir = GPUWASM_BENCH_CACHE;
  o.imports = host::GuestImports();
  wasm::Engine engine(o);
  wasm::EngineOptions inlining = o;
  inlining.cc_flags = {"-O1"};  // functions called once inlined: fewer frames in a trap's backtrace
  wasm::Engine engine_inlining(inlining);
  o.interrupt_checks = false;
  wasm::Engine engine_nochecks(o);

  auto workload = Compile(engine, GPUWASM_BENCH_WORKLOAD);
  auto workload_nochecks = Compile(engine_nochecks, GPUWASM_BENCH_WORKLOAD);
  auto workload_inlining = Compile(engine_inlining, GPUWASM_BENCH_WORKLOAD);
  GuestFn g = Instantiate(workload), gn = Instantiate(workload_nochecks), gi = Instantiate(workload_inlining);
  std::vector<Row> rows;
  char a[64], b[64], r[64];

  // 1 + 4: guest vs native, and interrupt-check overhead, per workload kernel.
  struct Kernel {
    const char* name;
    int32_t (*native)();
    int32_t (*scalar)();
  } kernels[] = {{"bench_matmul", bench_matmul, scalar_bench_matmul},
                 {"bench_sort", bench_sort, scalar_bench_sort},
                 {"bench_hash", bench_hash, scalar_bench_hash}};
  double geo_guest = 1, geo_scalar = 1, geo_checks = 1, geo_frames = 1;
  for (const Kernel& k : kernels) {
    int32_t want = k.native();
    if (g.Call(k.name) != want || gn.Call(k.name) != want || gi.Call(k.name) != want || k.scalar() != want) {
      std::fprintf(stderr, "%s: guest and native results differ\n", k.name);
      return 1;
    }
    std::vector<double> t = Compare({[&] { k.native(); }, [&] { k.scalar(); }, [&] { g.Call(k.name); },
                                     [&] { gn.Call(k.name); }, [&] { gi.Call(k.name); }});
    double tn = t[0], ts = t[1], tg = t[2], tgn = t[3], tgi = t[4];
    geo_frames *= tg / tgi;
    geo_guest *= tg / tn;
    geo_scalar *= tg / ts;
    geo_checks *= tg / tgn;
    std::string what = k.name + 6;
    std::snprintf(a, sizeof a, "%.2f ms", tg * 1e3);
    std::snprintf(b, sizeof b, "%.2f ms native -O2", tn * 1e3);
    std::snprintf(r, sizeof r, "%.2fx", tg / tn);
    rows.push_back({"guest/native " + what, a, b, r, "<= 1.3x"});
    std::snprintf(b, sizeof b, "%.2f ms native scalar", ts * 1e3);
    std::snprintf(r, sizeof r, "%.2fx", tg / ts);
    rows.push_back({"guest/native-scalar " + what, a, b, r, "(context)"});
    std::snprintf(b, sizeof b, "%.2f ms without", tgn * 1e3);
    std::snprintf(r, sizeof r, "%+.1f%%", (tg / tgn - 1) * 100);
    rows.push_back({"interrupt checks " + what, a, b, r, "<= 7%"});
    std::snprintf(b, sizeof b, "%.2f ms inlined", tgi * 1e3);
    std::snprintf(r, sizeof r, "%+.1f%%", (tg / tgi - 1) * 100);
    rows.push_back({"frames kept for backtraces " + what, a, b, r, "<= 3%"});
  }
  std::snprintf(r, sizeof r, "%.2fx", std::pow(geo_guest, 1.0 / 3));
  rows.push_back({"guest/native geomean", "", "", r, "<= 1.3x"});
  std::snprintf(r, sizeof r, "%.2fx", std::pow(geo_scalar, 1.0 / 3));
  rows.push_back({"guest/native-scalar geomean", "", "", r, "(context)"});
  std::snprintf(r, sizeof r, "%+.1f%%", (std::pow(geo_checks, 1.0 / 3) - 1) * 100);
  rows.push_back({"interrupt checks geomean", "", "", r, "<= 7%"});
  std::snprintf(r, sizeof r, "%+.1f%%", (std::pow(geo_frames, 1.0 / 3) - 1) * 100);
  rows.push_back({"frames kept for backtraces geomean", "", "", r, "<= 3%"});

  // 2: instantiate + destroy, vs the floor of reserving (and touching) and releasing guest
  // memory, which a fresh instance cannot avoid: its memory is unmapped completely on free.
  auto calls = Compile(engine, GPUWASM_BENCH_HOST_CALLS);  // instantiation touches no page
  auto hello = Compile(engine, GPUWASM_BENCH_HELLO);       // wasi-libc data segments: it does
  host::HostEnv env({});
  const int kInst = 2000;
  auto instantiate = [&](const std::shared_ptr<const wasm::Module>& m) {
    return [&, m] {
      for (int i = 0; i < kInst; ++i) {
        if (!wasm::Instance::Create(m, &env, {}).ok()) std::exit(1);
      }
    };
  };
  auto floor = [&](bool touch) {
    return [&, touch] {
      for (int i = 0; i < kInst; ++i) {
        void* p = mmap(nullptr, 8ull << 30, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        mprotect(p, 2 << 16, PROT_READ | PROT_WRITE);
        if (touch) static_cast<volatile char*>(p)[0] = 1;
        munmap(p, 8ull << 30);
      }
    };
  };
  std::vector<double> ti = Compare({instantiate(calls), floor(false), instantiate(hello), floor(true)});
  for (double& x : ti) x /= kInst;
  std::snprintf(a, sizeof a, "%.2f us", ti[0] * 1e6);
  std::snprintf(b, sizeof b, "%.2f us reserve+release", ti[1] * 1e6);
  std::snprintf(r, sizeof r, "%.2fx", ti[0] / ti[1]);
  rows.push_back({"instantiate+destroy (no data)", a, b, r, "<= 20 us"});
  std::snprintf(a, sizeof a, "%.2f us", ti[2] * 1e6);
  std::snprintf(b, sizeof b, "%.2f us +1 page touched", ti[3] * 1e6);
  std::snprintf(r, sizeof r, "%.2fx", ti[2] / ti[3]);
  rows.push_back({"instantiate+destroy (hello)", a, b, r, "<= 20 us"});

  // 3: guest -> host call.
  GuestFn c = Instantiate(calls);
  std::vector<double> tc = Compare({[&] { c.Call("with_calls"); }, [&] { c.Call("without_calls"); }});
  double tw = tc[0], two = tc[1];
  double per_call = (tw - two) / 1e7;
  std::snprintf(a, sizeof a, "%.2f ns/iter", tw / 1e7 * 1e9);
  std::snprintf(b, sizeof b, "%.2f ns/iter no call", two / 1e7 * 1e9);
  std::snprintf(r, sizeof r, "%.2f ns/call", per_call * 1e9);
  rows.push_back({"guest->host call", a, b, r, "<= 5 ns"});

  // 6: deploying a large module (generated: 1.4 MB, the size of sqlite3 built for wasm32-wasi):
  // compile + load + first invocation with the quick tier, each time in an empty cache, against
  // the same without it (the optimising compile, split into parts: measured once, it takes
  // tens of seconds); then the generated program's run time in quick-tier vs optimised code.
  {
    std::string large = ReadFile(GPUWASM_BENCH_LARGE);
    auto bytes = std::span(reinterpret_cast<const uint8_t*>(large.data()), large.size());
    std::string out_quick, out_optimized;
    auto deploy = [&](size_t quick_tier_min, std::string* out, std::shared_ptr<const wasm::Module>* keep) -> double {
      std::filesystem::path dir = std::filesystem::path(GPUWASM_BENCH_CACHE) / "large";
      std::filesystem::remove_all(dir);
      wasm::EngineOptions lo;
      lo.cache_dir = dir;
      lo.imports = host::GuestImports();
      lo.quick_tier_min_bytes = quick_tier_min;
      wasm::Engine e(lo);  // destroyed at the end: a background compile is cancelled
      double s = Seconds([&] {
        auto m = e.Compile(bytes);
        if (!m.ok()) {
          std::fprintf(stderr, "large module: %s\n", m.status().ToString().c_str());
          std::exit(1);
        }
        GuestFn f = Instantiate(*m);
        f.Call("_start");
        *out = f.env->io.stdout_text();
        if (keep != nullptr) *keep = *m;
      });
      return s;
    };
    std::shared_ptr<const wasm::Module> quick_module, optimized_module;
    std::vector<double> deploys;
    for (int i = 0; i < std::max(g_reps, 7); ++i)
      deploys.push_back(deploy(wasm::EngineOptions{}.quick_tier_min_bytes, &out_quick, &quick_module));
    double quick_deploy = Median(deploys);
    double optimized_deploy = deploy(0, &out_optimized, &optimized_module);
    if (out_quick != out_optimized || out_quick.find("checksum") == std::string::npos) {
      std::fprintf(stderr, "large module: quick tier printed '%s', optimised code '%s'\n", out_quick.c_str(),
                   out_optimized.c_str());
      return 1;
    }
    std::snprintf(a, sizeof a, "%.2f s", quick_deploy);
    std::snprintf(b, sizeof b, "%.1f s cc, no quick tier", optimized_deploy);
    std::snprintf(r, sizeof r, "%.3fx", quick_deploy / optimized_deploy);
    rows.push_back({"deploy 1.4 MB module", a, b, r, "<= 5 s"});
    std::vector<double> tr = Compare(
        {[&] { Instantiate(quick_module).Call("_start"); }, [&] { Instantiate(optimized_module).Call("_start"); }});
    std::snprintf(a, sizeof a, "%.2f ms", tr[0] * 1e3);
    std::snprintf(b, sizeof b, "%.2f ms optimised", tr[1] * 1e3);
    std::snprintf(r, sizeof r, "%.2fx", tr[0] / tr[1]);
    rows.push_back({"large module run, quick code", a, b, r, "(context)"});
  }

  if (json) {
    std::printf("{");
    for (size_t i = 0; i < rows.size(); ++i) {
      std::printf("%s\"%s\": {\"value\": \"%s\", \"baseline\": \"%s\", \"ratio\": \"%s\", \"target\": \"%s\"}",
                  i ? ", " : "", rows[i].metric.c_str(), rows[i].value.c_str(), rows[i].baseline.c_str(),
                  rows[i].ratio.c_str(), rows[i].target.c_str());
    }
    std::printf("}\n");
  } else {
    std::printf("%-30s %-14s %-24s %-14s %s\n", "metric", "value", "baseline (same run)", "ratio", "target");
    for (const Row& row : rows) {
      std::printf("%-30s %-14s %-24s %-14s %s\n", row.metric.c_str(), row.value.c_str(), row.baseline.c_str(),
                  row.ratio.c_str(), row.target.c_str());
    }
  }
  return 0;
}
