#!/bin/sh
# The real-stack benchmark of issue 7, in one run on the GPU host (device tool): the installed
# PyTorch stack repacked into wheels (../shared/tools/device/repack_wheels.py), then on the same
# wheels: envbox create cold (empty store) and warm (new environment), uv cold and warm,
# pip cold, cp -al of the finished site-packages; then proof the environment is real (bf16
# matmul on the GPU, torch.compile with its caches in envbox's compile folder, verify --deep).
# Usage (on the device, from the repository root, with the bundle and the repack script carried):
#   sh bench/device_bench.sh dist/envbox-*.tar.gz .device/repack_wheels.py OUTDIR
set -u
bundle="$1"; repack="$2"; out="$3"
mkdir -p "$out"
log="$out/device_bench.txt"
exec > "$log" 2>&1
start=$(date +%s)
. bench/device_common.sh
repack_s=$(( $(date +%s) - start ))
timed() { # timed LABEL CMD... : wall seconds and peak RSS of CMD
    label="$1"; shift
    "$PY" - "$label" "$@" <<'PYEOF'
import resource, subprocess, sys, time
label, cmd = sys.argv[1], sys.argv[2:]
t = time.perf_counter()
r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
dt = time.perf_counter() - t
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"{label:28s} {dt:8.2f} s  peak RSS {rss:7.0f} MB  rc={r.returncode}" + (f"\n{r.stderr[-2000:]}" if r.returncode else ""), flush=True)
for line in r.stderr.splitlines():
    if "seconds" in line:
        print("   ", line.strip(), flush=True)
PYEOF
}
echo "== machine"; head -1 /etc/os-release; nproc; cat /sys/module/nvidia/version; $E --version
echo "== repack $SP"
echo "repacked $(wc -l < /tmp/repack.txt) wheels, $(du -sh /tmp/wh | cut -f1), in $repack_s s"
"$PY" - <<'PYEOF'
import glob, zipfile
ms = []
for w in glob.glob("/tmp/wh/*.whl"):
    for i in zipfile.ZipFile(w).infolist():
        ms.append((i.file_size, i.compress_size, i.filename))
ms.sort(reverse=True)
print(f"members: {len(ms)}; the largest (uncompressed, compressed):")
for u, c, n in ms[:8]:
    print(f"  {u/1e6:8.1f} MB {c/1e6:8.1f} MB  {n}")
PYEOF
sync  # the repack's writes are not the benchmark's: nothing is left dirty for the tools below
mkdir -p /tmp/p/manifests
"$PY" tools/wheelgen.py lock /tmp/p/manifests/pylock.torch.toml /tmp/wh/*.whl
cd /tmp/p
export ENVBOX_PYTHON="$PY"
echo "== envbox"
timed "envbox create cold" "$E" --home /tmp/h0 -vv create torch
rm -rf /tmp/h0
timed "envbox create cold (again)" "$E" --home /tmp/h1 -vv create torch
timed "envbox create warm" "$E" --home /tmp/h1 create torch2 --lock /tmp/p/manifests/pylock.torch.toml
timed "envbox create warm (again)" "$E" --home /tmp/h1 create torch3 --lock /tmp/p/manifests/pylock.torch.toml
timed "envbox create no-op" "$E" --home /tmp/h1 create torch
timed "envbox verify" "$E" --home /tmp/h1 verify torch
timed "envbox verify --deep" "$E" --home /tmp/h1 verify torch --deep
G=$(readlink -f /tmp/h1/envs/*/torch/current)
echo "environment: $(find "$G" -type f | wc -l) files, $(du -sh "$G" | cut -f1) apparent"
SPG=$(ls -d "$G"/lib/python3*/site-packages)
timed "cp -al site-packages" cp -al "$SPG" /tmp/cpal
names=$(awk -F'\t' '{print $1}' /tmp/repack.txt | sed 's/==.*//' | tr '\n' ' ')
echo "== uv $(uv --version)"
uv venv -q -p "$PY" /tmp/uv1; uv venv -q -p "$PY" /tmp/uv2
timed "uv pip install cold" uv pip install -q --python /tmp/uv1/bin/python --no-deps --no-index --find-links /tmp/wh --cache-dir /tmp/uvc $names
timed "uv pip install warm" uv pip install -q --python /tmp/uv2/bin/python --no-deps --no-index --find-links /tmp/wh --cache-dir /tmp/uvc $names
echo "== pip"
"$PY" -m venv --without-pip /tmp/pipv
[ -n "${SKIP_PIP:-}" ] || timed "pip install cold" "$PY" -m pip --python /tmp/pipv/bin/python install -q --no-deps --no-index --no-compile --find-links /tmp/wh $names
echo "== the environment is real"
"$E" --home /tmp/h1 -v run torch -- python - <<'PYEOF'
import os, torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "device", torch.cuda.get_device_name(0))
x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
y = x @ x
torch.cuda.synchronize()
print("bf16 matmul ok:", tuple(y.shape), float(y.float().abs().mean()))
print("TORCHINDUCTOR_CACHE_DIR", os.environ.get("TORCHINDUCTOR_CACHE_DIR"))
try:
    f = torch.compile(lambda a: (a.sin() * 2 + a.cos()).sum())
    print("torch.compile ok:", float(f(torch.randn(1024, device="cuda"))))
    d = os.environ["TORCHINDUCTOR_CACHE_DIR"]
    print("compile cache files:", sum(len(fs) for _, _, fs in os.walk(d)))
except Exception as e:
    print("torch.compile failed:", type(e).__name__, str(e)[:400])
PYEOF
timed "envbox verify --deep after run" "$E" --home /tmp/h1 verify torch --deep
echo "== uv reads envbox's lock"
uv venv -q -p "$PY" /tmp/uv3
uv pip install -q --python /tmp/uv3/bin/python --no-deps -r /tmp/p/manifests/pylock.torch.toml --cache-dir /tmp/uvc 2>&1 | tail -3
"$E" --home /tmp/h1 run torch -- python -c "import importlib.metadata as m; print('\n'.join(sorted(d.metadata['Name'].lower()+'=='+d.version for d in m.distributions())))" > /tmp/envbox.list
/tmp/uv3/bin/python -c "import importlib.metadata as m; print('\n'.join(sorted(d.metadata['Name'].lower()+'=='+d.version for d in m.distributions())))" > /tmp/uv.list
echo "distributions: envbox $(wc -l < /tmp/envbox.list), uv from the lock $(wc -l < /tmp/uv.list), differing: $(diff /tmp/envbox.list /tmp/uv.list | grep -c '^[<>]')"
