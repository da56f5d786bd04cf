#!/usr/bin/env bash
# new_project_test.sh BUILD_DIR CMAKE: `gpuwasm new` from an installed gpuwasm (cmake --install into
# a temporary prefix) writes a project that builds out of tree with the installed SDK
# (find_package(GpuwasmSdk) through the toolchain file) and runs: its README's commands, as written,
# with nvcc when there is one and with the committed PTX (GPUWASM_USE_NVCC=OFF).
set -euo pipefail
build=$1 cmake=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$cmake" --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"
gpuwasm="$tmp/prefix/bin/gpuwasm"
sdk="$tmp/prefix/share/gpuwasm/sdk"
for f in include/wasi_cuda.h include/wasi_cuda.hpp cmake/wasm32-wasi.cmake cmake/GpuwasmSdkConfig.cmake; do
  [[ -e $sdk/$f ]] || { echo "FAIL: the install lacks $sdk/$f"; exit 1; }
done
cd "$tmp"
PATH="$tmp/prefix/bin:$PATH" "$gpuwasm" new demo >"$tmp/new.log"
grep -q "made demo" "$tmp/new.log"
"$gpuwasm" new demo 2>"$tmp/again.log" && { echo "FAIL: new over an existing project"; exit 1; }
grep -q "demo exists and is not empty" "$tmp/again.log"
"$gpuwasm" new 9lives 2>"$tmp/badname.log" && { echo "FAIL: a bad name"; exit 1; }
grep -q "is not a project name" "$tmp/badname.log"
# The README's commands, as written (the SDK path in them is the install's).
commands=$(sed -n '/^```sh$/,/^```$/p' demo/README.md | sed '1d;$d')
grep -qF "$sdk/cmake/wasm32-wasi.cmake" <<<"$commands" || { echo "FAIL: README names another SDK"; echo "$commands"; exit 1; }
for nvcc in ON OFF; do
  rm -rf demo/build
  (cd demo && export PATH="$tmp/prefix/bin:$PATH" &&
    eval "$(sed "s|^cmake -S . -B build |cmake -S . -B build -G Ninja -DGPUWASM_USE_NVCC=$nvcc |" <<<"$commands")") >"$tmp/run.$nvcc.log" 2>&1 ||
    { echo "FAIL (nvcc $nvcc):"; cat "$tmp/run.$nvcc.log"; exit 1; }
  grep -q "demo: 4096 elements, 0 wrong OK" "$tmp/run.$nvcc.log" || { echo "FAIL (nvcc $nvcc):"; cat "$tmp/run.$nvcc.log"; exit 1; }
  echo "ok: built and ran with GPUWASM_USE_NVCC=$nvcc"
done
echo "new project: all checks passed"
