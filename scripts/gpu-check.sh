#!/usr/bin/env bash
# scripts/gpu-check.sh [OUT_DIR]: the one prepared check for a machine with an NVIDIA GPU.
#
# Runs from the bundle `make gpu-bundle` builds (build/gpu-bundle: bash build/gpu-bundle/gpu-check.sh
# "$OUT"), with no build, no install and no network; or from a checkout, using BUILD (default
# build). What it records, each step under its own timeout and the whole within GPU_CHECK_BUDGET_S
# (default 450 s; GPU_CHECK_LOAD_S sets the GPM load's seconds, GPU_CHECK_LEAK_MIB the leak facts' size):
#   preflight     nvidia-smi (GPU, driver, compute mode, MIG, persistence), which libraries resolve,
#                 libcuda/libnvidia-ml found, cc, every gtest filter below matches a test
#   doctor        what gpuwasm sees of the driver and NVML/GPM
#   driver facts  gpuwasm-driver-facts, one process per fact: isolation between contexts, fault
#                 scope, cuCtxDestroy behind a spinning kernel, pageable copies, footprint, pool leaks
#   GPM           sampled idle and under a load that keeps every SM busy
#   tests         each line of gpu-check.tests on cuda:0 in its own process (corpus, faults)
#   examples      every example on cuda:0, on the CPU device, and on --device auto (its report)
#   launch cost   bench_launch on the CPU device and on cuda:0 (1,000 launches there)
#   instrumented  bench_instrument on cuda:0: kernel time of the corpus instrumented / as given
#   ctest         the whole suite, only from a checkout with GPU_CHECK_CTEST=1
# Each result row is appended to OUT_DIR/gpu-check.md as soon as it is known (a timeout loses
# nothing before it); details go to gpu-check.log, preflight.txt, driver-facts.txt, tests.txt and
# bench.txt (six files). Without a GPU each GPU row says why it could not run, so the check can be
# rehearsed anywhere (over the fake driver: GPUWASM_CUDA_LIBRARY=.../libfake_cuda.so).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-${OUT:-/tmp/gpu-check}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
t0=$(date +%s)
budget=${GPU_CHECK_BUDGET_S:-450}
log="$out/gpu-check.log"
table="$out/gpu-check.md"
: >"$log"

if [[ -x $here/bin/gpuwasm ]]; then
  mode=bundle
  bindir=$here/bin
  tests_file=$here/gpu-check.tests
  exdir=$here/examples
  built=$(cat "$here/BUILT" 2>/dev/null || echo "bundle")
  export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # The compiled guests, copied where the engine may write (a cache miss compiles with cc).
  cache=$(mktemp -d "${TMPDIR:-/tmp}/gpuwasm-check-cache.XXXXXX")
  cp -r "$here/cache/." "$cache/"
  trap 'rm -rf "$cache"' EXIT
  export GPUWASM_CACHE_DIR=$cache
  export GPUWASM_KERNEL_PTX_DIR=$here/ptx
  export GPUWASM_CONFORMANCE_DIR=$here/conformance
  export GPUWASM_BENCH_HOST_CALLS=$exdir/host_calls.wasm
  export C_INCLUDE_PATH="$here/include${C_INCLUDE_PATH:+:$C_INCLUDE_PATH}"
else
  mode=checkout
  root=$(cd "$here/.." && pwd)
  build=${BUILD:-$root/build}
  bindir=""
  tests_file=$here/gpu-check.tests
  exdir=""
  built=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
fi

# The path of one of the check's programs (bundle: bin/; checkout: its place in the build).
prog() {
  if [[ $mode == bundle ]]; then echo "$bindir/$1"; return; fi
  case $1 in
    gpuwasm) echo "$build/gpuwasm" ;;
    device_tests) echo "$build/tests/device/device_tests" ;;
    conformance_tests) echo "$build/tests/conformance/conformance_tests" ;;
    bench_launch) echo "$build/bench/bench_launch" ;;
    bench_instrument) echo "$build/bench/bench_instrument" ;;
    gpuwasm-driver-facts) echo "$build/bench/gpuwasm-driver-facts" ;;
  esac
}
example() { [[ $mode == bundle ]] && echo "$exdir/$1.wasm" || echo "$build/examples/$1/$1.wasm"; }
gw=$(prog gpuwasm)

