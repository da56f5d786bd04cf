#!/usr/bin/env bash
# --json on the commands that need no server: each prints exactly one JSON document on stdout
# (nothing on stderr), its result or {"error": ...} with the exit status in it, so that a guest's
# exit status and gpuwasm's own failure with the same number are told apart.
#   json_output_test.sh GPUWASM WASI_IO_WASM TRAPS_WASM CACHE_DIR
set -euo pipefail
gpuwasm=$1 wasi_io=$2 traps=$3 cache=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# check EXPECTED_EXIT PYTHON_ASSERTION -- COMMAND...: runs the command with --json, checks its exit
# status, that stderr is empty and stdout one JSON line, and the assertion on it (as `d`).
check() {
  local want=$1 assertion=$2
  shift 3
  set +e
  "$@" >"$dir/out" 2>"$dir/err"
  local code=$?
  set -e
  [[ $code -eq $want ]] || { echo "$*: exit $code, expected $want"; cat "$dir/out" "$dir/err"; exit 1; }
  [[ ! -s "$dir/err" ]] || { echo "$*: wrote to stderr:"; cat "$dir/err"; exit 1; }
  python3 - "$dir/out" "$code" "$assertion" <<'PY' || { echo "$*:"; cat "$dir/out"; exit 1; }
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, f"{len(lines)} lines"
d = json.loads(lines[0])
code = int(sys.argv[2])
if isinstance(d.get("error"), dict):  # gpuwasm failed: which command, why, the exit status
    assert list(d) == ["error"] and set(d["error"]) == {"command", "message", "exit_code"}, d
    assert d["error"]["exit_code"] == code, d
assert eval(sys.argv[3]), sys.argv[3]
PY
}

check 0 'd["version"].startswith("gpuwasm ")' -- "$gpuwasm" --json version
check 0 'd["version"].startswith("gpuwasm ")' -- "$gpuwasm" version --json
check 0 'd["token"].startswith("gw_") and d["hash"].startswith("sha256:")' -- "$gpuwasm" token new --json
check 64 'd["error"]["command"] == "token hash"' -- "$gpuwasm" --json token hash ""
printf '[[tenants]]\nname = "a"\nconcurrent_invocations = 3\n' >"$dir/ok.toml"
check 0 'd["valid"] and d["tenants"][0]["name"] == "a" and d["tenants"][0]["concurrent_invocations"] == 3' \
  -- "$gpuwasm" config check "$dir/ok.toml" --json
printf 'listen = 8080\n' >"$dir/bad.toml"
check 65 'd["error"]["command"] == "config check"' -- "$gpuwasm" config check "$dir/bad.toml" --json
check 0 'd["valid"] is True' -- "$gpuwasm" compile --check "$wasi_io" --json
check 65 'd["error"]["command"] == "compile"' -- "$gpuwasm" compile --check "$dir/ok.toml" --json
# Usage errors and an unknown command are JSON too.
check 64 'd["error"]["command"] == "run"' -- "$gpuwasm" run --json --no-such-flag
check 64 '"unknown command" in d["error"]["message"]' -- "$gpuwasm" --json deplyo
# A guest that exits 66 and a module that cannot be read (gpuwasm's 66): the same exit status,
# told apart by the document.
check 66 'd["status"] == "exit_error" and d["exit_status"] == 66 and d["error"] is None' \
  -- "$gpuwasm" run "$wasi_io" --json --cache-dir "$cache" -- 66
check 66 'd["error"]["command"] == "run" and "cannot open" in d["error"]["message"]' \
  -- "$gpuwasm" run "$dir/missing.wasm" --json --cache-dir "$cache"
# A trap: exit 134, and the document names it.
check 134 'd["status"] == "trap" and d["trap"] == "unreachable"' \
  -- "$gpuwasm" run "$traps" --entry unreachable --json --cache-dir "$cache"
check 0 'd["dir"].endswith("proj") and len(d["files"]) == 6' -- "$gpuwasm" new proj --dir "$dir/proj" --json
check 64 '"not empty" in d["error"]["message"]' -- "$gpuwasm" new proj --dir "$dir/proj" --json
echo "json output: all checks passed"
