#!/usr/bin/env python3
"""The deployment files in deploy/ are consistent and valid.

    manifests_test.py GPUWASM REPO_ROOT

deploy/k8s/: every file parses as YAML; every document is a Kubernetes object of a known
apiVersion/kind with a valid name; the kustomization lists every manifest; the Deployment's
selector, probes, ports, GPU limit, Secret and ConfigMap references, volumes and Prometheus
annotations line up with the other objects; the termination grace outlasts the configured
shutdown grace; and the ConfigMap's gpuwasm.toml passes `gpuwasm config check` (the real parser).
deploy/Dockerfile: Debian 12 stages, and the runtime stage's packages provide every shared
library the gpuwasm binary links (checked against this Debian 12 machine's package database).
"""
import os, re, subprocess, sys, tempfile
import yaml

KNOWN = {("v1", "Namespace"), ("v1", "ConfigMap"), ("v1", "Secret"), ("v1", "Service"),
         ("v1", "PersistentVolumeClaim"), ("apps/v1", "Deployment"), ("policy/v1", "PodDisruptionBudget"),
         ("kustomize.config.k8s.io/v1beta1", "Kustomization")}
DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
problems = []

def check(cond, what):
    if not cond:
        problems.append(what)
    return cond

def duration_s(text):
    m = re.fullmatch(r"(\d+)(ms|s|m)", text)
    return int(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60}[m.group(2)]

def manifests(gpuwasm, root):
    k8s = os.path.join(root, "deploy", "k8s")
    files = sorted(f for f in os.listdir(k8s) if f.endswith(".yaml"))
    objs = {}
    kustomization = None
    for f in files:
        with open(os.path.join(k8s, f)) as fh:
            docs = [d for d in yaml.safe_load_all(fh) if d is not None]
        check(len(docs) >= 1, f"{f}: no document")
        for d in docs:
            kind, api = d.get("kind"), d.get("apiVersion")
            check((api, kind) in KNOWN, f"{f}: unknown apiVersion/kind {api}/{kind}")
            if kind == "Kustomization":
                kustomization = (f, d)
                continue
            name = d.get("metadata", {}).get("name", "")
            check(isinstance(name, str) and DNS1123.match(name) and len(name) <= 63, f"{f}: bad metadata.name {name!r}")
            objs[(kind, name)] = d
    check(kustomization is not None, "no kustomization.yaml")
    if kustomization:
        listed = sorted(kustomization[1].get("resources", []))
        others = sorted(f for f in files if f != kustomization[0])
        check(listed == others, f"kustomization resources {listed} != manifests {others}")

    deps = [d for (k, _), d in objs.items() if k == "Deployment"]
    if not check(len(deps) == 1, "expected one Deployment"):
        return
    dep = deps[0]
    spec = dep["spec"]
    tmpl = spec["template"]
    pod_labels = tmpl["metadata"]["labels"]
    sel = spec["selector"]["matchLabels"]
    check(all(pod_labels.get(k) == v for k, v in sel.items()), "Deployment selector does not match its pod labels")
    ann = tmpl["metadata"].get("annotations", {})
    check(ann.get("prometheus.io/scrape") == "true" and ann.get("prometheus.io/path") == "/metrics",
          "pod template lacks Prometheus scrape annotations")
    pod = tmpl["spec"]
    containers = pod["containers"]
    check(len(containers) == 1, "expected one container")
    c = containers[0]
    check(bool(c.get("image")), "container without image")
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    check(str(ann.get("prometheus.io/port")) in {str(v) for v in ports.values()}, "Prometheus port is not a container port")
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        p = c.get(probe, {}).get("httpGet", {})
        check(p.get("path") == path, f"{probe} does not GET {path}")
        check(p.get("port") in ports or p.get("port") in ports.values(), f"{probe} port {p.get('port')} is not a container port")
    gpus = c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu")
    check(isinstance(gpus, int) and gpus >= 1, "no nvidia.com/gpu limit")
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for m in c.get("volumeMounts", []):
        check(m["name"] in volumes, f"volumeMount {m['name']} has no volume")
    config_text = None
    for v in volumes.values():
        if "configMap" in v:
            cm = objs.get(("ConfigMap", v["configMap"]["name"]))
            if check(cm is not None, f"volume {v['name']}: no ConfigMap {v['configMap']['name']}"):
                config_text = cm["data"].get("gpuwasm.toml")
        if "persistentVolumeClaim" in v:
            check(("PersistentVolumeClaim", v["persistentVolumeClaim"]["claimName"]) in objs,
                  f"volume {v['name']}: no PersistentVolumeClaim")
    for e in c.get("env", []):
        ref = e.get("valueFrom", {}).get("secretKeyRef")
        if ref:
            s = objs.get(("Secret", ref["name"]))
            if check(s is not None, f"env {e['name']}: no Secret {ref['name']}"):
                keys = set(s.get("stringData", {})) | set(s.get("data", {}))
                check(ref["key"] in keys, f"env {e['name']}: Secret {ref['name']} has no key {ref['key']}")
    check(any(e.get("name") == "GPUWASM_DATABASE_URL" for e in c.get("env", [])), "no GPUWASM_DATABASE_URL")
    args = c.get("args", [])
    check(args[:1] == ["serve"], f"container args {args} do not run gpuwasm serve")
    config_path = args[args.index("--config") + 1] if "--config" in args else ""
    mounted = [m["mountPath"] for m in c.get("volumeMounts", []) if "configMap" in volumes.get(m["name"], {})]
    check(any(config_path.startswith(p.rstrip("/") + "/") for p in mounted), f"--config {config_path} is not in the ConfigMap mount")

    if check(config_text is not None, "no gpuwasm.toml in the ConfigMap"):
        with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
            f.write(config_text)
        out = subprocess.run([gpuwasm, "config", "check", f.name], capture_output=True, text=True)
        os.unlink(f.name)
        check(out.returncode == 0, f"gpuwasm config check refuses the ConfigMap: {out.stderr.strip()}")
        grace = re.search(r"^shutdown grace: (\d+) ms$", out.stdout, re.M)
        listen = re.search(r"^listen: (\S+)$", out.stdout, re.M)
        if check(grace is not None and listen is not None, f"config check output: {out.stdout!r}"):
            pre_stop = c.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
            pause = float(pre_stop[1]) if pre_stop[:1] == ["sleep"] else 0
            check(pod.get("terminationGracePeriodSeconds", 30) > int(grace.group(1)) / 1000 + pause,
                  "terminationGracePeriodSeconds does not outlast shutdown_grace plus the preStop pause")
            check(int(listen.group(1).rsplit(":", 1)[1]) in ports.values(), "the configured listen port is not the container port")
            check(not listen.group(1).startswith("127."), "the server listens on loopback only inside the pod")

    for (kind, name), o in objs.items():
        if kind == "Service":
            check(all(pod_labels.get(k) == v for k, v in o["spec"]["selector"].items()), f"Service {name} selects no gpuwasm pod")
            for p in o["spec"]["ports"]:
                check(p["targetPort"] in ports or p["targetPort"] in ports.values(), f"Service {name}: targetPort {p['targetPort']}")
        if kind == "PodDisruptionBudget":
            check(all(pod_labels.get(k) == v for k, v in o["spec"]["selector"]["matchLabels"].items()), f"PDB {name} selects no pod")
        if kind == "PersistentVolumeClaim":
            check("ReadWriteMany" in o["spec"]["accessModes"], f"PVC {name} is not ReadWriteMany (the store is shared)")
    print(f"manifests: {len(files)} files, {len(objs)} objects checked")

