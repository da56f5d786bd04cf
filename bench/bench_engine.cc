// Wasm engine benchmark. Every figure is reported next to a baseline measured in the same run:
//   1. guest vs native: ten C programs built natively (-O2; also -O2 -march=native, as a user
//      would build them, for context) and as a guest; geomean of the per-program ratios (target <= 1.15x)
//   2. instantiate + destroy of a compiled module, vs the bare mmap/munmap floor   (target <= 20 us)
//   3. guest->host call cost: a loop with vs without a trivial import call         (target <= 5 ns)
//   4. interrupt checks: the workload compiled with vs without them                (target <= 7 %)
//   5. frames for backtraces: -fno-inline-functions-called-once vs without it      (target <= 3 %)
//   6. deploy a 1.4 MB module (quick tier), vs compiling it with cc                 (target <= 5 s)
//   7. the engine's code-generation choices (compiler, -O level, -march) side by side (context)
// Each timing is the median of --reps interleaved runs (default 15); ratios show their spread
// (min-max of the per-run ratios). Prints a table, a missed target marked MISSED; --json for one
// object.
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

// The workload's programs (bench/programs/workload.c), each built natively three ways: -O2 for
// generic x86-64 (the target's baseline), -O2 -march=native (as a user would build it for this
// machine) and the latter without auto-vectorisation (what MVP wasm, which has no SIMD, expresses).
// (clang-format 14 does not settle on one layout of this list)
// clang-format off
#define GPUWASM_WORKLOAD_PROGRAMS(X)                                                                 \
  X(matmul, true) X(sort, false) X(hash, false) X(parse, false) X(crc32, false) X(nbody, true)     \
  X(lz, false) X(graph, false) X(bignum, false) X(words, false)
// clang-format on
extern "C" {
#define GPUWASM_DECLARE(name, fp)   \
  int32_t bench_##name(void);       \
  int32_t march_bench_##name(void); \
  int32_t scalar_bench_##name(void);
GPUWASM_WORKLOAD_PROGRAMS(GPUWASM_DECLARE)
#undef GPUWASM_DECLARE
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

// Each function's run times, measured interleaved (a, b, c, a, b, c, ...) so that drift in
// machine speed hits every contender alike: samples[k][rep].
std::vector<std::vector<double>> Samples(const std::vector<std::function<void()>>& fns) {
  std::vector<std::vector<double>> t(fns.size());
  for (const auto& f : fns) f();  // warm-up
  for (int i = 0; i < g_reps; ++i) {
    for (size_t k = 0; k < fns.size(); ++k) t[k].push_back(Seconds(fns[k]));
  }
  return t;
}

// Medians of each function's run time, measured interleaved.
std::vector<double> Compare(const std::vector<std::function<void()>>& fns) {
  std::vector<double> med;
  for (auto& v : Samples(fns)) med.push_back(Median(v));
  return med;
}

// The median of the per-repetition ratios a[i] / b[i], and their spread (min, max).
struct Ratio {
  double median, min, max;
};
Ratio RatioOf(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> r;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) r.push_back(a[i] / b[i]);
  return {Median(r), *std::min_element(r.begin(), r.end()), *std::max_element(r.begin(), r.end())};
}

// Two builds of one program agree: exactly, or for floating-point results (float bits) within a
// relative 1e-4, since native -march=native code may fuse multiply-adds where wasm may not.
bool SameResult(int32_t a, int32_t b, bool fp) {
  if (!fp) return a == b;
  float x, y;
  std::memcpy(&x, &a, sizeof x);
  std::memcpy(&y, &b, sizeof y);
  return std::fabs(x - y) <= 1e-4f * std::max(std::fabs(x), std::fabs(y));
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
  bool missed = false;  // printed as MISSED (scripts/bench.sh lists those lines at the end)
};

