#!/usr/bin/env bash
# bench/serve/bench_serve.sh BUILD_DIR [ROUNDS] [SECONDS] [CONNECTIONS]: invocations per second of a
# trivial function over loopback with wrk, through `gpuwasm serve` (default configuration: tenant
# worker processes, CPU device; and with isolation "none", instances in the server's process),
# against two baselines in the same run:
#   - Node.js: an HTTP server that instantiates the same .wasm per request with its WebAssembly API;
#   - the HTTP floor: a minimal Boost.Beast server (beast_floor.cc) answering "ok\n" with nothing
#     behind it, the library gpuwasm serve is built on.
# wrk rounds alternate between the four, ROUNDS times (default 7) of SECONDS (default 3) each, every
# response checked. Printed: requests/s and p50/p99 latency of each (medians over rounds) and the
# median of the per-round ratios with their spread. Targets (#28): gpuwasm >= 3x Node.js and
# >= 0.5x the floor; a missed one is marked MISSED.
set -euo pipefail
build=${1:-build}
rounds=${2:-7}
seconds=${3:-3}
connections=${4:-16}
here=$(cd "$(dirname "$0")" && pwd)
wasm="$build/bench/trivial.wasm"
for tool in wrk node; do
  command -v $tool >/dev/null || { echo "bench_serve: $tool is not installed; skipped"; exit 0; }
done
[ -x "$build/bench/beast_floor" ] || { echo "bench_serve: $build/bench/beast_floor is not built (make bench builds it)" >&2; exit 1; }
dir=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT

wait_listening() {  # file -> its port, once the server printed "listening ... PORT"
  for _ in $(seq 100); do grep -q listening "$1" && break; sleep 0.1; done
  grep -o '[0-9]\+$' "$1" | tail -1
}

source "$here/start_gpuwasm.sh"
start_gpuwasm process process
start_gpuwasm none none
g_port=$(cat "$dir/process.port")
i_port=$(cat "$dir/none.port")
node "$here/node_baseline.mjs" "$wasm" 0 >"$dir/node.out" 2>&1 &
pids+=($!)
n_port=$(wait_listening "$dir/node.out")
"$build/bench/beast_floor" 0 2 >"$dir/beast.out" 2>&1 &
pids+=($!)
b_port=$(wait_listening "$dir/beast.out")

urls=("http://127.0.0.1:$g_port/v1/functions/trivial/invoke" "http://127.0.0.1:$n_port/" "http://127.0.0.1:$b_port/"
  "http://127.0.0.1:$i_port/v1/functions/trivial/invoke")
names=("gpuwasm serve (worker processes)" "Node.js $(node --version), instance per request" "HTTP floor: minimal Beast server"
  "gpuwasm serve, isolation \"none\"")
wrk_round() {  # url -> "rps p50_us p99_us"
  local out
  out=$(wrk -t2 -c"$connections" -d"${seconds}s" -s "$here/post_ok.lua" "$1")
  grep -q "^wrong_responses 0$" <<<"$out" || { echo "$out" >&2; echo "bench_serve: wrong responses from $1" >&2; exit 1; }
  echo "$(awk '/^Requests\/sec:/ {print $2}' <<<"$out") $(awk '/^latency_p50_us/ {print $2}' <<<"$out") $(awk '/^latency_p99_us/ {print $2}' <<<"$out")"
}
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
spread() { sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.2f-%.2f", lo, hi}'; }

for u in "${urls[@]}"; do wrk -t1 -c2 -d1s -s "$here/post_ok.lua" "$u" >/dev/null; done  # warm-up
declare -a rps0 rps1 rps2 rps3 p50_0 p50_1 p50_2 p50_3 p99_0 p99_1 p99_2 p99_3 vs_node vs_floor in_node in_floor
for ((i = 0; i < rounds; ++i)); do
  for s in 0 1 2 3; do
    read -r r p50 p99 <<<"$(wrk_round "${urls[$s]}")"
    eval "rps$s+=($r); p50_$s+=($p50); p99_$s+=($p99)"
  done
  vs_node+=("$(awk -v g="${rps0[$i]}" -v n="${rps1[$i]}" 'BEGIN {printf "%.3f", g / n}')")
  vs_floor+=("$(awk -v g="${rps0[$i]}" -v b="${rps2[$i]}" 'BEGIN {printf "%.3f", g / b}')")
  in_node+=("$(awk -v g="${rps3[$i]}" -v n="${rps1[$i]}" 'BEGIN {printf "%.3f", g / n}')")
  in_floor+=("$(awk -v g="${rps3[$i]}" -v b="${rps2[$i]}" 'BEGIN {printf "%.3f", g / b}')")
done

printf '%-44s %12s %10s %10s\n' "trivial function over loopback" "requests/s" "p50" "p99"
for s in 0 3 1 2; do
  eval "r=\$(printf '%s\n' \"\${rps$s[@]}\" | median)"
  eval "p50=\$(printf '%s\n' \"\${p50_$s[@]}\" | median)"
  eval "p99=\$(printf '%s\n' \"\${p99_$s[@]}\" | median)"
  printf '%-44s %12.0f %8.2fms %8.2fms\n' "${names[$s]}" "$r" "$(awk -v u="$p50" 'BEGIN {print u / 1000}')" \
    "$(awk -v u="$p99" 'BEGIN {print u / 1000}')"
done
ratio_line() {  # label target values...
  local label=$1 target=$2; shift 2
  local m s mark=""
  m=$(printf '%s\n' "$@" | median)
  s=$(printf '%s\n' "$@" | spread)
  awk -v m="$m" -v t="$target" 'BEGIN {exit !(m < t)}' && mark="  MISSED"
  printf '%-44s %11.2fx  (spread %s, target >= %sx)%s\n' "$label" "$m" "$s" "$target" "$mark"
}
ratio_line "gpuwasm (worker processes) / Node.js" 3 "${vs_node[@]}"
ratio_line "gpuwasm (worker processes) / HTTP floor" 0.5 "${vs_floor[@]}"
ratio_line "gpuwasm (none) / Node.js" 3 "${in_node[@]}"
ratio_line "gpuwasm (none) / HTTP floor" 0.5 "${in_floor[@]}"
echo "(wrk -t2 -c$connections, $rounds rounds of ${seconds}s alternating between the four, on $(nproc) cores)"
