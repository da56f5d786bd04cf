#!/usr/bin/env python3
"""guide_check.py GUIDE REPO BUILD: every code block of the guest guide is checked (#24).

Each fenced block must follow a marker comment:
  <!-- guide-check: run -->                 shell commands, run here as written, with the install
                                            prefix (~/.local, $HOME/.local) in a temporary directory
                                            and the build tree for `build`; a `# text` comment after
                                            a command is output it must print
  <!-- guide-check: excerpt of F[, G] -->   every line (its trailing comment aside) is a line of one
                                            of the files: a path in the repository, or new:PATH, a
                                            file of the project `gpuwasm new my_guest` writes
  <!-- guide-check: output of CMD -->       every line is a line CMD prints (stdout or stderr; it may
                                            fail), run in the repository with `build/` the build tree
  <!-- guide-check: not run: WHY -->        said why (a placeholder such as app.wasm)
A block without a marker, or an excerpt line that is in none of its files, fails the check.
"""
import os, re, subprocess, sys, tempfile

guide, repo, build = (os.path.abspath(a) for a in sys.argv[1:4])
text = open(guide).read().split("\n")
tmp = tempfile.mkdtemp(prefix="guide-check-")
prefix = os.path.join(tmp, "prefix")
env = dict(os.environ, PATH=os.path.join(prefix, "bin") + os.pathsep + os.environ["PATH"])
failures = []
installed = False

def install():
    global installed
    if not installed:
        subprocess.run(["cmake", "--install", build, "--prefix", prefix], check=True, capture_output=True)
        subprocess.run(["gpuwasm", "new", "my_guest"], cwd=os.path.join(tmp), env=env, check=True, capture_output=True)
        installed = True

def code(line):
    """A line without its trailing comment, whitespace collapsed."""
    line = re.sub(r"\s+(//|#|/\*).*$", "", line.rstrip())
    line = re.sub(r"^\s*(//|#).*$", "", line)
    return " ".join(line.split())

blocks = []
i = 0
while i < len(text):
    if text[i].startswith("```") and len(text[i]) > 3:
        start = i
        j = i + 1
        while not text[j].startswith("```"):
            j += 1
        marker = next((text[k] for k in range(start - 1, max(start - 3, -1), -1) if "guide-check:" in text[k]), None)
        blocks.append((start + 1, text[start][3:], text[start + 1:j], marker))
        i = j + 1
    else:
        i += 1

for line_no, lang, lines, marker in blocks:
    where = f"{guide}:{line_no} ({lang})"
    if marker is None:
        failures.append(f"{where}: no guide-check marker")
        continue
    what = marker.split("guide-check:", 1)[1].split("-->")[0].strip()
    if what == "run":
        install()
        for cmd in lines:
            if not cmd.strip():
                continue
            expected = None
            m = re.match(r"^(.*?)\s+#\s*(.*)$", cmd)
            command = m.group(1) if m else cmd
            if m and command.startswith("gpuwasm run"):
                expected = m.group(2)
            command = command.replace("$HOME/.local", prefix).replace("~/.local", prefix)
            command = re.sub(r"^cmake --install build ", f"cmake --install {build} ", command)
            if command.startswith("gpuwasm new "):
                continue  # made by install(): the same command, in the same place
            r = subprocess.run(command, shell=True, cwd=tmp, env=env, capture_output=True, text=True)
            if r.returncode != 0:
                failures.append(f"{where}: `{command}` failed ({r.returncode}): {r.stdout[-400:]}{r.stderr[-400:]}")
                break
            if expected and expected not in r.stdout:
                failures.append(f"{where}: `{command}` did not print '{expected}': {r.stdout[-400:]}")
        print(f"ran:      {where}")
    elif what.startswith("excerpt of "):
        install()
        sources = []
        for f in what[len("excerpt of "):].split(","):
            f = f.strip()
            path = os.path.join(tmp, "my_guest", f[4:]) if f.startswith("new:") else os.path.join(repo, f)
            sources += [code(l) for l in open(path).read().split("\n")]
        missing = [l for l in lines if code(l) and code(l) not in sources]
        for l in missing:
            failures.append(f"{where}: not a line of {what[len('excerpt of '):]}: {l.strip()}")
        print(f"excerpt:  {where}")
    elif what.startswith("output of "):
        install()
        command = re.sub(r"(^|\s)build/", lambda m: m.group(1) + build + "/", what[len("output of "):])
        r = subprocess.run(command, shell=True, cwd=repo, env=env, capture_output=True, text=True)
        printed = set((r.stdout + "\n" + r.stderr).split("\n"))
        for l in lines:
            if l.strip() and l not in printed:
                failures.append(f"{where}: `{command}` did not print the line '{l}': {r.stdout[-400:]}{r.stderr[-400:]}")
        print(f"output:   {where}")
    elif what.startswith("not run:") and len(what) > len("not run:") + 3:
        print(f"not run:  {where}: {what[len('not run:'):].strip()}")
    else:
        failures.append(f"{where}: unknown guide-check marker '{what}'")

subprocess.run(["rm", "-rf", tmp])
for f in failures:
    print("FAIL", f)
print(f"{len(blocks)} blocks, {len(failures)} failures")
sys.exit(1 if failures else 0)
