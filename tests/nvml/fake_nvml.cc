// A fake libnvidia-ml for tests: the NVML symbols gpuwasm uses, over scripted devices.
//   0  "NVIDIA H200"             Hopper (9), GPM supported, MIG off, 141 GiB
//   1  "NVIDIA H200 MIG"         Hopper, MIG on: MIG devices with GPU instances 1 and 2
//   2  "NVIDIA A100-SXM4-40GB"   Ampere (7): no GPM
// GPM metrics are computed from the two samples: each device has counters that advance at fixed
// rates with real time, so rates come out constant (e.g. SM_UTIL 42 %, PCIe TX 1000 MiB/s) while
// cumulative counters grow. NVOFA_1_UTIL (51) yields NaN; unknown ids fail per metric.
// Control (for tests, looked up with dlsym): fake_nvml_inject(function, return code, times),
// fake_nvml_delay(function, ms), fake_nvml_reset(), and counters of samples and init calls.
// Built with FAKE_NVML_NO_MIG_SAMPLE, nvmlGpmMigSampleGet is missing (an old driver).
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "nvml/nvml_abi.h"

namespace {

struct FakeDevice {
  const char* name;
  const char* uuid;
  unsigned arch;
  bool gpm;
  bool mig;
  int parent;   // for MIG devices: the parent's index
  unsigned gi;  // MIG GPU instance id
  unsigned long long memory;
};

FakeDevice g_devices[] = {
    {"NVIDIA H200", "GPU-fake-h200-0000", 9, true, false, -1, 0, 141ull << 30},
    {"NVIDIA H200 MIG", "GPU-fake-h200-0001", 9, true, true, -1, 0, 141ull << 30},
    {"NVIDIA A100-SXM4-40GB", "GPU-fake-a100-0002", 7, false, false, -1, 0, 40ull << 30},
    {"MIG 3g.71gb", "MIG-fake-0001-gi1", 9, true, false, 1, 1, 70ull << 30},
    {"MIG 3g.71gb", "MIG-fake-0001-gi2", 9, true, false, 1, 2, 70ull << 30},
};
constexpr unsigned kVisible = 3;  // indices 3 and 4 are MIG devices of GPU 1

std::mutex g_mu;
int g_init = 0;
long g_live_samples = 0, g_frees = 0, g_bad_frees = 0;
struct Injection {
  int ret;
  int times;  // -1: forever
};
std::map<std::string, Injection> g_inject;
std::map<std::string, int> g_delay_ms;

constexpr unsigned kMagic = 0x6770u;
struct FakeSample {
  unsigned magic = kMagic;
  int device = -1;
  unsigned gi = 0;
  double t = 0;  // seconds, steady clock
};

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// An injected result for `fn`, or NVML_SUCCESS; also applies an injected delay.
nvmlReturn_t Hook(const char* fn) {
  int delay = 0;
  nvmlReturn_t r = NVML_SUCCESS;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto d = g_delay_ms.find(fn);
    if (d != g_delay_ms.end()) delay = d->second;
    auto it = g_inject.find(fn);
    if (it != g_inject.end() && it->second.times != 0) {
      r = it->second.ret;
      if (it->second.times > 0) --it->second.times;
    }
  }
  if (delay > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay));
  return r;
}

int Index(nvmlDevice_t d) {
  auto p = reinterpret_cast<FakeDevice*>(d);
  if (p < g_devices || p >= g_devices + std::size(g_devices)) return -1;
  return static_cast<int>(p - g_devices);
}

nvmlDevice_t Handle(int i) { return reinterpret_cast<nvmlDevice_t>(&g_devices[i]); }

void Copy(char* out, unsigned len, const char* s) {
  std::strncpy(out, s, len);
  if (len) out[len - 1] = 0;
}

