#!/usr/bin/env bash
# bench/serve/bench_isolation.sh BUILD_DIR [ROUNDS] [SECONDS] [CONNECTIONS]: what tenant worker
# processes cost. Two servers run side by side on loopback, one with isolation "process" (each
# tenant's instances in a worker process) and one with isolation "none" (in the server's process);
# wrk rounds alternate between them, ROUNDS times (default 7), for a trivial function and for the
# vector_add example. Printed: requests/s and p50/p99 latency of each (medians over rounds), the
# median of the per-round ratios process/none with their spread, the time to start a cold worker
# (the first invocation after its worker was killed, against a warm one) and the memory of an idle
# worker (resident and proportional set size).
set -euo pipefail
build=${1:-build}
rounds=${2:-7}
seconds=${3:-3}
connections=${4:-16}
here=$(cd "$(dirname "$0")" && pwd)
command -v wrk >/dev/null || { echo "bench_isolation: wrk is not installed; skipped"; exit 0; }
dir=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT

source "$here/start_gpuwasm.sh"
for name in process none; do
  start_gpuwasm $name $name
  GPUWASM_SERVER="http://127.0.0.1:$(cat "$dir/$name.port")" "$build/gpuwasm" deploy \
    "$build/examples/vector_add/vector_add.wasm" --name vector_add >/dev/null
done
p_port=$(cat "$dir/process.port")
n_port=$(cat "$dir/none.port")
p_pid=${pids[0]}

wrk_round() {  # port function connections -> "rps p50_us p99_us"
  local out
  out=$(wrk -t2 -c"$3" -d"${seconds}s" -s "$here/post_ok.lua" "http://127.0.0.1:$1/v1/functions/$2/invoke")
  grep -q "^wrong_responses 0$" <<<"$out" || { echo "$out" >&2; echo "bench_isolation: wrong responses" >&2; exit 1; }
  echo "$(awk '/^Requests\/sec:/ {print $2}' <<<"$out") $(awk '/^latency_p50_us/ {print $2}' <<<"$out") $(awk '/^latency_p99_us/ {print $2}' <<<"$out")"
}

median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
spread() { sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.2f-%.2f", lo, hi}'; }

report() {  # function connections
  local fn=$1 c=$2 pr=() nr=() ratios=() pp50=() pp99=() np50=() np99=()
  for port in "$p_port" "$n_port"; do wrk -t1 -c2 -d1s -s "$here/post_ok.lua" "http://127.0.0.1:$port/v1/functions/$fn/invoke" >/dev/null; done
  for ((i = 0; i < rounds; ++i)); do
    read -r a b c1 <<<"$(wrk_round "$p_port" "$fn" "$c")"
    read -r x y z <<<"$(wrk_round "$n_port" "$fn" "$c")"
    pr+=("$a"); pp50+=("$b"); pp99+=("$c1"); nr+=("$x"); np50+=("$y"); np99+=("$z")
    ratios+=("$(awk -v p="$a" -v n="$x" 'BEGIN {printf "%.3f", p / n}')")
  done
  local m_pr m_nr
  m_pr=$(printf '%s\n' "${pr[@]}" | median)
  m_nr=$(printf '%s\n' "${nr[@]}" | median)
  printf '%-12s %-10s %10.0f %10.2f %10.2f\n' "$fn" process "$m_pr" "$(printf '%s\n' "${pp50[@]}" | median | awk '{print $1 / 1000}')" \
    "$(printf '%s\n' "${pp99[@]}" | median | awk '{print $1 / 1000}')"
  printf '%-12s %-10s %10.0f %10.2f %10.2f\n' "$fn" none "$m_nr" "$(printf '%s\n' "${np50[@]}" | median | awk '{print $1 / 1000}')" \
    "$(printf '%s\n' "${np99[@]}" | median | awk '{print $1 / 1000}')"
  printf '%-12s requests/s process / none: median of %d rounds %.2fx (spread %s)\n' "$fn" "$rounds" \
    "$(printf '%s\n' "${ratios[@]}" | median)" "$(printf '%s\n' "${ratios[@]}" | spread)"
}

printf '%-12s %-10s %10s %10s %10s\n' function isolation "requests/s" "p50 ms" "p99 ms"
report trivial "$connections"
report vector_add 4

# A cold worker: the first invocation after the tenant's worker was killed, against warm ones.
cold=() warm=()
url="http://127.0.0.1:$p_port/v1/functions/trivial/invoke"
for ((i = 0; i < rounds; ++i)); do
  pkill -KILL -f "__worker $p_pid " || true
  sleep 0.2
  cold+=("$(curl -s -o /dev/null -w '%{time_total}' -X POST "$url")")
  warm+=("$(curl -s -o /dev/null -w '%{time_total}' -X POST "$url")")
done
printf 'cold worker start: first invocation %.1f ms, a warm one %.1f ms (medians of %d)\n' \
  "$(printf '%s\n' "${cold[@]}" | median | awk '{print $1 * 1000}')" \
  "$(printf '%s\n' "${warm[@]}" | median | awk '{print $1 * 1000}')" "$rounds"
wpid=$(pgrep -f "__worker $p_pid " | head -1)
sleep 1
rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$wpid/status")
pss=$(awk '/^Pss:/ {print $2}' "/proc/$wpid/smaps_rollup" 2>/dev/null || echo 0)
printf 'idle worker (CPU device): resident %.1f MiB, proportional (shared pages split) %.1f MiB\n' \
  "$(awk -v k="$rss" 'BEGIN {print k / 1024}')" "$(awk -v k="$pss" 'BEGIN {print k / 1024}')"
echo "(wrk -t2 -d${seconds}s, $rounds alternating rounds, on $(nproc) cores; vector_add with 4 connections)"