void Print(const std::vector<Row>& rows, bool json) {
  if (json) {
    std::printf("{");
    for (size_t i = 0; i < rows.size(); ++i) {
      std::printf("%s\"%s\": {\"value\": \"%s\", \"baseline\": \"%s\", \"ratio\": \"%s\", \"target\": \"%s\"}",
                  i ? ", " : "", rows[i].metric.c_str(), rows[i].value.c_str(), rows[i].baseline.c_str(),
                  rows[i].ratio.c_str(), rows[i].target.c_str());
    }
    std::printf("}\n");
  } else {
    std::printf("%-36s %-15s %-24s %-20s %s\n", "metric", "value", "baseline (same run)", "ratio (spread)", "target");
    for (const Row& row : rows) {
      std::printf("%-36s %-15s %-24s %-20s %s%s\n", row.metric.c_str(), row.value.c_str(), row.baseline.c_str(),
                  row.ratio.c_str(), row.target.c_str(), row.missed ? "  MISSED" : "");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false, guest_only = false;  // --guest-only: the guest-code rows (1, 4, 5, 7) alone
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) json = true;
    if (std::strncmp(argv[i], "--reps=", 7) == 0) g_reps = std::max(1, std::atoi(argv[i] + 7));
    if (std::strcmp(argv[i], "--guest-only") == 0) guest_only = true;
  }
  wasm::EngineOptions o;
  o.cache_dir = GPUWASM_BENCH_CACHE;
  o.imports = host::GuestImports();
  wasm::Engine engine(o);
  // Frames for backtraces: the engine's flags without -fno-inline-functions-called-once.
  wasm::EngineOptions inlining = o;
  std::erase(inlining.cc_flags, std::string("-fno-inline-functions-called-once"));
  wasm::Engine engine_inlining(inlining);
  wasm::EngineOptions nochecks = o;
  nochecks.interrupt_checks = false;
  wasm::Engine engine_nochecks(nochecks);

  // Code-generation choices for guest code, measured against each other in the same run: the
  // engine's defaults (the first variant: the guest the guest/native rows measure) and
  // the alternatives an operator can choose (EngineOptions::cc and cc_flags; --cc). Compile time
  // is one compile of the workload module in an empty cache.
  struct Variant {
    std::string label, cc;
    std::vector<std::string> flags;
  };
  const std::vector<std::string> frames = {"-fno-inline-functions-called-once"};  // kept by every variant
  auto with_frames = [&](std::vector<std::string> f) {
    f.insert(f.end(), frames.begin(), frames.end());
    return f;
  };
  std::vector<Variant> variants = {
      {"cc -O1 (the default)", o.cc, o.cc_flags},
      {"gcc -O1 -march=x86-64-v3", "gcc", with_frames({"-O1", "-march=x86-64-v3"})},
      {"gcc -O2", "gcc", with_frames({"-O2"})},
      {"gcc -O2 -march=x86-64-v3", "gcc", with_frames({"-O2", "-march=x86-64-v3"})},
      {"clang -O2", "clang", with_frames({"-O2"})},
      {"clang -O2 -march=x86-64-v3", "clang", with_frames({"-O2", "-march=x86-64-v3"})},
  };
  std::vector<GuestFn> variant_guests;
  std::vector<double> variant_compile;
  for (const Variant& v : variants) {
    wasm::EngineOptions vo = o;
    vo.cache_dir = std::filesystem::path(GPUWASM_BENCH_CACHE) / "variant";
    std::filesystem::remove_all(vo.cache_dir);
    vo.cc = v.cc;
    vo.cc_flags = v.flags;
    wasm::Engine ve(vo);
    std::shared_ptr<const wasm::Module> m;
    variant_compile.push_back(Seconds([&] { m = Compile(ve, GPUWASM_BENCH_WORKLOAD); }));
    variant_guests.push_back(Instantiate(m));
  }

  auto workload_nochecks = Compile(engine_nochecks, GPUWASM_BENCH_WORKLOAD);
  auto workload_inlining = Compile(engine_inlining, GPUWASM_BENCH_WORKLOAD);
  GuestFn gn = Instantiate(workload_nochecks), gi = Instantiate(workload_inlining);
  std::vector<Row> rows;
  char a[64], b[64], r[64];

  // 1, 4, 5: guest vs native, interrupt-check and frame overheads, and the code-generation
  // variants, per program of the workload.
  struct Program {
    const char* name;
    bool fp;  // returns float bits
    int32_t (*native)();
    int32_t (*march)();
    int32_t (*scalar)();
  };
  const Program programs[] = {
#define GPUWASM_PROGRAM(name, fp) {#name, fp, bench_##name, march_bench_##name, scalar_bench_##name},
      GPUWASM_WORKLOAD_PROGRAMS(GPUWASM_PROGRAM)
#undef GPUWASM_PROGRAM
  };
  const double n_programs = std::size(programs);
  double geo_guest = 1, geo_march = 1, geo_scalar = 1, geo_checks = 1, geo_frames = 1, worst_checks = 0;
  std::string worst_checks_name;
  std::vector<double> geo_variant(variants.size(), 1.0);
  std::vector<std::string> variant_detail(variants.size());  // each program's ratio
  for (const Program& p : programs) {
    std::string entry = std::string("bench_") + p.name;
    int32_t want = p.native();
    bool same = SameResult(p.march(), want, p.fp) && SameResult(p.scalar(), want, p.fp) &&
                SameResult(gn.Call(entry.c_str()), want, p.fp) && SameResult(gi.Call(entry.c_str()), want, p.fp);
    for (GuestFn& v : variant_guests) same = same && SameResult(v.Call(entry.c_str()), want, p.fp);
    if (!same) {
      std::fprintf(stderr, "%s: guest and native results differ\n", p.name);
      return 1;
    }
    // t: native, march, scalar, no checks, inlined, then each variant (the first, the defaults, is the guest).
    std::vector<std::function<void()>> fns = {[&] { p.native(); }, [&] { p.march(); }, [&] { p.scalar(); },
                                              [&] { gn.Call(entry.c_str()); }, [&] { gi.Call(entry.c_str()); }};
    const size_t first_variant = fns.size();
    for (GuestFn& v : variant_guests) fns.emplace_back([&] { v.Call(entry.c_str()); });
    std::vector<std::vector<double>> t = Samples(fns);
    double tn = Median(t[0]), tm = Median(t[1]), ts = Median(t[2]), tgn = Median(t[3]), tgi = Median(t[4]),
           tg = Median(t[first_variant]);
    Ratio guest = RatioOf(t[first_variant], t[0]);
    geo_guest *= guest.median;
    geo_march *= tg / tm;
    geo_scalar *= tg / ts;
    geo_checks *= tg / tgn;
    geo_frames *= tg / tgi;
    if (tg / tgn > worst_checks) worst_checks = tg / tgn, worst_checks_name = p.name;
    for (size_t v = 0; v < variants.size(); ++v) {
      double ratio = RatioOf(t[first_variant + v], t[0]).median;  // as the guest/native rows
      geo_variant[v] *= ratio;
      std::snprintf(r, sizeof r, " %s %.2f", p.name, ratio);
      variant_detail[v] += r;
    }
    std::snprintf(a, sizeof a, "%.2f ms", tg * 1e3);
    std::snprintf(b, sizeof b, "%.2f ms native -O2", tn * 1e3);
    std::snprintf(r, sizeof r, "%.2fx (%.2f-%.2f)", guest.median, guest.min, guest.max);
    rows.push_back({std::string("guest/native ") + p.name, a, b, r, "(context)"});
    std::snprintf(b, sizeof b, "%.2f ms -march=native", tm * 1e3);
    std::snprintf(r, sizeof r, "%.2fx", tg / tm);
    rows.push_back({std::string("guest/native-march ") + p.name, "", b, r, "(context)"});
  }
  auto geomean = [&](double product) { return std::pow(product, 1.0 / n_programs); };
  double guest_geo = geomean(geo_guest);
  std::snprintf(r, sizeof r, "%.2fx", guest_geo);
  rows.push_back({"guest/native geomean", "", "-O2", r, "<= 1.15x", guest_geo > 1.15});
  std::snprintf(r, sizeof r, "%.2fx", geomean(geo_march));
  rows.push_back({"guest/native-march geomean", "", "-O2 -march=native", r, "(context)"});
  std::snprintf(r, sizeof r, "%.2fx", geomean(geo_scalar));
  rows.push_back({"guest/native-scalar geomean", "", "-march=native, scalar", r, "(context)"});
  std::snprintf(r, sizeof r, "%+.1f%%", (geomean(geo_checks) - 1) * 100);
  rows.push_back({"interrupt checks geomean", "", "built without", r, "<= 7%", geomean(geo_checks) > 1.07});
  std::snprintf(r, sizeof r, "%+.1f%%", (worst_checks - 1) * 100);
  rows.push_back({"interrupt checks, worst", worst_checks_name, "built without", r, "(context)"});
  std::snprintf(r, sizeof r, "%+.1f%%", (geomean(geo_frames) - 1) * 100);
  rows.push_back({"frames kept for backtraces", "", "functions inlined", r, "<= 3%", geomean(geo_frames) > 1.03});
  for (size_t v = 0; v < variants.size(); ++v) {
    std::snprintf(a, sizeof a, "%.2f s compile", variant_compile[v]);
    std::snprintf(r, sizeof r, "%.2fx", geomean(geo_variant[v]));
    rows.push_back({"geomean, " + variants[v].label, a, "-O2", r, "(context)"});
    if (!json) std::printf("%s:%s\n", variants[v].label.c_str(), variant_detail[v].c_str());
  }

  if (guest_only) {
    Print(rows, json);
    return 0;
  }

  // 2: instantiate + destroy, vs reserving (and touching) and releasing guest memory: what a
  // fresh mapping costs, which the pool of zeroed memories (wasm_rt.cc, ADR 0021) saves an
  // instance while at most 8 are alive.
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
  rows.push_back({"instantiate+destroy (no data)", a, b, r, "<= 20 us", ti[0] > 20e-6});
  std::snprintf(a, sizeof a, "%.2f us", ti[2] * 1e6);
  std::snprintf(b, sizeof b, "%.2f us +1 page touched", ti[3] * 1e6);
  std::snprintf(r, sizeof r, "%.2fx", ti[2] / ti[3]);
  rows.push_back({"instantiate+destroy (hello)", a, b, r, "<= 20 us", ti[2] > 20e-6});

  // 3: guest -> host call.
  GuestFn c = Instantiate(calls);
  std::vector<double> tc = Compare({[&] { c.Call("with_calls"); }, [&] { c.Call("without_calls"); }});
  double tw = tc[0], two = tc[1];
  double per_call = (tw - two) / 1e7;
  std::snprintf(a, sizeof a, "%.2f ns/iter", tw / 1e7 * 1e9);
  std::snprintf(b, sizeof b, "%.2f ns/iter no call", two / 1e7 * 1e9);
  std::snprintf(r, sizeof r, "%.2f ns/call", per_call * 1e9);
  rows.push_back({"guest->host call", a, b, r, "<= 5 ns", per_call > 5e-9});

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
    rows.push_back({"deploy 1.4 MB module", a, b, r, "<= 5 s", quick_deploy > 5});
    std::vector<double> tr = Compare(
        {[&] { Instantiate(quick_module).Call("_start"); }, [&] { Instantiate(optimized_module).Call("_start"); }});
    std::snprintf(a, sizeof a, "%.2f ms", tr[0] * 1e3);
    std::snprintf(b, sizeof b, "%.2f ms optimised", tr[1] * 1e3);
    std::snprintf(r, sizeof r, "%.2fx", tr[0] / tr[1]);
    rows.push_back({"large module run, quick code", a, b, r, "(context)"});
  }

  Print(rows, json);
  return 0;
}
