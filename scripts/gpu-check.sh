#!/usr/bin/env bash
# scripts/gpu-check.sh [OUT_DIR]: the one prepared check for a machine with an NVIDIA GPU.
# Builds (or reuses a carried build), then records what gpuwasm sees of the GPU and how it runs:
#   driver probe and device limits (doctor), NVML/GPM support, GPM sampled idle and under a
#   busy kernel (scripts/gpu-load.cu, when nvcc is present), the kernel corpus on cuda:0 and on the
#   CPU device (same inputs, same references and tolerances), every example on both devices and on
#   --device auto, the whole test suite, and the launch-overhead benchmark on both devices (on CUDA
#   also against a raw cuLaunchKernel loop).
# Writes OUT_DIR/gpu-check.md (the table) and OUT_DIR/gpu-check.log (everything); prints the table.
# Rehearse it anywhere: without a GPU each GPU row says why it could not run.
# Environment: BUILD (default build), GPU_CHECK_SKIP_TESTS=1 skips ctest, GPU_CHECK_LOAD_S (6).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-build/gpu-check}}
build=${BUILD:-build}
load_s=${GPU_CHECK_LOAD_S:-6}
mkdir -p "$out"
log="$out/gpu-check.log"
table="$out/gpu-check.md"
: >"$log"
rows=()
row() { rows+=("| $1 | $2 | $3 |"); }
say() { echo "== $*" | tee -a "$log"; }

say "machine"
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>>"$log" | head -1)
row "GPU (nvidia-smi)" "$([[ -n $gpu ]] && echo ok || echo no)" "${gpu:-nvidia-smi absent or no GPU}"

say "build ($build)"
if [[ ! -x "$build/gpuwasm" ]]; then
  scripts/install-deps.sh --check >>"$log" 2>&1 || scripts/install-deps.sh >>"$log" 2>&1
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >>"$log" 2>&1
fi
if cmake --build "$build" -j "$(nproc)" >>"$log" 2>&1; then
  row "build" "ok" "$build"
else
  row "build" "FAIL" "see gpu-check.log"
fi
gw="$build/gpuwasm"

say "doctor"
"$gw" doctor >"$out/doctor.txt" 2>&1
cat "$out/doctor.txt" >>"$log"
cuda_line=$(grep -m1 "CUDA driver" "$out/doctor.txt" | sed -E 's/ +\[(ok  |--  |FAIL)\] CUDA driver +//')
nvml_line=$(grep -m1 "NVML" "$out/doctor.txt" | sed -E 's/ +\[(ok  |--  |FAIL)\] NVML \(GPU telemetry\) +//')
row "CUDA driver probe + limits" "$(grep -q '\[ok  \] CUDA driver' "$out/doctor.txt" && echo ok || echo no)" "$cuda_line"
row "NVML / GPM support" "$(grep -q '\[ok  \] NVML' "$out/doctor.txt" && echo ok || echo no)" "$nvml_line"

gpm_metrics=sm_occupancy,sm_util,dram_bw_util
gpm_sample() {  # one GPM round as JSON lines; mean of each metric over GPUs printed as k=v
  "$gw" gpm --count 2 --interval 1s --format json --metrics "$gpm_metrics" 2>>"$log" | tee -a "$log" |
    python3 -c '
import json, sys
vals = {}
for line in sys.stdin:
    try: m = json.loads(line)["metrics"]
    except Exception: continue
    for k, v in m.items():
        if isinstance(v, (int, float)): vals.setdefault(k, []).append(v)
print(" ".join(f"{k}={sum(v)/len(v):.1f}" for k, v in sorted(vals.items())) or "no samples")'
}
say "GPM idle"
idle=$(gpm_sample)
row "GPM idle (mean %)" "$([[ $idle == "no samples" ]] && echo no || echo ok)" "$idle"
say "GPM under load"
if command -v nvcc >/dev/null 2>&1 || [[ -x /usr/local/cuda/bin/nvcc ]]; then
  nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  if "$nvcc_bin" -O2 -o "$out/gpu-load" scripts/gpu-load.cu >>"$log" 2>&1; then
    "$out/gpu-load" "$load_s" >>"$log" 2>&1 &
    load_pid=$!
    sleep 1
    busy=$(gpm_sample)
    wait "$load_pid"
    rc=$?
    row "GPM under a busy kernel (mean %)" "$([[ $rc -eq 0 && $busy != "no samples" ]] && echo ok || echo no)" "$busy"
  else
    row "GPM under a busy kernel" "no" "gpu-load.cu did not compile (see log)"
  fi
  rm -f "$out/gpu-load"
else
  row "GPM under a busy kernel" "no" "nvcc absent: no load generator"
fi

