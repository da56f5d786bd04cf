#!/usr/bin/env bash
# rust_guest_test.sh GPUWASM BUILD_DIR: the Rust SDK (sdk/rust/wasi-cuda) with Debian's rustc and
# cargo (rustc 1.63, libstd-rust-dev-wasm32), offline: its unit tests on the host, then its
# vector_add example built for wasm32-wasi and run by gpuwasm. Exits 77 (skipped, with the reason)
# when that toolchain is not installed.
set -uo pipefail
gpuwasm=$1 build=$2
here=$(cd "$(dirname "$0")/../.." && pwd)
# Debian's toolchain first: a rustup one earlier on PATH may lack the wasm32-wasi target.
rustc=$(command -v /usr/bin/rustc || command -v rustc || true)
cargo=$(command -v /usr/bin/cargo || command -v cargo || true)
if [[ -z $rustc || -z $cargo ]]; then
  echo "rust guest: skipped: rustc and cargo are not installed (scripts/install-deps.sh installs them)"
  exit 77
fi
libdir=$("$rustc" --print target-libdir --target wasm32-wasi 2>/dev/null || true)
if [[ -z $libdir || -z $(ls "$libdir"/libstd-*.rlib 2>/dev/null) ]]; then
  echo "rust guest: skipped: $rustc has no wasm32-wasi standard library (libstd-rust-dev-wasm32)"
  exit 77
fi
set -e
export RUSTC=$rustc CARGO_TARGET_DIR=$build/rust-target CARGO_HOME=$build/rust-cargo-home
cd "$here/sdk/rust/wasi-cuda"
"$cargo" test --offline --locked --lib -q 2>&1 | tail -3
"$cargo" build --offline --locked --release --target wasm32-wasi --example vector_add -q
"$gpuwasm" run "$CARGO_TARGET_DIR/wasm32-wasi/release/examples/vector_add.wasm"
