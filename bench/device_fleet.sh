#!/bin/sh
# The fleet on the real stack, in one run on the GPU host (device tool): the installed PyTorch
# stack repacked into wheels (../shared/tools/device/repack_wheels.py), Debian's docker-registry
# (a Go binary needing only glibc, carried in) serving on 127.0.0.1, then on the same wheels:
#   - cold create from the local wheels, with bytecode and --no-compile (empty stores);
#   - push to the registry (first, then again with every blob there), the registry's bytes;
#   - pull + create into a fresh store (no index anywhere), with bytecode and --no-compile,
#     verify --deep of the pulled environment;
#   - uv cold (no bytecode, its default; empty cache) on the same wheels.
# Usage (on the device, from the repository root, with the bundle, the repack script and the
# registry binary carried):
#   sh bench/device_fleet.sh dist/envbox-*.tar.gz .device/repack_wheels.py .device/docker-registry OUTDIR
set -u
bundle="$1"; repack="$2"; registry="$3"; out="$4"
mkdir -p "$out"
log="$out/device_fleet.txt"
exec > "$log" 2>&1
. bench/device_common.sh
keep='^(Pushed|Pulled|Stored|Installed|Uploaded|Compiled)'  # the output lines timed shows
echo "== machine"; head -1 /etc/os-release; nproc; $E --version; uv --version
chmod +x "$registry"
mkdir -p /tmp/reg
cat > /tmp/reg.yml <<'EOF'
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: /tmp/reg
http:
  addr: 127.0.0.1:5000
EOF
"$registry" serve /tmp/reg.yml > /tmp/reg.log 2>&1 &
regpid=$!
sleep 2
sync
mkdir -p /tmp/p/manifests
"$PY" tools/wheelgen.py lock /tmp/p/manifests/pylock.torch.toml /tmp/wh/*.whl
echo "wheels: $(ls /tmp/wh/*.whl | wc -l), $(du -sb /tmp/wh | cut -f1) bytes"
cd /tmp/p
export ENVBOX_PYTHON="$PY"
L=/tmp/p/manifests/pylock.torch.toml
REF=127.0.0.1:5000/fleet/torch:v1
echo "== build node"
rm -rf /tmp/hb /tmp/hc
timed "create cold from local wheels, --no-compile" "$E" --home /tmp/hc create torch --lock $L --no-compile
timed "create cold from local wheels, bytecode" "$E" --home /tmp/hb create torch --lock $L
timed "push, first" "$E" --home /tmp/hb push torch $REF --plain-http
timed "push, again (every blob present)" "$E" --home /tmp/hb push torch $REF --plain-http
echo "registry: $(du -sb /tmp/reg | cut -f1) bytes, $(find /tmp/reg -path '*blobs/sha256/*' -name data | wc -l) blobs"
echo "kept archives in the build node's store: $(find /tmp/hb/store-v1/wheels -name archive | wc -l), $(find /tmp/hb/store-v1/wheels -name archive -printf '%s\n' | awk '{s+=$1} END {print s+0}') bytes"
echo "== GPU node (fresh store, no index)"
mkdir -p /tmp/n1 /tmp/n2
cd /tmp/n1 && timed "pull + create, --no-compile" "$E" --home /tmp/hn1 pull $REF torch --plain-http --no-compile
cd /tmp/n2 && timed "pull + create, bytecode" "$E" --home /tmp/hn2 pull $REF torch --plain-http
timed "verify --deep of the pulled environment" "$E" --home /tmp/hn2 verify torch --deep
"$E" --home /tmp/hn2 run torch -- python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
cd /tmp/p
echo "== uv"
names=$(awk -F'\t' '{print $1}' /tmp/repack.txt | sed 's/==.*//' | tr '\n' ' ')
uv venv -q -p "$PY" /tmp/uvA
timed "uv pip install cold (no bytecode)" uv pip install -q --python /tmp/uvA/bin/python --no-deps --no-index --find-links /tmp/wh --cache-dir /tmp/uvcA $names
kill $regpid
cp /tmp/reg.log "$out/registry.log" 2>/dev/null
echo "== done"
