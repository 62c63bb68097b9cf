# Sourced by the GPU-host benchmarks (bench/device_*.sh) after `bundle`, `repack` and `out` are
# set: unpacks the portable envbox bundle into /tmp and, once per machine, repacks the host's
# installed PyTorch stack into wheels in /tmp/wh (repack_wheels.py; one line per wheel in
# /tmp/repack.txt). Sets E (envbox), PY (python3) and SP (the stack's site-packages).
mkdir -p "$out"
tar -C /tmp -xzf "$bundle"
E=$(ls -d /tmp/envbox-*/bin/envbox | head -1)
PY=$(command -v python3)
SP=$("$PY" -c "import site; print(site.getsitepackages()[0])")
[ -s /tmp/repack.txt ] || "$PY" "$repack" "$SP" /tmp/wh --jobs "$(nproc)" > /tmp/repack.txt
