#!/usr/bin/env bash
# scripts/bench.sh BUILD_DIR: runs every benchmark built in BUILD_DIR/bench. Each prints its
# figures next to a baseline measured in the same run.
set -euo pipefail
build=${1:-build}
for b in "$build"/bench/bench_*; do
  [[ -x "$b" && -f "$b" ]] || continue
  echo "== $(basename "$b")"
  case "$(basename "$b")" in
    bench_engine | bench_cpu_device | bench_launch | bench_deadline | bench_instrument) "$b" ;;  # their own drivers (same-run medians)
    *) "$b" --benchmark_min_time=0.2 ;;                  # Google Benchmark
  esac
done
echo "== bench_serve"
"$(dirname "$0")/../bench/serve/bench_serve.sh" "$build"
