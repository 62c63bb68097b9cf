#!/usr/bin/env python3
"""The fleet benchmark: the torch-shaped wheel set (bench/torch_shaped.py's generator) pushed to
one registry on loopback (Debian's docker-registry, plain http) and pulled back into fresh
homes: push time (first and again), pull+create into a fresh store against a cold create from
local files, and N simulated nodes (separate ENVBOX_HOMEs) pulling at once against one node,
with the registry's throughput. Every create here runs `--no-compile` (bytecode is measured by
torch_shaped.py; on two cores it would dominate every figure).

    bench/fleet_bench.py [--envbox build/envbox] [--work DIR] [--scale 1.0] [--nodes 8]

Results are printed and written to WORK/fleet.json.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "tools"), os.path.join(HERE, "..", "tests", "support"), HERE]
import registry  # noqa: E402
from torch_shaped import generate  # noqa: E402
from wheelgen import write_lock  # noqa: E402


def du(path):
    out = subprocess.run(["du", "-sb", path], capture_output=True, text=True).stdout
    return int(out.split()[0]) if out else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--envbox", default=os.path.join(HERE, "..", "build", "envbox"))
    ap.add_argument("--work", default="/tmp/envbox-fleet-bench")
    ap.add_argument("--wheels", help="an existing torch_shaped wheel folder (default: WORK/wheels-SCALE)")
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--nodes", type=int, default=8)
    args = ap.parse_args()
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    wheel_dir = args.wheels or os.path.join(work, f"wheels-{args.scale}")
    if not os.path.exists(os.path.join(wheel_dir, ".complete")):
        generate(wheel_dir, args.scale)
        open(os.path.join(wheel_dir, ".complete"), "w").close()
    wheels = sorted(os.path.join(wheel_dir, f) for f in os.listdir(wheel_dir) if f.endswith(".whl"))
    wheel_bytes = sum(os.path.getsize(w) for w in wheels)
    runs = os.path.join(work, "runs")
    shutil.rmtree(runs, ignore_errors=True)
    project = os.path.join(runs, "project")
    os.makedirs(os.path.join(project, "manifests"))
    write_lock(os.path.join(project, "manifests", "pylock.t.toml"), wheels)
    env = dict(os.environ, ENVBOX_PYTHON=args.python)
    reg = registry.Registry(os.path.join(runs, "registry"))
    ref = f"{reg.host}/bench/torch-shaped:v1"

    def envbox(home, *a, cwd=None):
        t = time.perf_counter()
        subprocess.run([args.envbox, "--home", home, *a], check=True, env=env, cwd=cwd,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        return time.perf_counter() - t

    results = {"wheels": len(wheels), "wheel_bytes": wheel_bytes, "nodes": args.nodes}
    try:
        build = os.path.join(runs, "build-home")
        subprocess.run(["sync"])
        results["cold_create_s"] = envbox(build, "--project", project, "create", "t", "--no-compile")
        results["store_objects_bytes"] = du(os.path.join(build, "store-v1", "objects"))
        results["push_s"] = envbox(build, "--project", project, "push", "t", ref, "--plain-http")
        results["push_again_s"] = envbox(build, "--project", project, "push", "t", ref, "--plain-http")
        results["registry_bytes"] = du(reg.storage)
        results["registry_blobs"] = len(reg.blobs())

        # Nodes one folder deeper than the project: the lock's relative wheel paths lead nowhere
        # there, so every wheel comes from the registry's blobs.
        node = os.path.join(runs, "nodes", "node-1")
        os.makedirs(node)
        subprocess.run(["sync"])
        results["pull_s"] = envbox(os.path.join(node, "home"), "pull", ref, "t", "--plain-http", "--no-compile",
                                   cwd=node)

        nodes = []
        for i in range(args.nodes):
            d = os.path.join(runs, "nodes", f"fleet-{i}")
            os.makedirs(d)
            nodes.append(d)
        subprocess.run(["sync"])
        t = time.perf_counter()
        procs = [subprocess.Popen([args.envbox, "--home", os.path.join(d, "home"), "pull", ref, "t",
                                   "--plain-http", "--no-compile"], env=env, cwd=d,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for d in nodes]
        for p in procs:
            _, err = p.communicate()
            if p.returncode != 0:
                raise SystemExit(err.decode())
        results["fleet_pull_s"] = time.perf_counter() - t
        results["fleet_throughput_mb_s"] = args.nodes * wheel_bytes / results["fleet_pull_s"] / 1e6
    finally:
        reg.close()
    mb = wheel_bytes / 1e6
    print(f"{len(wheels)} wheels, {mb:.0f} MB; store objects {results.get('store_objects_bytes', 0) / 1e6:.0f} MB")
    print(f"cold create (local files)   {results['cold_create_s']:.2f} s")
    print(f"push (first)                {results['push_s']:.2f} s ({mb / results['push_s']:.0f} MB/s)")
    print(f"push (again, nothing new)   {results['push_again_s']:.2f} s")
    print(f"registry                    {results['registry_blobs']} blobs, {results['registry_bytes'] / 1e6:.0f} MB")
    print(f"pull + create, one node     {results['pull_s']:.2f} s")
    print(f"{args.nodes} nodes pulling at once    {results['fleet_pull_s']:.2f} s "
          f"({results['fleet_throughput_mb_s']:.0f} MB/s from the registry)")
    with open(os.path.join(work, "fleet.json"), "w") as f:
        json.dump(results, f, indent=1)
    shutil.rmtree(runs, ignore_errors=True)


if __name__ == "__main__":
    main()
