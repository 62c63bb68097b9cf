#!/bin/sh
# What sealing a generation costs on the real stack (its directories made read-only, 0555, once
# it is complete): one cold create fills a store, then ROUNDS warm creates each build a new
# environment from it; the `-vv` phase line of each shows `seal` beside `install` and `commit`.
# Then counts the generation's directories still writable (none should be) and deletes one.
# Usage (on the device, from the repository root, with the bundle and the repack script carried):
#   [ROUNDS=N] sh bench/device_seal.sh dist/envbox-*.tar.gz .device/repack_wheels.py OUTDIR
set -u
bundle="$1"; repack="$2"; out="$3"
mkdir -p "$out"
exec > "$out/device_seal.txt" 2>&1
. bench/device_common.sh
keep='seconds:|hard links'
echo "== machine"; head -1 /etc/os-release; nproc; $E --version
mkdir -p /tmp/p/manifests
"$PY" tools/wheelgen.py lock /tmp/p/manifests/pylock.torch.toml /tmp/wh/*.whl
cd /tmp/p
export ENVBOX_PYTHON="$PY"
L=/tmp/p/manifests/pylock.torch.toml
rm -rf /tmp/hs; sync
timed "cold create, bytecode (fills the store)" "$E" --home /tmp/hs -vv create torch --lock $L
for round in $(seq "${ROUNDS:-5}"); do
    sync; timed "warm create (round $round)" "$E" --home /tmp/hs -vv create warm$round --lock $L
done
G=$(readlink -f /tmp/hs/envs/*/warm1/current)
echo "a generation: $(find "$G" -type f | wc -l) files, $(find "$G" -type d | wc -l) directories," \
     "$(find "$G" -type d -perm -200 | wc -l) of them writable by their owner"
timed "delete warm1 (removes a sealed generation)" "$E" --home /tmp/hs delete warm1
echo "== done"
