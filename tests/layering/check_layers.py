#!/usr/bin/env python3
"""check_layers.py SRC: no source file includes a layer above its own (docs/development.md, Layout).

The layers, lowest first. A file of src/<layer>/ may include its own layer and the ones before it;
inside src/device/, the CPU device (cpu/) and the GPU (cuda/) never include each other.
"""
import os, re, sys

LAYERS = ["common", "ptx", "device", "wasm", "host", "nvml", "telemetry", "store", "runtime", "server", "cli"]
SEPARATE = [("device/cpu/", "device/cuda/"), ("device/cuda/", "device/cpu/")]

src = os.path.abspath(sys.argv[1])
rank = {name: i for i, name in enumerate(LAYERS)}
problems, files = [], 0
for layer in sorted(os.listdir(src)):
    if not os.path.isdir(os.path.join(src, layer)):
        continue
    if layer not in rank:
        problems.append(f"src/{layer}/ is in no layer: add it to LAYERS in {__file__} and to docs/development.md")
        continue
    for root, _, names in os.walk(os.path.join(src, layer)):
        for name in names:
            if not name.endswith((".h", ".cc")):
                continue
            files += 1
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src)
            for no, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                m = re.match(r'\s*#\s*include\s+"([a-z_]+)/([^"]*)"', line)
                if not m or m.group(1) not in rank:
                    continue
                target = m.group(1) + "/" + m.group(2)
                if rank[m.group(1)] > rank[layer]:
                    problems.append(f"src/{rel}:{no}: {layer} includes {target}, a layer above it")
                for mine, other in SEPARATE:
                    if rel.startswith(mine) and target.startswith(other):
                        problems.append(f"src/{rel}:{no}: {mine} includes {target}")
for p in problems:
    print("FAIL", p)
print(f"{files} files, {len(problems)} upward includes")
sys.exit(1 if problems or files == 0 else 0)
