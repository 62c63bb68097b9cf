#!/bin/sh
# The fleet on the real stack, in one run on the GPU host (device tool): the installed PyTorch
# stack repacked into wheels (../shared/tools/device/repack_wheels.py), Debian's docker-registry
# (a Go binary needing only glibc, carried in) serving on 127.0.0.1, then on the same wheels:
#   - cold create with bytecode on the build node (an empty store);
#   - push to the registry (first, then again with every blob there), the registry's bytes and
#     the bytecode layers' share;
#   - pull + create into a fresh store (no index anywhere): with the builder's bytecode and with
#     --no-compile, alternately, three of each, then once with --ignore-bytecode (the node
#     compiles); `pull --json`'s pyc_received and compiled; verify --deep;
#   - `import torch` in a fresh process, seven times each, the build node and the node alternately;
#   - pack and unpack in both formats (envbox's tar and --format oci), their sizes (SKIP_PACK=1:
#     not).
# QUICK=1: the build node and the rounds of pulls only (a short device budget). ROUNDS=N: N
# rounds of pulls (default 3; QUICK 2).
# Usage (on the device, from the repository root, with the bundle, the repack script and the
# registry binary carried):
#   sh bench/device_fleet.sh dist/envbox-*.tar.gz .device/repack_wheels.py .device/docker-registry OUTDIR
set -u
bundle="$1"; repack="$2"; registry="$3"; out="$4"
mkdir -p "$out"
log="$out/device_fleet.txt"
exec > "$log" 2>&1
. bench/device_common.sh
keep='^(Pushed|Pulled|Unpacked|Packed|Stored|Installed|Compiled|  with|Bytecode|  seconds|  stored last)'
echo "== machine"; head -1 /etc/os-release; nproc; $E --version
nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1
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
rm -rf /tmp/hb
timed "create cold from local wheels, bytecode" "$E" --home /tmp/hb create torch --lock $L -v
timed "push, first" "$E" --home /tmp/hb push torch $REF --plain-http
timed "push, again (every blob present)" "$E" --home /tmp/hb push torch $REF --plain-http
echo "registry: $(du -sb /tmp/reg | cut -f1) bytes, $(find /tmp/reg -path '*blobs/sha256/*' -name data | wc -l) blobs"
"$PY" - <<'PYEOF'
import json, urllib.request
m = json.load(urllib.request.urlopen(urllib.request.Request(
    "http://127.0.0.1:5000/v2/fleet/torch/manifests/v1",
    headers={"Accept": "application/vnd.oci.image.manifest.v1+json"})))
by = {}
for l in m["layers"]:
    t = l["mediaType"].split("vnd.envbox.")[-1]
    n, s = by.get(t, (0, 0))
    by[t] = (n + 1, s + l["size"])
for t, (n, s) in sorted(by.items()):
    print(f"layers {t:12s} {n:4d}  {s/1e6:9.1f} MB")
PYEOF

echo "== GPU node: pull + create into a fresh store, alternately (no index)"
pull() {  # pull LABEL FLAGS...: a fresh home and project each time
    label="$1"; shift
    rm -rf /tmp/hn /tmp/n && mkdir -p /tmp/n && cd /tmp/n
    timed "pull + create, $label" "$E" --home /tmp/hn pull $REF torch --plain-http -vv "$@"
    cd /tmp/p
}
for round in $(seq 1 "${ROUNDS:-$([ -n "${QUICK:-}" ] && echo 2 || echo 3)}"); do
    pull "builder's bytecode ($round)"
    pull "--no-compile ($round)" --no-compile
done
if [ -n "${QUICK:-}" ]; then echo "== QUICK: the rest left out"; kill $regpid; exit 0; fi
pull "--ignore-bytecode (the node compiles)" --ignore-bytecode
rm -rf /tmp/hn /tmp/n && mkdir -p /tmp/n && cd /tmp/n
"$E" --home /tmp/hn --json pull $REF torch --plain-http | "$PY" -c "
import json, sys; r = json.load(sys.stdin)
print('pull --json:', {k: r[k] for k in ('wheels', 'fetched', 'bytecode_layers', 'pyc_received', 'compiled', 'seconds')})"
timed "verify --deep of the pulled environment" "$E" --home /tmp/hn verify torch --deep
cd /tmp/p
echo "== import torch, a fresh process each, the two nodes alternately (7 runs each)"
cd /tmp/p && "$E" --home /tmp/hb run torch -- python -c "import torch" >/dev/null 2>&1  # warm the page cache
cd /tmp/n && "$E" --home /tmp/hn run torch -- python -c "import torch" >/dev/null 2>&1
for i in 1 2 3 4 5 6 7; do
    cd /tmp/p && timed "import torch, build node ($i)" "$E" --home /tmp/hb run torch -- python -c "import torch"
    cd /tmp/n && timed "import torch, pulled node ($i)" "$E" --home /tmp/hn run torch -- python -c "import torch"
done
cd /tmp/n
"$E" --home /tmp/hn run torch -- python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())"
cd /tmp/p
rm -rf /tmp/hn /tmp/n

echo "== pack and unpack, both formats"
[ -n "${SKIP_PACK:-}" ] && echo "skipped (SKIP_PACK)"
for fmt in $([ -n "${SKIP_PACK:-}" ] || echo envbox oci); do
    timed "pack --format $fmt" "$E" --home /tmp/hb pack torch --format $fmt -o /tmp/torch.$fmt.tar
    echo "size: $(stat -c %s /tmp/torch.$fmt.tar) bytes"
    rm -rf /tmp/hu /tmp/u && mkdir -p /tmp/u && cd /tmp/u
    timed "unpack ($fmt)" "$E" --home /tmp/hu unpack /tmp/torch.$fmt.tar torch -vv
    cd /tmp/p
    rm -rf /tmp/hu /tmp/u /tmp/torch.$fmt.tar
done
kill $regpid
cp /tmp/reg.log "$out/registry.log" 2>/dev/null
echo "== done"
