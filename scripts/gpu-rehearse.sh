#!/usr/bin/env bash
# scripts/gpu-rehearse.sh [--no-chroot] [BUILD]: rehearses the GPU check where nothing of ours is
# installed. Makes a bare Debian root with debootstrap (only gcc added: the GPU machine's image has
# a C compiler and none of our libraries), puts the bundle (make gpu-bundle) and the fake
# libcuda/libnvidia-ml in it, and runs the bundle's gpu-check.sh there with `env -i`, under the same
# 8-minute limit as on the GPU machine. Needs root and Debian's mirror (it installs debootstrap when
# missing); the root is kept in BUILD/rehearsal-root for the next run. With --no-chroot (the test
# gpu_check_rehearsal_from_a_moved_bundle) the bundle is built in a temporary directory, moved,
# and run there with `env -i`. Prints the table; exits non-zero when a row that must pass without
# a GPU did not, or the check wrote more than 8 files.
set -euo pipefail
cd "$(dirname "$0")/.."
chroot=1
if [[ ${1:-} == --no-chroot ]]; then
  chroot=0
  shift
fi
build=${1:-build}
if ((chroot)); then
  root=$build/rehearsal-root
  [[ $(id -u) == 0 ]] || { echo "gpu-rehearse: needs root (debootstrap, chroot); or --no-chroot" >&2; exit 1; }
  command -v debootstrap >/dev/null || apt-get install -y -q debootstrap >/dev/null
  if [[ ! -x $root/usr/bin/gcc ]]; then
    rm -rf "$root"
    debootstrap --variant=minbase --include=gcc,libc6-dev bookworm "$root" http://deb.debian.org/debian >/dev/null
  fi
  inside=""
else
  root=$(mktemp -d "${TMPDIR:-/tmp}/gpu-rehearse.XXXXXX")
  trap 'rm -rf "$root"' EXIT
  inside=$root
fi
# Built in one place, run from another: nothing may depend on where it was made.
scripts/gpu-bundle.sh "$build" "$root/made-here"
rm -rf "$root/opt/gpuwasm" "$root/opt/fake" "$root/out"
mkdir -p "$root/opt/fake" "$root/out"
mv "$root/made-here" "$root/opt/gpuwasm"
cp "$build/tests/device/libfake_cuda.so" "$root/opt/fake/libcuda.so.1"
cp "$build/tests/nvml/libfake_nvml.so" "$root/opt/fake/libnvidia-ml.so.1"
check_env=(env -i PATH=/usr/bin:/bin HOME=/tmp TMPDIR=/tmp
  GPUWASM_CUDA_LIBRARY="$inside/opt/fake/libcuda.so.1" GPUWASM_NVML_LIBRARY="$inside/opt/fake/libnvidia-ml.so.1"
  GPU_CHECK_LEAK_MIB=16 GPU_CHECK_LOAD_S=0.001 bash "$inside/opt/gpuwasm/gpu-check.sh" "$inside/out")
start=$SECONDS
set +e
if ((chroot)); then
  mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
  trap 'umount "$root/proc" 2>/dev/null || true' EXIT
  timeout 480 chroot "$root" "${check_env[@]}" >"$build/rehearsal.log" 2>&1
else
  timeout 480 "${check_env[@]}" >"$root/rehearsal.log" 2>&1
fi
rc=$?
set -e
echo "gpu-rehearse: the check ran $((SECONDS - start)) s in $root (rc=$rc); files: $(ls "$root/out" | tr '\n' ' ')"
cat "$root/out/gpu-check.md"
# Without a GPU only the nvidia-smi row may say "no"; nothing may fail or time out.
bad=$(grep -E '^\| ' "$root/out/gpu-check.md" | grep -vE '^\| (check|---) ' |
  grep -vE '^\| GPU \(nvidia-smi' | grep -E '\| (no|FAIL|timeout) \|' || true)
nfiles=$(ls "$root/out" | wc -l)
if [[ $rc != 0 || -n $bad || $nfiles -gt 8 ]]; then
  echo "gpu-rehearse: FAILED (rc=$rc, $nfiles files)${bad:+; rows: $bad}" >&2
  exit 1
fi
echo "gpu-rehearse: ok"
