#!/usr/bin/env python3
"""Two `gpuwasm serve` nodes sharing one PostgreSQL database and one store directory.

    two_nodes_test.py GPUWASM BUILD_DIR

Needs $GPUWASM_TEST_POSTGRES (a key=value libpq string for a server where it may create a
database; scripts/with-postgres.sh sets it): without it, says so and exits 77 (skipped).
Checks, over loopback HTTP with two tenants configured the same way on both nodes:
deploy on the first node and invoke on the second; deploy on the second and invoke on the
first; a tenant does not see the other's functions on either node; delete on the second and
the function is gone on the first; the module was compiled once between the nodes
(/metrics); killing the first node (SIGKILL) loses no deployed function: the second keeps
serving and the first, restarted, serves them all; when the database goes away a node stays
up, fails requests clearly and reports not ready on /readyz.
"""
import http.client, json, os, re, secrets, shutil, signal, subprocess, sys, tempfile, time

def main():
    gpuwasm, build = sys.argv[1], sys.argv[2]
    base = os.environ.get("GPUWASM_TEST_POSTGRES", "")
    if not base:
        print("two nodes: SKIPPED: no PostgreSQL server (run under scripts/with-postgres.sh; make test does)")
        return 77
    db = "gpuwasm_nodes_" + secrets.token_hex(6)
    subprocess.run(["psql", "-q", "-v", "ON_ERROR_STOP=1", base, "-c", f"CREATE DATABASE {db}"], check=True)
    tmp = tempfile.mkdtemp(prefix="gpuwasm-nodes-")
    nodes = {}
    try:
        return run(gpuwasm, build, base, db, tmp, nodes)
    finally:
        for p in nodes.values():
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run(["psql", "-q", base, "-c", f"DROP DATABASE IF EXISTS {db} WITH (FORCE)"],
                       env=dict(os.environ, PGOPTIONS="-c client_min_messages=warning"))

def token(gpuwasm):
    out = subprocess.run([gpuwasm, "token", "new"], check=True, capture_output=True, text=True).stdout
    secret = re.search(r"^token: (\S+)", out, re.M).group(1)
    config = re.search(r"^configuration: (.*)$", out, re.M).group(1)
    return secret, config

