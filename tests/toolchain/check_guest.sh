#!/usr/bin/env bash
# check_guest.sh WASM WASM_VALIDATE WASM_OBJDUMP [NODE]
# The hello example is a valid command module importing only wasi_snapshot_preview1; with Node.js,
# it runs and prints its greeting for a known input.
set -euo pipefail
wasm=$1 validate=$2 objdump=$3 node=${4:-}
"$validate" "$wasm"
imports=$("$objdump" -j Import -x "$wasm" | grep -- '<- ' | sed 's/.*<- //')
echo "imports: $imports"
if echo "$imports" | grep -v '^wasi_snapshot_preview1\.' | grep -q .; then
  echo "FAIL: imports outside WASI"; exit 1
fi
if [[ -n "$node" && "$node" != *NOTFOUND ]]; then
  here=$(cd "$(dirname "$0")" && pwd)
  out=$(printf 'abc' | "$node" --no-warnings "$here/run_wasi.mjs" "$wasm")
  echo "guest said: $out"
  # checksum of "abc" with sum = sum*31 + byte: ((97*31)+98)*31+99 = 96354 = 0x17862
  [[ "$out" == "hello from a gpuwasm guest: 3 input bytes, checksum 00017862" ]] || { echo "FAIL: wrong output"; exit 1; }
fi
echo ok
