// Host cost of one guest launch: the wasi_cuda.launch import (guest pointer check, kernel and
// buffer handle lookups, argument records checked against the PTX parameter list and packed,
// admission permit, enqueue) against the same launch issued directly through the C++ Device API
// (parameters packed by the caller, enqueue), in the same run. Target: ratio <= 1.2.
//
// Both paths enqueue the same kernel on a stream of --device (default cpu; cuda:N for a GPU); the
// kernel is one thread doing nothing, so the device work is small and identical. On a CUDA device
// a third path is timed too: a raw cuLaunchKernel loop on a stream of its own context (the floor
// any launch path through the driver has). Timed: the calling thread's CPU time for
// the enqueue loop (CLOCK_THREAD_CPUTIME_ID: the stream thread running the launches on this
// 2-core machine would otherwise dominate wall time); the stream drains before each repetition.
// Median of --reps interleaved repetitions of --n launches (default 20000; 1000 on a GPU, within
// what the driver queues). Both paths carry a deadline, as every
// invocation's launches do.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "device/cpu/cpu_device.h"
#include "device/cuda/driver.h"
#include "device/cuda/symbols.h"
#include "device/select.h"
#include "host/guest_io.h"
#include "host/host_env.h"
#include "wasm/engine.h"
#include "wasm/instance.h"

extern "C" uint32_t Z_wasi_cudaZ_launch(void* env, uint32_t kernel, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t bx,
                                        uint32_t by, uint32_t bz, uint32_t shared, uint32_t args, uint32_t count);

using namespace gpuwasm;