def run(gpuwasm, build, base, db, tmp, nodes):
    conninfo = f"{base} dbname={db}"
    (acme, acme_cfg), (beta, beta_cfg) = token(gpuwasm), token(gpuwasm)
    cfg = os.path.join(tmp, "config.toml")  # one file for both nodes, as a ConfigMap would be
    with open(cfg, "w") as f:
        f.write(f'[runtime]\nstore = "{tmp}/shared"\n[server]\nlisten = "127.0.0.1:0"\n'
                f'[[tenants]]\nname = "acme"\n{acme_cfg}\n[[tenants]]\nname = "beta"\n{beta_cfg}\n')
    ports = {}

    def start(name):
        env = dict(os.environ, GPUWASM_DATABASE_URL=conninfo)  # the Secret's way in
        log = open(os.path.join(tmp, f"{name}.err"), "a")
        p = subprocess.Popen([gpuwasm, "serve", "--config", cfg, "--no-gpm", "--device", "cpu"],
                             stdout=subprocess.PIPE, stderr=log, text=True, env=env)
        line = p.stdout.readline()
        m = re.search(r"127\.0\.0\.1:(\d+)", line)
        if not m:
            p.wait()
            raise RuntimeError(f"node {name} did not start: {open(log.name).read()}")
        if "postgresql" not in line:
            raise RuntimeError(f"node {name} does not say it uses PostgreSQL: {line}")
        nodes[name], ports[name] = p, int(m.group(1))

    def call(node, method, path, tok, body=None):
        c = http.client.HTTPConnection("127.0.0.1", ports[node], timeout=120)
        c.request(method, path, body=body, headers={"Authorization": f"Bearer {tok}"})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, dict(r.headers), data

    def deploy(node, name, wasm):
        with open(wasm, "rb") as f:
            st, _, data = call(node, "POST", f"/v1/functions?name={name}", acme, f.read())
        check(st == 202, f"deploy {name} on {node}: HTTP {st} {data!r}")
        return json.loads(data)["id"]

    def wait_ready(node, fid):
        for _ in range(1200):
            st, _, data = call(node, "GET", f"/v1/functions/{fid}", acme)
            check(st == 200, f"GET {fid} on {node}: HTTP {st} {data!r}")
            status = json.loads(data)["status"]
            if status != "compiling":
                check(status == "ready", f"{fid} on {node}: {data!r}")
                return
            time.sleep(0.1)
        check(False, f"{fid} still compiling on {node}")

    def invoke_hello(node, fname):
        st, h, data = call(node, "POST", f"/v1/functions/{fname}/invoke", acme, b"abc")
        check(st == 200 and data.startswith(b"hello from a gpuwasm guest: 3 input bytes"),
              f"invoke {fname} on {node}: HTTP {st} {h.get('X-Gpuwasm-Error')} {data!r}")

    def metric(node, name):
        st, _, data = call(node, "GET", "/metrics", acme)
        m = re.search(rf"^{name} (\S+)$", data.decode(), re.M)
        return float(m.group(1)) if m else 0.0

    start("first")
    start("second")
    hello = f"{build}/examples/hello/hello.wasm"
    saxpy = f"{build}/examples/saxpy/saxpy.wasm"

    fid = deploy("first", "hello", hello)
    wait_ready("second", fid)
    invoke_hello("second", "hello")
    invoke_hello("second", fid)
    compiles = metric("first", "gpuwasm_module_compiles_total") + metric("second", "gpuwasm_module_compiles_total")
    check(compiles == 1, f"hello compiled {compiles} times between the nodes")
    check(metric("second", "gpuwasm_module_cache_loads_total") == 1, "the second node did not load the shared artifact")
    print("deploy on the first, invoke on the second: ok (compiled once)")

    sid = deploy("second", "saxpy", saxpy)
    wait_ready("first", sid)
    st, _, data = call("first", "POST", "/v1/functions/saxpy/invoke", acme)
    check(st == 200 and b" OK" in data, f"saxpy on first: HTTP {st} {data!r}")
    print("deploy on the second, invoke on the first: ok")

    for node in ("first", "second"):
        st, _, data = call(node, "GET", "/v1/functions", beta)
        check(st == 200 and json.loads(data)["functions"] == [], f"beta sees acme's functions on {node}: {data!r}")
        st, _, _ = call(node, "POST", f"/v1/functions/{fid}/invoke", beta)
        check(st == 404, f"beta invoking acme's function on {node}: HTTP {st}")
    print("tenants isolated on both nodes: ok")

    st, _, data = call("second", "DELETE", f"/v1/functions/{fid}", acme)
    check(st in (200, 204), f"delete on second: HTTP {st} {data!r}")
    st, _, _ = call("first", "GET", f"/v1/functions/{fid}", acme)
    check(st == 404, f"deleted function still on first: HTTP {st}")
    st, _, _ = call("first", "POST", "/v1/functions/hello/invoke", acme, b"abc")
    check(st == 404, f"deleted function still runs on first: HTTP {st}")
    print("delete on the second, gone on the first: ok")

    hid = deploy("first", "hello2", hello)
    wait_ready("first", hid)
    nodes["first"].send_signal(signal.SIGKILL)
    nodes["first"].wait()
    invoke_hello("second", "hello2")
    st, _, data = call("second", "POST", "/v1/functions/saxpy/invoke", acme)
    check(st == 200 and b" OK" in data, f"saxpy on second after the first died: HTTP {st}")
    start("first")
    st, _, data = call("first", "GET", "/v1/functions", acme)
    names = sorted(f["name"] for f in json.loads(data)["functions"])
    check(names == ["hello2", "saxpy"], f"functions after the restart: {names}")
    invoke_hello("first", "hello2")
    print("first node killed: nothing lost, the second kept serving, the restarted first serves all: ok")

    st, _, _ = call("second", "GET", "/readyz", acme)
    check(st == 200, f"readyz: HTTP {st}")
    subprocess.run(["psql", "-q", "-v", "ON_ERROR_STOP=1", base, "-c", f"DROP DATABASE {db} WITH (FORCE)"], check=True)
    st, _, data = call("second", "GET", "/readyz", acme)
    check(st == 503 and b"store is unreachable" in data, f"readyz without the database: HTTP {st} {data!r}")
    st, _, _ = call("second", "GET", "/healthz", acme)
    check(st == 200, f"healthz without the database: HTTP {st}")
    st, _, data = call("second", "POST", "/v1/functions/hello2/invoke", acme, b"abc")
    check(st >= 500 and b"postgresql" in data, f"invoke without the database: HTTP {st} {data!r}")
    check(nodes["second"].poll() is None, "the node exited when its database went away")
    print("database gone: not ready (503), still alive, requests fail clearly: ok")
    print("two nodes: PASSED")
    return 0

def check(cond, what):
    if not cond:
        raise AssertionError(what)

if __name__ == "__main__":
    try:
        sys.exit(main())
    except AssertionError as e:
        print(f"two nodes: FAILED: {e}")
        sys.exit(1)
