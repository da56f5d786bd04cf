# The one place that says how gpuwasm guests are compiled. Shared by the toolchain file
# (wasm32-wasi.cmake, for guest projects of their own) and gpuwasm_add_guest() (guests built
# inside a host build), so both produce the same code.
#
# Guests target wasm32-wasi with Debian's wasi-libc (headers in /usr/include/wasm32-wasi,
# libraries in /usr/lib/wasm32-wasi: plain `--target=wasm32-wasi` finds them, no --sysroot).
# Features are pinned to what the engine (wasm2c 1.0.32) accepts: MVP plus bulk memory, sign-ext,
# mutable globals and sat-conv; never SIMD, threads, tail calls or memory64.
#
# wasm-opt (P5 in shared research): clang 14 runs `wasm-opt` from PATH after linking whenever the
# link command carries an -O flag, which silently rewrites the module. We therefore compile with
# -O2 and link WITHOUT any optimisation flag; tests/toolchain checks this with a trap wasm-opt.
set(GPUWASM_GUEST_TARGET "wasm32-wasi")
# -ftls-model=local-exec: wasi-libc declares errno thread_local, and clang 14 refuses (crashes on)
# any other TLS model for wasm32-wasi: without it a guest that reads errno does not compile.
set(GPUWASM_GUEST_COMPILE_FLAGS
    --target=${GPUWASM_GUEST_TARGET} -O2 -mcpu=mvp -mbulk-memory -msign-ext -mmutable-globals
    -mnontrapping-fptoint -ftls-model=local-exec -Wall -Wextra)
set(GPUWASM_GUEST_LINK_FLAGS --target=${GPUWASM_GUEST_TARGET} -Wl,--strip-debug)
# C++ guests: C++20 with Debian's libc++ for wasm32 (libc++-14-dev-wasm32, libc++abi-14-dev-wasm32);
# wasm32-wasi has no exception handling.
set(GPUWASM_GUEST_CXX_FLAGS -std=c++20 -fno-exceptions)
get_filename_component(GPUWASM_SDK_INCLUDE_DIR "${CMAKE_CURRENT_LIST_DIR}/../include" ABSOLUTE)
