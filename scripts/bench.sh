#!/usr/bin/env bash
# scripts/bench.sh BUILD_DIR: runs every benchmark binary built in BUILD_DIR/bench.
set -euo pipefail
build=${1:-build}
for b in "$build"/bench/bench_*; do
  [[ -x "$b" ]] || continue
  echo "== $(basename "$b")"
  "$b" --benchmark_min_time=0.2
done