struct MetricShape {
  unsigned id;
  double rate;  // per second of the interval; percent metrics are constant
  const char *short_name, *long_name, *unit;
};
const MetricShape kShapes[] = {
    {1, 35.0, "GRACT", "graphics engine active", "%"},
    {2, 42.0, "SMACT", "SM active", "%"},
    {3, 30.5, "SMOCC", "SM occupancy", "%"},
    {5, 12.0, "TENSO", "tensor pipe active", "%"},
    {10, 25.5, "DRAMA", "DRAM active", "%"},
    {11, 1.5, "FP64A", "FP64 active", "%"},
    {12, 20.0, "FP32A", "FP32 active", "%"},
    {13, 4.0, "FP16A", "FP16 active", "%"},
    {20, 1000.0, "PCITX", "PCIe TX", "MiB/s"},
    {21, 500.0, "PCIRX", "PCIe RX", "MiB/s"},
    {51, NAN, "OFA1", "NVOFA 1 util", "%"},
    {60, 2000.0, "NVLRX", "NVLink RX", "MiB/s"},
    {61, 3000.0, "NVLTX", "NVLink TX", "MiB/s"},
    {248, 1.0e9, "SMCYC", "SM cycles elapsed", "cycles"},
};

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void fake_nvml_inject(const char* fn, int ret, int times) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_inject[fn] = {ret, times};
}
__attribute__((visibility("default"))) void fake_nvml_delay(const char* fn, int ms) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_delay_ms[fn] = ms;
}
__attribute__((visibility("default"))) void fake_nvml_reset() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_inject.clear();
  g_delay_ms.clear();
}
__attribute__((visibility("default"))) long fake_nvml_live_samples() { return g_live_samples; }
__attribute__((visibility("default"))) long fake_nvml_frees() { return g_frees; }
__attribute__((visibility("default"))) long fake_nvml_bad_frees() { return g_bad_frees; }
__attribute__((visibility("default"))) int fake_nvml_init_count() { return g_init; }

