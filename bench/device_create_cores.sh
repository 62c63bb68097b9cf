#!/bin/sh
# How a cold create scales with the cores it has, on the GPU host (device tool): the real stack
# repacked into wheels as bench/device_common.sh does, then for each N given (default 16 8 4 16:
# the last a control for the host's drift) envbox with bytecode, envbox --no-compile and uv
# without bytecode, each held to the first N cores (taskset, ENVBOX_JOBS=N), each from an empty
# store or cache after `sync`, so no tool pays for the writeback of the one before. Compiling is
# CPU work and uv's default install is not: the ratio of the two at each N says how many cores a
# cold create with bytecode needs to match uv without.
# Usage (on the device, from the repository root, with the bundle and the repack script carried):
#   sh bench/device_create_cores.sh dist/envbox-*.tar.gz .device/repack_wheels.py OUTDIR [N...]
set -u
bundle="$1"; repack="$2"; out="$3"; shift 3
mkdir -p "$out"
exec > "$out/device_create_cores.txt" 2>&1
. bench/device_common.sh
echo "== machine"; head -1 /etc/os-release; nproc; lscpu | grep -E "Model name|Thread|Core|Socket"
$E --version; uv --version; "$PY" --version
mkdir -p /tmp/p/manifests
"$PY" tools/wheelgen.py lock /tmp/p/manifests/pylock.torch.toml /tmp/wh/*.whl
cd /tmp/p
export ENVBOX_PYTHON="$PY"
L=/tmp/p/manifests/pylock.torch.toml
names=$(awk -F'\t' '{print $1}' /tmp/repack.txt | sed 's/==.*//' | tr '\n' ' ')
[ $# -gt 0 ] || set -- 16 8 4 16
for n in "$@"; do
    cores="0-$((n - 1))"
    echo "== $n cores ($cores)"
    rm -rf /tmp/hc; sync
    ENVBOX_JOBS=$n cpu "envbox cold create, bytecode" taskset -c "$cores" "$E" --home /tmp/hc -vv create torch --lock $L
    rm -rf /tmp/hc; sync
    ENVBOX_JOBS=$n cpu "envbox cold create, --no-compile" taskset -c "$cores" "$E" --home /tmp/hc -vv create torch --lock $L --no-compile
    rm -rf /tmp/hc /tmp/uvA /tmp/uvcA; uv venv -q -p "$PY" /tmp/uvA; sync
    cpu "uv pip install cold (no bytecode)" taskset -c "$cores" uv pip install -q --python /tmp/uvA/bin/python --no-deps --no-index --find-links /tmp/wh --cache-dir /tmp/uvcA $names
    rm -rf /tmp/uvA /tmp/uvcA; sync
done
echo "== done"
