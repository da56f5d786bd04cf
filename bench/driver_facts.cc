// gpuwasm-driver-facts: measures, on the GPU at hand, the CUDA driver behaviour the design of the
// CUDA device and of tenant worker processes rests on (docs/operator-guide.md, "Isolation"). Each
// fact runs in its own process (`gpuwasm-driver-facts FACT`), so a wedged driver call or a fault
// cannot taint the next; scripts/gpu-check.sh runs every fact under a timeout.
//
//   isolation-pool   can a kernel of context A write context B's pool memory (cuMemAllocFromPoolAsync)?
//   isolation-plain  the same for cuMemAlloc memory
//   faultiso         does an illegal address in A hurt B's running kernel, B's next launch, a new context?
//   destroy          does cuCtxDestroy return while a kernel of that context spins? does another context run?
//   htod             does cuMemcpyHtoDAsync from pageable / pinned memory return behind a spinning kernel?
//   footprint        device memory and time per context (context + pool + stream + module + staging)
//   leak [MIB]       is pool memory still allocated given back by cuCtxDestroy? by a faulted context?
//   trim [MIB]       does free + cuMemPoolTrimTo + destroy (gpuwasm's teardown) give every byte back?
//   load SECONDS     keeps every SM busy for SECONDS (a load for GPM samples)
//
// The last line of each fact is "FACT: VERDICT". Exit status 0 when the fact could be measured.
// Loads libcuda.so.1 (or $GPUWASM_CUDA_LIBRARY) like gpuwasm; needs no CUDA toolkit.
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "device/cuda/driver.h"

namespace {

using gpuwasm::device::cuda::CudaDriver;
using CUresult = int;
using Clock = std::chrono::steady_clock;

template <class T>
using Id = T;

// The driver entry points the facts use (cuda.h's versioned names).
struct Api {
#define FACT_SYMBOLS(X)                                                            \
  X(cuDeviceGet, CUresult (*)(int*, int))                                          \
  X(cuDeviceGetAttribute, CUresult (*)(int*, int, int))                            \
  X(cuCtxCreate_v4, CUresult (*)(void**, void*, unsigned, int))                    \
  X(cuCtxCreate_v2, CUresult (*)(void**, unsigned, int))                           \
  X(cuCtxDestroy_v2, CUresult (*)(void*))                                          \
  X(cuCtxSetCurrent, CUresult (*)(void*))                                          \
  X(cuModuleLoadDataEx, CUresult (*)(void**, const void*, unsigned, int*, void**)) \
  X(cuModuleGetFunction, CUresult (*)(void**, void*, const char*))                 \
  X(cuStreamCreate, CUresult (*)(void**, unsigned))                                \
  X(cuStreamSynchronize, CUresult (*)(void*))                                      \
  X(cuStreamQuery, CUresult (*)(void*))                                            \
  X(cuMemAlloc_v2, CUresult (*)(uint64_t*, size_t))                                \
  X(cuMemFree_v2, CUresult (*)(uint64_t))                                          \
  X(cuMemGetInfo_v2, CUresult (*)(size_t*, size_t*))                               \
  X(cuMemPoolCreate, CUresult (*)(void**, const void*))                            \
  X(cuMemPoolDestroy, CUresult (*)(void*))                                         \
  X(cuMemPoolTrimTo, CUresult (*)(void*, size_t))                                  \
  X(cuMemAllocFromPoolAsync, CUresult (*)(uint64_t*, size_t, void*, void*))        \
  X(cuMemFreeAsync, CUresult (*)(uint64_t, void*))                                 \
  X(cuMemHostAlloc, CUresult (*)(void**, size_t, unsigned))                        \
  X(cuMemsetD8Async, CUresult (*)(uint64_t, unsigned char, size_t, void*))         \
  X(cuMemcpyHtoDAsync_v2, CUresult (*)(uint64_t, const void*, size_t, void*))      \
  X(cuMemcpyDtoHAsync_v2, CUresult (*)(void*, uint64_t, size_t, void*))            \
  X(cuLaunchKernel,                                                                \
    CUresult (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**, void**))
#define FACT_FIELD(name, type) Id<type> name = nullptr;
  FACT_SYMBOLS(FACT_FIELD)
#undef FACT_FIELD
};

Api api;
std::shared_ptr<CudaDriver> driver;
int dev = 0;

const char* kPtx = R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry store(.param .u64 p, .param .u32 v)
{
  .reg .b64 %rd<3>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [v];
  cvta.to.global.u64 %rd2, %rd1;
  st.global.u32 [%rd2], %r1;
  ret;
}
.visible .entry spin(.param .u64 flag)
{
  .reg .b64 %rd<3>;
  .reg .b32 %r<2>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [flag];
  cvta.to.global.u64 %rd2, %rd1;
$Lspin:
  ld.volatile.global.u32 %r1, [%rd2];
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $Lspin;
  ret;
}
.visible .entry delay(.param .u64 cycles)
{
  .reg .b64 %rd<5>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [cycles];
  mov.u64 %rd2, %clock64;
$Ldelay:
  mov.u64 %rd3, %clock64;
  sub.s64 %rd4, %rd3, %rd2;
  setp.lt.s64 %p1, %rd4, %rd1;
  @%p1 bra $Ldelay;
  ret;
}
)";

