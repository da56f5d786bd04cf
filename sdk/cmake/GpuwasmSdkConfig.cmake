# find_package(GpuwasmSdk): the gpuwasm guest SDK, installed (cmake --install puts it in
# <prefix>/share/gpuwasm/sdk) or in a source tree. The toolchain file beside this one
# (wasm32-wasi.cmake) points GpuwasmSdk_DIR here, so a guest project configured with it needs no
# CMAKE_PREFIX_PATH. Gives:
#   gpuwasm_add_ptx(), gpuwasm_embed_ptx()   CUDA C++ -> PTX -> a header the guest embeds
#                                            (GpuwasmKernels.cmake)
#   GpuwasmSdk_INCLUDE_DIR                   wasi_cuda.h and wasi_cuda.hpp (already on the include
#                                            path of guests built with the toolchain file)
#   GpuwasmSdk_TOOLCHAIN_FILE                wasm32-wasi.cmake
include("${CMAKE_CURRENT_LIST_DIR}/GpuwasmGuestFlags.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/GpuwasmKernels.cmake")
set(GpuwasmSdk_INCLUDE_DIR "${GPUWASM_SDK_INCLUDE_DIR}")
set(GpuwasmSdk_TOOLCHAIN_FILE "${CMAKE_CURRENT_LIST_DIR}/wasm32-wasi.cmake")
if(NOT GPUWASM_GUEST)
  message(WARNING "GpuwasmSdk: configure with -DCMAKE_TOOLCHAIN_FILE=${GpuwasmSdk_TOOLCHAIN_FILE} so that the "
                  "project's executables are wasm guests")
endif()
set(GpuwasmSdk_FOUND TRUE)
