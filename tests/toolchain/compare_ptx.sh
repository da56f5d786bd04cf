#!/usr/bin/env bash
# compare_ptx.sh GENERATED COMMITTED [GENERATED COMMITTED ...]
# Fails, showing the difference, when a committed PTX fixture differs from nvcc's current output.
set -u
status=0
count=0
while (($# >= 2)); do
  gen=$1 committed=$2; shift 2
  count=$((count + 1))
  if ! diff -u "$committed" "$gen" >/tmp/compare_ptx.$$ 2>&1; then
    echo "STALE: $committed differs from nvcc's output ($gen); run 'make ptx-update'"
    head -40 /tmp/compare_ptx.$$
    status=1
  fi
done
rm -f /tmp/compare_ptx.$$
echo "compared $count PTX fixtures"
exit $status
