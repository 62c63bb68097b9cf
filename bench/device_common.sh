# Sourced by the GPU-host benchmarks (bench/device_*.sh) after `bundle`, `repack` and `out` are
# set: unpacks the portable envbox bundle into /tmp and, once per machine, repacks the host's
# installed PyTorch stack into wheels in /tmp/wh (repack_wheels.py; one line per wheel in
# /tmp/repack.txt). Sets E (envbox), PY (python3) and SP (the stack's site-packages), with
# BASELINE (a second bundle, for an A/B of two builds) B, its envbox; and defines `timed` and
# `cpu`.
# Each script writes its log into `out` (the device's $OUT, which comes back); a run kept for
# the record is copied here to bench/results/<script>_<date>.txt, which bench/README.md quotes.
mkdir -p "$out"
tar -C /tmp -xzf "$bundle"
E=$(ls -d /tmp/envbox-*/bin/envbox | head -1)
if [ -n "${BASELINE:-}" ]; then
    mkdir -p /tmp/baseline && tar -C /tmp/baseline -xzf "$BASELINE"
    B=$(ls -d /tmp/baseline/envbox-*/bin/envbox | head -1)
fi
PY=$(command -v python3)
SP=$("$PY" -c "import site; print(site.getsitepackages()[0])")
[ -s /tmp/repack.txt ] || "$PY" "$repack" "$SP" /tmp/wh --jobs "$(nproc)" > /tmp/repack.txt
# timed LABEL CMD...: CMD's wall seconds (its stderr's tail when it fails), then the lines of
# its output that match $keep, a Python regular expression the script sets.
timed() {
    label="$1"; shift
    "$PY" - "$label" "${keep:-^$}" "$@" <<'PYEOF'
import re, subprocess, sys, time
label, keep, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
t = time.perf_counter()
r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
dt = time.perf_counter() - t
print(f"{label:48s} {dt:8.2f} s  rc={r.returncode}" + (f"\n{r.stderr[-2000:]}" if r.returncode else ""), flush=True)
for line in (r.stdout + r.stderr).splitlines():
    if re.search(keep, line):
        print("   ", line.strip(), flush=True)
PYEOF
}
# cpu LABEL CMD...: wall, user and system seconds of CMD and everything it waited for; with
# TIMELINE=1, the machine's busy and iowait cores in each half second (from /proc/stat), to show
# where cores stand idle.
cpu() {
    label="$1"; shift
    "$PY" - "$label" "$@" <<'PYEOF'
import os, resource, subprocess, sys, threading, time
label, cmd = sys.argv[1], sys.argv[2:]
def ticks():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v), v[3], v[4]  # all, idle, iowait
samples, stop = [], threading.Event()
def sample():
    hz, last, lt = os.sysconf("SC_CLK_TCK"), ticks(), time.perf_counter()
    while not stop.wait(0.5):
        now, nt = ticks(), time.perf_counter()
        d = [a - b for a, b in zip(now, last)]
        samples.append(((d[0] - d[1] - d[2]) / hz / (nt - lt), d[2] / hz / (nt - lt)))
        last, lt = now, nt
sampler = threading.Thread(target=sample, daemon=True)
if os.environ.get("TIMELINE"):
    sampler.start()
t = time.perf_counter()
r = subprocess.run(cmd, capture_output=True, text=True)
dt = time.perf_counter() - t
stop.set()
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{label:44s} wall {dt:6.2f} s  user {u.ru_utime:7.1f} s  sys {u.ru_stime:6.1f} s  "
      f"cpu/wall {(u.ru_utime + u.ru_stime) / dt:5.1f}  rc={r.returncode}", flush=True)
for line in (r.stdout + r.stderr).splitlines():
    if "thread-seconds" in line or line.strip().startswith(("seconds:", "compiled last:")):
        print("   ", line.strip(), flush=True)
if samples:
    print("    busy cores per 0.5 s:", " ".join(f"{b:.0f}" for b, _ in samples), flush=True)
    print("    iowait cores per 0.5 s:", " ".join(f"{w:.0f}" for _, w in samples), flush=True)
if r.returncode:
    print(r.stderr[-1500:])
PYEOF
}
