# CMake toolchain file for gpuwasm guests: clang --target=wasm32-wasi with Debian's wasi-libc.
#
#   cmake -S my-guest -B build -DCMAKE_TOOLCHAIN_FILE=<gpuwasm>/sdk/cmake/wasm32-wasi.cmake
#
# Every executable becomes a .wasm command module. See docs/guest-guide.md.
include("${CMAKE_CURRENT_LIST_DIR}/GpuwasmGuestFlags.cmake")

# Platform/WASI.cmake (beside this file) gives executables the .wasm suffix.
list(APPEND CMAKE_MODULE_PATH "${CMAKE_CURRENT_LIST_DIR}")
set(CMAKE_SYSTEM_NAME WASI)
set(CMAKE_SYSTEM_PROCESSOR wasm32)
set(GPUWASM_GUEST ON)
# find_package(GpuwasmSdk) finds the SDK this toolchain file belongs to.
set(GpuwasmSdk_DIR "${CMAKE_CURRENT_LIST_DIR}" CACHE PATH "The gpuwasm guest SDK (GpuwasmSdkConfig.cmake)")

find_program(GPUWASM_GUEST_CLANG NAMES clang clang-14 REQUIRED)
find_program(GPUWASM_GUEST_CLANGXX NAMES clang++ clang++-14)
set(CMAKE_C_COMPILER "${GPUWASM_GUEST_CLANG}")
if(GPUWASM_GUEST_CLANGXX)
  set(CMAKE_CXX_COMPILER "${GPUWASM_GUEST_CLANGXX}")
endif()
set(CMAKE_C_COMPILER_TARGET ${GPUWASM_GUEST_TARGET})
set(CMAKE_CXX_COMPILER_TARGET ${GPUWASM_GUEST_TARGET})

list(JOIN GPUWASM_GUEST_COMPILE_FLAGS " " _gpuwasm_cflags)
list(JOIN GPUWASM_GUEST_LINK_FLAGS " " _gpuwasm_ldflags)
set(CMAKE_C_FLAGS_INIT "${_gpuwasm_cflags} -I${GPUWASM_SDK_INCLUDE_DIR}")
list(JOIN GPUWASM_GUEST_CXX_FLAGS " " _gpuwasm_cxxflags)
set(CMAKE_CXX_FLAGS_INIT "${_gpuwasm_cflags} ${_gpuwasm_cxxflags} -I${GPUWASM_SDK_INCLUDE_DIR}")
# Keep optimisation flags out of the link (see GpuwasmGuestFlags.cmake, wasm-opt): the default
# rules pass <FLAGS> (which holds -O2/-O3) to the link, ours do not.
set(CMAKE_C_LINK_EXECUTABLE
    "<CMAKE_C_COMPILER> ${_gpuwasm_ldflags} <CMAKE_C_LINK_FLAGS> <LINK_FLAGS> <OBJECTS> -o <TARGET> <LINK_LIBRARIES>")
set(CMAKE_CXX_LINK_EXECUTABLE
    "<CMAKE_CXX_COMPILER> ${_gpuwasm_ldflags} <CMAKE_CXX_LINK_FLAGS> <LINK_FLAGS> <OBJECTS> -o <TARGET> <LINK_LIBRARIES>")
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
