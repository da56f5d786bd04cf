# CMake platform module for CMAKE_SYSTEM_NAME=WASI (guests of gpuwasm): executables are .wasm
# command modules; there are no shared libraries.
set(CMAKE_EXECUTABLE_SUFFIX ".wasm")
set(CMAKE_STATIC_LIBRARY_PREFIX "lib")
set(CMAKE_STATIC_LIBRARY_SUFFIX ".a")
set_property(GLOBAL PROPERTY TARGET_SUPPORTS_SHARED_LIBS FALSE)