say "kernel corpus on cuda:0 and on the CPU device"
# The same kernels, inputs and C++ references (exact, or the same ULP bounds) on both devices.
if [[ -x "$build/tests/device/device_tests" ]]; then
  for dev in cuda:0 cpu; do
    env_dev=$([[ $dev == cpu ]] && echo "" || echo "$dev")
    GPUWASM_TEST_DEVICE="$env_dev" "$build/tests/device/device_tests" --gtest_filter='Arch/Corpus.*' \
      >"$out/corpus-$dev.txt" 2>&1
    rc=$?
    cat "$out/corpus-$dev.txt" >>"$log"
    passed=$(grep -Eo '\[  PASSED  \] [0-9]+ tests' "$out/corpus-$dev.txt" | grep -Eo '[0-9]+')
    failed=$(grep -Eo '[0-9]+ FAILED TESTS?' "$out/corpus-$dev.txt" | grep -Eo '[0-9]+')
    first=$(grep -m1 -E 'GPUWASM_TEST_DEVICE|Failure' "$out/corpus-$dev.txt")
    row "kernel corpus on $dev" "$([[ $rc -eq 0 ]] && echo ok || echo FAIL)" \
      "${passed:-0} passed, ${failed:-0} failed ${first:+($first)}"
    rm -f "$out/corpus-$dev.txt"
  done
  # Tenant isolation: a kernel given another context's buffer address faults in its own context,
  # and the other context's data and next launch are untouched.
  GPUWASM_TEST_DEVICE=cuda:0 "$build/tests/device/device_tests" \
    --gtest_filter='Faults.pointer_of_another_context_faults:Faults.in_bounds_launch_of_the_same_kernel_succeeds' \
    >"$out/isolation.txt" 2>&1
  rc=$?
  cat "$out/isolation.txt" >>"$log"
  row "tenant isolation on cuda:0 (foreign pointer faults in its own context)" \
    "$([[ $rc -eq 0 ]] && echo ok || echo FAIL)" "$(grep -m1 -E 'PASSED|FAILED|GPUWASM_TEST_DEVICE' "$out/isolation.txt")"
  rm -f "$out/isolation.txt"
else
  row "kernel corpus" "no" "device_tests not built"
fi

say "examples on --device cuda:0 and cpu"
for ex in vector_add saxpy reduction matmul softmax; do
  line=""
  verdict=ok
  for dev in cuda:0 cpu; do
    got=$("$gw" run "$build/examples/$ex/$ex.wasm" --device "$dev" 2>&1 | tee -a "$log" | tail -1)
    [[ $got == *" OK" ]] || verdict=FAIL
    line+="$dev: ${got:-no output}; "
  done
  row "example $ex (both devices)" "$verdict" "$line"
done

say "examples on --device auto"
for ex in vector_add saxpy reduction matmul softmax; do
  wasm="$build/examples/$ex/$ex.wasm"
  report="$out/report-$ex.json"
  if "$gw" run "$wasm" --report-file "$report" >>"$log" 2>&1; then status=ok; else status=FAIL; fi
  detail=$(python3 - "$report" 2>>"$log" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
m = r["metrics"]
print(f"{r['device']}; {m['kernels_launched']} launches, {r['wall_time_ms']:.1f} ms; {r.get('device_note') or ''}")
PY
)
  row "example $ex" "$status" "${detail:-no report}"
  rm -f "$report"
done

if [[ "${GPU_CHECK_SKIP_TESTS:-0}" != 1 ]]; then
  say "ctest"
  ctest --test-dir "$build" -j "$(nproc)" >"$out/ctest.txt" 2>&1
  summary=$(grep -E "tests passed" "$out/ctest.txt" | tail -1)
  row "test suite (ctest)" "$(grep -q '100% tests passed' "$out/ctest.txt" && echo ok || echo FAIL)" "${summary:-no summary}"
  cat "$out/ctest.txt" >>"$log"
  rm -f "$out/ctest.txt"
fi

say "launch overhead"
if [[ -x "$build/bench/bench_launch" ]]; then
  bl=$("$build/bench/bench_launch" 2>>"$log" | tee -a "$log" | grep -m1 "host CPU per launch" | sed -E 's/ +/ /g')
  row "host CPU per launch (cpu): guest vs direct" "$([[ -n $bl ]] && echo ok || echo no)" "${bl:-bench_launch failed}"
  "$build/bench/bench_launch" --device=cuda:0 >"$out/bench-cuda.txt" 2>&1
  cat "$out/bench-cuda.txt" >>"$log"
  bc=$(grep -m1 "host CPU per launch" "$out/bench-cuda.txt" | sed -E 's/ +/ /g')
  br=$(grep -m1 "guest vs raw cuLaunchKernel" "$out/bench-cuda.txt" | sed -E 's/ +/ /g')
  row "host CPU per launch (cuda:0): guest vs direct" "$([[ -n $bc ]] && echo ok || echo no)" \
    "${bc:-$(tail -1 "$out/bench-cuda.txt")}"
  row "host CPU per launch (cuda:0): guest vs raw cuLaunchKernel" "$([[ -n $br ]] && echo ok || echo no)" "${br:-n/a}"
  rm -f "$out/bench-cuda.txt"
else
  row "host CPU per launch" "no" "bench_launch not built"
fi

{
  echo "gpuwasm gpu-check, $(date -u +%Y-%m-%dT%H:%MZ), $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo
  echo "| check | result | detail |"
  echo "| --- | --- | --- |"
  printf '%s\n' "${rows[@]}"
} >"$table"
rm -f "$out/doctor.txt"
cat "$table"
