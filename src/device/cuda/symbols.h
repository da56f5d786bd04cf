// The driver API entry points gpuwasm uses, as dlsym resolves them from libcuda (the versioned
// names cuda.h maps the plain names to). Private to src/device/cuda/. A member is null when the
// library lacks the symbol: callers check before the first use.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/cuda/driver.h"

namespace gpuwasm::device::cuda {

// Values and layouts from cuda.h (the build does not need the toolkit; when it is installed,
// tests/device/cuda_layout_test.cc checks these against it).
inline constexpr unsigned kStreamNonBlocking = 0x1;          // CU_STREAM_NON_BLOCKING
inline constexpr int kFuncMaxThreadsPerBlock = 0;            // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
inline constexpr int kFuncSharedSizeBytes = 1;               // CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
inline constexpr int kJitErrorLogBuffer = 5;                 // CU_JIT_ERROR_LOG_BUFFER
inline constexpr int kJitErrorLogBufferSize = 6;             // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
inline constexpr int kFuncMaxDynamicSharedBytes = 8;         // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
inline constexpr int kPoolAttrReleaseThreshold = 4;          // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
inline constexpr int kPoolAttrReservedMemCurrent = 5;        // CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT
inline constexpr int kPoolAttrUsedMemCurrent = 7;            // CU_MEMPOOL_ATTR_USED_MEM_CURRENT
inline constexpr unsigned kMemHostAllocPortable = 0x01;      // CU_MEMHOSTALLOC_PORTABLE
inline constexpr int kMemAllocationTypePinned = 1;           // CU_MEM_ALLOCATION_TYPE_PINNED
inline constexpr int kMemLocationTypeDevice = 1;             // CU_MEM_LOCATION_TYPE_DEVICE
inline constexpr unsigned kMemHostRegisterPortable = 0x01;   // CU_MEMHOSTREGISTER_PORTABLE
inline constexpr unsigned kMemHostRegisterDeviceMap = 0x02;  // CU_MEMHOSTREGISTER_DEVICEMAP
inline constexpr int kMemAccessReadWrite = 3;                // CU_MEM_ACCESS_FLAGS_PROT_READWRITE
inline constexpr int kMemAllocGranularityMinimum = 0;        // CU_MEM_ALLOC_GRANULARITY_MINIMUM
inline constexpr int kAttrVirtualMemoryManagement = 102;     // CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED

// CUmemPoolProps (CUDA 12.x/13.x).
struct PoolProps {
  int alloc_type = 0;
  int handle_types = 0;
  int location_type = 0;
  int location_id = 0;
  void* win32_security_attributes = nullptr;
  size_t max_size = 0;
  unsigned short usage = 0;
  unsigned char reserved[54] = {};
};
static_assert(sizeof(PoolProps) == 88, "CUmemPoolProps is 88 bytes");

// CUmemAllocationProp (cuMemCreate, cuMemGetAllocationGranularity).
struct AllocationProp {
  int type = 0;
  int handle_types = 0;
  int location_type = 0;
  int location_id = 0;
  void* win32_metadata = nullptr;
  unsigned char compression = 0;
  unsigned char rdma = 0;
  unsigned short usage = 0;
  unsigned char reserved[4] = {};
};
static_assert(sizeof(AllocationProp) == 32, "CUmemAllocationProp is 32 bytes");

// CUmemAccessDesc (cuMemSetAccess).
struct AccessDesc {
  int location_type = 0;
  int location_id = 0;
  int flags = 0;
};
static_assert(sizeof(AccessDesc) == 12, "CUmemAccessDesc is 12 bytes");

template <class T>
using Id = T;

struct DriverSymbols {
#define GPUWASM_CUDA_SYMBOLS(X)                                                                                       \
  X(cuInit, CUresult (*)(unsigned int))                                                                               \
  X(cuDriverGetVersion, CUresult (*)(int*))                                                                           \
  X(cuGetErrorName, CUresult (*)(CUresult, const char**))                                                             \
  X(cuGetErrorString, CUresult (*)(CUresult, const char**))                                                           \
  X(cuDeviceGetCount, CUresult (*)(int*))                                                                             \
  X(cuDeviceGet, CUresult (*)(int*, int))                                                                             \
  X(cuDeviceGetName, CUresult (*)(char*, int, int))                                                                   \
  X(cuDeviceGetAttribute, CUresult (*)(int*, int, int))                                                               \
  X(cuDeviceTotalMem_v2, CUresult (*)(size_t*, int))                                                                  \
  X(cuCtxCreate_v4, CUresult (*)(void**, void*, unsigned int, int))                                                   \
  X(cuCtxCreate_v2, CUresult (*)(void**, unsigned int, int))                                                          \
  X(cuCtxDestroy_v2, CUresult (*)(void*))                                                                             \
  X(cuCtxSetCurrent, CUresult (*)(void*))                                                                             \
  X(cuCtxGetCurrent, CUresult (*)(void**))                                                                            \
  X(cuStreamCreate, CUresult (*)(void**, unsigned int))                                                               \
  X(cuStreamDestroy_v2, CUresult (*)(void*))                                                                          \
  X(cuStreamSynchronize, CUresult (*)(void*))                                                                         \
  X(cuModuleLoadDataEx, CUresult (*)(void**, const void*, unsigned int, int*, void**))                                \
  X(cuModuleUnload, CUresult (*)(void*))                                                                              \
  X(cuModuleGetFunction, CUresult (*)(void**, void*, const char*))                                                    \
  X(cuFuncGetAttribute, CUresult (*)(int*, int, void*))                                                               \
  X(cuFuncSetAttribute, CUresult (*)(void*, int, int))                                                                \
  X(cuMemPoolCreate, CUresult (*)(void**, const void*))                                                               \
  X(cuMemPoolSetAttribute, CUresult (*)(void*, int, void*))                                                           \
  X(cuMemPoolDestroy, CUresult (*)(void*))                                                                            \
  X(cuMemPoolTrimTo, CUresult (*)(void*, size_t))                                                                     \
  X(cuMemPoolGetAttribute, CUresult (*)(void*, int, void*))                                                           \
  X(cuMemHostAlloc, CUresult (*)(void**, size_t, unsigned int))                                                       \
  X(cuMemFreeHost, CUresult (*)(void*))                                                                               \
  X(cuMemAllocFromPoolAsync, CUresult (*)(uint64_t*, size_t, void*, void*))                                           \
  X(cuMemFreeAsync, CUresult (*)(uint64_t, void*))                                                                    \
  X(cuMemHostRegister_v2, CUresult (*)(void*, size_t, unsigned int))                                                  \
  X(cuMemHostUnregister, CUresult (*)(void*))                                                                         \
  X(cuMemHostGetDevicePointer_v2, CUresult (*)(uint64_t*, void*, unsigned int))                                       \
  X(cuMemGetAllocationGranularity, CUresult (*)(size_t*, const void*, int))                                           \
  X(cuMemAddressReserve, CUresult (*)(uint64_t*, size_t, size_t, uint64_t, unsigned long long))                       \
  X(cuMemAddressFree, CUresult (*)(uint64_t, size_t))                                                                 \
  X(cuMemCreate, CUresult (*)(unsigned long long*, size_t, const void*, unsigned long long))                          \
  X(cuMemRelease, CUresult (*)(unsigned long long))                                                                   \
  X(cuMemMap, CUresult (*)(uint64_t, size_t, size_t, unsigned long long, unsigned long long))                         \
  X(cuMemUnmap, CUresult (*)(uint64_t, size_t))                                                                       \
  X(cuMemSetAccess, CUresult (*)(uint64_t, size_t, const void*, size_t))                                              \
  X(cuMemcpyHtoDAsync_v2, CUresult (*)(uint64_t, const void*, size_t, void*))                                         \
  X(cuMemcpyDtoHAsync_v2, CUresult (*)(void*, uint64_t, size_t, void*))                                               \
  X(cuMemcpyDtoDAsync_v2, CUresult (*)(uint64_t, uint64_t, size_t, void*))                                            \
  X(cuMemsetD8Async, CUresult (*)(uint64_t, unsigned char, size_t, void*))                                            \
  X(cuLaunchKernel,                                                                                                   \
    CUresult (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**, void**)) \
  X(cuEventCreate, CUresult (*)(void**, unsigned int))                                                                \
  X(cuEventRecord, CUresult (*)(void*, void*))                                                                        \
  X(cuEventQuery, CUresult (*)(void*))                                                                                \
  X(cuEventElapsedTime_v2, CUresult (*)(float*, void*, void*))                                                        \
  X(cuEventElapsedTime, CUresult (*)(float*, void*, void*))                                                           \
  X(cuEventDestroy_v2, CUresult (*)(void*))
#define GPUWASM_FIELD(name, type) Id<type> name = nullptr;
  GPUWASM_CUDA_SYMBOLS(GPUWASM_FIELD)
#undef GPUWASM_FIELD
};

}  // namespace gpuwasm::device::cuda