def installed_depends(pkg):
    out = subprocess.run(["dpkg-query", "-W", "-f=${Depends}, ${Pre-Depends}", pkg], capture_output=True, text=True)
    if out.returncode != 0:
        return None
    deps = set()
    for clause in out.stdout.split(","):
        for alt in clause.split("|"):
            name = alt.strip().split(" ")[0].split(":")[0]
            if name:
                deps.add(name)
    return deps

def closure(pkgs):
    seen, todo = set(), list(pkgs)
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        for d in installed_depends(p) or ():
            todo.append(d)
    return seen

def dockerfile(gpuwasm, root):
    text = open(os.path.join(root, "deploy", "Dockerfile")).read()
    stages = re.findall(r"^FROM\s+(\S+)", text, re.M)
    check(stages and all(s.startswith("debian:12") for s in stages), f"Dockerfile stages {stages} are not Debian 12")
    runtime = text[text.rfind("\nFROM "):]
    m = re.search(r"apt-get install -y --no-install-recommends ([^\\&\n]+)", runtime)
    if not check(m is not None, "runtime stage installs no packages"):
        return
    wanted = m.group(1).split()
    for p in wanted:
        check(installed_depends(p) is not None, f"runtime package {p} is not a Debian 12 package installed here to check")
    # What debian:12-slim has: the packages of priority required, and apt.
    base = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${Priority}\n"], capture_output=True, text=True).stdout
    base = {l.split()[0] for l in base.splitlines() if l.endswith(" required")} | {"apt"}
    have = closure(set(wanted) | base)
    libs = re.findall(r"=>\s+(\S+)", subprocess.run(["ldd", gpuwasm], capture_output=True, text=True).stdout)
    for lib in libs:
        real = os.path.realpath(lib)
        owner = subprocess.run(["dpkg", "-S", real], capture_output=True, text=True)
        if owner.returncode != 0:
            owner = subprocess.run(["dpkg", "-S", lib], capture_output=True, text=True)
        pkg = owner.stdout.split(":")[0].strip()
        check(pkg in have, f"{lib} (package {pkg or 'unknown'}) is not in the runtime image")
    check(re.search(r"^USER\s+(?!0|root)", runtime, re.M) is not None, "the runtime image runs as root")
    check("COPY --from=build /build/gpuwasm" in runtime, "the runtime stage does not copy the built binary")
    print(f"Dockerfile: {len(stages)} Debian 12 stages; runtime packages cover all {len(libs)} shared libraries")

def main():
    gpuwasm, root = sys.argv[1], sys.argv[2]
    manifests(gpuwasm, root)
    dockerfile(gpuwasm, root)
    for p in problems:
        print("problem:", p)
    print("deploy files:", "FAILED" if problems else "PASSED")
    return 1 if problems else 0

if __name__ == "__main__":
    sys.exit(main())
