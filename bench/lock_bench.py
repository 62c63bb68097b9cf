#!/usr/bin/env python3
"""Locking the PyTorch-shaped world: cold (empty cache, every page and metadata file from the
server) and warm re-lock (cache valid, nothing changed), against a real HTTP server on
127.0.0.1 (tests/lock/indexworld.py) with about 200 packages in the resolution.

    bench/lock_bench.py [--envbox build/envbox] [--synthetic 180] [--repeat 5]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lock"))
import indexworld  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--envbox", default=os.path.join(HERE, "..", "build", "envbox"))
    ap.add_argument("--synthetic", type=int, default=180)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    envbox = os.path.abspath(args.envbox)
    tmp = tempfile.mkdtemp(prefix="envbox-lockbench-")
    try:
        extra, roots = indexworld.synthetic(args.synthetic)
        indexworld.build(os.path.join(tmp, "www"), extra_pypi=extra)
        server = indexworld.Server(os.path.join(tmp, "www"))
        project = os.path.join(tmp, "proj")
        os.makedirs(os.path.join(project, "manifests"))
        reqs = ", ".join(f'"{r}"' for r in ["torch==2.11.0+cu128", "transformers>=4.56", "datasets", "wandb"] + roots)
        with open(os.path.join(project, "manifests", "train.toml"), "w") as f:
            f.write(f"""[environment]
python = "{sys.version_info[0]}.{sys.version_info[1]}"
platform = "manylinux_2_28_x86_64"
requirements = [{reqs}]
[[index]]
name = "pytorch-cu128"
url = "{server.url}/pytorch-cu128"
explicit = true
[[index]]
name = "pypi"
url = "{server.url}/pypi"
[sources]
torch = "pytorch-cu128"
triton = "pytorch-cu128"
""")

        def lock(home, *extra_args):
            start = time.perf_counter()
            r = subprocess.run([envbox, "--home", home, "--project", project, "--json", "lock", "train", *extra_args],
                               capture_output=True, text=True)
            wall = time.perf_counter() - start
            if r.returncode != 0:
                sys.exit(r.stderr)
            return wall, json.loads(r.stdout)

        cold = []
        for i in range(max(1, args.repeat // 2)):
            home = os.path.join(tmp, f"home-{i}")
            os.remove(os.path.join(project, "manifests", "pylock.train.toml")) if os.path.exists(
                os.path.join(project, "manifests", "pylock.train.toml")) else None
            cold.append(lock(home))
        uptodate = [lock(os.path.join(tmp, "home-0")) for _ in range(args.repeat)]
        warm = [lock(os.path.join(tmp, "home-0"), "--upgrade") for _ in range(args.repeat)]
        c = cold[0][1]
        print(f"packages locked      {c['packages']}")
        print(f"cold lock            {statistics.median(w for w, _ in cold) * 1000:8.0f} ms   "
              f"{c['requests']} requests, up to {c['peak_in_flight']} in flight")
        print(f"up-to-date lock      {statistics.median(w for w, _ in uptodate) * 1000:8.1f} ms   "
              f"{uptodate[0][1]['requests']} requests (the lock matches the manifest)")
        w = warm[0][1]
        print(f"warm re-resolve      {statistics.median(x for x, _ in warm) * 1000:8.0f} ms   "
              f"(--upgrade) {w['requests']} requests ({w['cache_hits']} answered 304 or from the cache), "
              f"up to {w['peak_in_flight']} in flight")
        print(f"server requests      {server.requests}")
        server.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
