#!/bin/sh
# The guarantee on the real stack, in one run on the GPU host (device tool): the installed
# PyTorch stack repacked into wheels, then: envbox create cold and warm (timed, with cp -al of
# the result beside it), verify and verify --deep, the environment used for real (bf16 matmul on
# the GPU), a write into a shared file seen from another environment and repaired by
# create --force, and a job started with `envbox run` that survives `create --force` plus
# `gc --keep 1` of its environment and then imports a module it had not loaded yet. Also prints
# the real stack's namespace files (nvidia/__init__.py and friends) as their RECORDs list them.
# Usage (on the device, from the repository root, with the bundle and the repack script carried):
#   sh bench/device_guarantee.sh dist/envbox-*.tar.gz .device/repack_wheels.py OUTDIR
set -u
bundle="$1"; repack="$2"; out="$3"
mkdir -p "$out"
exec > "$out/device_guarantee.txt" 2>&1
. bench/device_common.sh
t() { # t LABEL CMD... : wall seconds and exit status
    label="$1"; shift
    s=$(date +%s%N); "$@" > /tmp/t.out 2> /tmp/t.err; rc=$?; e=$(date +%s%N)
    printf '%-34s %6d ms  rc=%s\n' "$label" "$(( (e - s) / 1000000 ))" "$rc"
    [ "$rc" = 0 ] || tail -5 /tmp/t.err
}
echo "== machine"; head -1 /etc/os-release; nproc; cat /sys/module/nvidia/version; $E --version
echo "== namespace files the real stack's wheels share (RECORD rows)"
grep -h '^nvidia/__init__.py,\|^nvidia/[a-z0-9_]*/__init__.py,' "$SP"/nvidia_*.dist-info/RECORD | sort | uniq -c | sort -rn | head -8
echo "wheels: $(wc -l < /tmp/repack.txt)"
sync
rm -rf /tmp/h /tmp/p /tmp/cpal; mkdir -p /tmp/p/manifests
"$PY" tools/wheelgen.py lock /tmp/p/manifests/pylock.torch.toml /tmp/wh/*.whl
cd /tmp/p
export ENVBOX_PYTHON="$PY"
echo "== create"
t "create cold" "$E" --home /tmp/h create torch
t "create warm" "$E" --home /tmp/h create torch2 --lock /tmp/p/manifests/pylock.torch.toml
t "create warm (again)" "$E" --home /tmp/h create torch3 --lock /tmp/p/manifests/pylock.torch.toml
G=$(readlink -f /tmp/h/envs/*/torch3/current)
t "cp -al site-packages" cp -al "$(ls -d "$G"/lib/python3*/site-packages)" /tmp/cpal
t "verify" "$E" --home /tmp/h verify torch
t "verify --deep" "$E" --home /tmp/h verify torch --deep
echo "== the environment is real"
"$E" --home /tmp/h run torch -- python -c "
import torch
x = torch.randn(4096, 4096, device='cuda', dtype=torch.bfloat16); y = x @ x; torch.cuda.synchronize()
print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0), 'bf16 matmul', tuple(y.shape))"
echo "== a job survives create --force + gc --keep 1 of its environment"
"$E" --home /tmp/h run torch -- python -c "
import time, torch, os
print('job started in', os.path.realpath(torch.__file__).split('/lib/')[0], flush=True)
time.sleep(25)
import torch._dynamo, torch.distributed.fsdp
print('late imports ok', flush=True)" > /tmp/job.out 2>&1 &
job=$!
sleep 8
t "create --force (new generation)" "$E" --home /tmp/h create torch --force
t "gc --keep 1" "$E" --home /tmp/h gc --keep 1
cat /tmp/t.err
wait $job; echo "job exit: $?"; cat /tmp/job.out
t "gc --keep 1 after the job" "$E" --home /tmp/h gc --keep 1
cat /tmp/t.err
echo "== a write into a shared file is seen from the other environment, and repaired"
F=$(ls -d /tmp/h/envs/*/torch2/current/lib/python3*/site-packages/torch/version.py)
chmod u+w "$F"; echo "# tampered" >> "$F"
t "verify torch3 (shares the file)" "$E" --home /tmp/h verify torch3
head -3 /tmp/t.out
t "create --force torch3" "$E" --home /tmp/h create --force torch3 --lock /tmp/p/manifests/pylock.torch.toml
cat /tmp/t.err
t "verify --deep torch3 after repair" "$E" --home /tmp/h verify --deep torch3
t "verify torch2 (still links the old inode)" "$E" --home /tmp/h verify torch2
t "create warm after the repair" "$E" --home /tmp/h create torch4 --lock /tmp/p/manifests/pylock.torch.toml
t "verify --deep torch4" "$E" --home /tmp/h verify --deep torch4
echo "== done"
