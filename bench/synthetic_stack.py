#!/usr/bin/env python3
"""A torch-shaped stack of many modules for the fleet's pull figures on a machine without the
real one: N wheels (default 12), each the `.py` files of Debian's Python (/usr/lib/python3.11)
and its dist-packages under its own package name `synthN`, plus 20 MiB of random bytes (a
native library's share). Every module compiles, so each wheel has a bytecode layer of about
the real stack's per-file shape (~16 KB a .pyc). bench/README.md ("Fleet") quotes its figures.

usage: synthetic_stack.py OUT_DIR [--wheels N]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from wheelgen import Wheel  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--wheels", type=int, default=12)
    a = ap.parse_args()
    sources = []
    for root in ("/usr/lib/python3.11", "/usr/lib/python3/dist-packages"):
        for d, _, files in os.walk(root):
            for f in files:
                if f.endswith(".py"):
                    p = os.path.join(d, f)
                    with open(p, "rb") as fh:
                        sources.append((os.path.relpath(p, root), fh.read()))
    os.makedirs(a.out, exist_ok=True)
    for n in range(a.wheels):
        files = {f"synth{n}/{rel}": data for rel, data in sources}
        files[f"synth{n}/__init__.py"] = b""
        files[f"synth{n}/_native.bin"] = os.urandom(20 << 20)
        print(Wheel(f"synth{n}", "1.0", files=files).build(a.out))
    print(f"{len(sources)} modules a wheel", file=sys.stderr)


if __name__ == "__main__":
    main()
