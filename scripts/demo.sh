#!/usr/bin/env bash
# scripts/demo.sh BUILD_DIR: what `make demo` shows: the first example guest, compiled ahead of
# time by the wasm engine (cached after the first run) and run once with a small input.
set -euo pipefail
build=${1:-build}
wasm="$build/examples/hello/hello.wasm"
input=$(mktemp)
trap 'rm -f "$input"' EXIT
printf 'gpuwasm demo input' >"$input"
echo "\$ gpuwasm run $wasm --input <18 bytes>"
"$build/gpuwasm" run "$wasm" --input "$input"
