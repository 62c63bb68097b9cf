#!/usr/bin/env python3
"""Locking the PyTorch-shaped world: cold (empty cache, every page and metadata file from the
server) and warm re-lock (cache valid, nothing changed), against a real HTTP server on
127.0.0.1 (tests/lock/indexworld.py) with about 200 packages in the resolution.

    bench/lock_bench.py [--envbox build/envbox] [--synthetic 180] [--repeat 5] [--two-targets]

--two-targets gives every x86_64 wheel of the world an aarch64 twin and measures the same
manifest locked for x86_64 alone and for `platforms = [x86_64, aarch64]`, cold and warm.
"""
import argparse
import copy
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



def write_manifest(project, url, reqs, platform_line):
    """manifests/train.toml of the benchmark: the cu128 torch family pinned to the PyTorch
    index, the rest from PyPI, for the target(s) `platform_line` names."""
    with open(os.path.join(project, "manifests", "train.toml"), "w") as f:
        f.write(f"""[environment]
python = "{sys.version_info[0]}.{sys.version_info[1]}"
{platform_line}
requirements = [{reqs}]
[[index]]
name = "pytorch-cu128"
url = "{url}/pytorch-cu128"
explicit = true
[[index]]
name = "pypi"
url = "{url}/pypi"
[sources]
torch = "pytorch-cu128"
triton = "pytorch-cu128"
""")

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--envbox", default=os.path.join(HERE, "..", "build", "envbox"))
    ap.add_argument("--synthetic", type=int, default=180)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--two-targets", action="store_true",
                    help="x86_64 alone against x86_64 + aarch64, over a world with both")
    args = ap.parse_args()
    envbox = os.path.abspath(args.envbox)
    if args.two_targets:
        return two_targets(envbox, args)
    tmp = tempfile.mkdtemp(prefix="envbox-lockbench-")
    try:
        extra, roots = indexworld.synthetic(args.synthetic)
        indexworld.build(os.path.join(tmp, "www"), extra_pypi=extra)
        server = indexworld.Server(os.path.join(tmp, "www"))
        project = os.path.join(tmp, "proj")
        os.makedirs(os.path.join(project, "manifests"))
        reqs = ", ".join(f'"{r}"' for r in ["torch==2.11.0+cu128", "transformers>=4.56", "datasets", "wandb"] + roots)
        write_manifest(project, server.url, reqs, 'platform = "manylinux_2_28_x86_64"')

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


def both_machines(world):
    """The world with an aarch64 twin of every x86_64 wheel."""
    out = {}
    for index, wheels in world.items():
        out[index] = list(wheels)
        for w in wheels:
            if w.tag.endswith("_x86_64"):
                twin = copy.copy(w)
                twin.tag = w.tag[:-len("x86_64")] + "aarch64"
                out[index].append(twin)
    return out


def two_targets(envbox, args):
    tmp = tempfile.mkdtemp(prefix="envbox-lockbench2-")
    try:
        extra, roots = indexworld.synthetic(args.synthetic)
        world = indexworld.world()
        world["pypi"] = world["pypi"] + list(extra)
        indexworld.write_indexes(os.path.join(tmp, "www"), both_machines(world),
                                 html_only=("pytorch-cu128", "pytorch-cu130"))
        server = indexworld.Server(os.path.join(tmp, "www"))
        reqs = ", ".join(f'"{r}"' for r in ["torch==2.11.0+cu128", "transformers>=4.56", "datasets", "wandb"] + roots)
        rows = []
        for label, platforms in (("one target (x86_64)", '"manylinux_2_28_x86_64"'),
                                 ("two targets (x86_64 + aarch64)",
                                  '"manylinux_2_28_x86_64", "manylinux_2_28_aarch64"')):
            project = os.path.join(tmp, "proj-" + str(len(rows)))
            os.makedirs(os.path.join(project, "manifests"))
            write_manifest(project, server.url, reqs, f"platforms = [{platforms}]")
            lock_path = os.path.join(project, "manifests", "pylock.train.toml")

            def lock(home, *extra_args):
                start = time.perf_counter()
                r = subprocess.run([envbox, "--home", home, "--project", project, "--json", "lock", "train",
                                    *extra_args], capture_output=True, text=True)
                if r.returncode != 0:
                    sys.exit(r.stderr)
                return time.perf_counter() - start, json.loads(r.stdout)

            cold = []
            for i in range(max(1, args.repeat // 2)):
                if os.path.exists(lock_path):
                    os.remove(lock_path)
                cold.append(lock(os.path.join(project, f"home-{i}")))
            warm = [lock(os.path.join(project, "home-0"), "--upgrade") for _ in range(args.repeat)]
            rows.append((label, cold, warm))
        for label, cold, warm in rows:
            c, w = cold[0][1], warm[0][1]
            print(f"{label:32s} cold {statistics.median(x for x, _ in cold) * 1000:6.0f} ms "
                  f"({c['requests']} requests, {c['packages']} entries)   "
                  f"warm --upgrade {statistics.median(x for x, _ in warm) * 1000:6.0f} ms "
                  f"({w['requests']} requests)")
        server.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
