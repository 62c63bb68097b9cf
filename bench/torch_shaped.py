#!/usr/bin/env python3
"""The install benchmark: a generated torch-shaped wheel set, installed by envbox cold (empty
store) and warm (store populated, new environment), against `cp -al` of the finished tree (the
hard-link floor) and `pip install` of the same wheels (with and without its bytecode
compilation), all in one run. envbox's environments have bytecode (`cold`, `warm`); one cold
create runs with `--no-compile` for the difference.

    bench/torch_shaped.py [--envbox build/envbox] [--work DIR] [--python /usr/bin/python3]
                          [--scale 1.0] [--skip-pip]

The set (seeded, so every run builds the same bytes): about 200 wheels, 50 000 files in
10 000 directories, with a torch-like wheel (15 000 files and a 350 MB library) and nvidia-like
wheels carrying 250-300 MB libraries; libraries are half incompressible, as real ones are.
Results are printed as a table and written to WORK/results.json.
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from wheelgen import record_hash, write_lock  # noqa: E402

WORDS = ("import torch tensor def return self module class if else for in range while none true "
         "false cuda device dtype float bfloat16 kernel grad backward forward shape view size "
         "stride contiguous dispatch autograd function lambda yield async await").split()


def text_file(rng, size):
    out, n = [], 0
    while n < size:
        line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) + "\n"
        out.append(line)
        n += len(line)
    return "".join(out).encode()


def python_file(rng, size):
    # Valid Python (every module compiles, as a real package's do): functions, classes and
    # constants built from the same words.
    out, n, k = [], 0, 0
    while n < size:
        k += 1
        w = [rng.choice(WORDS) for _ in range(rng.randint(2, 6))]
        kind = rng.random()
        if kind < 0.4:
            text = (f"def {w[0]}_{k}(self, {w[1]}_a, {w[-1]}_b=None):\n"
                    f"    if {w[1]}_a is None:\n        return {k}\n"
                    f"    return [{w[1]}_a * {rng.randint(1, 99)} for _ in range({rng.randint(1, 9)})]\n\n")
        elif kind < 0.6:
            text = (f"class {w[0].title()}{k}:\n    \"\"\"{' '.join(w)}.\"\"\"\n\n"
                    f"    def forward(self, x):\n        return x.{w[1]}_op() + {rng.random():.4f}\n\n")
        else:
            text = f"{w[0].upper()}_{k} = {' '.join(w)!r}\n"
        out.append(text)
        n += len(text)
    return "".join(out).encode()


def library(rng, size):
    # Half random, half repetitive: compresses about 2:1 like a real .so.
    block = 1 << 16
    parts = []
    pattern = bytes(range(256)) * (block // 512)
    for i in range(0, size, block):
        parts.append(rng.randbytes(block // 2) + pattern)
    return b"".join(parts)[:size]


def build_wheel(out_dir, name, version, files):
    dist = name.replace("-", "_")
    di = f"{dist}-{version}.dist-info"
    files = dict(files)
    files[f"{di}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n".encode()
    files[f"{di}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: envbox-bench\nRoot-Is-Purelib: false\nTag: py3-none-any\n\n"
    rows = [f"{p},{record_hash(d)},{len(d)}" for p, d in files.items()] + [f"{di}/RECORD,,"]
    path = os.path.join(out_dir, f"{dist}-{version}-py3-none-any.whl")
    with zipfile.ZipFile(path, "w") as z:
        for p, d in files.items():
            info = zipfile.ZipInfo(p, (1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o100644 << 16
            big = len(d) > (1 << 20)
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, d, compresslevel=1 if big else 6)
        z.writestr(zipfile.ZipInfo(f"{di}/RECORD", (1980, 1, 1, 0, 0, 0)), "\n".join(rows) + "\n")
    return path


def package_files(rng, top, n_files, n_dirs, shared):
    dirs = [top] + [f"{top}/" + "/".join(f"d{rng.randint(0, 40)}" for _ in range(rng.randint(1, 3)))
                    for _ in range(max(0, n_dirs - 1))]
    dirs = sorted(set(dirs))
    files = {}
    for d in dirs:
        files[f"{d}/__init__.py"] = shared["empty"]
    i = 0
    while len(files) < n_files:
        d = dirs[i % len(dirs)]
        i += 1
        kind = rng.random()
        if kind < 0.08:
            files[f"{d}/LICENSE{i}.txt"] = shared["license"]  # identical across wheels
        elif kind < 0.25:
            files[f"{d}/h{i}.h"] = text_file(rng, rng.randint(200, 6000))
        else:
            files[f"{d}/m{i}.py"] = python_file(rng, int(rng.lognormvariate(7.8, 1.0)) + 50)
    return files


def generate(out_dir, scale):
    rng = random.Random(20261129)
    os.makedirs(out_dir, exist_ok=True)
    shared = {"empty": b"", "license": text_file(random.Random(1), 11000)}
    wheels = []
    mb = 1000 * 1000
    big = [("torch-like", "2.11.0", 15000, 3000, [("lib/libtorch_cuda.so", 350)]),
           ("nvidia-cublas-like", "13.0.0", 40, 8, [("lib/libcublasLt.so.13", 300)]),
           ("nvidia-cudnn-like", "9.10.0", 60, 10, [("lib/libcudnn_engines.so.9", 250)]),
           ("triton-like", "3.5.0", 1800, 350, [("backends/libtriton.so", 120)])]
    for name, version, n_files, n_dirs, libs in big:
        top = name.replace("-", "_")
        files = package_files(rng, top, int(n_files * scale), max(1, int(n_dirs * scale)), shared)
        for rel, size_mb in libs:
            files[f"{top}/{rel}"] = library(rng, int(size_mb * mb * scale))
        wheels.append(build_wheel(out_dir, name, version, files))
    remaining_files = int(50000 * scale) - sum(int(b[2] * scale) for b in big)
    remaining_dirs = int(10000 * scale) - sum(max(1, int(b[3] * scale)) for b in big)
    n = 196
    for k in range(n):
        name = f"pkg{k:03d}-like"
        files = package_files(rng, name.replace("-", "_"), max(3, remaining_files // n),
                              max(1, remaining_dirs // n), shared)
        if k % 20 == 0:
            files[f"{name.replace('-', '_')}/_native.so"] = library(rng, int(rng.randint(2, 12) * mb * scale))
        wheels.append(build_wheel(out_dir, name, "1.0", files))
    return wheels


def timed(cmd, env=None):
    """Runs cmd; returns (seconds, peak RSS in MB). The RSS comes from GNU time, whose own
    small process forks the command (a fork of this Python would count its heap)."""
    rss_file = os.path.join("/tmp", f"envbox-bench-rss-{os.getpid()}")
    start = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss_file] + cmd, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - start
    if p.returncode != 0:
        sys.exit(f"{cmd} failed ({p.returncode}):\n{p.stderr}")
    with open(rss_file) as f:
        rss_kb = int(f.read().split()[-1])
    os.unlink(rss_file)
    return seconds, rss_kb / 1024


def tree_stats(root):
    files = dirs = size = 0
    for dp, dn, fn in os.walk(root):
        dirs += len(dn)
        for f in fn:
            st = os.lstat(os.path.join(dp, f))
            files += 1
            size += st.st_size
    return files, dirs, size


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--envbox", default=os.path.join(HERE, "..", "build", "envbox"))
    ap.add_argument("--work", default="/tmp/envbox-bench")
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-pip", action="store_true")
    args = ap.parse_args()
    envbox = os.path.abspath(args.envbox)
    work = os.path.abspath(args.work)
    # v2: every module is valid Python (compiled to bytecode); v1 sets are not reused.
    wheel_dir = os.path.join(work, f"wheels-v2-{args.scale}")
    stamp = os.path.join(wheel_dir, ".complete")
    if not os.path.exists(stamp):
        shutil.rmtree(wheel_dir, ignore_errors=True)
        t = time.perf_counter()
        generate(wheel_dir, args.scale)
        open(stamp, "w").close()
        print(f"generated the wheel set in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    wheels = sorted(os.path.join(wheel_dir, f) for f in os.listdir(wheel_dir) if f.endswith(".whl"))
    wheel_bytes = sum(os.path.getsize(w) for w in wheels)

    project = os.path.join(work, "project")
    shutil.rmtree(project, ignore_errors=True)
    os.makedirs(os.path.join(project, "manifests"))
    for env in ("cold", "warm"):
        write_lock(os.path.join(project, "manifests", f"pylock.{env}.toml"), wheels)
    env = dict(os.environ, ENVBOX_PYTHON=args.python)
    runs = os.path.join(work, "runs")
    shutil.rmtree(runs, ignore_errors=True)
    os.makedirs(runs)
    # Nothing is deleted while measuring: every run gets fresh directories and they are removed
    # at the end. (On VMs that hand freed memory back to the host, reusing just-freed memory is
    # slow and would make whichever run follows a large delete look slow.)
    subprocess.run(["sync"])
    time.sleep(2)

    results = {"wheels": len(wheels), "wheel_bytes": wheel_bytes}
    cold = []
    homes = []
    for i in range(max(1, args.repeat - 1)):
        homes.append(os.path.join(runs, f"home-{i}"))
        cold.append(timed([envbox, "--home", homes[-1], "--project", project, "-q", "create", "cold"], env))
    results["cold_create_s"] = statistics.median(s for s, _ in cold)
    results["cold_create_runs_s"] = [round(s, 3) for s, _ in cold]
    results["cold_peak_rss_mb"] = max(m for _, m in cold)
    # The same without bytecode (--no-compile), once: what compiling adds to a cold create.
    results["cold_nocompile_s"] = timed([envbox, "--home", os.path.join(runs, "home-nc"), "--project",
                                         project, "-q", "create", "cold", "--no-compile"], env)[0]
    home = homes[0]
    key = os.listdir(os.path.join(home, "envs"))[0]
    gen = os.path.realpath(os.path.join(home, "envs", key, "cold", "current"))
    files, dirs, size = tree_stats(gen)
    results.update(env_files=files, env_dirs=dirs, env_bytes=size)

    warm = []
    for i in range(args.repeat):
        warm.append(timed([envbox, "--home", home, "--project", project, "-q", "create", "warm",
                           "--lock", os.path.join(project, "manifests", "pylock.warm.toml")], env)
                    if i == 0 else
                    timed([envbox, "--home", home, "--project", project, "-q", "create", f"warm{i}",
                           "--lock", os.path.join(project, "manifests", "pylock.warm.toml")], env))
    results["warm_create_s"] = statistics.median(s for s, _ in warm)
    results["warm_create_runs_s"] = [round(s, 3) for s, _ in warm]
    results["warm_peak_rss_mb"] = max(m for _, m in warm)

    # Generations: a no-op create, verify (inode and deep), rollback between two generations.
    base = [envbox, "--home", home, "--project", project, "-q"]
    warm_lock = os.path.join(project, "manifests", "pylock.warm.toml")
    results["noop_create_s"] = statistics.median(
        timed(base + ["create", "warm", "--lock", warm_lock], env)[0] for _ in range(5))
    results["verify_s"] = statistics.median(timed(base + ["verify", "warm"], env)[0] for _ in range(3))
    results["verify_deep_s"] = timed(base + ["verify", "warm", "--deep"], env)[0]
    smaller = os.path.join(project, "manifests", "pylock.smaller.toml")
    write_lock(smaller, wheels[:-1])
    timed(base + ["create", "warm", "--lock", smaller], env)
    results["rollback_s"] = statistics.median(
        timed(base + ["rollback", "warm"] + ([] if i % 2 == 0 else ["--to", "2"]), env)[0] for i in range(6))

    # cp -al from the other cold home: the empty __init__.py object is already linked from
    # 13 574 directories per environment in this one, and cp -al cannot go past ext4's
    # 65 000-link limit (envbox copies such a file when link() says EMLINK).
    cp_home = homes[-1]
    cp_src = os.path.realpath(os.path.join(cp_home, "envs", os.listdir(os.path.join(cp_home, "envs"))[0], "cold", "current"))
    cp = [timed(["cp", "-al", cp_src, os.path.join(runs, f"cp-al-{i}")])[0] for i in range(args.repeat)]
    results["cp_al_s"] = statistics.median(cp)
    results["cp_al_runs_s"] = [round(s, 3) for s in cp]

    if not args.skip_pip:
        pip_wheel = next(w for w in sorted(os.listdir("/usr/share/python-wheels")) if w.startswith("pip-"))
        names = [os.path.basename(w).split("-")[0] for w in wheels]
        pip = []
        for i in range(max(1, args.repeat - 1)):
            venv = os.path.join(runs, f"pip-venv-{i}")
            subprocess.run([args.python, "-m", "venv", "--without-pip", venv], check=True)
            pip.append(timed([args.python, os.path.join("/usr/share/python-wheels", pip_wheel, "pip"),
                              "--python", os.path.join(venv, "bin", "python"), "install", "-q",
                              "--no-deps", "--no-index", "--no-compile", "--disable-pip-version-check",
                              "--find-links", wheel_dir] + names)[0])
        results["pip_s"] = statistics.median(pip)
        results["pip_runs_s"] = [round(s, 3) for s in pip]
        # pip as it runs by default: compiling every module (timestamp .pyc files).
        venv = os.path.join(runs, "pip-venv-compile")
        subprocess.run([args.python, "-m", "venv", "--without-pip", venv], check=True)
        results["pip_compile_s"] = timed([args.python, os.path.join("/usr/share/python-wheels", pip_wheel, "pip"),
                                          "--python", os.path.join(venv, "bin", "python"), "install", "-q",
                                          "--no-deps", "--no-index", "--disable-pip-version-check",
                                          "--find-links", wheel_dir] + names)[0]
    shutil.rmtree(runs, ignore_errors=True)

    r = results
    r["cold_mb_per_s"] = r["wheel_bytes"] / 1e6 / r["cold_create_s"]
    r["cold_unpacked_mb_per_s"] = r["env_bytes"] / 1e6 / r["cold_create_s"]
    r["warm_over_cp_al"] = r["warm_create_s"] / r["cp_al_s"]
    if "pip_s" in r:
        r["pip_over_cold"] = r["pip_s"] / r["cold_create_s"]
        r["pip_over_warm"] = r["pip_s"] / r["warm_create_s"]
        r["pip_compile_over_cold"] = r["pip_compile_s"] / r["cold_create_s"]
    with open(os.path.join(work, "results.json"), "w") as f:
        json.dump(r, f, indent=2)
    print(f"wheel set: {r['wheels']} wheels, {r['wheel_bytes'] / 1e6:.0f} MB; environment: "
          f"{r['env_files']} files, {r['env_dirs']} directories, {r['env_bytes'] / 1e6:.0f} MB")
    print(f"envbox cold create  {r['cold_create_s']:8.2f} s   {r['cold_mb_per_s']:.0f} MB/s of wheels, "
          f"{r['cold_unpacked_mb_per_s']:.0f} MB/s unpacked, peak RSS {r['cold_peak_rss_mb']:.0f} MB")
    print(f"  --no-compile      {r['cold_nocompile_s']:8.2f} s   (cold, without bytecode)")
    print(f"envbox warm create  {r['warm_create_s']:8.2f} s   peak RSS {r['warm_peak_rss_mb']:.0f} MB")
    print(f"cp -al              {r['cp_al_s']:8.2f} s   warm/cp-al = {r['warm_over_cp_al']:.2f}x")
    print(f"no-op create        {r['noop_create_s'] * 1000:8.1f} ms")
    print(f"rollback            {r['rollback_s'] * 1000:8.1f} ms")
    print(f"verify (inodes)     {r['verify_s']:8.2f} s   for {r['env_files']} files")
    print(f"verify --deep       {r['verify_deep_s']:8.2f} s")
    if "pip_s" in r:
        print(f"pip install         {r['pip_s']:8.2f} s   pip/cold = {r['pip_over_cold']:.1f}x, "
              f"pip/warm = {r['pip_over_warm']:.0f}x")
        print(f"pip install, compiling {r['pip_compile_s']:5.2f} s   pip/cold = {r['pip_compile_over_cold']:.1f}x")


if __name__ == "__main__":
    main()
