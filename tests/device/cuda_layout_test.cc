// gpuwasm declares the few driver API values and structures it uses itself (the build does not
// need the CUDA toolkit). Where the toolkit is installed, this compares them with cuda.h.
#include <gtest/gtest.h>

#include <cstddef>

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

TEST(CudaLayout, constants_match_cuda_h) {
  EXPECT_EQ(kStreamNonBlocking, static_cast<unsigned>(CU_STREAM_NON_BLOCKING));
  EXPECT_EQ(kFuncMaxThreadsPerBlock, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  EXPECT_EQ(kFuncSharedSizeBytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
  EXPECT_EQ(kJitErrorLogBuffer, CU_JIT_ERROR_LOG_BUFFER);
  EXPECT_EQ(kJitErrorLogBufferSize, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
  EXPECT_EQ(kPoolAttrReleaseThreshold, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD);
  EXPECT_EQ(kMemAllocationTypePinned, CU_MEM_ALLOCATION_TYPE_PINNED);
  EXPECT_EQ(kMemLocationTypeDevice, CU_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(CUDA_ERROR_NOT_READY, ::CUDA_ERROR_NOT_READY);
  EXPECT_EQ(CUDA_ERROR_STUB_LIBRARY, ::CUDA_ERROR_STUB_LIBRARY);
  EXPECT_EQ(CUDA_ERROR_NO_DEVICE, ::CUDA_ERROR_NO_DEVICE);
}

TEST(CudaLayout, sticky_errors_and_names_match_cuda_h) {
  for (CUresult r : {CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_LAUNCH_TIMEOUT, CUDA_ERROR_ASSERT,
                     CUDA_ERROR_HARDWARE_STACK_ERROR, CUDA_ERROR_ILLEGAL_INSTRUCTION, CUDA_ERROR_MISALIGNED_ADDRESS,
                     CUDA_ERROR_INVALID_ADDRESS_SPACE, CUDA_ERROR_INVALID_PC, CUDA_ERROR_LAUNCH_FAILED}) {
    EXPECT_TRUE(IsStickyError(static_cast<int>(r))) << r;
  }
  EXPECT_FALSE(IsStickyError(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES));
  EXPECT_STREQ(CuResultName(CUDA_ERROR_INVALID_PTX), "CUDA_ERROR_INVALID_PTX");
  EXPECT_STREQ(CuResultName(CUDA_ERROR_MISALIGNED_ADDRESS), "CUDA_ERROR_MISALIGNED_ADDRESS");
  EXPECT_STREQ(CuResultName(CUDA_ERROR_CONTEXT_IS_DESTROYED), "CUDA_ERROR_CONTEXT_IS_DESTROYED");
}

}  // namespace
}  // namespace gpuwasm::device::cuda
