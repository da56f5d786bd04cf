# gpuwasm_add_guest(): build a guest .wasm from C or C++ sources inside a host (native) CMake build.
#
#   gpuwasm_add_guest(NAME
#     SOURCES a.c [b.cpp ...]           C and C++ sources of the guest (C++: .cpp/.cc/.cxx, C++20,
#                                       no exceptions, libc++; sdk/include/wasi_cuda.hpp)
#     [OUTPUT path/NAME.wasm]           default: ${CMAKE_CURRENT_BINARY_DIR}/NAME.wasm
#     [INCLUDE_DIRS dir ...]            extra include directories (the SDK's is always there)
#     [DEPENDS file-or-target ...]      e.g. headers made by gpuwasm_embed_ptx()
#     [EXPORTS sym ...]                 extra exports (e.g. run); adds -Wl,--export=sym
#     [REACTOR]                         build a reactor (no _start) instead of a command
#     [NOSTDLIB])                       freestanding: no libc, no entry point (exports only)
#
# Creates a target NAME (part of ALL) whose output is the .wasm; the path is stored in the
# target property GUEST_WASM. Compiles with -O2 and links without -O (see GpuwasmGuestFlags).
include_guard(GLOBAL)
include("${CMAKE_CURRENT_LIST_DIR}/GpuwasmGuestFlags.cmake")

find_program(GPUWASM_GUEST_CLANG NAMES clang clang-14)
find_program(GPUWASM_GUEST_CLANGXX NAMES clang++ clang++-14)

function(gpuwasm_add_guest name)
  cmake_parse_arguments(G "REACTOR;NOSTDLIB" "OUTPUT" "SOURCES;INCLUDE_DIRS;DEPENDS;EXPORTS" ${ARGN})
  if(NOT GPUWASM_GUEST_CLANG)
    message(FATAL_ERROR "gpuwasm_add_guest(${name}): clang not found (run scripts/install-deps.sh)")
  endif()
  if(NOT G_SOURCES)
    message(FATAL_ERROR "gpuwasm_add_guest(${name}): SOURCES is required")
  endif()
  if(NOT G_OUTPUT)
    set(G_OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/${name}.wasm")
  endif()
  set(includes "-I${GPUWASM_SDK_INCLUDE_DIR}")
  foreach(dir IN LISTS G_INCLUDE_DIRS)
    list(APPEND includes "-I${dir}")
  endforeach()

  set(objects "")
  set(linker "${GPUWASM_GUEST_CLANG}")
  foreach(src IN LISTS G_SOURCES)
    get_filename_component(abs "${src}" ABSOLUTE)
    get_filename_component(stem "${src}" NAME_WE)
    set(obj "${CMAKE_CURRENT_BINARY_DIR}/${name}.guest/${stem}.o")
    set(compiler "${GPUWASM_GUEST_CLANG}")
    set(language_flags "")
    if(src MATCHES "\\.(cpp|cc|cxx)$")
      if(NOT GPUWASM_GUEST_CLANGXX)
        message(FATAL_ERROR "gpuwasm_add_guest(${name}): clang++ not found (run scripts/install-deps.sh)")
      endif()
      set(compiler "${GPUWASM_GUEST_CLANGXX}")
      set(language_flags ${GPUWASM_GUEST_CXX_FLAGS})
      set(linker "${GPUWASM_GUEST_CLANGXX}")  # links libc++ and libc++abi
    endif()
    add_custom_command(
      OUTPUT "${obj}"
      COMMAND "${CMAKE_COMMAND}" -E make_directory "${CMAKE_CURRENT_BINARY_DIR}/${name}.guest"
      COMMAND "${compiler}" ${GPUWASM_GUEST_COMPILE_FLAGS} ${language_flags} -Werror ${includes}
              -MD -MF "${obj}.d" -c "${abs}" -o "${obj}"
      DEPENDS "${abs}" ${G_DEPENDS}
      DEPFILE "${obj}.d"
      COMMENT "guest ${name}: compiling ${src}"
      VERBATIM)
    list(APPEND objects "${obj}")
  endforeach()

  set(link_extra "")
  if(G_REACTOR)
    list(APPEND link_extra -mexec-model=reactor)
  endif()
  if(G_NOSTDLIB)
    list(APPEND link_extra -nostdlib -Wl,--no-entry)
  endif()
  foreach(sym IN LISTS G_EXPORTS)
    list(APPEND link_extra "-Wl,--export=${sym}")
  endforeach()
  # No -O here: an optimisation flag on the link makes clang run wasm-opt from PATH (P5).
  add_custom_command(
    OUTPUT "${G_OUTPUT}"
    COMMAND "${linker}" ${GPUWASM_GUEST_LINK_FLAGS} ${link_extra} ${objects} -o "${G_OUTPUT}"
    DEPENDS ${objects}
    COMMENT "guest ${name}: linking ${G_OUTPUT}"
    VERBATIM)
  add_custom_target(${name} ALL DEPENDS "${G_OUTPUT}")
  set_target_properties(${name} PROPERTIES GUEST_WASM "${G_OUTPUT}")
endfunction()