elapsed() { echo $(($(date +%s) - t0)); }
# Seconds a step may take: its own limit, or what is left of the budget (at least 5).
limit() {
  local left=$((budget - $(elapsed) - 5))
  ((left < 5)) && left=5
  echo $(($1 < left ? $1 : left))
}
# run LIMIT CMD...: the command under its time limit (killed 5 s after it), output to stdout.
run() {
  local l
  l=$(limit "$1")
  shift
  timeout -k 5 "$l" "$@"
}
say() { echo "== [$(elapsed) s] $*" | tee -a "$log"; }
row() {
  printf '| %s | %s | %s |\n' "$1" "$2" "$(echo "$3" | tr '\n|' ' /' | sed -E 's/ +/ /g; s/ $//')" >>"$table"
  echo "   -> $2: $1: $3" | tee -a "$log" >/dev/null
}

{
  echo "gpuwasm gpu-check, $(date -u +%Y-%m-%dT%H:%MZ), $built ($mode)"
  echo
  echo "| check | result | detail |"
  echo "| --- | --- | --- |"
} >"$table"

say "preflight"
{
  echo "date: $(date -u)"
  echo "kernel: $(uname -srm)"
  echo "os: $(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-?}")"
  echo "glibc: $(ldd --version 2>&1 | head -1)"
  echo "cpus: $(nproc), memory: $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo 2>/dev/null)"
  echo "nvidia-smi: $(command -v nvidia-smi || echo absent)"
  run 20 nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_mode,persistence_mode,mig.mode.current \
    --format=csv 2>&1
  echo "libcuda: $(ldconfig -p 2>/dev/null | grep -m1 'libcuda.so.1' | sed 's/.*=> //' || true)" \
    "GPUWASM_CUDA_LIBRARY=${GPUWASM_CUDA_LIBRARY:-}"
  echo "libnvidia-ml: $(ldconfig -p 2>/dev/null | grep -m1 'libnvidia-ml.so.1' | sed 's/.*=> //' || true)" \
    "GPUWASM_NVML_LIBRARY=${GPUWASM_NVML_LIBRARY:-}"
  echo "cc: $(command -v cc || echo absent)"
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  for p in gpuwasm device_tests conformance_tests bench_launch bench_instrument gpuwasm-driver-facts; do
    echo "ldd $p:"
    ldd "$(prog "$p")" 2>&1 | sed 's/^/  /'
  done
} >"$out/preflight.txt" 2>&1
cat "$out/preflight.txt" >>"$log"
gpu=$(run 20 nvidia-smi --query-gpu=name,driver_version,memory.total,compute_mode,mig.mode.current \
  --format=csv,noheader 2>/dev/null | head -1)
row "GPU (nvidia-smi: name, driver, memory, compute mode, MIG)" "$([[ -n $gpu ]] && echo ok || echo no)" \
  "${gpu:-nvidia-smi absent or no GPU}"
missing=$(for p in gpuwasm device_tests conformance_tests bench_launch bench_instrument gpuwasm-driver-facts; do ldd "$(prog "$p")" 2>&1; done |
  awk '/not found/ {print $1}' | sort -u | tr '\n' ' ')
