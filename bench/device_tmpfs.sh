#!/bin/sh
# Cold create without the disk: the same repacked wheels (on disk) installed into a store and
# environments on tmpfs (/dev/shm), envbox twice and uv once (its cache on tmpfs too), to show
# what the CPU side costs when the disk's write bandwidth is out of the picture.
# Usage (on the device): sh bench/device_tmpfs.sh dist/envbox-*.tar.gz .device/repack_wheels.py OUTDIR
set -u
bundle="$1"; repack="$2"; out="$3"
mkdir -p "$out"
exec > "$out/device_tmpfs.txt" 2>&1
. bench/device_common.sh
mkdir -p /tmp/p/manifests
"$PY" tools/wheelgen.py lock /tmp/p/manifests/pylock.torch.toml /tmp/wh/*.whl
sync
df -h /dev/shm | tail -1
cd /tmp/p
export ENVBOX_PYTHON="$PY"
t() { label="$1"; shift; "$PY" -c "import resource,subprocess,sys,time; t=time.perf_counter(); r=subprocess.run(sys.argv[2:],capture_output=True,text=True); print(f'{sys.argv[1]:30s} {time.perf_counter()-t:6.2f} s  peak RSS {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss/1024:5.0f} MB rc={r.returncode}'); [print('   ', l.strip()) for l in r.stderr.splitlines() if 'seconds' in l or r.returncode]" "$label" "$@"; }
t "envbox create cold (tmpfs)" "$E" --home /dev/shm/h1 -vv create torch
rm -rf /dev/shm/h1
t "envbox create cold (tmpfs)" "$E" --home /dev/shm/h1 -vv create torch
t "envbox create warm (tmpfs)" "$E" --home /dev/shm/h1 create torch2 --lock /tmp/p/manifests/pylock.torch.toml
rm -rf /dev/shm/h1
names=$(awk -F'\t' '{print $1}' /tmp/repack.txt | sed 's/==.*//' | tr '\n' ' ')
uv venv -q -p "$PY" /dev/shm/uv1; uv venv -q -p "$PY" /dev/shm/uv2
t "uv pip install cold (tmpfs)" uv pip install -q --python /dev/shm/uv1/bin/python --no-deps --no-index --find-links /tmp/wh --cache-dir /dev/shm/uvc $names
t "uv pip install warm (tmpfs)" uv pip install -q --python /dev/shm/uv2/bin/python --no-deps --no-index --find-links /tmp/wh --cache-dir /dev/shm/uvc $names
rm -rf /dev/shm/uv1 /dev/shm/uv2 /dev/shm/uvc
