#!/usr/bin/env bash
# scripts/demo.sh BUILD_DIR: what `make demo` shows.
# The wasm engine is not built yet, so the demo is the native smoke test of the build:
# `gpuwasm doctor` checks the machine, and the hello guest is shown to be a built wasm module.
set -euo pipefail
build=${1:-build}
"$build/gpuwasm" doctor
wasm="$build/examples/hello/hello.wasm"
printf 'demo: guest %s built (%s bytes); running guests arrives with the wasm engine (issue 3)\n' \
  "$wasm" "$(stat -c %s "$wasm")"
