#!/usr/bin/env bash
# The project's C++ (src, tests, bench, sdk headers) in the style of .clang-format.
#
#   scripts/format.sh           reformat every file in place
#   scripts/format.sh --check   list the files that differ from the style; exit 1 if any do
#
# Guest programs (.c, .cpp, .cu) are left as written: their line numbers reach PTX line tables and
# guide text. The style is clang-format 14's reading of .clang-format (Debian 12's clang-format).
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t files < <(git ls-files 'src/*.cc' 'src/*.h' 'src/*.inc' 'tests/*.cc' 'tests/*.h' 'tests/*.inc' \
  'bench/*.cc' 'bench/*.h' 'sdk/*.h' 'sdk/*.hpp')

if [[ "${1:-}" != "--check" ]]; then
  clang-format -i "${files[@]}"
  exit 0
fi

differ=()
for f in "${files[@]}"; do
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then differ+=("$f"); fi
done
if ((${#differ[@]})); then
  printf 'format: %d of %d files differ from .clang-format (%s):\n' "${#differ[@]}" "${#files[@]}" \
    "$(clang-format --version | head -1)"
  printf '  %s\n' "${differ[@]}"
  echo "format: run scripts/format.sh (or make format) and commit the result"
  exit 1
fi
echo "format: all ${#files[@]} files match .clang-format"
