#!/usr/bin/env bash
# Installs every Debian package that building, testing and writing guests for gpuwasm needs.
# Idempotent and non-interactive: packages already installed are skipped, and when nothing is
# missing the script touches nothing (no apt-get update).
#
#   scripts/install-deps.sh           install what is missing (needs root, or sudo)
#   scripts/install-deps.sh --check   list what is missing; exit 1 if anything is
set -euo pipefail

packages=(
  # host toolchain and build
  build-essential g++ gcc make cmake ninja-build pkg-config git ca-certificates
  # guest toolchain: clang for wasm32-wasi, its linker and runtime builtins, wasi-libc, and libc++
  # for C++ guests
  clang lld libclang-rt-14-dev-wasm32 wasi-libc libc++-14-dev-wasm32 libc++abi-14-dev-wasm32
  # Rust guests (sdk/rust/): rustc, cargo and the wasm32-wasi standard library
  rustc cargo libstd-rust-dev-wasm32
  # wasm engine: libwabt, wasm2c and its wasm-rt.h; tcc compiles large modules' quick tier
  wabt tcc
  # libraries
  libboost-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev libsqlite3-dev libssl-dev
  libtomlplusplus-dev libpq-dev libseccomp-dev
  # tests and benchmarks (postgresql: a private server for the store tests; python3-yaml: the
  # Kubernetes manifests check)
  libgtest-dev libgmock-dev libbenchmark-dev wrk python3 python3-yaml postgresql
  # the CPU device benchmark's peer: PoCL (OpenCL kernels on the CPU) and the OpenCL headers/loader
  pocl-opencl-icd ocl-icd-opencl-dev opencl-headers
  # sanitizers and fuzzers with clang
  libclang-rt-14-dev
  # the style check (scripts/format.sh) and static analysis (.clang-tidy)
  clang-format clang-tidy
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [[ "${1:-}" == "--check" ]]; then
  if ((${#missing[@]})); then printf 'missing: %s\n' "${missing[*]}"; exit 1; fi
  echo "all ${#packages[@]} packages installed"; exit 0
fi

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
