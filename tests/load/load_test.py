#!/usr/bin/env python3
"""Load test of `gpuwasm serve` (docs/reliability.md).

    load_test.py GPUWASM BUILD_DIR [--clients 64] [--seconds 60] [--warmup 15] [--max-growth 5] [--attacker | --soak]

Starts a server on loopback with a fresh store, deploys a mix of guests, and runs CLIENTS
concurrent clients for SECONDS: each request picks a function at random and checks its answer
exactly (hello: the checksum of its random input; saxpy: " OK"; echo: the input back; failing
guests: their expected status: a device fault exits 3, a trap is "trap", a spinner is "deadline").
Resident memory of the server and its tenant workers is sampled every half second. Passes when there are zero wrong results,
zero unexpected errors, resident memory grew less than 5 % after warm-up, and no device bytes or
instances are live at the end. Prints the figures as a Markdown table row.

With --attacker the server runs on the fake GPU (tests/device/libfake_cuda.so, where an illegal
address is process-fatal as cuda.h documents) with a second tenant, "mallory", whose clients cycle
through what ends a tenant worker: a device fault (device_fault), a memory bomb over its
worker_memory (worker_lost), a kernel that never ends (deadline) and a trap mid-launch. The load
tenant must still see zero wrong results; at the end no worker process, worker TMPDIR or server
descriptor may be left beyond what the run started with. Resident memory is then that of the server
and the load tenant's worker: mallory's is filled to its worker_memory and ended again and again.

With --soak (the CPU device) the run alternates quiet phases and phases where "mallory" cycles
through what used to take a node down (docs/reliability.md): a module declaring 20 M locals, PTX
declaring 200,000 registers launched in CTAs of 1024 threads, 256 MiB of module variables, a grid
of 2^31-1 x 65535 x 65535 one-thread CTAs, a statement of a million '!', distinct deploys without
end (until max_versions), a file that is not wasm, and a memory bomb over worker_memory. The load
tenant must see zero wrong results and zero errors, and its p99 latency in the attacked phases
must stay within 2x of the quiet phases (interleaved in the same run).
"""
import hashlib
import argparse, http.client, json, math, os, random, re, signal, subprocess, sys, tempfile, threading, time

def children_of(pid):
    """The processes whose parent is pid, read from /proc (no subprocess: under load a pgrep per
    sample took seconds and left too few samples to judge)."""
    kids = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids += [int(c) for c in f.read().split()]
    except OSError:
        pass  # the server ended, or a kernel without /proc/PID/task/TID/children
    return kids

