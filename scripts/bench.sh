#!/usr/bin/env bash
# scripts/bench.sh BUILD_DIR: runs every benchmark built in BUILD_DIR/bench. Each prints its
# figures next to a baseline measured in the same run; a figure that misses its target is marked
# MISSED, and every such line is listed again at the end.
set -euo pipefail
build=${1:-build}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for b in "$build"/bench/bench_*; do
  [[ -x "$b" && -f "$b" ]] || continue
  echo "== $(basename "$b")" | tee -a "$log"
  case "$(basename "$b")" in
    bench_engine | bench_cpu_device | bench_launch | bench_deadline | bench_instrument) "$b" | tee -a "$log" ;;  # their own drivers (same-run medians)
    *) "$b" --benchmark_min_time=0.2 | tee -a "$log" ;;                  # Google Benchmark
  esac
done
echo "== bench_serve"
"$(dirname "$0")/../bench/serve/bench_serve.sh" "$build" | tee -a "$log"
echo "== targets missed"
grep -e '^== ' -e 'MISSED' "$log" | grep -B1 'MISSED' | grep -v '^--$' || echo "none"
