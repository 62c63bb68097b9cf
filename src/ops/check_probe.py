# envbox check's probe: run by envbox as the generation's `bin/python -I -S -c CODE TIMEOUT JOBS
# MODULE…`, confined as all foreign code (src/env/confine.cpp), with the environment `envbox
# run` gives a command. -S: no site, so no .pth file of the environment runs in this process.
# It imports each MODULE in a child process of its own (at most TIMEOUT seconds each, JOBS at
# once), then, when torch imported, measures the GPU in one more child; a child's output is
# read bounded (its first and last 64 KiB). It writes one record per line, "key value", every
# value's '%', blanks and control bytes written %XX, on fd 3, which no child inherits; envbox
# reads these lines as untrusted text (src/ops/check.cpp) and keeps only what it validates.
import math
import os
import threading
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

# The import's time goes last, on a line of its own after a marker: whatever the module prints
# at import comes before it.
IMPORT = (
    "import sys, time\n"
    "t = time.perf_counter()\n"
    "import {0}\n"
    "sys.stdout.write('\\n@envbox-import-seconds %.6f\\n' % (time.perf_counter() - t))\n"
)
MARK = "@envbox-import-seconds "
# The keys the GPU child may print; anything else it (or a library it loads) prints is dropped.
GPU_KEYS = {"torch", "cuda", "gpu-none", "cudnn", "nccl", "device", "capability", "arch-list",
            "context-bytes", "matmul-tflops", "gpu-error"}

# The GPU child: torch's versions, the device against the architectures torch was built for,
# the memory a bare CUDA context takes (NVML's used memory around the first allocation; the
# process's own figure where the driver lists it), and a fixed bf16 matrix product.
GPU = r"""
import ctypes, os, sys
def say(k, v): sys.stdout.write("%s %s\n" % (k, " ".join(str(v).split()))); sys.stdout.flush()
import torch
say("torch", torch.__version__)
say("cuda", torch.version.cuda)
if not torch.cuda.is_available():
    why = ""
    init = getattr(torch.cuda, "init", None)
    try:  # the driver's own words (no device node, a driver too old, …)
        if init is not None:
            init()
    except Exception as e:
        why = ": %s" % str(e)[:300]
    say("gpu-none", "torch.cuda.is_available() is False" + why)
    sys.exit(0)
try:
    say("cudnn", torch.backends.cudnn.version())
except Exception as e:
    say("gpu-error", "cudnn: %s" % e)
try:
    say("nccl", ".".join(str(x) for x in torch.cuda.nccl.version()))
except Exception as e:
    say("gpu-error", "nccl: %s" % e)
p = torch.cuda.get_device_properties(0)
say("device", p.name)
say("capability", "sm_%d%d" % (p.major, p.minor))
say("arch-list", ",".join(torch.cuda.get_arch_list()))
class Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]
class Proc(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("used", ctypes.c_ulonglong),
                ("gi", ctypes.c_uint), ("ci", ctypes.c_uint)]
nvml = handle = None
try:
    nvml = ctypes.CDLL("libnvidia-ml.so.1")
    if nvml.nvmlInit_v2() == 0:
        handle = ctypes.c_void_p()
        found = -1
        uuid = getattr(p, "uuid", None)
        if uuid is not None:
            found = nvml.nvmlDeviceGetHandleByUUID(("GPU-%s" % uuid).encode(), ctypes.byref(handle))
        if found != 0:
            found = nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle))
        if found != 0:
            handle = None
except OSError as e:
    say("gpu-error", "NVML: %s" % e)
def used():
    m = Memory()
    return m.used if nvml.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(m)) == 0 else None
before = used() if handle else None
x = torch.empty(1, device="cuda")
torch.cuda.synchronize()
after = used() if handle else None
own = None
if handle:
    count = ctypes.c_uint(64)
    procs = (Proc * 64)()
    get = getattr(nvml, "nvmlDeviceGetComputeRunningProcesses_v3", None)
    if get is not None and get(handle, ctypes.byref(count), procs) == 0:
        for i in range(count.value):
            if procs[i].pid == os.getpid() and procs[i].used < (1 << 50):
                own = procs[i].used
if own is not None:
    say("context-bytes", own)
elif before is not None and after is not None and after >= before:
    say("context-bytes", after - before)
else:
    say("gpu-error", "no NVML reading of the CUDA context's memory")
n = 4096
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
for _ in range(5):
    a @ b
torch.cuda.synchronize()
best = None
for _ in range(5):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(20):
        a @ b
    end.record()
    end.synchronize()
    ms = start.elapsed_time(end) / 20
    best = ms if best is None or ms < best else best
say("matmul-tflops", "%.1f" % (2 * n ** 3 / (best / 1e3) / 1e12))
"""


