#!/bin/sh
# The writeback policy compared on the GPU host, on the same wheels, three rounds: A starts
# writeback for every object as it is written (what envbox does), B only for members streamed to
# disk (over 1 MiB), C never (the final syncfs alone). Each variant is a portable bundle built
# with the policy patched in src/store/store.cpp (start_writeback calls), carried as
# .device/var{A,B,C}.tar.gz. Usage (on the device): sh bench/device_writeback_ab.sh OUTDIR
set -u
out="$1"; exec > "$out/ab.txt" 2>&1
PY=$(command -v python3)
for v in A B C; do mkdir -p /tmp/$v; tar -C /tmp/$v -xzf .device/var$v.tar.gz; done
SP=$("$PY" -c "import site; print(site.getsitepackages()[0])")
"$PY" .device/repack_wheels.py "$SP" /tmp/wh --jobs "$(nproc)" > /tmp/repack.txt
mkdir -p /tmp/p/manifests
"$PY" tools/wheelgen.py lock /tmp/p/manifests/pylock.torch.toml /tmp/wh/*.whl
sync; sleep 2
cd /tmp/p
export ENVBOX_PYTHON="$PY"
for round in 1 2 3; do for v in A B C; do
  E=$(ls -d /tmp/$v/envbox-*/bin/envbox)
  s=$(date +%s.%N)
  "$E" --home /tmp/h$v -vv create torch 2>/tmp/err.txt >/dev/null
  e=$(date +%s.%N)
  echo "$v round $round: $(echo "$s $e" | awk '{printf "%.2f", $2-$1}') s  $(grep seconds /tmp/err.txt | tr '\n' ' ')"
  rm -rf /tmp/h$v; sync; sleep 1
done; done
