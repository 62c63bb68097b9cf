#!/bin/sh
# Bytecode on the real stack, in one run on the GPU host (device tool): the installed PyTorch
# stack repacked into wheels (../shared/tools/device/repack_wheels.py), then on the same wheels:
#   - cold create with bytecode and with --no-compile (empty stores), a warm create of a second
#     environment (every .pyc linked, nothing compiled), the store's bytecode bytes and objects;
#   - uv cold without bytecode and with --compile-bytecode (empty caches each);
#   - `import torch` and `import transformers` timed inside the process, 1 warm-up then
#     IMPORT_ROUNDS (default 7) rounds alternating envbox run (sandboxed, with .pyc), envbox run
#     without .pyc, and the uv venv installed with --compile-bytecode; medians.
# Usage (on the device, from the repository root, with the bundle and the repack script carried):
#   [IMPORT_ROUNDS=N] sh bench/device_bytecode.sh dist/envbox-*.tar.gz .device/repack_wheels.py OUTDIR
set -u
bundle="$1"; repack="$2"; out="$3"
mkdir -p "$out"
log="$out/device_bytecode.txt"
exec > "$log" 2>&1
. bench/device_common.sh
keep='Compiled|bytecode|seconds:'  # the output lines timed shows
echo "== machine"; head -1 /etc/os-release; nproc; $E --version; uv --version
sync
mkdir -p /tmp/p/manifests
"$PY" tools/wheelgen.py lock /tmp/p/manifests/pylock.torch.toml /tmp/wh/*.whl
cd /tmp/p
export ENVBOX_PYTHON="$PY"
L=/tmp/p/manifests/pylock.torch.toml
echo "== envbox create"
rm -rf /tmp/hb /tmp/hn
timed "envbox create cold, bytecode" "$E" --home /tmp/hb -vv create torch --lock $L
sync; timed "envbox create cold, --no-compile" "$E" --home /tmp/hn -vv create torch --lock $L --no-compile
objects_before=$(find /tmp/hb/store-v1/objects -type f | wc -l)
# sync first: the cold creates' gigabytes still being written back would be timed too.
sync; timed "envbox create warm, bytecode" "$E" --home /tmp/hb -v create torch2 --lock $L
sync; timed "envbox create warm, bytecode (again)" "$E" --home /tmp/hb -v create torch3 --lock $L
objects_after=$(find /tmp/hb/store-v1/objects -type f | wc -l)
echo "store objects: $objects_before after the first environment, $objects_after after two more"
"$E" --home /tmp/hb show torch2 | grep -E "bytecode|files"
"$E" --home /tmp/hb --json show torch2 | "$PY" -c "import json,sys; b=json.load(sys.stdin)['bytecode']; print('bytecode of one environment:', b['files'], 'files,', round(b['bytes']/1e6,1), 'MB,', round(b['shared_bytes']/1e6,1), 'MB shared')"
G1=$(readlink -f /tmp/hb/envs/*/torch/current); G2=$(readlink -f /tmp/hb/envs/*/torch2/current)
echo "distinct .pyc inodes in torch and torch2: $(find "$G1" "$G2" -name '*.pyc' -printf '%i\n' | sort -u | wc -l) of $(find "$G1" "$G2" -name '*.pyc' | wc -l) files"
echo "bytecode lists: $(ls /tmp/hb/store-v1/wheels/*/bytecode/* | wc -l); store: $(du -sh /tmp/hb/store-v1 | cut -f1) with bytecode, $(du -sh /tmp/hn/store-v1 | cut -f1) without"
timed "envbox verify --deep (bytecode)" "$E" --home /tmp/hb verify torch --deep
names=$(awk -F'\t' '{print $1}' /tmp/repack.txt | sed 's/==.*//' | tr '\n' ' ')
echo "== uv"
uv venv -q -p "$PY" /tmp/uvA; uv venv -q -p "$PY" /tmp/uvB
sync; timed "uv pip install cold" uv pip install -q --python /tmp/uvA/bin/python --no-deps --no-index --find-links /tmp/wh --cache-dir /tmp/uvcA $names
sync; timed "uv pip install cold --compile-bytecode" uv pip install -q --python /tmp/uvB/bin/python --no-deps --no-index --find-links /tmp/wh --cache-dir /tmp/uvcB --compile-bytecode $names
echo "== imports (in-process seconds; median of ${IMPORT_ROUNDS:-7}, after 1 warm-up)"
"$PY" - "$E" "${IMPORT_ROUNDS:-7}" <<'PYEOF'
import statistics, subprocess, sys
E, rounds = sys.argv[1], int(sys.argv[2])
code = "import time, sys; t = time.perf_counter(); __import__(sys.argv[1]); print(time.perf_counter() - t)"
runners = {
    "envbox run, .pyc (sandboxed)": [E, "--home", "/tmp/hb", "run", "torch", "--", "python", "-c", code],
    "envbox run, no .pyc (sandboxed)": [E, "--home", "/tmp/hn", "run", "torch", "--", "python", "-c", code],
    "uv venv --compile-bytecode": ["/tmp/uvB/bin/python", "-c", code],
}
for mod in ("torch", "transformers"):
    times = {k: [] for k in runners}
    for rnd in range(rounds + 1):
        for k, cmd in runners.items():
            r = subprocess.run(cmd + [mod], capture_output=True, text=True)
            if r.returncode != 0:
                print(k, mod, "failed", r.stderr[-500:]); break
            if rnd > 0:
                times[k].append(float(r.stdout.strip().splitlines()[-1]))
    med = {k: statistics.median(v) if v else float("nan") for k, v in times.items()}
    for k, v in times.items():
        print(f"import {mod:13s} {k:34s} median {med[k]:.3f} s  (min {min(v) if v else 0:.3f}, max {max(v) if v else 0:.3f})")
    a, n, u = med["envbox run, .pyc (sandboxed)"], med["envbox run, no .pyc (sandboxed)"], med["uv venv --compile-bytecode"]
    print(f"import {mod}: envbox .pyc / uv compiled = {a/u:.3f}; envbox no .pyc / envbox .pyc = {n/a:.2f}x")
PYEOF
echo "== done"