def encode(value):
    raw = str(value).encode("utf-8", "replace")
    return b"".join(b"%%%02X" % b if b <= 0x20 or b in (0x25, 0x7F) else bytes([b]) for b in raw)


CHANNEL = os.fdopen(3, "wb", buffering=0)
KEEP = 64 * 1024


def say(key, *fields):
    CHANNEL.write(key.encode() + b" " + b" ".join(fields) + b"\n")


def drain(stream, into):
    """Reads `stream` to its end, keeping its first and last KEEP bytes."""
    head, tail = bytearray(), bytearray()
    while True:
        chunk = stream.read(65536)
        if not chunk:
            break
        room = KEEP - len(head)
        head += chunk[:room]
        tail += chunk[room:] if room > 0 else chunk
        del tail[:-KEEP]
    into.append(bytes(head) + (b"\n" if tail else b"") + bytes(tail))


def last_line(text):
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[-1][:2000] if lines else "no message"


# (status, seconds, stdout, why): status "ok", "failed" (why: the last line of stderr) or
# "timeout".
def run(code, timeout):
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-I", "-c", code], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd="/",
                             start_new_session=True)
    out, err = [], []
    readers = [threading.Thread(target=drain, args=(child.stdout, out), daemon=True),
               threading.Thread(target=drain, args=(child.stderr, err), daemon=True)]
    for r in readers:
        r.start()
    try:
        returncode = child.wait(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
    try:
        os.killpg(child.pid, 9)  # what it started too: a daemon holding the pipes
    except OSError:
        pass
    returncode = child.wait()
    for r in readers:
        r.join(5)  # a daemon of its own session may hold the pipes: its output is not waited for
    took = time.perf_counter() - started
    out, err = (out or [b""]), (err or [b""])
    out = out[0].decode("utf-8", "replace")
    if timed_out:
        return "timeout", took, out, "timed out after %g s" % timeout
    if returncode == 0:
        return "ok", took, out, ""
    why = last_line(err[0].decode("utf-8", "replace"))
    if returncode < 0:
        why = "killed by signal %d; %s" % (-returncode, why)
    return "failed", took, out, why


def check_import(module, timeout):
    status, took, out, why = run(IMPORT.format(module), timeout)
    if status == "ok":
        marked = [l for l in out.splitlines() if l.startswith(MARK)]
        try:
            said = float(marked[-1][len(MARK):]) if marked else took
            took = said if math.isfinite(said) else took
        except ValueError:
            pass
    return module, status, min(max(took, 0.0), 1e6), why


def main():
    timeout, jobs, modules = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    say("envbox-check-probe", b"1")
    say("python", encode(sys.version.split()[0]))
    torch_ok = False
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for module, status, took, why in pool.map(lambda m: check_import(m, timeout), modules):
            say("import", module.encode(), status.encode(), b"%.3f" % took, encode(why))
            torch_ok = torch_ok or (module == "torch" and status == "ok")
    if not torch_ok:
        say("gpu-none", encode("torch is not in the environment" if "torch" not in modules
                               else "torch did not import"))
        return
    status, took, out, why = run(GPU, max(timeout, 300))
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        if key in GPU_KEYS:
            say(key, encode(value))
    if status != "ok":
        say("gpu-failed", encode("the GPU measurement %s: %s" % (status, why)))


main()