nvmlReturn_t nvmlInit_v2() {
  if (nvmlReturn_t r = Hook("nvmlInit_v2")) return r;
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_init;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlShutdown() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_init == 0) return NVML_ERROR_UNINITIALIZED;
  --g_init;
  return NVML_SUCCESS;
}
const char* nvmlErrorString(nvmlReturn_t) { return "fake error"; }
nvmlReturn_t nvmlSystemGetDriverVersion(char* v, unsigned int len) {
  Copy(v, len, "580.99-fake");
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* n) {
  if (nvmlReturn_t r = Hook("nvmlDeviceGetCount_v2")) return r;
  *n = kVisible;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t* d) {
  if (nvmlReturn_t r = Hook("nvmlDeviceGetHandleByIndex_v2")) return r;
  if (i >= kVisible) return NVML_ERROR_INVALID_ARGUMENT;
  *d = Handle(static_cast<int>(i));
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* d) {
  for (unsigned i = 0; i < std::size(g_devices); ++i) {
    if (std::strcmp(g_devices[i].uuid, uuid) == 0) {
      *d = Handle(static_cast<int>(i));
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char* out, unsigned int len) {
  int i = Index(d);
  if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;
  Copy(out, len, g_devices[i].name);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char* out, unsigned int len) {
  int i = Index(d);
  if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;
  Copy(out, len, g_devices[i].uuid);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t d, unsigned int* a) {
  int i = Index(d);
  if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;
  *a = g_devices[i].arch;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* m) {
  int i = Index(d);
  if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;
  m->total = g_devices[i].memory;
  m->used = 1ull << 30;
  m->free = m->total - m->used;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) {
  int i = Index(d);
  if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;
  if (g_devices[i].mig) return NVML_ERROR_NOT_SUPPORTED;  // documented for MIG-enabled GPUs
  u->gpu = 37;
  u->memory = 12;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int* cur, unsigned int* pending) {
  int i = Index(d);
  if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;
  if (g_devices[i].arch < 8 && !g_devices[i].mig) return NVML_ERROR_NOT_SUPPORTED;
  *cur = *pending = g_devices[i].mig ? 1 : 0;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int* n) {
  int i = Index(d);
  if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;
  *n = g_devices[i].mig ? 7 : 0;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int index, nvmlDevice_t* mig) {
  int i = Index(d);
  if (i < 0 || !g_devices[i].mig) return NVML_ERROR_INVALID_ARGUMENT;
  if (index >= 2) return NVML_ERROR_NOT_FOUND;  // 2 of 7 slots are in use
  *mig = Handle(3 + static_cast<int>(index));
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned int* id) {
  int i = Index(d);
  if (i < 0 || g_devices[i].parent < 0) return NVML_ERROR_INVALID_ARGUMENT;
  *id = g_devices[i].gi;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t d, nvmlGpmSupport_t* s) {
  if (nvmlReturn_t r = Hook("nvmlGpmQueryDeviceSupport")) return r;
  int i = Index(d);
  if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;
  if (s->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  s->isSupportedDevice = g_devices[i].gpm ? 1 : 0;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* s) {
  if (nvmlReturn_t r = Hook("nvmlGpmSampleAlloc")) return r;
  *s = reinterpret_cast<nvmlGpmSample_t>(new FakeSample());
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_live_samples;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t s) {
  auto* f = reinterpret_cast<FakeSample*>(s);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (f == nullptr || f->magic != kMagic) {
      ++g_bad_frees;  // a double free or a foreign handle
      return NVML_ERROR_INVALID_ARGUMENT;
    }
  }
  nvmlReturn_t r = Hook("nvmlGpmSampleFree");
  std::lock_guard<std::mutex> lock(g_mu);
  f->magic = 0;  // the memory is released even when an error is reported, as a real free would
  delete f;
  --g_live_samples;
  ++g_frees;
  return r;
}
static nvmlReturn_t Fill(nvmlDevice_t d, unsigned gi, nvmlGpmSample_t s, const char* fn) {
  if (nvmlReturn_t r = Hook(fn)) return r;
  int i = Index(d);
  auto* f = reinterpret_cast<FakeSample*>(s);
  if (i < 0 || f == nullptr || f->magic != kMagic) return NVML_ERROR_INVALID_ARGUMENT;
  if (!g_devices[i].gpm) return NVML_ERROR_NOT_SUPPORTED;
  f->device = i;
  f->gi = gi;
  f->t = Now();
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t d, nvmlGpmSample_t s) { return Fill(d, 0, s, "nvmlGpmSampleGet"); }
#ifndef FAKE_NVML_NO_MIG_SAMPLE
nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t d, unsigned int gi, nvmlGpmSample_t s) {
  int i = Index(d);
  if (i < 0 || !g_devices[i].mig || (gi != 1 && gi != 2)) return NVML_ERROR_INVALID_ARGUMENT;
  return Fill(d, gi, s, "nvmlGpmMigSampleGet");
}
#endif
nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* m) {
  if (nvmlReturn_t r = Hook("nvmlGpmMetricsGet")) return r;
  if (m->version != NVML_GPM_METRICS_GET_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  auto* a = reinterpret_cast<FakeSample*>(m->sample1);
  auto* b = reinterpret_cast<FakeSample*>(m->sample2);
  if (a == nullptr || b == nullptr || a->magic != kMagic || b->magic != kMagic || a->device != b->device ||
      a->gi != b->gi || m->numMetrics > kGpmMetricSlots) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  double dt = b->t - a->t;
  for (unsigned k = 0; k < m->numMetrics; ++k) {
    nvmlGpmMetric_t& x = m->metrics[k];
    const MetricShape* shape = nullptr;
    for (const MetricShape& s : kShapes) {
      if (s.id == x.metricId) shape = &s;
    }
    if (shape == nullptr) {
      x.nvmlReturn = NVML_ERROR_INVALID_ARGUMENT;
      continue;
    }
    x.nvmlReturn = NVML_SUCCESS;
    // A MIG GPU instance sees its share: GI 1 a third, GI 2 two thirds of the percentages.
    double share = a->gi == 0 ? 1.0 : a->gi / 3.0;
    double v = shape->id >= 248 ? shape->rate * b->t : shape->rate;  // cumulative vs per-interval
    x.value = std::strcmp(shape->unit, "%") == 0 ? v * share : v;
    (void)dt;
    x.metricInfo.shortName = const_cast<char*>(shape->short_name);
    x.metricInfo.longName = const_cast<char*>(shape->long_name);
    x.metricInfo.unit = const_cast<char*>(shape->unit);
  }
  return NVML_SUCCESS;
}

}  // extern "C"
