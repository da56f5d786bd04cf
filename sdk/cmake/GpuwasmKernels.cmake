# Kernel toolchain: CUDA C++ (.cu) -> PTX, and PTX -> a C header a guest can embed.
#
#   gpuwasm_add_ptx(OUT_VAR CU file.cu [ARCHS sm_80 sm_90] [FLAGS -lineinfo -Iinc -DN=4 ...])
#     For each arch, sets up FILE.<arch>.ptx and appends its path to OUT_VAR.
#     With nvcc (CUDA toolkit found): built by `nvcc -ptx -O3 -arch=<arch> FLAGS` into the build
#     tree (-lineinfo: device faults then name the .cu line too).
#     Without: the committed fixture next to the .cu (file.<arch>.ptx) is used as is; a missing
#     fixture is a configure error. Committed fixtures are refreshed with `make ptx-update`.
#
#   gpuwasm_embed_ptx(OUT_HEADER_VAR PTX file.ptx NAME c_identifier)
#     Makes a header defining `static const unsigned char NAME[]` (the exact bytes of the file,
#     plus a NUL not counted) and `static const unsigned int NAME_len`, so a guest carries its
#     kernels: module_load(NAME, NAME_len).
include_guard(GLOBAL)

set(GPUWASM_PTX_ARCHS sm_80 sm_90 CACHE STRING "GPU architectures PTX is generated for")
find_program(GPUWASM_NVCC nvcc HINTS ENV CUDA_PATH PATH_SUFFIXES bin
             PATHS /usr/local/cuda/bin /usr/local/cuda)
option(GPUWASM_USE_NVCC "Build PTX with nvcc when it is found (else use committed fixtures)" ON)
if(GPUWASM_NVCC AND GPUWASM_USE_NVCC)
  set(GPUWASM_HAVE_NVCC ON)
else()
  set(GPUWASM_HAVE_NVCC OFF)
endif()
set(_GPUWASM_KERNELS_DIR "${CMAKE_CURRENT_LIST_DIR}")

function(gpuwasm_add_ptx out_var)
  cmake_parse_arguments(K "" "CU" "ARCHS;FLAGS" ${ARGN})
  if(NOT K_ARCHS)
    set(K_ARCHS ${GPUWASM_PTX_ARCHS})
  endif()
  get_filename_component(cu "${K_CU}" ABSOLUTE)
  get_filename_component(stem "${cu}" NAME_WE)
  get_filename_component(dir "${cu}" DIRECTORY)
  file(RELATIVE_PATH rel "${CMAKE_SOURCE_DIR}" "${dir}")
  set(result ${${out_var}})
  foreach(arch IN LISTS K_ARCHS)
    set(committed "${dir}/${stem}.${arch}.ptx")
    if(GPUWASM_HAVE_NVCC)
      set(ptx "${CMAKE_BINARY_DIR}/ptx/${rel}/${stem}.${arch}.ptx")
      add_custom_command(
        OUTPUT "${ptx}"
        COMMAND "${CMAKE_COMMAND}" -E make_directory "${CMAKE_BINARY_DIR}/ptx/${rel}"
        COMMAND "${GPUWASM_NVCC}" -ptx -O3 -arch=${arch} ${K_FLAGS} "${cu}" -o "${ptx}"
        DEPENDS "${cu}"
        COMMENT "nvcc: ${rel}/${stem}.cu -> ${stem}.${arch}.ptx"
        VERBATIM)
      set_property(GLOBAL APPEND PROPERTY GPUWASM_PTX_PAIRS "${ptx}|${committed}")
    else()
      if(NOT EXISTS "${committed}")
        message(FATAL_ERROR "no nvcc and no committed PTX fixture ${committed}")
      endif()
      set(ptx "${committed}")
    endif()
    list(APPEND result "${ptx}")
  endforeach()
  set(${out_var} ${result} PARENT_SCOPE)
endfunction()

function(gpuwasm_embed_ptx out_var)
  cmake_parse_arguments(E "" "PTX;NAME" "" ${ARGN})
  set(header "${CMAKE_CURRENT_BINARY_DIR}/embed/${E_NAME}.h")
  add_custom_command(
    OUTPUT "${header}"
    COMMAND "${CMAKE_COMMAND}" -DIN=${E_PTX} -DOUT=${header} -DNAME=${E_NAME}
            -P "${_GPUWASM_KERNELS_DIR}/EmbedFile.cmake"
    DEPENDS "${E_PTX}" "${_GPUWASM_KERNELS_DIR}/EmbedFile.cmake"
    COMMENT "embedding ${E_NAME} into ${header}"
    VERBATIM)
  set(${out_var} "${header}" PARENT_SCOPE)
endfunction()
