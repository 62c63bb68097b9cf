#!/bin/sh
# Warm creates of the real stack on the GPU host (device tool), two builds alternated: one cold
# create fills a store, then ROUNDS rounds each create a new environment from it with this
# bundle and with BASELINE (every file and .pyc linked, nothing compiled), `sync` before each so
# no create pays for the writes of the one before. The `-vv` phase line of each is shown.
# Usage (on the device, from the repository root, with both bundles and the repack script carried):
#   [ROUNDS=N] BASELINE=bundle sh bench/device_warm_ab.sh dist/envbox-*.tar.gz .device/repack_wheels.py OUTDIR
set -u
bundle="$1"; repack="$2"; out="$3"; : "${BASELINE:?BASELINE=bundle is required}"
mkdir -p "$out"
exec > "$out/device_warm_ab.txt" 2>&1
. bench/device_common.sh  # unpacks BASELINE too: B
keep='seconds:'
echo "== machine"; head -1 /etc/os-release; nproc; $E --version
mkdir -p /tmp/p/manifests
"$PY" tools/wheelgen.py lock /tmp/p/manifests/pylock.torch.toml /tmp/wh/*.whl
cd /tmp/p
export ENVBOX_PYTHON="$PY"
L=/tmp/p/manifests/pylock.torch.toml
rm -rf /tmp/hw; sync
timed "envbox cold create, bytecode (fills the store)" "$E" --home /tmp/hw -vv create torch --lock $L
for round in $(seq "${ROUNDS:-5}"); do
    sync; timed "warm create, this build (round $round)" "$E" --home /tmp/hw -vv create new$round --lock $L
    sync; timed "warm create, baseline (round $round)" "$B" --home /tmp/hw -vv create base$round --lock $L
done
G=$(readlink -f /tmp/hw/envs/*/new1/current)
echo "a generation: $(find "$G" -type f | wc -l) files, $(find "$G" -type d | wc -l) directories"
echo "== done"
