#!/usr/bin/env python3
"""How fast this interpreter compiles a site-packages' modules: one process, then N processes
side by side on disjoint shares (what create's compile workers do), in MB of source per second.
Usage: compile_rate.py SITE_PACKAGES [N] [LIMIT_FILES]"""
import importlib._bootstrap_external as be
import importlib.util
import multiprocessing
import os
import sys
import time
import warnings


def sources(root, limit):
    out = []
    for d, _, fs in os.walk(root):
        if "__pycache__" in d:
            continue
        out += [os.path.join(d, f) for f in fs if f.endswith(".py")]
    out.sort()
    return out[:limit] if limit else out


def compile_share(paths):
    warnings.simplefilter("ignore")  # as create's workers: a module's SyntaxWarning is not ours
    t, n = time.process_time(), 0
    for p in paths:
        try:
            with open(p, "rb") as f:
                data = f.read()
            code = compile(data, p, "exec", dont_inherit=True, optimize=0)
            be._code_to_hash_pyc(code, importlib.util.source_hash(data), False)
            n += len(data)
        except Exception:
            pass
    return n, time.process_time() - t


def main():
    root = sys.argv[1]
    jobs = int(sys.argv[2]) if len(sys.argv) > 2 else os.cpu_count()
    limit = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    every = sources(root, 0)
    total = sum(os.path.getsize(p) for p in every)
    print(f"{len(every)} modules, {total / 1e6:.1f} MB of source under {root}")
    paths = sources(root, limit) if limit else every
    sample = paths[:: max(1, len(paths) // 3000)]
    n, cpu = compile_share(sample)
    print(f"one process: {n / 1e6:.1f} MB in {cpu:.2f} CPU-s = {n / 1e6 / cpu:.2f} MB/s")
    shares = [paths[i::jobs] for i in range(jobs)]
    t = time.perf_counter()
    with multiprocessing.Pool(jobs) as pool:
        results = pool.map(compile_share, shares)
    wall = time.perf_counter() - t
    n = sum(r[0] for r in results)
    cpu = sum(r[1] for r in results)
    print(f"{jobs} processes: {n / 1e6:.1f} MB in {wall:.2f} s wall, {cpu:.1f} CPU-s "
          f"= {n / 1e6 / cpu:.2f} MB/s per process, {n / 1e6 / wall:.1f} MB/s in all")


if __name__ == "__main__":
    main()
