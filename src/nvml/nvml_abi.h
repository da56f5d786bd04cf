// The subset of NVML's C ABI gpuwasm uses, declared here (NVML is loaded with dlopen; no NVIDIA
// header is needed to build). Values and layouts follow nvml.h (research: gpm.md, checked against
// NVIDIA's header); static_asserts pin the layouts.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

typedef int nvmlReturn_t;  // a 4-byte enum in nvml.h
enum : int {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_UNKNOWN = 999,
};

typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlGpmSample_st* nvmlGpmSample_t;

struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};

inline constexpr unsigned int NVML_GPM_METRICS_GET_VERSION = 1;  // the raw integer, not NVML_STRUCT_VERSION
inline constexpr unsigned int NVML_GPM_SUPPORT_VERSION = 1;
// metrics[] grew 98 -> 210 -> 333 without a version bump: declare at least the largest bound.
inline constexpr unsigned int kGpmMetricSlots = 333;

struct nvmlGpmMetric_t {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
};
struct nvmlGpmMetricsGet_t {
  unsigned int version;
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[kGpmMetricSlots];
};
struct nvmlGpmSupport_t {
  unsigned int version;
  unsigned int isSupportedDevice;
};

static_assert(sizeof(nvmlMemory_t) == 24);
static_assert(sizeof(nvmlGpmMetric_t) == 40 && offsetof(nvmlGpmMetric_t, value) == 8 &&
              offsetof(nvmlGpmMetric_t, metricInfo) == 16);
static_assert(offsetof(nvmlGpmMetricsGet_t, sample1) == 8 && offsetof(nvmlGpmMetricsGet_t, metrics) == 24 &&
              sizeof(nvmlGpmMetricsGet_t) == 24 + 40 * kGpmMetricSlots);
static_assert(sizeof(nvmlGpmSupport_t) == 8);

}  // extern "C"
