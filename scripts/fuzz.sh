#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS] [TARGET...]: builds the libFuzzer targets with clang (ASan+UBSan) in
# build-fuzz/ and runs each for SECONDS (default $FUZZ_SECONDS, else 60), starting from its seed
# corpus and fuzz/regressions/<target>/. A crash stops with the input saved as
# build-fuzz/fuzz/artifacts/<target>-crash-...: add it to fuzz/regressions/<target>/ with the fix.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-${FUZZ_SECONDS:-60}}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(ptx wasm config wasi_cuda http)
build="$root/build-fuzz"
generator=$(command -v ninja >/dev/null && echo Ninja || echo "Unix Makefiles")
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G "$generator" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DGPUWASM_FUZZ=ON -DGPUWASM_BUILD_TESTS=OFF -DGPUWASM_BUILD_BENCH=OFF -DGPUWASM_WERROR=OFF >/dev/null
fi
if ! cmake --build "$build" -j "$(nproc)" --target fuzz_all example_hello example_vector_add >"$build/build.log" 2>&1; then
  tail -30 "$build/build.log"
  echo "fuzz: the build failed (whole log: $build/build.log)"
  exit 1
fi
mkdir -p "$build/fuzz/artifacts"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for t in "${targets[@]}"; do
  corpus="$build/fuzz/corpus/$t"
  mkdir -p "$corpus" "$root/fuzz/regressions/$t"
  IFS=';' read -r -a seeds <"$build/fuzz/seeds_$t.txt" || true  # one line, no newline
  existing=()
  for s in "${seeds[@]}"; do [[ -d $s ]] && existing+=("$s"); done
  echo "== fuzz_$t: ${secs}s"
  log="$build/fuzz/fuzz_$t.log"
  rc=0
  "$build/fuzz/fuzz_$t" -max_total_time="$secs" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$build/fuzz/artifacts/$t-" "$corpus" "$root/fuzz/regressions/$t" "${existing[@]}" >"$log" 2>&1 || rc=$?
  grep -E "stat::number_of_executed_units|stat::peak_rss" "$log" || true
  if ((rc != 0)); then
    # The report itself (sanitizer error, stack, the input as text) is what a CI log must show.
    # (tail, not head: the report is at the end; `|| true`: under pipefail a closed pipe would end
    # the script before it says which target failed.)
    grep -v -E "^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse|INITED|RELOAD)|^INFO:|NEW_FUNC" "$log" | tail -120 || true
    echo "fuzz_$t found a failure (exit $rc; whole log: $log)"
    exit 1
  fi
done
echo "fuzz: no failures"