def worker_tenant(pid):
    """The tenant a worker process serves (its argv has --tenant=NAME), or None."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            for arg in f.read().split(b"\0"):
                if arg.startswith(b"--tenant="):
                    return arg[len(b"--tenant="):].decode()
    except OSError:
        pass
    return None

def rss_kib(pid, leave_out=()):
    """Resident memory of the server and of its tenant workers (its children), but those of the
    tenants in leave_out: a worker that a memory bomb fills up to its worker_memory and that is
    ended again and again swings by that much from sample to sample (its limit is its own test)."""
    total = 0
    for p in [pid] + [c for c in children_of(pid) if worker_tenant(c) not in leave_out]:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass  # a worker that just ended
    return total

def checksum(data):
    s = 0
    for b in data:
        s = (s * 31 + b) & 0xFFFFFFFF
    return s

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gpuwasm")
    ap.add_argument("build")
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--warmup", type=float, default=15)
    ap.add_argument("--trace", action="store_true", help="print resident memory every 10 s")
    ap.add_argument("--max-growth", type=float, default=5,
                    help="allowed resident-memory growth after warm-up, %%; inf: not judged (sanitizer builds, "
                         "where the allocator's quarantine grows by design and LeakSanitizer judges leaks)")
    ap.add_argument("--attacker", action="store_true", help="a second tenant ends its worker again and again")
    ap.add_argument("--soak", action="store_true", help="a second tenant cycles through hostile inputs, in alternate phases")
    ap.add_argument("--max-p99-ratio", type=float, default=2, help="--soak: allowed p99 of attacked over quiet phases")
    args = ap.parse_args()
    hostile = args.attacker or args.soak
    b = args.build
    tmp = tempfile.mkdtemp(prefix="gpuwasm-load-")
    cfg = os.path.join(tmp, "config.toml")
    load_token, mallory_token = "load-token-0123456789", "mallory-token-0123456789"
    sha = lambda t: "sha256:" + hashlib.sha256(t.encode()).hexdigest()
    with open(cfg, "w") as f:
        f.write(f'[runtime]\nstore = "{tmp}/store"\nrunaway_grace = "300ms"\n[server]\nlisten = "127.0.0.1:0"\n'
                f'[[tenants]]\nname = "load"\nconcurrent_invocations = {args.clients * 2}\nmax_deadline = "10s"\n')
        if hostile:
            f.write(f'tokens = ["{sha(load_token)}"]\n'
                    f'[[tenants]]\nname = "mallory"\ntokens = ["{sha(mallory_token)}"]\nconcurrent_invocations = 16\n'
                    f'max_deadline = "10s"\nworker_memory = "192MiB"\n')
        if args.soak:
            f.write('device_bytes = "256MiB"\nmax_versions = 40\n')
    cmd = [args.gpuwasm, "serve", "--config", cfg, "--no-gpm"]
    server_env = dict(os.environ)
    if args.attacker:
        cmd += ["--device", "cuda:0"]
        server_env["GPUWASM_CUDA_LIBRARY"] = f"{b}/tests/device/libfake_cuda.so"
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=server_env)
    line = server.stdout.readline()
    port = int(re.search(r"127\.0\.0\.1:(\d+)", line).group(1))
    env = dict(os.environ, GPUWASM_SERVER=f"http://127.0.0.1:{port}")
    if hostile:
        env["GPUWASM_TOKEN"] = load_token
    deploys = [("hello", f"{b}/examples/hello/hello.wasm", None),
               ("saxpy", f"{b}/examples/saxpy/saxpy.wasm", None),
               ("echo", f"{b}/tests/runtime/modules/lifecycle.wasm", "echo"),
               ("fault", f"{b}/tests/runtime/modules/lifecycle.wasm", "fault"),
               ("trap", f"{b}/tests/runtime/modules/lifecycle.wasm", "trap_mid_launch"),
               ("spin", f"{b}/tests/runtime/modules/lifecycle.wasm", "spin_holding")]
    for name, path, entry in deploys:
        cmd = [args.gpuwasm, "deploy", path, "--name", name] + (["--entry", entry] if entry else [])
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    attacks = [("fault", "fault"), ("bomb", "fill_holding"), ("forever", "never_ending_kernel"), ("trap", "trap_mid_launch")]
    if args.soak:
        attacks = [("bomb", "fill_holding"), ("ptx", "launch_input")]
    if hostile:
        for name, entry in attacks:
            cmd = [args.gpuwasm, "deploy", f"{b}/tests/runtime/modules/lifecycle.wasm", "--name", name, "--entry", entry]
            subprocess.run(cmd, env=dict(env, GPUWASM_TOKEN=mallory_token), check=True, stdout=subprocess.DEVNULL)
    fds_at_start = len(os.listdir(f"/proc/{server.pid}/fd"))

    lock = threading.Lock()
    stats = {"requests": 0, "wrong": 0, "errors": 0, "by": {}}
    problems = []
    stop = time.monotonic() + args.seconds

    def check(name, status, headers, body, sent):
        st = headers.get("X-Gpuwasm-Status")
        if name == "hello":
            want = f"hello from a gpuwasm guest: {len(sent)} input bytes, checksum {checksum(sent):08x}\n".encode()
            return status == 200 and body == want
        if name == "saxpy":
            return status == 200 and b" OK" in body
        if name == "echo":
            return status == 200 and body == sent
        if name == "fault" and args.attacker:  # on the fake GPU a fault is process-fatal
            return status == 500 and st == "device_fault"
        if name == "fault":
            return status == 200 and st == "exit_error" and headers.get("X-Gpuwasm-Exit-Status") == "3"
        if name == "trap":
            return status == 200 and st == "trap"
        if name == "spin":
            return status == 504 and st == "deadline"
        return False

    weights = [("hello", 30), ("echo", 30), ("saxpy", 20), ("fault", 8), ("trap", 7), ("spin", 5)]
    if args.soak:
        # Latency is the figure: only the guests that answer at once (a spinner waits for its deadline).
        weights = [(n, w) for n, w in weights if n in ("hello", "echo", "saxpy")]
    if args.attacker:
        # On the fake GPU the load tenant's own faults and runaway kernels cost its own running instances
        # their GPU state (as on a GPU): here only mallory does such things.
        weights = [(n, w) for n, w in weights if n not in ("fault", "trap")]
    names = [n for n, w in weights for _ in range(w)]

    auth = {"Authorization": f"Bearer {load_token}"} if hostile else {}
    attack_stats = {}
    # --soak: phases of equal length, quiet and attacked in turn; latencies by phase.
    phases = 4
    started_at = [0.0]
    def phase_attacked():
        return int((time.monotonic() - started_at[0]) / (args.seconds / phases)) % 2 == 1
    latencies = {False: [], True: []}

    def leb(n):
        out = bytearray()
        while True:
            b = n & 0x7F
            n >>= 7
            out.append(b | 0x80 if n else b)
            if not n:
                return bytes(out)
    def section(i, body):
        return bytes([i]) + leb(len(body)) + body
    def module(export):  # () -> () exported as _start and as `export`
        e = export.encode()
        exports = leb(2) + leb(6) + b"_start\0" + leb(0) + leb(len(e)) + e + b"\0" + leb(0)
        return (b"\0asm\1\0\0\0" + section(1, leb(1) + b"\x60\0\0") + section(3, leb(1) + leb(0)) + section(7, exports)
                + section(10, leb(1) + leb(2) + leb(0) + b"\x0b"))
    def locals_bomb():  # 54 bytes: one function declaring 20 M locals
        body = leb(1) + leb(20_000_000) + b"\x7f\x0b"
        return (b"\0asm\1\0\0\0" + section(1, leb(1) + b"\x60\0\0") + section(3, leb(1) + leb(0))
                + section(7, leb(1) + leb(6) + b"_start\0" + leb(0)) + section(10, leb(1) + leb(len(body)) + body))
    ptx_head = ".version 8.0\n.target sm_80\n.address_size 64\n"
    def launch_input(grid, block, decls, body):
        ptx = ptx_head + decls + ".visible .entry k(.param .u64 out)\n{\n" + body + "  ret;\n}\n"
        return b"".join(v.to_bytes(4, "little") for v in grid + block) + ptx.encode()
    soak_attacks = [
        ("regs", "launch", launch_input((4, 1, 1), (1024, 1, 1), "", "  .reg .b64 %rd<200000>;\n  ld.param.u64 %rd1, [out];\n")),
        ("globals", "launch", launch_input((1, 1, 1), (1, 1, 1), ".global .align 8 .b8 big[268435456];\n", "")),
        ("tiny_blocks", "launch", launch_input((2147483647, 65535, 65535), (1, 1, 1), "", "")),
        ("bangs", "launch", launch_input((1, 1, 1), (1, 1, 1), "", "  .reg .pred %p;\n  not.pred %p, " + "!" * 500_000 + "%p;\n")),
        ("locals", "deploy", locals_bomb()),
        ("junk", "deploy", b"#!/bin/sh\necho not a module\n"),
        ("flood", "deploy", None),
        ("bomb", "invoke", (400 << 20).to_bytes(8, "little")),
    ]

    def attack(conn, name, target, body, headers, with_output=False):
        # One of mallory's requests, counted by its status (and, with_output, a 200's body) or by
        # the exception that dropped it; returns the connection to go on with.
        try:
            conn.request("POST", target, body=body, headers=headers)
            r = conn.getresponse()
            out = r.read()
            key = f"{name}:{r.headers.get('X-Gpuwasm-Status') or r.status}"
            if with_output and r.status == 200:
                key += ":" + out.decode(errors="replace")
        except Exception as e:
            key = f"{name}:{e.__class__.__name__}"
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        with lock:
            attack_stats[key] = attack_stats.get(key, 0) + 1
        return conn

    def soak_attacker(seed):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        n = 0
        while time.monotonic() < stop:
            if not phase_attacked():
                time.sleep(0.05)
                continue
            # In turn (from a per-client start): every kind is tried however short the run.
            name, kind, body = soak_attacks[(seed + n) % len(soak_attacks)]
            n += 1
            h = {"Authorization": f"Bearer {mallory_token}"}
            if kind == "launch":
                target = "/v1/functions/ptx/invoke?timeout=" + ("300ms" if name == "tiny_blocks" else "5s")
            elif kind == "invoke":
                target = f"/v1/functions/{name}/invoke?timeout=5s"
            else:
                if body is None:
                    body = module(f"f{seed}_{n}")
                target = f"/v1/functions?name={name}"
                h["Content-Type"] = "application/wasm"
            conn = attack(conn, name, target, body, h, with_output=kind == "launch")

    def attacker(seed):
        # Mallory's clients: every answer is counted by status; none may hang or drop.
        rng = random.Random(seed)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        while time.monotonic() < stop:
            name, _ = rng.choice(attacks)
            body = (400 << 20).to_bytes(8, "little") if name == "bomb" else b""
            target = f"/v1/functions/{name}/invoke?timeout=" + ("300ms" if name == "forever" else "5s")
            conn = attack(conn, name, target, body, {"Authorization": f"Bearer {mallory_token}"})

    def client(seed):
        rng = random.Random(seed)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        while time.monotonic() < stop:
            name = rng.choice(names)
            sent = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 2048))) if name in ("hello", "echo") else b""
            target = f"/v1/functions/{name}/invoke" + ("?timeout=150ms" if name == "spin" else "")
            try:
                attacked = phase_attacked()
                t0 = time.monotonic()
                conn.request("POST", target, body=sent, headers=auth)
                r = conn.getresponse()
                body = r.read()
                took = time.monotonic() - t0
                ok = check(name, r.status, r.headers, body, sent)
                with lock:
                    if attacked == phase_attacked():  # not across a phase change
                        latencies[attacked].append(took)
                    stats["requests"] += 1
                    stats["by"][name] = stats["by"].get(name, 0) + 1
                    if not ok:
                        stats["wrong"] += 1
                        if len(problems) < 5:
                            problems.append(f"{name}: HTTP {r.status} {dict(r.headers)} {body[:200]!r}")
            except Exception as e:  # a dropped connection or a timeout is an unexpected error
                with lock:
                    stats["errors"] += 1
                    if len(problems) < 5:
                        problems.append(f"{name}: {e!r}")
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
    if args.attacker:
        threads += [threading.Thread(target=attacker, args=(1000 + i,)) for i in range(2)]
    if args.soak:
        threads += [threading.Thread(target=soak_attacker, args=(1000 + i,)) for i in range(2)]
    started = time.monotonic()
    started_at[0] = started
    for t in threads:
        t.start()
    samples = []  # taken while the clients run, every half second on its own schedule
    next_sample = started
    while any(t.is_alive() for t in threads):
        samples.append((time.monotonic() - started, rss_kib(server.pid, ("mallory",) if args.attacker else ())))
        next_sample += 0.5
        time.sleep(max(0.0, next_sample - time.monotonic()))
    samples = [(t, kib) for t, kib in samples if t <= args.seconds]
    if args.trace:
        print("resident MiB every 10 s:", " ".join(f"{kib / 1024:.0f}" for t, kib in samples[::20]))
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started

    time.sleep(0.5)  # workers that ended are reaped by the supervisor's next round
    workers = subprocess.run(["pgrep", "-P", str(server.pid)], capture_output=True, text=True).stdout.split()
    fds_at_end = len(os.listdir(f"/proc/{server.pid}/fd"))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/metrics")
    metrics = conn.getresponse().read().decode()
    def metric(name):
        m = re.search(rf'^{name}{{tenant="load"}} (\S+)$', metrics, re.M)
        return float(m.group(1)) if m else float("nan")
    live_bytes = metric("gpuwasm_device_context_bytes")
    running = metric("gpuwasm_running_instances")
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=30)
    left = [d for d in os.listdir(tempfile.gettempdir()) if d.startswith(f"gpuwasm-worker-{server.pid}-")]
    orphans = subprocess.run(["pgrep", "-f", f"__worker {server.pid} "], capture_output=True, text=True).stdout.split()

    # Resident memory swings with the requests in flight (by about +-10 % here, over tens of
    # seconds): compare the medians of the first and the second half after warm-up. A leak grows
    # steadily and shows up as a higher second half.
    after = [kib for t, kib in samples if t >= args.warmup]
    half = len(after) // 2
    median = lambda xs: sorted(xs)[len(xs) // 2] if xs else 0
    warm, final = median(after[:half]), median(after[half:])
    peak = max(after) if after else 0
    growth = (final - warm) / warm * 100 if warm and half else float("nan")
    if math.isinf(args.max_growth):
        growth_ok = True
    else:
        growth_ok = growth < args.max_growth
        if half < 2:
            problems.append(f"only {len(after)} resident-memory samples after warm-up: too few to judge growth")
    print(f"requests {stats['requests']} in {elapsed:.0f}s ({stats['requests'] / elapsed:.0f}/s) with {args.clients} clients; "
          f"by function {stats['by']}")
    print(f"wrong results {stats['wrong']}, unexpected errors {stats['errors']}")
    print(f"resident memory after warm-up{' (server and load tenant)' if args.attacker else ''}, median of each half: "
          f"{warm / 1024:.1f} MiB -> {final / 1024:.1f} MiB "
          f"(peak {peak / 1024:.1f}), "
          f"growth {growth:+.1f} %")
    print(f"at the end: device bytes live {live_bytes:.0f}, running instances {running:.0f}")
    leaks_ok = True
    if args.soak:
        def pct(xs, q):
            xs = sorted(xs)
            return xs[min(len(xs) - 1, int(len(xs) * q))] * 1000 if xs else float("nan")
        q50, q99 = pct(latencies[False], 0.5), pct(latencies[False], 0.99)
        a50, a99 = pct(latencies[True], 0.5), pct(latencies[True], 0.99)
        print(f"attacker (mallory) answers: {dict(sorted(attack_stats.items()))}")
        print(f"load tenant latency, quiet phases: p50 {q50:.1f} ms p99 {q99:.1f} ms ({len(latencies[False])} requests); "
              f"attacked phases: p50 {a50:.1f} ms p99 {a99:.1f} ms ({len(latencies[True])} requests); "
              f"p99 ratio {a99 / q99:.2f}x (allowed {args.max_p99_ratio:g})")
        # An answer is counted by its status (lower case) or HTTP code; a dropped connection or a
        # timeout by its exception's class name (upper case).
        dropped = sum(n for k, n in attack_stats.items() if k.split(":")[1][:1].isupper())
        answered = sum(attack_stats.values()) - dropped
        print(f"attacks answered {answered}, dropped or timed out {dropped}")
        # Every kind of attack was tried and answered.
        tried = {k.split(":")[0] for k in attack_stats}
        leaks_ok = a99 <= args.max_p99_ratio * q99 and dropped == 0 and len(tried) == len(soak_attacks)
    if args.attacker:
        print(f"attacker (mallory) answers: {dict(sorted(attack_stats.items()))}")
        print(f"worker processes at the end of the run: {len(workers)} (load's, mallory's); server descriptors "
              f"{fds_at_start} -> {fds_at_end}; after SIGTERM: {len(orphans)} worker processes, {len(left)} worker TMPDIRs")
        # At most one worker per tenant, each holding its socket and shared memory (two descriptors).
        leaks_ok = len(workers) <= 2 and fds_at_end <= fds_at_start + 4 and not orphans and not left
        lost = sum(n for k, n in attack_stats.items() if k.endswith(("device_fault", "worker_lost")))
        leaks_ok = leaks_ok and lost > 0
    print(f"| {args.clients} | {elapsed:.0f} s | {stats['requests']} | {stats['wrong']} | {stats['errors']} | "
          f"{warm / 1024:.1f} -> {final / 1024:.1f} MiB ({growth:+.1f} %) | {live_bytes:.0f} |")
    for p in problems:
        print("problem:", p)
    ok = (stats["wrong"] == 0 and stats["errors"] == 0 and growth_ok and live_bytes == 0 and running == 0
          and leaks_ok)
    print("load test:", "PASSED" if ok else "FAILED")
    subprocess.run(["rm", "-rf", tmp])
    sys.exit(0 if ok else 1)

main()