namespace {

constexpr const char* kPtx =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry noop(.param .u64 a, .param .u64 b, .param .u32 n, .param .f32 x)\n{\n ret;\n}\n";

std::string ReadFile(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

// A compiled-in path of the build, or $NAME where the files were carried elsewhere (the GPU check).
std::string PathOr(const char* env, const char* built) {
  const char* v = std::getenv(env);
  return v != nullptr && *v != '\0' ? v : built;
}

int main(int argc, char** argv) {
  int n = 0, reps = 7;
  std::string spec = "cpu";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--n=", 4) == 0) n = std::max(1, std::atoi(argv[i] + 4));
    if (std::strncmp(argv[i], "--reps=", 7) == 0) reps = std::max(1, std::atoi(argv[i] + 7));
    if (std::strncmp(argv[i], "--device=", 9) == 0) spec = argv[i] + 9;
  }
  auto opened = device::OpenDevice(spec);
  if (!opened.ok()) {
    std::fprintf(stderr, "bench_launch: %s\n", opened.status().message().c_str());
    return 1;
  }
  auto device = *opened;
  const bool cuda_device = device->info().kind == device::DeviceKind::kCuda;
  // On a GPU, far more launches than the driver's queue holds would measure the GPU's throughput
  // rather than the host's cost per launch.
  if (n == 0) n = cuda_device ? 1000 : 20000;

  // Guest path: a real instance (for its linear memory) with a wasi_cuda context.
  wasm::EngineOptions eo;
  eo.cache_dir = PathOr("GPUWASM_CACHE_DIR", GPUWASM_BENCH_CACHE);
  eo.imports = host::GuestImports();
  wasm::Engine engine(eo);
  std::string bytes = ReadFile(PathOr("GPUWASM_BENCH_HOST_CALLS", GPUWASM_BENCH_HOST_CALLS));
  auto module = *engine.Compile(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  host::WasiCudaOptions co;
  co.max_inflight_launches = 1u << 30;  // measure the host cost, not waiting for the device
  // Every invocation has a deadline (the runtime's default is 30 s), and so do both paths here.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::hours(1);
  co.deadline = deadline;
  auto modules = std::make_shared<host::TenantContext>(*device->CreateContext());
  host::HostEnv env({}, std::make_unique<host::WasiCudaContext>(device, modules, co));
  auto instance = *wasm::Instance::Create(module, &env, {});
  env.io.Attach(instance.get());
  host::WasiCudaContext& cuda = *env.cuda;
  int32_t m = cuda.ModuleLoad({reinterpret_cast<const uint8_t*>(kPtx), std::strlen(kPtx)});
  int32_t k = cuda.FunctionGet(m, "noop");
  int32_t buf = cuda.MemAlloc(4096);
  // The argument records, written into guest memory at offset 1024 as a guest would.
  const uint32_t args_ptr = 1024;
  uint8_t* guest = env.io.GuestPtr(args_ptr, 4 * host::kWcuArgSize);
  auto record = [&](int i, uint32_t kind, uint32_t handle, uint64_t value) {
    std::memcpy(guest + i * 16, &kind, 4);
    std::memcpy(guest + i * 16 + 4, &handle, 4);
    std::memcpy(guest + i * 16 + 8, &value, 8);
  };
  float x = 2.5f;
  uint32_t xb;
  std::memcpy(&xb, &x, 4);
  record(0, WCU_ARG_BUFFER, static_cast<uint32_t>(buf), 0);
  record(1, WCU_ARG_BUFFER, static_cast<uint32_t>(buf), 64);
  record(2, WCU_ARG_B32, 0, 1000);
  record(3, WCU_ARG_B32, 0, xb);

  // Direct path: the same kernel, context and kind of buffers, through the C++ API.
  auto ctx = *device->CreateContext();
  auto direct_module = *ctx->LoadModule(kPtx);
  auto kernel = *direct_module->GetKernel("noop");
  auto stream = *ctx->CreateStream();
  device::DevicePtr dbuf = *ctx->Allocate(4096);
  device::LaunchConfig cfg;

  // Out of line, so that `valgrind --tool=callgrind` counts each loop's instructions on its own
  // (GuestLoop and DirectLoop, inclusive).
  auto guest_loop = [&]() __attribute__((noinline)) {
    for (int i = 0; i < n; ++i) {
      if (Z_wasi_cudaZ_launch(&env, static_cast<uint32_t>(k), 1, 1, 1, 1, 1, 1, 0, args_ptr, 4) != 0) std::exit(1);
    }
  };
  auto direct_loop = [&]() __attribute__((noinline)) {
    const auto& sig = kernel->signature();
    for (int i = 0; i < n; ++i) {
      std::vector<uint8_t> params(sig.param_bytes);
      uint64_t a = dbuf, b = dbuf + 64;
      uint32_t count = 1000;
      std::memcpy(params.data() + sig.params[0].offset, &a, 8);
      std::memcpy(params.data() + sig.params[1].offset, &b, 8);
      std::memcpy(params.data() + sig.params[2].offset, &count, 4);
      std::memcpy(params.data() + sig.params[3].offset, &x, 4);
      device::LaunchOptions lo;
      lo.deadline = deadline;
      if (!stream->Launch(*kernel, cfg, std::move(params), std::move(lo)).ok()) std::exit(1);
    }
  };
  // Raw path (CUDA only): cuLaunchKernel with the same parameters, nothing else.
  std::shared_ptr<device::cuda::CudaDriver> drv;
  void *raw_ctx = nullptr, *raw_stream = nullptr, *raw_fn = nullptr;
  uint64_t raw_buf = 0;
  if (cuda_device) {
    drv = *device::cuda::CudaDriver::Load();
    const auto& sym = drv->sym();
    auto must = [&](int r, const char* what) {
      if (r != 0) {
        std::fprintf(stderr, "bench_launch: %s\n", drv->Check(r, what).message().c_str());
        std::exit(1);
      }
    };
    int dev = 0;
    must(sym.cuDeviceGet(&dev, 0), "cuDeviceGet");
    must(sym.cuCtxCreate_v4 != nullptr ? sym.cuCtxCreate_v4(&raw_ctx, nullptr, 0, dev)
                                       : sym.cuCtxCreate_v2(&raw_ctx, 0, dev),
         "cuCtxCreate");
    void* mod = nullptr;
    must(sym.cuModuleLoadDataEx(&mod, kPtx, 0, nullptr, nullptr), "cuModuleLoadDataEx");
    must(sym.cuModuleGetFunction(&raw_fn, mod, "noop"), "cuModuleGetFunction");
    must(sym.cuStreamCreate(&raw_stream, 1), "cuStreamCreate");
    raw_buf = 0;  // the kernel never dereferences its pointers
  }
  auto raw_loop = [&] {
    const auto& sym = drv->sym();
    sym.cuCtxSetCurrent(raw_ctx);
    uint64_t a = raw_buf, b = raw_buf + 64;
    uint32_t count = 1000;
    void* args[] = {&a, &b, &count, &x};
    for (int i = 0; i < n; ++i) {
      if (sym.cuLaunchKernel(raw_fn, 1, 1, 1, 1, 1, 1, 0, raw_stream, args, nullptr) != 0) std::exit(1);
    }
  };
  auto raw_sync = [&] {
    drv->sym().cuCtxSetCurrent(raw_ctx);
    (void)drv->sym().cuStreamSynchronize(raw_stream);
  };

  std::vector<double> tg, td, tr;
  for (int r = 0; r < reps + 1; ++r) {  // the first repetition warms up
    (void)cuda.Synchronize();
    double t0 = ThreadCpuSeconds();
    guest_loop();
    double g = ThreadCpuSeconds() - t0;
    (void)cuda.Synchronize();
    (void)stream->Synchronize();
    t0 = ThreadCpuSeconds();
    direct_loop();
    double d = ThreadCpuSeconds() - t0;
    (void)stream->Synchronize();
    double w = 0;
    if (cuda_device) {
      raw_sync();
      t0 = ThreadCpuSeconds();
      raw_loop();
      w = ThreadCpuSeconds() - t0;
      raw_sync();
    }
    if (r > 0) {
      tg.push_back(g);
      td.push_back(d);
      tr.push_back(w);
    }
  }
  double g = Median(tg) / n * 1e9, d = Median(td) / n * 1e9;
  host::InstanceMetricsSnapshot s = env.metrics();
  std::printf("%-34s %10s %10s %8s %s\n", "metric", "guest", "direct", "ratio", "target");
  std::printf("%-34s %7.0f ns %7.0f ns %7.2fx <= 1.2x\n", "host CPU per launch (enqueue)", g, d, g / d);
  double gmin = *std::min_element(tg.begin(), tg.end()) / n * 1e9,
         dmin = *std::min_element(td.begin(), td.end()) / n * 1e9;
  std::printf("%-34s %7.0f ns %7.0f ns %7.2fx\n", "  fastest repetition of each", gmin, dmin, gmin / dmin);
  // The two loops of one repetition run back to back, so their ratio cancels drift between
  // repetitions (another process, frequency changes) that the ratio of medians does not.
  std::vector<double> paired;
  for (size_t i = 0; i < tg.size(); ++i) paired.push_back(tg[i] / td[i]);
  std::printf("%-34s %21s %7.2fx\n", "  median of per-repetition ratios", "", Median(paired));
  if (cuda_device) {
    double w = Median(tr) / n * 1e9;
    std::printf("%-34s %7.0f ns %7.0f ns %7.2fx (raw cuLaunchKernel loop)\n", "  guest vs raw cuLaunchKernel", g, w,
                g / w);
  }
  std::printf("device: %s\n", device->info().name.c_str());
  std::printf("(%llu guest launches dispatched, %llu rejections)\n",
              static_cast<unsigned long long>(s.kernels_launched),
              static_cast<unsigned long long>(s.back_pressure_rejections));
  return 0;
}
