#!/usr/bin/env bash
# gpuwasm serve + the client commands, end to end over loopback:
#   serve_cli_test.sh GPUWASM HELLO_WASM VECTOR_ADD_WASM FAKE_NVML
# The fake NVML (a test fixture at the library boundary) stands in for a GPU's GPM counters.
set -euo pipefail
gpuwasm=$1 hello=$2 vector_add=$3 fake_nvml=$4 lifecycle=$5
dir=$(mktemp -d)
server_pid=""
cleanup() {
  [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

token=$("$gpuwasm" token new)
secret=$(sed -n 's/^token: //p' <<<"$token")
slow_token=$("$gpuwasm" token new)
slow_secret=$(sed -n 's/^token: //p' <<<"$slow_token")
admin_secret=$(sed -n 's/^token: //p' <<<"$("$gpuwasm" token new)")
cat >"$dir/config.toml" <<TOML
[runtime]
store = "$dir/store"
[server]
listen = "127.0.0.1:0"
admin_token = "$("$gpuwasm" token hash "$admin_secret")"
[[tenants]]
name = "acme"
$(sed -n 's/^configuration: //p' <<<"$token")
[[tenants]]
name = "slow"
$(sed -n 's/^configuration: //p' <<<"$slow_token")
rate_limit = 0.5
rate_burst = 1
TOML
# Compiled ahead into the server's artifact cache (found from its configuration): its deploy below
# loads the module from there instead of compiling it.
"$gpuwasm" compile --config "$dir/config.toml" "$lifecycle" | grep -q "compiled in"
GPUWASM_NVML_LIBRARY=$fake_nvml "$gpuwasm" serve --config "$dir/config.toml" --gpm-interval 100ms \
  >"$dir/out" 2>"$dir/err" &
server_pid=$!
for _ in $(seq 100); do grep -q listening "$dir/out" && break; sleep 0.1; done
port=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$dir/out")
[[ -n $port ]] || { cat "$dir/out" "$dir/err"; exit 1; }
export GPUWASM_SERVER="http://127.0.0.1:$port"

# Without the token: refused, exit 77.
set +e
"$gpuwasm" ls 2>"$dir/noauth"; code=$?
set -e
[[ $code -eq 77 ]] && grep -q "missing bearer token" "$dir/noauth" || { echo "no-token ls: exit $code"; cat "$dir/noauth"; exit 1; }

# A rate-limited tenant's deploy succeeds, and says so: its polls are answered 429 and waited out.
GPUWASM_TOKEN=$slow_secret "$gpuwasm" deploy "$vector_add" --name va | grep -E '^va version 1: fn_[0-9a-f]{16} \(ready\)$'
# What is not a module is refused at once (400), and nothing is stored.
sleep 2.2
set +e
GPUWASM_TOKEN=$slow_secret "$gpuwasm" deploy "$dir/config.toml" --name notwasm 2>"$dir/notwasm"; code=$?
set -e
grep -q "not a wasm module" "$dir/notwasm" || { echo "non-wasm deploy: exit $code"; cat "$dir/notwasm"; exit 1; }
sleep 2.2
GPUWASM_TOKEN=$slow_secret "$gpuwasm" ls >"$dir/slow_ls"
grep -q " va " "$dir/slow_ls" && ! grep -q notwasm "$dir/slow_ls" || { cat "$dir/slow_ls"; exit 1; }

export GPUWASM_TOKEN=$secret
"$gpuwasm" deploy "$hello" --name hello | grep -E '^hello version 1: fn_[0-9a-f]{16} \(ready\)$'
"$gpuwasm" deploy "$vector_add" --name va >/dev/null
printf abc >"$dir/in"
[[ $("$gpuwasm" invoke hello --input "$dir/in") == "hello from a gpuwasm guest: 3 input bytes, checksum 00017862" ]]
"$gpuwasm" invoke va | grep -q "0 wrong OK"
"$gpuwasm" invoke va --json | grep -q '"kernels_launched":1'
# Arguments and environment travel with the invocation (in the query, as JSON).
metric() {  # name -> its value on /metrics (0 when absent)
  python3 -c 'import re, sys, urllib.request
t = urllib.request.urlopen(sys.argv[1]).read().decode()
m = re.search(r"^" + sys.argv[2] + r"(?:\{[^}]*\})? (\S+)$", t, re.M)
print(int(float(m.group(1))) if m else 0)' "$GPUWASM_SERVER/metrics" "$1"
}
compiles=$(metric gpuwasm_module_compiles_total) loads=$(metric gpuwasm_module_cache_loads_total)
"$gpuwasm" deploy "$lifecycle" --name env --entry print_args_env >/dev/null
[[ $(metric gpuwasm_module_compiles_total) -eq $compiles && $(metric gpuwasm_module_cache_loads_total) -gt $loads ]] ||
  { echo "deploy after compile --config compiled again: compiles $compiles -> $(metric gpuwasm_module_compiles_total)"; exit 1; }
[[ $("$gpuwasm" invoke env --env MODE=fast -- blur "two words") == $'arg: env\narg: blur\narg: two words\nenv: MODE=fast' ]] ||
  { echo "invoke with arguments and environment:"; "$gpuwasm" invoke env --env MODE=fast -- blur "two words"; exit 1; }
"$gpuwasm" ls | grep -E '^fn_[0-9a-f]{16} +va +1 ready'
# The admin token lists every tenant's functions (acme's and slow's), and deploys nothing.
GPUWASM_TOKEN=$admin_secret "$gpuwasm" ls >"$dir/admin_ls"
grep -qE ' va .* acme$' "$dir/admin_ls" && grep -qE ' va .* slow$' "$dir/admin_ls" || { cat "$dir/admin_ls"; exit 1; }
set +e
GPUWASM_TOKEN=$admin_secret "$gpuwasm" deploy "$hello" --name nope 2>"$dir/admin_deploy"; code=$?
set -e
[[ $code -eq 77 ]] && grep -q "acts for no tenant\|with a tenant's token" "$dir/admin_deploy" || { echo "admin deploy: exit $code"; cat "$dir/admin_deploy"; exit 1; }
"$gpuwasm" top --once >"$dir/top"
grep -q '^instances: 0' "$dir/top" && grep -q '^  gpuwasm_gpm_sm_util{' "$dir/top" || { cat "$dir/top"; exit 1; }
python3 - "$GPUWASM_SERVER/metrics" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen(sys.argv[1]).read().decode()
for name in ("DCGM_FI_PROF_SM_ACTIVE{", "gpuwasm_gpm_sm_occupancy{", 'gpuwasm_invocations_total{tenant="acme",function="va"'):
    assert name in text, name + " missing from /metrics"
PY
# The Grafana dashboard (deploy/grafana) queries only metrics this node's /metrics exposes (after the
# invocations above, with GPM sampled from the fake NVML), and is a dashboard Grafana can import.
python3 - "$GPUWASM_SERVER/metrics" "$(dirname "$0")/../../deploy/grafana/gpuwasm-dashboard.json" <<'PY'
import json, re, sys, urllib.request
text = urllib.request.urlopen(sys.argv[1]).read().decode()
exposed = set()
for line in text.splitlines():
    m = re.match(r"# TYPE (\S+) ", line) or re.match(r"([A-Za-z_:][A-Za-z0-9_:]*)[{ ]", line)
    if m: exposed.add(m.group(1))
dash = json.load(open(sys.argv[2]))
assert dash["uid"] and dash["title"] and dash["schemaVersion"] >= 30, "not a Grafana dashboard"
ids = [p["id"] for p in dash["panels"]]
assert len(ids) == len(set(ids)), "panel ids repeat"
exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
exprs += [v["definition"] for v in dash["templating"]["list"] if "definition" in v]
assert len(exprs) >= 20, len(exprs)
used = {n for e in exprs for n in re.findall(r"\b(?:gpuwasm|DCGM_FI)_[A-Za-z0-9_]+\b", e)}
missing = sorted(n for n in used if n not in exposed)
assert not missing, "the dashboard queries metrics /metrics does not expose: " + ", ".join(missing)
assert any(n.startswith("DCGM_FI_PROF_") for n in used) and len(used) >= 20, used
PY
id=$("$gpuwasm" ls --json | python3 -c 'import json,sys; print([f["id"] for f in json.load(sys.stdin)["functions"] if f["name"]=="va"][0])')
"$gpuwasm" rm "$id" | grep -q "deleted $id"
set +e
"$gpuwasm" invoke va 2>"$dir/gone"; code=$?
set -e
[[ $code -eq 66 ]] && grep -q "no function named 'va'" "$dir/gone" || { echo "invoke after rm: exit $code"; cat "$dir/gone"; exit 1; }

# --json: one document on stdout per command, errors included (exit status inside).
"$gpuwasm" --json deploy "$hello" --name hj | python3 -c '
import json, sys; d = json.load(sys.stdin); assert d["name"] == "hj" and d["status"] == "ready", d'
"$gpuwasm" invoke hj --json | python3 -c '
import json, sys; d = json.load(sys.stdin); assert d["status"] == "ok" and d["exit_status"] == 0, d'
hj=$("$gpuwasm" ls --json | python3 -c 'import json,sys; print([f["id"] for f in json.load(sys.stdin)["functions"] if f["name"]=="hj"][0])')
set +e
"$gpuwasm" rm --json "$hj" fn_0000000000000000 >"$dir/rm.json" 2>"$dir/rm.err"; code=$?
"$gpuwasm" invoke va --json >"$dir/gone.json" 2>"$dir/gone.err"; gone=$?
set -e
python3 - "$dir/rm.json" "$code" "$hj" "$dir/gone.json" "$gone" <<'PY' || { cat "$dir/rm.json" "$dir/rm.err" "$dir/gone.json" "$dir/gone.err"; exit 1; }
import json, sys
rm = json.load(open(sys.argv[1]))
assert int(sys.argv[2]) == 66 and rm["deleted"] == [sys.argv[3]], rm
assert [f["id"] for f in rm["failed"]] == ["fn_0000000000000000"] and rm["failed"][0]["exit_code"] == 66, rm
gone = json.load(open(sys.argv[4]))
assert gone == {"error": gone["error"]} and gone["error"]["exit_code"] == int(sys.argv[5]) == 66, gone
assert "no function named 'va'" in gone["error"]["message"], gone
PY
[[ ! -s "$dir/rm.err" && ! -s "$dir/gone.err" ]] || { cat "$dir/rm.err" "$dir/gone.err"; exit 1; }
"$gpuwasm" top --once --json | python3 -c '
import json, sys; d = json.load(sys.stdin); assert d["instances"] == [] and any(l.startswith("gpuwasm_gpm_sm_util{") for l in d["gpm"]), d'

kill -TERM "$server_pid"
wait "$server_pid"
server_pid=""
grep -q "stopped" "$dir/err"

# serve --json: its start-up line is a JSON document with the address. This node's /metrics needs
# a metrics token: top says so instead of leaving its GPU section out, and uses --metrics-token.
printf '[server]\nmetrics_token = "%s"\n' "$("$gpuwasm" token hash m3tr1cs)" >"$dir/metrics.toml"
"$gpuwasm" serve --json --config "$dir/metrics.toml" --listen 127.0.0.1:0 --store "$dir/store2" --no-gpm \
  >"$dir/out2" 2>"$dir/err2" &
server_pid=$!
for _ in $(seq 100); do [[ -s "$dir/out2" ]] && break; sleep 0.1; done
python3 -c '
import json, sys; d = json.loads(open(sys.argv[1]).read()); assert d["listening"].startswith("http://127.0.0.1:"), d' "$dir/out2" ||
  { cat "$dir/out2" "$dir/err2"; exit 1; }
second=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["listening"])' "$dir/out2")
GPUWASM_SERVER=$second "$gpuwasm" top --once >"$dir/top2"
grep -q "^GPU (NVML GPM): /metrics refused this client: it needs the node's metrics token" "$dir/top2" ||
  { cat "$dir/top2"; exit 1; }
GPUWASM_SERVER=$second "$gpuwasm" top --once --metrics-token m3tr1cs | grep -q "^GPU (NVML GPM): no samples"
GPUWASM_SERVER=$second GPUWASM_METRICS_TOKEN=wrong "$gpuwasm" top --once --json | python3 -c '
import json, sys; d = json.load(sys.stdin); assert d["gpm"] is None and "the metrics token given" in d["gpm_error"], d'
kill -TERM "$server_pid"
wait "$server_pid"
server_pid=""

# Something else answers at --server (200 and 202 with a body that is not the API's JSON): every
# client command fails with a clear error and exit 69, never an abort.
python3 - "$dir/fake_port" <<'PY' &
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def answer(self, code):
        body = b"<html>not an API</html>" if "instances" not in self.path else b'{"instances": 7}'
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self): self.answer(200)
    def do_POST(self): self.answer(202)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.serve_forever()
PY
server_pid=$!
for _ in $(seq 100); do [[ -s "$dir/fake_port" ]] && break; sleep 0.1; done
export GPUWASM_SERVER="http://127.0.0.1:$(cat "$dir/fake_port")"
for cmd in "ls" "deploy $hello --name x" "top --once"; do
  set +e
  # shellcheck disable=SC2086
  "$gpuwasm" $cmd >/dev/null 2>"$dir/wrong"; code=$?
  set -e
  [[ $code -eq 69 ]] && grep -q "is --server a gpuwasm server" "$dir/wrong" ||
    { echo "$cmd against a non-gpuwasm server: exit $code"; cat "$dir/wrong"; exit 1; }
done
echo "serve CLI: all checks passed"
