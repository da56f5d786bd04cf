#!/usr/bin/env bash
# scripts/gpu-bundle.sh [BUILD] [DEST]: a self-contained, relocatable bundle of the GPU check, for a
# machine with an NVIDIA GPU and nothing else of ours: no build, no install, no network, any Linux
# image with glibc 2.36 or newer (docs/development.md, "The GPU check").
#
#   DEST/gpu-check.sh         the check (scripts/gpu-check.sh) and what it runs (gpu-check.tests)
#   DEST/bin/                 gpuwasm, device_tests, conformance_tests, bench_launch,
#                             bench_instrument, gpuwasm-driver-facts (stripped)
#   DEST/lib/                 the shared libraries they need beyond glibc (libpq, libssl, ...)
#   DEST/cache/               the example guests and the benchmark guest, compiled: no C compiler needed
#   DEST/examples/, DEST/ptx/ the example guests and the kernel corpus
#   DEST/conformance/         the PTX conformance cases (.cu case lines, .expected, PTX)
#   DEST/include/wasm-rt.h    for a guest compiled there after all (a cache miss)
#
# Run on the GPU machine:  bash DEST/gpu-check.sh "$OUT"   (at most ~40 MiB to carry).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
dest=${2:-$build/gpu-bundle}
limit_mib=${GPU_BUNDLE_MAX_MIB:-40}
for f in gpuwasm tests/device/device_tests tests/conformance/conformance_tests bench/bench_launch \
  bench/bench_instrument bench/gpuwasm-driver-facts bench/host_calls.wasm; do
  [[ -e $build/$f ]] || { echo "gpu-bundle: $build/$f is missing: build first (make build)" >&2; exit 1; }
done
rm -rf "$dest"
mkdir -p "$dest"/{bin,lib,cache,examples,ptx,include,conformance}
for f in gpuwasm tests/device/device_tests tests/conformance/conformance_tests bench/bench_launch \
  bench/bench_instrument bench/gpuwasm-driver-facts; do
  strip -o "$dest/bin/$(basename "$f")" "$build/$f"
done
cp scripts/gpu-check.sh scripts/gpu-check.tests "$dest/"
cp "$build"/ptx/tests/kernels/*.ptx "$dest/ptx/"
cp tests/conformance/*.cu tests/conformance/*.expected tests/conformance/*.ptx "$dest/conformance/"
cp "$build/bench/host_calls.wasm" "$dest/examples/"
for ex in vector_add saxpy reduction matmul softmax; do cp "$build/examples/$ex/$ex.wasm" "$dest/examples/"; done
cp /usr/include/wasm-rt.h "$dest/include/"
# Everything but glibc itself (the machine's own must be used) travels: libstdc++ too, since the
# image's may be older than the one the binaries were built against.
for f in "$dest"/bin/*; do ldd "$f" | awk '/=> \// {print $3}'; done | sort -u |
  grep -vE '/(libc|libm|libpthread|libdl|librt|libresolv|ld-linux[^/]*)\.so' |
  while read -r l; do cp -L "$l" "$dest/lib/"; done
# Compiled guests: the same engine and flags give the same cache keys there.
for w in "$dest"/examples/*.wasm; do
  GPUWASM_CACHE_DIR="$dest/cache" "$dest/bin/gpuwasm" compile "$w" >/dev/null
done
echo "built $(git rev-parse --short HEAD 2>/dev/null || echo unknown) on $(date -u +%Y-%m-%dT%H:%MZ)" >"$dest/BUILT"
size=$(du -sm "$dest" | cut -f1)
echo "gpu-bundle: $dest, ${size} MiB ($(ls "$dest/lib" | wc -l) libraries, $(ls "$dest/ptx" | wc -l) PTX files)"
if ((size > limit_mib)); then
  echo "gpu-bundle: ${size} MiB is over the ${limit_mib} MiB a device run may carry" >&2
  exit 1
fi