row "shared libraries resolve" "$([[ -z $missing ]] && echo ok || echo FAIL)" "${missing:-all found ($mode)}"
nfilters=0
nempty=0
empty=""
while IFS=$'\t' read -r bin filter what; do
  [[ -z $bin || $bin == \#* ]] && continue
  nfilters=$((nfilters + 1))
  n=$("$(prog "$bin")" --gtest_list_tests "--gtest_filter=$filter" 2>/dev/null | grep -c '^  ')
  if ((n == 0)); then
    nempty=$((nempty + 1))
    empty+="$filter "
  fi
done <"$tests_file"
row "gtest filters of the check match tests" "$([[ $nempty -eq 0 ]] && echo ok || echo FAIL)" \
  "$((nfilters - nempty)) of $nfilters match${empty:+; none: $empty}"

say "doctor"
doctor=$(run 30 "$gw" doctor 2>&1)
echo "$doctor" >>"$log"
cuda_line=$(echo "$doctor" | grep -m1 "CUDA driver" | sed -E 's/ +\[(ok  |--  |FAIL)\] CUDA driver +//')
nvml_line=$(echo "$doctor" | grep -m1 "NVML" | sed -E 's/ +\[(ok  |--  |FAIL)\] NVML \(GPU telemetry\) +//')
row "CUDA driver probe + limits (doctor)" "$(echo "$doctor" | grep -q '\[ok  \] CUDA driver' && echo ok || echo no)" \
  "$cuda_line"
row "NVML / GPM support (doctor)" "$(echo "$doctor" | grep -q '\[ok  \] NVML' && echo ok || echo no)" "$nvml_line"

say "driver facts"
facts=$(prog gpuwasm-driver-facts)
: >"$out/driver-facts.txt"
for fact in isolation-pool isolation-plain faultiso destroy htod footprint "leak ${GPU_CHECK_LEAK_MIB:-1024}" \
  "trim ${GPU_CHECK_LEAK_MIB:-256}"; do
  # shellcheck disable=SC2086
  text=$(run 30 "$facts" $fact 2>&1)
  rc=$?
  echo "$text" >>"$out/driver-facts.txt"
  echo "   rc=$rc" >>"$out/driver-facts.txt"
  name=${fact%% *}
  verdict=$(echo "$text" | grep -E "^$name: " | tail -1 | sed -E "s/^$name: //")
  result=measured
  ((rc == 124 || rc == 137)) && result=timeout && verdict="no verdict within the time limit"
  ((rc == 2)) && result=no
  [[ -z $verdict ]] && verdict=$(echo "$text" | tail -1)
  row "driver fact: $name" "$result" "$verdict"
done
cat "$out/driver-facts.txt" >>"$log"

gpm_metrics=sm_occupancy,sm_util,dram_bw_util
gpm_mean() {  # two GPM rounds as JSON lines: the mean of each metric over GPUs and rounds
  run 15 "$gw" gpm --count 2 --interval 1s --format json --metrics "$gpm_metrics" 2>>"$log" | tee -a "$log" |
    grep -oE '"[A-Za-z_]+":-?[0-9.]+(e[-+]?[0-9]+)?' | tr -d '"' |
    awk -F: 'tolower($1) ~ /util|occupancy/ {k = tolower($1); s[k] += $2; n[k]++}
             END {for (k in s) printf "%s=%.1f ", k, s[k] / n[k]}'
}
say "GPM idle"
idle=$(gpm_mean)
row "GPM idle (mean %)" "$([[ -n $idle ]] && echo ok || echo no)" "${idle:-no samples}"
say "GPM under load"
run 20 "$facts" load "${GPU_CHECK_LOAD_S:-6}" >>"$log" 2>&1 &
load_pid=$!
sleep 2
busy=$(gpm_mean)
wait "$load_pid"
load_rc=$?
row "GPM under a load on every SM (mean %)" "$([[ $load_rc -eq 0 && -n $busy ]] && echo ok || echo no)" \
  "${busy:-no samples} (load: rc=$load_rc)"

say "tests on cuda:0, one process each"
: >"$out/tests.txt"
while IFS=$'\t' read -r bin filter what; do
  [[ -z $bin || $bin == \#* ]] && continue
  text=$(GPUWASM_TEST_DEVICE=cuda:0 run 120 "$(prog "$bin")" "--gtest_filter=$filter" 2>&1)
  rc=$?
  echo "$text" >>"$out/tests.txt"
  echo "   $filter: rc=$rc" >>"$out/tests.txt"
  passed=$(echo "$text" | grep -oE '\[  PASSED  \] [0-9]+' | grep -oE '[0-9]+$')
  skipped=$(echo "$text" | grep -oE '\[  SKIPPED \] [0-9]+ test' | grep -oE '[0-9]+' | head -1)
  failed=$(echo "$text" | grep -oE '[0-9]+ FAILED TESTS?' | grep -oE '^[0-9]+')
  first=$(echo "$text" | grep -m1 -E 'Failure|GPUWASM_TEST_DEVICE=|Expected|Which is' | cut -c1-200)
  ((rc == 124 || rc == 137)) && first="timed out; $first"
  row "$what" "$([[ $rc -eq 0 && ${passed:-0} -gt 0 ]] && echo ok || echo FAIL)" \
    "${passed:-0} passed, ${failed:-0} failed, ${skipped:-0} skipped${first:+; $first}"
done <"$tests_file"
cat "$out/tests.txt" >>"$log"

say "examples"
for ex in vector_add saxpy reduction matmul softmax; do
  line=""
  verdict=ok
  for dev in cuda:0 cpu; do
    got=$(run 60 "$gw" run "$(example "$ex")" --device "$dev" 2>&1 | tee -a "$log" | tail -1)
    [[ $got == *" OK" ]] || verdict=FAIL
    line+="$dev: ${got:-no output}; "
  done
  report="$out/.report-$ex.json"
  if run 60 "$gw" run "$(example "$ex")" --report-file "$report" >>"$log" 2>&1; then auto=ok; else auto=FAIL; fi
  [[ $auto == ok ]] || verdict=FAIL
  field() { grep -oE "\"$1\":(\"[^\"]*\"|[0-9.]+)" "$report" 2>/dev/null | head -1 | cut -d: -f2- | tr -d '"'; }
  line+="auto: $(field device), $(field kernels_launched) launches, $(field duration_ms) ms"
  rm -f "$report"
  row "example $ex (cuda:0, cpu, auto)" "$verdict" "$line"
done

say "launch cost"
: >"$out/bench.txt"
for dev in cpu cuda:0; do
  text=$(run 90 "$(prog bench_launch)" --device="$dev" 2>&1)
  echo "$text" >>"$out/bench.txt"
  per=$(echo "$text" | grep -m1 "host CPU per launch" | sed -E 's/ +/ /g')
  row "host CPU per launch ($dev): guest vs direct" "$([[ -n $per ]] && echo ok || echo no)" \
    "${per:-$(echo "$text" | tail -1)}"
  if [[ $dev == cuda:0 ]]; then
    raw=$(echo "$text" | grep -m1 "guest vs raw cuLaunchKernel" | sed -E 's/ +/ /g')
    row "host CPU per launch (cuda:0): guest vs raw cuLaunchKernel" "$([[ -n $raw ]] && echo ok || echo no)" "${raw:-n/a}"
  fi
done

say "instrumented PTX"
ptxdir=$([[ $mode == bundle ]] && echo "$here/ptx" || echo "$build/ptx/tests/kernels")
text=$(run 90 "$(prog bench_instrument)" --device=cuda:0 --reps=7 --ptx-dir="$ptxdir" 2>&1)
echo "$text" >>"$out/bench.txt"
geo=$(echo "$text" | grep -m1 "instrumented kernel time, geomean" | sed -E 's/ +/ /g')
row "kernel time instrumented / as given (cuda:0, target <= 1.05)" "$([[ -n $geo ]] && echo ok || echo no)" \
  "${geo:-$(echo "$text" | tail -1)}"
cat "$out/bench.txt" >>"$log"

if [[ $mode == checkout && ${GPU_CHECK_CTEST:-0} == 1 ]]; then
  say "ctest"
  text=$(run 600 ctest --test-dir "$build" -j "$(nproc)" 2>&1)
  echo "$text" >>"$log"
  summary=$(echo "$text" | grep -E "tests passed" | tail -1)
  row "test suite (ctest)" "$(echo "$text" | grep -q '100% tests passed' && echo ok || echo FAIL)" "${summary:-no summary}"
fi

say "done in $(elapsed) s"
echo >>"$table"
echo "(check took $(elapsed) s)" >>"$table"
cat "$table"
