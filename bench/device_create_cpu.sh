#!/bin/sh
# Where a cold create's time goes on the GPU host (device tool): the real stack repacked into
# wheels as bench/device_common.sh does, then cold creates (empty stores) with bytecode at each
# ENVBOX_JOBS given, then ROUNDS rounds alternating envbox with bytecode, uv without and envbox
# without: each with its wall time and the CPU seconds (user, system) of the tool and its
# workers. A create whose CPU seconds are far below cores × wall waits on something else.
# Usage (on the device, from the repository root, with the bundle and the repack script carried):
#   [ROUNDS=N] [BASELINE=bundle] [TIMELINE=1] [UV_FIRST=1] sh bench/device_create_cpu.sh dist/envbox-*.tar.gz .device/repack_wheels.py OUTDIR [JOBS...]
# TIMELINE=1 adds each run's busy and iowait cores per half second (bench/device_common.sh).
# UV_FIRST=1 runs uv's install first in each round, so on a fresh host uv, not envbox, has the
# first run (the filesystem with nothing created and deleted on it yet).
set -u
bundle="$1"; repack="$2"; out="$3"; shift 3
mkdir -p "$out"
exec > "$out/device_create_cpu.txt" 2>&1
. bench/device_common.sh
# BASELINE=another bundle: its cold create with bytecode joins each round (an A/B of two builds).
echo "== machine"; head -1 /etc/os-release; nproc; $E --version; uv --version
mkdir -p /tmp/p/manifests
"$PY" tools/wheelgen.py lock /tmp/p/manifests/pylock.torch.toml /tmp/wh/*.whl
cd /tmp/p
export ENVBOX_PYTHON="$PY"
L=/tmp/p/manifests/pylock.torch.toml
for jobs in "$@"; do
    rm -rf /tmp/hc; sync
    ENVBOX_JOBS=$jobs cpu "envbox cold create, bytecode, ENVBOX_JOBS=$jobs" "$E" --home /tmp/hc -vv create torch --lock $L
done
names=$(awk -F'\t' '{print $1}' /tmp/repack.txt | sed 's/==.*//' | tr '\n' ' ')
uv_cold() {
    rm -rf /tmp/uvA /tmp/uvcA; uv venv -q -p "$PY" /tmp/uvA; sync
    cpu "uv pip install cold (no bytecode)" uv pip install -q --python /tmp/uvA/bin/python --no-deps --no-index --find-links /tmp/wh --cache-dir /tmp/uvcA $names
    rm -rf /tmp/uvA /tmp/uvcA; sync
}
# Then ROUNDS (default 1) rounds alternating envbox with bytecode, uv without, envbox without,
# each from an empty store or cache, so the two tools share whatever the machine is doing.
for round in $(seq "${ROUNDS:-1}"); do
    echo "== round $round"
    [ -n "${UV_FIRST:-}" ] && uv_cold
    rm -rf /tmp/hc; sync
    cpu "envbox cold create, bytecode" "$E" --home /tmp/hc -vv create torch --lock $L
    if [ -n "${BASELINE:-}" ]; then
        rm -rf /tmp/hc; sync
        cpu "baseline cold create, bytecode" "$B" --home /tmp/hc -vv create torch --lock $L
    fi
    rm -rf /tmp/hc; sync
    [ -z "${UV_FIRST:-}" ] && uv_cold
    cpu "envbox cold create, --no-compile" "$E" --home /tmp/hc -vv create torch --lock $L --no-compile
done
rm -rf /tmp/hc
echo "== done"
