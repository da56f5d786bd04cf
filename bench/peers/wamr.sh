#!/usr/bin/env bash
# Same-run peer figure for issue #28 item 3: WAMR's LLVM AOT on the engine benchmark's workload,
# against the workload built natively with -O2 (the baseline bench_engine's guest/native rows use).
# WAMR is a peer, never part of the build: check it out beside the project, then
#   bench/peers/wamr.sh WAMR_DIR BUILD_DIR [REPS]
# builds wamrc against Debian's LLVM 14 (llvm-14-dev) and libiwasm in WAMR_DIR, compiles
# BUILD_DIR/bench/workload.wasm ahead of time, and prints each program's WAMR/native ratio.
set -euo pipefail
if [[ ${1:-} == --help || ${1:-} == -h ]]; then
  sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
if [[ $# -lt 2 ]]; then
  echo "usage: $0 WAMR_DIR BUILD_DIR [REPS] (--help says more)" >&2
  exit 2
fi
wamr=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
reps=${3:-15}
here=$(cd "$(dirname "$0")" && pwd)
out="$build/bench/peers"
mkdir -p "$out"
if [[ ! -x $wamr/wamr-compiler/build/wamrc ]]; then
  # wamrc prints LLVM's version through LLVMGetVersion, which LLVM 14 does not have yet.
  printf 'void LLVMGetVersion(unsigned* a, unsigned* b, unsigned* c) { *a = 14; *b = 0; *c = 0; }\n' >"$out/llvm_version.c"
  cc -O2 -c "$out/llvm_version.c" -o "$out/llvm_version.o"
  cmake -S "$wamr/wamr-compiler" -B "$wamr/wamr-compiler/build" -DCMAKE_BUILD_TYPE=Release \
    -DWAMR_BUILD_WITH_CUSTOM_LLVM=1 -DLLVM_DIR=/usr/lib/llvm-14/lib/cmake/llvm \
    -DCMAKE_EXE_LINKER_FLAGS="$out/llvm_version.o" >/dev/null
  cmake --build "$wamr/wamr-compiler/build" -j "$(nproc)" >/dev/null
fi
if [[ ! -f $wamr/product-mini/platforms/linux/build/libiwasm.so ]]; then
  cmake -S "$wamr/product-mini/platforms/linux" -B "$wamr/product-mini/platforms/linux/build" \
    -DCMAKE_BUILD_TYPE=Release -DWAMR_BUILD_AOT=1 -DWAMR_BUILD_LIBC_WASI=0 -DWAMR_BUILD_SIMD=0 >/dev/null
  cmake --build "$wamr/product-mini/platforms/linux/build" -j "$(nproc)" >/dev/null
fi
"$wamr/wamr-compiler/build/wamrc" -o "$out/workload.aot" "$build/bench/workload.wasm" >/dev/null
cc -O2 -c "$here/../programs/workload.c" -o "$out/workload_native.o"
cc -O2 -I "$wamr/core/iwasm/include" "$here/wamr_harness.c" "$out/workload_native.o" \
  -L "$wamr/product-mini/platforms/linux/build" -liwasm -Wl,-rpath,"$wamr/product-mini/platforms/linux/build" \
  -lm -o "$out/wamr_harness"
"$out/wamr_harness" "$out/workload.aot" "$reps"
