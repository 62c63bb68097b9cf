#!/usr/bin/env python3
"""How fast this interpreter compiles a site-packages' modules: one process, then N processes
side by side on disjoint shares (what create's compile workers do), in MB of source per second.
With --reads, then the ways a worker may read and allocate, alternated for ROUNDS rounds, in
CPU-seconds for every module: `limit` reads each file as f.read(32 MiB + 1), `exact` as
f.read(its size + 1) as create's workers do, `exact+mallopt` also keeps freed memory in the
process (glibc's trim and mmap thresholds raised; tried, no gain).
Usage: compile_rate.py SITE_PACKAGES [N] [LIMIT_FILES] [--reads ROUNDS]"""
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


LIMIT = 32 << 20


def compile_share(paths, read="exact"):
    warnings.simplefilter("ignore")  # as create's workers: a module's SyntaxWarning is not ours
    if read == "exact+mallopt":
        import ctypes
        libc = ctypes.CDLL(None)
        libc.mallopt(-1, 64 << 20), libc.mallopt(-3, 32 << 20)
    t, n = time.process_time(), 0
    for p in paths:
        try:
            with open(p, "rb") as f:
                data = f.read(LIMIT + 1) if read == "limit" else f.read(os.fstat(f.fileno()).st_size + 1)
            code = compile(data, p, "exec", dont_inherit=True, optimize=0)
            be._code_to_hash_pyc(code, importlib.util.source_hash(data), False)
            n += len(data)
        except Exception:
            pass
    return n, time.process_time() - t


def main():
    argv = sys.argv[1:]
    rounds = 0
    if "--reads" in argv:
        k = argv.index("--reads")
        rounds = int(argv[k + 1])
        del argv[k:k + 2]
    root = argv[0]
    jobs = int(argv[1]) if len(argv) > 1 else os.cpu_count()
    limit = int(argv[2]) if len(argv) > 2 else 0
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
    for r in range(rounds):
        for read in ("limit", "exact", "exact+mallopt"):
            t = time.perf_counter()
            # A fresh pool each time: each worker process starts with its allocator untouched.
            with multiprocessing.get_context("spawn").Pool(jobs) as pool:
                results = pool.starmap(compile_share, [(sh, read) for sh in shares])
            wall = time.perf_counter() - t
            cpu = sum(c for _, c in results)
            print(f"round {r + 1}, {read:14} {jobs} processes: {cpu:6.1f} CPU-s, {wall:.2f} s wall")


if __name__ == "__main__":
    main()
