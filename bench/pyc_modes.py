#!/usr/bin/env python3
"""Which PEP 552 invalidation mode envbox's .pyc files use, measured: the modules of real wheels
(Debian's pip, setuptools and wheel) unpacked into a read-only tree and compiled once per mode
(no .pyc at all, timestamp, checked-hash, unchecked-hash), then every module imported in a fresh
interpreter, the modes alternated round by round; and the same trees copied with `cp -r` (new
mtimes, as a `docker COPY` or a copied venv gets them), imported read-only again.

    bench/pyc_modes.py [--python /usr/bin/python3] [--rounds 9] [--work DIR]

Prints the median import time per mode (whole process, `python -I -S -B -c ...`), and with -v the
rounds. The figure envbox's choice rests on is in bench/README.md ("Bytecode").
"""
import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import time
import zipfile

MODES = ["none", "timestamp", "checked-hash", "unchecked-hash"]

IMPORT_ALL = r"""
import importlib, os, sys
root = sys.argv[1]
sys.path.insert(0, root)
ok = 0
for d, dirs, files in os.walk(root):
    dirs[:] = sorted(x for x in dirs if x != "__pycache__" and not x.endswith(".dist-info"))
    for f in sorted(files):
        if not f.endswith(".py") or f.startswith("_distutils_hack"):
            continue
        rel = os.path.relpath(os.path.join(d, f), root)[:-3].replace(os.sep, ".")
        if rel.endswith(".__init__"):
            rel = rel[: -len(".__init__")]
        if "-" in rel:
            continue
        try:
            importlib.import_module(rel)
            ok += 1
        except BaseException:
            pass
print(ok)
"""


def lock_down(root, writable):
    """Directories 0555 (or back to 0755): Python cannot write __pycache__ into a read-only tree."""
    for d, dirs, _ in os.walk(root):
        os.chmod(d, 0o755 if writable else 0o555)


def build(work, python, mode, wheels):
    root = os.path.join(work, mode)
    if os.path.exists(root):
        lock_down(root, True)
        shutil.rmtree(root)
    os.makedirs(root)
    for w in wheels:
        zipfile.ZipFile(w).extractall(root)
    if mode != "none":
        subprocess.run([python, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", mode, root],
                       check=True, stdout=subprocess.DEVNULL)
    lock_down(root, False)
    return root


def timed_import(python, root):
    t = time.perf_counter()
    # -B: the tree stays as built (root writes into a 0555 directory; Python must not fill the
    # tree without .pyc files, or rewrite the copied timestamp ones, between rounds).
    r = subprocess.run([python, "-I", "-S", "-B", "-c", IMPORT_ALL, root], capture_output=True, text=True)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"import in {root} failed: {r.stderr[-800:]}")
    return dt, int(r.stdout.strip() or 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--work", default="/tmp/envbox-pyc-modes")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    wheels = sorted(glob.glob("/usr/share/python-wheels/*.whl"))
    if not wheels:
        raise SystemExit("no wheels in /usr/share/python-wheels (apt-get install python3-pip-whl)")
    os.makedirs(args.work, exist_ok=True)
    trees = {m: build(args.work, args.python, m, wheels) for m in MODES}
    copies = {}
    for m in ("timestamp", "unchecked-hash"):
        dst = os.path.join(args.work, m + "-copied")
        if os.path.exists(dst):
            lock_down(dst, True)
            shutil.rmtree(dst)
        time.sleep(1.1)  # a copy's mtimes differ from the compile's
        subprocess.run(["cp", "-r", trees[m], dst], check=True)
        lock_down(dst, False)
        copies[m + " (copied)"] = dst
    runs = dict(trees, **copies)
    times = {k: [] for k in runs}
    modules = {}
    for rnd in range(args.rounds + 1):
        for k, root in runs.items():
            dt, n = timed_import(args.python, root)
            modules[k] = n
            if rnd:  # the first round warms the page cache
                times[k].append(dt)
    pyv = subprocess.run([args.python, "-c", "import sys; print(sys.version.split()[0])"],
                         capture_output=True, text=True).stdout.strip()
    print(f"python {pyv}; {', '.join(os.path.basename(w) for w in wheels)}; "
          f"{modules['none']} modules imported per run; median of {args.rounds} rounds")
    base = statistics.median(times["unchecked-hash"])
    for k, v in times.items():
        med = statistics.median(v)
        print(f"  {k:28s} {med * 1000:7.1f} ms  ({med / base:4.2f}x unchecked-hash)"
              + (f"  rounds: {' '.join(f'{x * 1000:.0f}' for x in v)}" if args.verbose else ""))
    for root in list(trees.values()) + list(copies.values()):
        lock_down(root, True)


if __name__ == "__main__":
    main()
