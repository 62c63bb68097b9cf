#!/bin/sh
# Locking the real PyTorch stack on the GPU host: the installed distributions repacked into
# wheels, served as a PEP 503 index with PEP 658 metadata files from 127.0.0.1
# (tests/lock/indexworld.py's server), then `envbox lock` (cold, up-to-date, warm re-resolve)
# against `uv pip compile` (cold and warm cache) for the same requirements.
# Usage (on the device): sh bench/device_lock_bench.sh dist/envbox-*.tar.gz .device/repack_wheels.py OUTDIR
set -u
bundle="$1"; repack="$2"; out="$3"
mkdir -p "$out"
exec > "$out/device_lock_bench.txt" 2>&1
. bench/device_common.sh
"$PY" - <<'PYEOF'
import hashlib, os, re, zipfile
root = "/tmp/idx"
by = {}
for fn in sorted(os.listdir("/tmp/wh")):
    if fn.endswith(".whl"):
        by.setdefault(re.sub(r"[-_.]+", "-", fn.split("-")[0]).lower(), []).append(fn)
os.makedirs(f"{root}/files", exist_ok=True)
for name, files in by.items():
    os.makedirs(f"{root}/simple/{name}", exist_ok=True)
    anchors = []
    for fn in files:
        src = f"/tmp/wh/{fn}"
        dst = f"{root}/files/{fn}"
        if not os.path.exists(dst):
            os.link(src, dst)
        with zipfile.ZipFile(src) as z:
            meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1))
        with open(dst + ".metadata", "wb") as f:
            f.write(meta)
        h = hashlib.sha256(open(src, "rb").read()).hexdigest()
        url = "/files/" + fn.replace("+", "%2B")
        anchors.append(f'<a href="{url}#sha256={h}" data-core-metadata="sha256={hashlib.sha256(meta).hexdigest()}">{fn}</a>')
    with open(f"{root}/simple/{name}/index.html", "w") as f:
        f.write("<html><body>\n" + "\n".join(anchors) + "\n</body></html>\n")
with open("/tmp/reqs.txt", "w") as f:
    f.write("\n".join(sorted(by)) + "\n")
print(f"index: {len(by)} projects")
PYEOF
"$PY" - <<'PYEOF' &
import sys, time
sys.path.insert(0, "tests/lock")
import indexworld
s = indexworld.Server("/tmp/idx")
open("/tmp/idx.url", "w").write(s.url)
time.sleep(3000)
PYEOF
sleep 2
URL=$(cat /tmp/idx.url)
V=$("$PY" -c "import sys; print('%d.%d' % sys.version_info[:2])")
G=$("$PY" -c "import os; print(os.confstr('CS_GNU_LIBC_VERSION').split()[1].replace('.', '_'))")
mkdir -p /tmp/lp/manifests
reqs=$(sed 's/.*/"&"/' /tmp/reqs.txt | paste -sd, -)
cat > /tmp/lp/manifests/stack.toml <<TOML
[environment]
python = "$V"
platform = "manylinux_${G}_x86_64"
requirements = [$reqs]
[[index]]
name = "local"
url = "$URL/simple"
TOML
t() { "$PY" -c "import subprocess,sys,time; t=time.perf_counter(); r=subprocess.run(sys.argv[2:],capture_output=True,text=True); print(f'{sys.argv[1]:34s} {time.perf_counter()-t:7.3f} s rc={r.returncode}', (r.stderr or '')[-600:].strip())" "$@"; }
cd /tmp/lp
t "envbox lock cold" "$E" --home /tmp/lh0 lock stack
rm -rf /tmp/lh0 manifests/pylock.stack.toml
t "envbox lock cold (again)" "$E" --home /tmp/lh lock stack
"$E" --home /tmp/lh --json lock stack --upgrade
t "envbox lock (up to date)" "$E" --home /tmp/lh lock stack
t "envbox lock --upgrade (warm cache)" "$E" --home /tmp/lh lock stack --upgrade
t "envbox lock --upgrade (warm cache)" "$E" --home /tmp/lh lock stack --upgrade
echo "locked packages: $(grep -c '^\[\[packages\]\]' manifests/pylock.stack.toml)"
t "uv pip compile cold" uv pip compile -q /tmp/reqs.txt --index-url "$URL/simple" --python-version "$V" --cache-dir /tmp/uvc -o /tmp/uv.txt
t "uv pip compile warm" uv pip compile -q /tmp/reqs.txt --index-url "$URL/simple" --python-version "$V" --cache-dir /tmp/uvc -o /tmp/uv.txt
t "uv pip compile warm" uv pip compile -q /tmp/reqs.txt --index-url "$URL/simple" --python-version "$V" --cache-dir /tmp/uvc -o /tmp/uv.txt
echo "uv resolved: $(grep -c '==' /tmp/uv.txt)"
