# Sourced by the serving benchmarks: start_gpuwasm NAME ISOLATION starts `gpuwasm serve` on a free
# loopback port (CPU device, one tenant "bench" with 64 concurrent invocations, store under $dir),
# adds its pid to the caller's `pids` (so it runs in the caller's shell, never in $(...)), deploys
# the trivial function and writes the port to $dir/NAME.port. Needs $build and $dir.
start_gpuwasm() {
  local name=$1 iso=$2 port
  printf '[runtime]\nstore = "%s"\nisolation = "%s"\n[server]\nlisten = "127.0.0.1:0"\n[[tenants]]\nname = "bench"\nconcurrent_invocations = 64\n' \
    "$dir/store-$name" "$iso" >"$dir/$name.toml"
  "$build/gpuwasm" serve --config "$dir/$name.toml" --no-gpm --device cpu >"$dir/$name.out" 2>"$dir/$name.err" &
  pids+=($!)
  for _ in $(seq 100); do grep -q listening "$dir/$name.out" && break; sleep 0.1; done
  port=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$dir/$name.out")
  GPUWASM_SERVER="http://127.0.0.1:$port" "$build/gpuwasm" deploy "$build/bench/trivial.wasm" --name trivial >/dev/null
  GPUWASM_SERVER="http://127.0.0.1:$port" "$build/gpuwasm" invoke trivial | grep -q '^ok$'
  echo "$port" >"$dir/$name.port"
}
