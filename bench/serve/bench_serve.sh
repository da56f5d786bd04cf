#!/usr/bin/env bash
# bench/serve/bench_serve.sh BUILD_DIR [SECONDS] [CONNECTIONS]: invocations per second of a trivial
# function over loopback with wrk, through `gpuwasm serve` and through a Node.js server that
# instantiates the same .wasm per request with its WebAssembly API. Both run in this one script,
# one after the other, on the same machine; the ratio is the figure to compare between runs.
set -euo pipefail
build=${1:-build}
seconds=${2:-10}
connections=${3:-16}
here=$(cd "$(dirname "$0")" && pwd)
wasm="$build/bench/trivial.wasm"
for tool in wrk node; do
  command -v $tool >/dev/null || { echo "bench_serve: $tool is not installed; skipped"; exit 0; }
done
dir=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT

run_wrk() {  # url -> prints requests/s, and fails on any wrong response
  local out
  out=$(wrk -t2 -c"$connections" -d"${seconds}s" -s "$here/post.lua" "$1")
  grep -q "^wrong_responses 0$" <<<"$out" || { echo "$out" >&2; echo "bench_serve: wrong responses" >&2; exit 1; }
  awk '/^Requests\/sec:/ {print $2}' <<<"$out"
}

"$build/gpuwasm" serve --listen 127.0.0.1:0 --store "$dir/store" --no-gpm >"$dir/serve.out" 2>"$dir/serve.err" &
pids+=($!)
for _ in $(seq 100); do grep -q listening "$dir/serve.out" && break; sleep 0.1; done
port=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$dir/serve.out")
GPUWASM_SERVER="http://127.0.0.1:$port" "$build/gpuwasm" deploy "$wasm" --name trivial >/dev/null
GPUWASM_SERVER="http://127.0.0.1:$port" "$build/gpuwasm" invoke trivial | grep -q '^ok$'
wrk -t1 -c2 -d1s -s "$here/post.lua" "http://127.0.0.1:$port/v1/functions/trivial/invoke" >/dev/null  # warm-up
gpuwasm_rps=$(run_wrk "http://127.0.0.1:$port/v1/functions/trivial/invoke")
kill "${pids[0]}"; wait "${pids[0]}" 2>/dev/null || true

node_port=$((port + 1))
node "$here/node_baseline.mjs" "$wasm" "$node_port" >"$dir/node.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q listening "$dir/node.out" && break; sleep 0.1; done
wrk -t1 -c2 -d1s -s "$here/post.lua" "http://127.0.0.1:$node_port/" >/dev/null
node_rps=$(run_wrk "http://127.0.0.1:$node_port/")

printf '%-36s %12s\n' "trivial function over loopback" "requests/s"
printf '%-36s %12.0f\n' "gpuwasm serve" "$gpuwasm_rps"
printf '%-36s %12.0f\n' "Node.js $(node --version), instance per request" "$node_rps"
awk -v g="$gpuwasm_rps" -v n="$node_rps" 'BEGIN { printf "%-36s %11.2fx\n", "gpuwasm / Node.js", g / n }'
echo "(wrk -t2 -c$connections -d${seconds}s on $(nproc) cores, one after the other)"