double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// "CUDA_SUCCESS", or the driver's name of the error.
std::string Name(CUresult r) {
  if (r == 0) return "CUDA_SUCCESS";
  std::string m = driver->Check(r, "").message();  // " failed: NAME (code): text"
  size_t a = m.find("failed: ");
  m = a == std::string::npos ? m : m.substr(a + 8);
  return m.substr(0, m.find("): ") == std::string::npos ? m.size() : m.find("): ") + 1);
}

CUresult Say(CUresult r, const std::string& what) {
  std::printf("  %-60s %s\n", what.c_str(), Name(r).c_str());
  return r;
}

[[noreturn]] void Die(const std::string& what, CUresult r) {
  std::printf("  %s: %s\n", what.c_str(), Name(r).c_str());
  std::fflush(stdout);
  std::_Exit(3);
}

#define MUST(call)               \
  do {                           \
    CUresult r_ = (call);        \
    if (r_ != 0) Die(#call, r_); \
  } while (0)

struct Ctx {
  void* ctx = nullptr;
  void* mod = nullptr;
  void *store = nullptr, *spin = nullptr, *delay = nullptr;
  void* stream = nullptr;
  Ctx() {
    CUresult r =
        api.cuCtxCreate_v4 != nullptr ? api.cuCtxCreate_v4(&ctx, nullptr, 0, dev) : api.cuCtxCreate_v2(&ctx, 0, dev);
    if (r != 0) Die("cuCtxCreate", r);
    MUST(api.cuModuleLoadDataEx(&mod, kPtx, 0, nullptr, nullptr));
    MUST(api.cuModuleGetFunction(&store, mod, "store"));
    MUST(api.cuModuleGetFunction(&spin, mod, "spin"));
    MUST(api.cuModuleGetFunction(&delay, mod, "delay"));
    MUST(api.cuStreamCreate(&stream, 1));
  }
  void Use() const { MUST(api.cuCtxSetCurrent(ctx)); }
  CUresult Launch(void* fn, unsigned blocks, unsigned threads, void** args) const {
    Use();
    return api.cuLaunchKernel(fn, blocks, 1, 1, threads, 1, 1, 0, stream, args, nullptr);
  }
  CUresult Store(uint64_t p, unsigned v) const {
    void* args[] = {&p, &v};
    CUresult r = Launch(store, 1, 1, args);
    return r != 0 ? r : api.cuStreamSynchronize(stream);
  }
  CUresult Read(uint64_t p, unsigned* out) const {
    Use();
    CUresult r = api.cuMemcpyDtoHAsync_v2(out, p, 4, stream);
    return r != 0 ? r : api.cuStreamSynchronize(stream);
  }
};

// CUmemPoolProps: pinned device memory on `dev` (88 bytes, as gpuwasm's PoolProps).
void* MakePool() {
  unsigned char props[88] = {};
  int alloc_type = 1, loc_type = 1;
  std::memcpy(props, &alloc_type, 4);
  std::memcpy(props + 8, &loc_type, 4);
  std::memcpy(props + 12, &dev, 4);
  void* pool = nullptr;
  MUST(api.cuMemPoolCreate(&pool, props));
  return pool;
}

size_t FreeBytes() {
  size_t f = 0, t = 0;
  MUST(api.cuMemGetInfo_v2(&f, &t));
  return f;
}

double Mib(double bytes) { return bytes / 1048576.0; }

// Runs `f` on a thread; false (and the thread left behind) when it has not returned in `limit_s`.
bool Within(double limit_s, const char* what, std::function<void()> f) {
  auto done = std::make_shared<std::atomic<bool>>(false);
  auto t0 = Clock::now();
  std::thread([f, done] {
    f();
    done->store(true);
  }).detach();
  while (!done->load() && Since(t0) < limit_s) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (done->load()) {
    std::printf("  %-60s returned after %.3f s\n", what, Since(t0));
    return true;
  }
  std::printf("  %-60s still blocked after %.1f s\n", what, limit_s);
  return false;
}

uint64_t SpinFlag(const Ctx& c) {
  c.Use();
  uint64_t flag = 0;
  MUST(api.cuMemAlloc_v2(&flag, 4));
  unsigned one = 1;
  MUST(api.cuMemcpyHtoDAsync_v2(flag, &one, 4, c.stream));
  MUST(api.cuStreamSynchronize(c.stream));
  return flag;
}

int Isolation(bool pooled) {
  const char* kind = pooled ? "cuMemAllocFromPoolAsync" : "cuMemAlloc";
  Ctx b;
  b.Use();
  uint64_t ptr = 0;
  if (pooled) {
    MUST(api.cuMemAllocFromPoolAsync(&ptr, 4096, MakePool(), b.stream));
  } else {
    MUST(api.cuMemAlloc_v2(&ptr, 4096));
  }
  MUST(api.cuMemsetD8Async(ptr, 0, 4096, b.stream));
  MUST(api.cuStreamSynchronize(b.stream));
  Ctx a;
  CUresult r = Say(a.Store(ptr, 42), std::string("ctx A stores 42 to ctx B's ") + kind + " buffer");
  unsigned got = 0;
  CUresult rb = Say(b.Read(ptr, &got), "ctx B reads its buffer back");
  std::string verdict = r == 0 && rb == 0 && got == 42 ? "NOT ISOLATED: A's kernel wrote B's memory"
                        : r != 0 && rb != 0            ? "A faulted (" + Name(r) + ") and the fault poisoned B too"
                        : r != 0                       ? "isolated: A faulted (" + Name(r) + "), B intact"
                                                       : "isolated: no fault, B reads " + std::to_string(got);
  std::printf("isolation-%s: %s\n", pooled ? "pool" : "plain", verdict.c_str());
  return 0;
}

int FaultIso() {
  Ctx a, b;
  int khz = 0;
  MUST(api.cuDeviceGetAttribute(&khz, 13, dev));  // CU_DEVICE_ATTRIBUTE_CLOCK_RATE
  unsigned long long cycles = static_cast<unsigned long long>(std::max(khz, 1000)) * 1000ULL;  // ~1 s
  b.Use();
  uint64_t pb = 0;
  MUST(api.cuMemAlloc_v2(&pb, 4));
  void* args[] = {&cycles};
  MUST(b.Launch(b.delay, 1, 32, args));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CUresult fa = Say(a.Store(0x10, 1), "ctx A: store to address 0x10 (the fault)");
  b.Use();
  CUresult running = Say(api.cuStreamSynchronize(b.stream), "ctx B: its 1 s kernel, running across A's fault");
  CUresult next = Say(b.Store(pb, 5), "ctx B: a new launch after A's fault");
  Say(api.cuCtxDestroy_v2(a.ctx), "cuCtxDestroy(A)");
  void* c = nullptr;
  CUresult made =
      Say(api.cuCtxCreate_v4 != nullptr ? api.cuCtxCreate_v4(&c, nullptr, 0, dev) : api.cuCtxCreate_v2(&c, 0, dev),
          "a new context C after A's destroy");
  std::string verdict = fa == 0 ? "the store to 0x10 did not fault"
                        : running == 0 && next == 0 && made == 0
                            ? "the fault stayed in ctx A"
                            : "the fault is process-wide (B's kernel: " + Name(running) +
                                  ", B's next launch: " + Name(next) + ", new context: " + Name(made) + ")";
  std::printf("faultiso: %s\n", verdict.c_str());
  return 0;
}

int Destroy() {
  Ctx other, s;
  uint64_t flag = SpinFlag(s);
  void* args[] = {&flag};
  MUST(s.Launch(s.spin, 1, 32, args));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  Say(api.cuStreamQuery(s.stream), "spin kernel after 300 ms (cuStreamQuery)");
  void* victim = s.ctx;
  bool returned = Within(10.0, "cuCtxDestroy(the context of a spinning kernel)",
                         [victim] { Say(api.cuCtxDestroy_v2(victim), "cuCtxDestroy result"); });
  uint64_t p = 0;
  other.Use();
  MUST(api.cuMemAlloc_v2(&p, 4));
  bool runs = Within(5.0, "another context's launch + synchronize meanwhile",
                     [&] { Say(other.Store(p, 7), "other ctx store"); });
  std::printf("destroy: cuCtxDestroy %s; another context %s\n", returned ? "returns" : "BLOCKS behind the kernel",
              runs ? "runs meanwhile" : "STALLS");
  std::fflush(stdout);
  std::_Exit(0);  // threads may be stuck inside the driver
}

int Htod() {
  Ctx s;
  uint64_t flag = SpinFlag(s), dst = 0;
  const size_t n = size_t{64} << 20;
  MUST(api.cuMemAlloc_v2(&dst, n));
  void* args[] = {&flag};
  MUST(s.Launch(s.spin, 1, 32, args));
  static std::vector<unsigned char> pageable(n, 1);
  void* pinned = nullptr;
  MUST(api.cuMemHostAlloc(&pinned, 512 << 10, 1));
  void* stream = s.stream;
  void* ctx = s.ctx;
  bool small = Within(5.0, "64 KiB from pageable memory behind the spin", [=] {
    api.cuCtxSetCurrent(ctx);
    Say(api.cuMemcpyHtoDAsync_v2(dst, pageable.data(), 64 << 10, stream), "  result");
  });
  bool big = Within(5.0, "64 MiB from pageable memory behind the spin", [=] {
    api.cuCtxSetCurrent(ctx);
    Say(api.cuMemcpyHtoDAsync_v2(dst, pageable.data(), n, stream), "  result");
  });
  bool staged = Within(5.0, "512 KiB from pinned memory behind the spin", [=] {
    api.cuCtxSetCurrent(ctx);
    Say(api.cuMemcpyHtoDAsync_v2(dst, pinned, 512 << 10, stream), "  result");
  });
  std::printf("htod: pageable 64 KiB %s, pageable 64 MiB %s, pinned %s\n", small ? "returns" : "BLOCKS",
              big ? "returns" : "BLOCKS", staged ? "returns" : "BLOCKS");
  std::fflush(stdout);
  std::_Exit(0);
}

int Footprint() {
  Ctx first;
  first.Use();
  size_t f0 = FreeBytes();
  auto t0 = Clock::now();
  std::vector<std::unique_ptr<Ctx>> v;
  for (int i = 0; i < 8; ++i) {
    v.push_back(std::make_unique<Ctx>());
    void* pinned = nullptr;
    MUST(api.cuMemHostAlloc(&pinned, 8 << 20, 1));  // the staging memory of a gpuwasm context
    (void)MakePool();
  }
  double t = Since(t0);
  first.Use();
  size_t f1 = FreeBytes();
  std::printf(
      "footprint: a context (+ pool, stream, module, 8 MiB pinned staging) takes %.1f MiB of device memory "
      "and %.1f ms to make\n",
      Mib((static_cast<double>(f0) - static_cast<double>(f1)) / 8), t / 8 * 1000);
  return 0;
}

int Leak(size_t bytes) {
  Ctx keep;
  std::string verdict;
  for (bool fault : {false, true}) {
    keep.Use();
    size_t f0 = FreeBytes();
    {
      Ctx c;
      void* pool = MakePool();
      uint64_t p = 0;
      MUST(api.cuMemAllocFromPoolAsync(&p, bytes, pool, c.stream));
      MUST(api.cuMemsetD8Async(p, 0, bytes, c.stream));
      MUST(api.cuStreamSynchronize(c.stream));
      if (fault) Say(c.Store(0x10, 1), "a fault on purpose (store to 0x10)");
      Say(api.cuMemPoolDestroy(pool), "cuMemPoolDestroy, the buffer still allocated");
      Say(api.cuCtxDestroy_v2(c.ctx), "cuCtxDestroy");
    }
    void* probe = nullptr;
    CUresult alive = api.cuCtxCreate_v4 != nullptr ? api.cuCtxCreate_v4(&probe, nullptr, 0, dev)
                                                   : api.cuCtxCreate_v2(&probe, 0, dev);
    if (alive != 0) {
      verdict += std::string(fault ? "; after a fault" : "") + " no context can be made any more (" + Name(alive) + ")";
      break;
    }
    size_t f1 = FreeBytes();
    double kept = Mib(static_cast<double>(f0) - static_cast<double>(f1));
    std::printf("  %s: %.0f MiB still held after the context was destroyed\n", fault ? "faulted context" : "context",
                kept);
    verdict += std::string(fault ? "; faulted context: " : "context: ") +
               (kept > Mib(static_cast<double>(bytes)) / 2 ? "pool memory NOT given back" : "given back");
  }
  std::printf("leak: %s\n", verdict.c_str());
  return 0;
}

int Trim(size_t bytes) {
  Ctx keep;
  size_t f0 = FreeBytes();
  {
    Ctx c;
    void* pool = MakePool();
    uint64_t p = 0;
    MUST(api.cuMemAllocFromPoolAsync(&p, bytes, pool, c.stream));
    MUST(api.cuMemFreeAsync(p, c.stream));
    MUST(api.cuStreamSynchronize(c.stream));
    keep.Use();
    size_t reserved = FreeBytes();
    std::printf("  freed but reserved by the pool: %.0f MiB\n",
                Mib(static_cast<double>(f0) - static_cast<double>(reserved)));
    c.Use();
    Say(api.cuMemPoolTrimTo(pool, 0), "cuMemPoolTrimTo(0)");
    Say(api.cuMemPoolDestroy(pool), "cuMemPoolDestroy");
    Say(api.cuCtxDestroy_v2(c.ctx), "cuCtxDestroy");
  }
  keep.Use();
  double left = Mib(static_cast<double>(f0) - static_cast<double>(FreeBytes()));
  std::printf("trim: free + trim + destroy leaves %.0f MiB behind\n", left);
  return 0;
}

int Load(double seconds) {
  Ctx c;
  int khz = 0, sms = 0;
  MUST(api.cuDeviceGetAttribute(&khz, 13, dev));
  MUST(api.cuDeviceGetAttribute(&sms, 16, dev));
  unsigned long long cycles = static_cast<unsigned long long>(std::max(khz, 1000) * 1000.0 * seconds);
  void* args[] = {&cycles};
  MUST(c.Launch(c.delay, static_cast<unsigned>(std::max(sms, 1) * 8), 256, args));
  MUST(api.cuStreamSynchronize(c.stream));
  std::printf("load: %d SMs busy for %.1f s\n", sms, seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0) {
    std::printf(
        "usage: gpuwasm-driver-facts FACT [ARG]\n"
        "  isolation-pool | isolation-plain | faultiso | destroy | htod | footprint | leak [MiB] | trim [MiB] |\n"
        "  load SECONDS\n"
        "Measures one fact of the CUDA driver per process (see bench/driver_facts.cc); the last line is the "
        "verdict.\n");
    return argc < 2 ? 2 : 0;
  }
  auto loaded = CudaDriver::Load();
  if (!loaded.ok()) {
    std::printf("%s: no driver: %s\n", argv[1], loaded.status().message().c_str());
    return 2;
  }
  driver = *loaded;
  auto probe = driver->Probe();
  if (!probe.ok()) {
    std::printf("%s: no GPU: %s\n", argv[1], probe.status().message().c_str());
    return 2;
  }
  void* h = dlopen(driver->path().c_str(), RTLD_NOW | RTLD_NOLOAD);
#define FACT_RESOLVE(name, type) api.name = reinterpret_cast<Id<type>>(dlsym(h, #name));
  FACT_SYMBOLS(FACT_RESOLVE)
#undef FACT_RESOLVE
#define FACT_NEEDED(name, type) \
  if (api.name == nullptr && std::strcmp(#name, "cuCtxCreate_v4") != 0) missing += std::string(" ") + #name;
  std::string missing;
  FACT_SYMBOLS(FACT_NEEDED)
#undef FACT_NEEDED
  if (!missing.empty()) {
    std::printf("%s: the driver lacks%s\n", argv[1], missing.c_str());
    return 2;
  }
  MUST(api.cuDeviceGet(&dev, 0));
  std::printf("== %s (driver CUDA %s, %s)\n", argv[1], probe->cuda_version().c_str(), probe->first_device_name.c_str());
  std::string t = argv[1];
  auto mib = [&](size_t fallback) { return (argc > 2 ? std::strtoull(argv[2], nullptr, 10) : fallback) << 20; };
  int rc = t == "isolation-pool"    ? Isolation(true)
           : t == "isolation-plain" ? Isolation(false)
           : t == "faultiso"        ? FaultIso()
           : t == "destroy"         ? Destroy()
           : t == "htod"            ? Htod()
           : t == "footprint"       ? Footprint()
           : t == "leak"            ? Leak(mib(1024))
           : t == "trim"            ? Trim(mib(256))
           : t == "load"            ? Load(argc > 2 ? std::atof(argv[2]) : 5.0)
                                    : 2;
  if (rc == 2) std::printf("%s: unknown fact (see --help)\n", argv[1]);
  std::fflush(stdout);
  return rc;
}
