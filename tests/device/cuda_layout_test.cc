// gpuwasm declares the few driver API values and structures it uses itself (the build does not
// need the CUDA toolkit). Where the toolkit is installed, this compares them with cuda.h.
#include <gtest/gtest.h>

#include <cstddef>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "device/cuda/driver.h"
#include "device/cuda/symbols.h"

// After gpuwasm's headers: cuda.h #defines the plain names (cuEventElapsedTime, ...) to versioned
// ones, which would rename DriverSymbols' members.
#include <cuda.h>

namespace gpuwasm::device::cuda {
namespace {

static_assert(sizeof(PoolProps) == sizeof(CUmemPoolProps));
static_assert(offsetof(PoolProps, alloc_type) == offsetof(CUmemPoolProps, allocType));
static_assert(offsetof(PoolProps, handle_types) == offsetof(CUmemPoolProps, handleTypes));
static_assert(offsetof(PoolProps, location_type) == offsetof(CUmemPoolProps, location) + offsetof(CUmemLocation, type));
static_assert(offsetof(PoolProps, location_id) == offsetof(CUmemPoolProps, location) + offsetof(CUmemLocation, id));
static_assert(offsetof(PoolProps, win32_security_attributes) == offsetof(CUmemPoolProps, win32SecurityAttributes));
static_assert(offsetof(PoolProps, max_size) == offsetof(CUmemPoolProps, maxSize));
static_assert(offsetof(PoolProps, usage) == offsetof(CUmemPoolProps, usage));
static_assert(offsetof(PoolProps, reserved) == offsetof(CUmemPoolProps, reserved));

static_assert(sizeof(AllocationProp) == sizeof(CUmemAllocationProp));
static_assert(offsetof(AllocationProp, type) == offsetof(CUmemAllocationProp, type));
static_assert(offsetof(AllocationProp, handle_types) == offsetof(CUmemAllocationProp, requestedHandleTypes));
static_assert(offsetof(AllocationProp, location_type) ==
              offsetof(CUmemAllocationProp, location) + offsetof(CUmemLocation, type));
static_assert(offsetof(AllocationProp, location_id) ==
              offsetof(CUmemAllocationProp, location) + offsetof(CUmemLocation, id));
static_assert(offsetof(AllocationProp, win32_metadata) == offsetof(CUmemAllocationProp, win32HandleMetaData));
static_assert(offsetof(AllocationProp, compression) == offsetof(CUmemAllocationProp, allocFlags));
static_assert(sizeof(AccessDesc) == sizeof(CUmemAccessDesc));
static_assert(offsetof(AccessDesc, location_type) ==
              offsetof(CUmemAccessDesc, location) + offsetof(CUmemLocation, type));
static_assert(offsetof(AccessDesc, flags) == offsetof(CUmemAccessDesc, flags));

TEST(CudaLayout, constants_match_cuda_h) {
  EXPECT_EQ(kStreamNonBlocking, static_cast<unsigned>(CU_STREAM_NON_BLOCKING));
  EXPECT_EQ(kFuncMaxThreadsPerBlock, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  EXPECT_EQ(kFuncSharedSizeBytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
  EXPECT_EQ(kJitErrorLogBuffer, CU_JIT_ERROR_LOG_BUFFER);
  EXPECT_EQ(kJitErrorLogBufferSize, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
  EXPECT_EQ(kPoolAttrReleaseThreshold, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD);
  EXPECT_EQ(kPoolAttrReservedMemCurrent, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
  EXPECT_EQ(kPoolAttrUsedMemCurrent, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
  EXPECT_EQ(kFuncMaxDynamicSharedBytes, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
  EXPECT_EQ(kMemHostAllocPortable, static_cast<unsigned>(CU_MEMHOSTALLOC_PORTABLE));
  EXPECT_EQ(kMemAllocationTypePinned, CU_MEM_ALLOCATION_TYPE_PINNED);
  EXPECT_EQ(kMemLocationTypeDevice, CU_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(kMemHostRegisterPortable, static_cast<unsigned>(CU_MEMHOSTREGISTER_PORTABLE));
  EXPECT_EQ(kMemHostRegisterDeviceMap, static_cast<unsigned>(CU_MEMHOSTREGISTER_DEVICEMAP));
  EXPECT_EQ(kMemAccessReadWrite, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  EXPECT_EQ(kMemAllocGranularityMinimum, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  EXPECT_EQ(kAttrVirtualMemoryManagement, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
  EXPECT_EQ(CUDA_ERROR_NOT_READY, ::CUDA_ERROR_NOT_READY);
  EXPECT_EQ(CUDA_ERROR_STUB_LIBRARY, ::CUDA_ERROR_STUB_LIBRARY);
  EXPECT_EQ(CUDA_ERROR_NO_DEVICE, ::CUDA_ERROR_NO_DEVICE);
}

// Every error whose documentation in cuda.h says the process must be restarted is process-fatal
// to gpuwasm: read from the header itself, so a new driver's additions are not missed.
TEST(CudaLayout, every_error_cuda_h_calls_process_fatal_is) {
  std::ifstream in(std::string(GPUWASM_CUDA_INCLUDE) + "/cuda.h");
  ASSERT_TRUE(in) << GPUWASM_CUDA_INCLUDE;
  std::stringstream text;
  text << in.rdbuf();
  std::string h = text.str();
  size_t begin = h.find("typedef enum cudaError_enum");
  size_t end = h.find("} CUresult;", begin);
  ASSERT_NE(begin, std::string::npos);
  std::string e = h.substr(begin, end - begin);
  std::regex entry(R"(/\*\*((?:[^*]|\*[^/])*)\*/\s*(CUDA_ERROR_\w+)\s*=\s*(\d+))");
  int fatal = 0;
  for (auto it = std::sregex_iterator(e.begin(), e.end(), entry); it != std::sregex_iterator(); ++it) {
    std::string doc = (*it)[1], name = (*it)[2];
    int code = std::stoi((*it)[3]);
    if (doc.find("terminated") != std::string::npos && doc.find("relaunched") != std::string::npos) {
      ++fatal;
      EXPECT_TRUE(IsProcessFatalError(code)) << name << " (" << code << ")";
      EXPECT_STREQ(CuResultName(code), name.c_str());
    }
  }
  EXPECT_GE(fatal, 8);  // 700, 702, 714-719, 226, ... in CUDA 13.0
  for (CUresult r : {CUDA_ERROR_ECC_UNCORRECTABLE, CUDA_ERROR_UNKNOWN, CUDA_ERROR_CONTAINED}) {
    EXPECT_TRUE(IsProcessFatalError(static_cast<int>(r))) << r;
  }
  EXPECT_TRUE(IsContextFatalError(CUDA_ERROR_ASSERT));
  EXPECT_FALSE(IsProcessFatalError(CUDA_ERROR_ASSERT));
  EXPECT_FALSE(IsProcessFatalError(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES));
  EXPECT_FALSE(IsContextFatalError(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES));
  EXPECT_STREQ(CuResultName(CUDA_ERROR_INVALID_PTX), "CUDA_ERROR_INVALID_PTX");
  EXPECT_STREQ(CuResultName(CUDA_ERROR_MISALIGNED_ADDRESS), "CUDA_ERROR_MISALIGNED_ADDRESS");
  EXPECT_STREQ(CuResultName(CUDA_ERROR_CONTEXT_IS_DESTROYED), "CUDA_ERROR_CONTEXT_IS_DESTROYED");
}

}  // namespace
}  // namespace gpuwasm::device::cuda
