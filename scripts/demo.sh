#!/usr/bin/env bash
# scripts/demo.sh BUILD_DIR: what `make demo` shows: the vector_add example guest, compiled ahead
# of time by the wasm engine (cached after the first run), launching its kernel through wasi_cuda
# on the automatically chosen device, with the run's report.
set -euo pipefail
build=${1:-build}
wasm="$build/examples/vector_add/vector_add.wasm"
echo "\$ gpuwasm run $wasm --report json"
"$build/gpuwasm" run "$wasm" --report json
