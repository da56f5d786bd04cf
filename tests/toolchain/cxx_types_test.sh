#!/usr/bin/env bash
# sdk/include/wasi_cuda.hpp: launches with the wrong arguments do not compile, with a message that
# says what to pass; the right ones do. Each case is one launch line in a small C++ guest, compiled
# with the guest flags (tests/toolchain/CMakeLists.txt passes them).
#   cxx_types_test.sh CLANGXX SDK_INCLUDE FLAGS...
set -uo pipefail
cxx=$1
sdk=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
# case NAME EXPECT LAUNCH: EXPECT is "ok" or a message the compiler must print.
case_() {
  local name=$1 expect=$2 launch=$3
  shift 3
  cat >"$tmp/$name.cpp" <<CPP
#include "wasi_cuda.hpp"
int main() {
  wcu::Module m = wcu::Module::Load("", 0).value();
  auto k = m.Kernel<const float*, float*, uint32_t>("k").value();
  auto a = wcu::DeviceBuffer<float>::Allocate(4).value();
  auto i = wcu::DeviceBuffer<int>::Allocate(4).value();
  const wcu::DeviceBuffer<const float>* ro = nullptr;
  float host[4] = {};
  (void)i; (void)ro; (void)host;
  return $launch.ok() ? 0 : 1;
}
CPP
  local out
  out=$("$cxx" "$@" -I"$sdk" -fsyntax-only "$tmp/$name.cpp" 2>&1)
  local rc=$?
  if [[ $expect == ok ]]; then
    if ((rc != 0)); then echo "FAIL $name: should compile"; echo "$out" | head -5; failures=$((failures + 1)); return; fi
  elif ((rc == 0)) || ! grep -qF "$expect" <<<"$out"; then
    echo "FAIL $name: should not compile, saying: $expect"; echo "$out" | grep -m3 error; failures=$((failures + 1)); return
  fi
  echo "ok   $name"
}
flags=("$@")
run() { case_ "$1" "$2" "$3" "${flags[@]}"; }
run right_arguments ok 'k.Launch({1}, {4}, a, a, 4u)'
run a_smaller_integer_widens ok 'k.Launch({1}, {4}, a, a, uint16_t{4})'
run too_few_arguments "a launch passes one argument per kernel parameter" 'k.Launch({1}, {4}, a, a)'
run wrong_element_type "a pointer parameter takes a DeviceBuffer of the same element type" 'k.Launch({1}, {4}, i, a, 4u)'
run a_host_pointer "a pointer parameter takes a DeviceBuffer: guest pointers mean nothing on the device" 'k.Launch({1}, {4}, a, host, 4u)'
run a_const_buffer_where_the_kernel_writes "a const buffer cannot go where the kernel writes" 'k.Launch({1}, {4}, a, *ro, 4u)'
run a_narrowing_value "narrowing" 'k.Launch({1}, {4}, a, a, 4.5)'
echo "$failures failures"
exit $((failures != 0))
