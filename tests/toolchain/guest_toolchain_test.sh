#!/usr/bin/env bash
# guest_toolchain_test.sh SOURCE_DIR BUILD_DIR CMAKE WASM_VALIDATE WASM_OBJDUMP
# Configures and builds tests/toolchain/guest_project with sdk/cmake/wasm32-wasi.cmake while a
# trap `wasm-opt` sits first on PATH. Passes when the guest builds, is valid, exports _start,
# and the trap never ran.
set -euo pipefail
src=$1 build=$2 cmake=$3 validate=$4 objdump=$5
rm -rf "$build"; mkdir -p "$build/trap"
marker="$build/wasm-opt-ran"
cat >"$build/trap/wasm-opt" <<TRAP
#!/bin/sh
echo "wasm-opt ran: \$*" >>"$marker"
exit 1
TRAP
chmod +x "$build/trap/wasm-opt"
export PATH="$build/trap:$PATH"
"$cmake" -S "$src/tests/toolchain/guest_project" -B "$build/out" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_TOOLCHAIN_FILE="$src/sdk/cmake/wasm32-wasi.cmake" >"$build/configure.log" 2>&1 \
  || { cat "$build/configure.log"; exit 1; }
"$cmake" --build "$build/out" -v >"$build/build.log" 2>&1 || { cat "$build/build.log"; exit 1; }
wasm="$build/out/sum_guest.wasm"
if [[ -e "$marker" ]]; then echo "FAIL: clang ran wasm-opt:"; cat "$marker"; exit 1; fi
"$validate" "$wasm"
exports=$("$objdump" -j Export -x "$wasm")
grep -q -- '-> "_start"' <<<"$exports" || { echo "FAIL: no _start export"; echo "$exports"; exit 1; }
grep -q -- '-O2' "$build/build.log" || { echo "FAIL: guest sources were not compiled with -O2"; exit 1; }
echo "ok: $wasm built with the toolchain file, wasm-opt never ran"
