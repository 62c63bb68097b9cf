#!/bin/sh
# Foreign code confined and `run` as root without the capabilities that could undo its sandbox,
# on the GPU host (device tool), this build beside a baseline build (BASELINE, the commit before
# the change): `check` of the real stack (every module imported inside the foreign-code
# confinement, the GPU measured through /dev/nvidia*), then a one-process-per-GPU `torchrun`
# job under `envbox run` as root (NCCL all-reduce, a `torch.compile` cold and warm), sandboxed
# and with `--sandbox off`; its capabilities are printed from inside. WHO="new" leaves the
# baseline out, CHECK_ONLY=1 the torchrun job. Usage (on the device, from the repository root,
# with both bundles and the repack script carried):
#   BASELINE=dist/base.tar.gz sh bench/device_confine.sh dist/envbox-*.tar.gz .device/repack_wheels.py OUTDIR
set -u
bundle="$1"; repack="$2"; out="$3"
mkdir -p "$out"
exec > "$out/device_confine.txt" 2>&1
. bench/device_common.sh
REPO=$(pwd)
echo "== machine"; head -1 /etc/os-release; nproc; nvidia-smi -L; id -u; $E --version
echo "device nodes before any CUDA use:"; ls -la /dev/nvidia* /dev/dri 2>&1 | head -20
grep -E " /dev[ /]| /proc | /sys " /proc/self/mountinfo | cut -d' ' -f4-10
echo "lsmod nvidia: $(grep -o '^nvidia[a-z_]*' /proc/modules | tr '\n' ' ')"
export ENVBOX_PYTHON="$PY"
rm -rf /tmp/rr; mkdir -p /tmp/rr/manifests && cd /tmp/rr
"$PY" "$REPO/tools/wheelgen.py" lock manifests/pylock.infer.toml /tmp/wh/*.whl > /dev/null
cat > /tmp/rr/job.py <<'PY'
import os, time, torch, torch.distributed as dist
dist.init_process_group("nccl")
rank = dist.get_rank()
torch.cuda.set_device(rank % torch.cuda.device_count())
x = torch.ones(1 << 22, device="cuda")
dist.all_reduce(x)
torch.cuda.synchronize()
t = time.perf_counter()
for _ in range(100):
    dist.all_reduce(x)
torch.cuda.synchronize()
reduce_ms = (time.perf_counter() - t) * 10
f = torch.compile(lambda a: (a.sin() * a.cos()).sum())
a = torch.randn(4096, 4096, device="cuda")
t = time.perf_counter()
f(a)
torch.cuda.synchronize()
first = time.perf_counter() - t
caps = [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0]
if rank == 0:
    print(f"world {dist.get_world_size()} all-reduce(16 MiB) {reduce_ms:.3f} ms "
          f"compile+first call {first:.2f} s CapEff {caps}", flush=True)
dist.destroy_process_group()
PY
NGPU=$(nvidia-smi -L | wc -l)
for who in ${WHO:-new base}; do
    if [ "$who" = new ]; then X=$E; else X=$B; fi
    H=/tmp/h-$who; rm -rf "$H"
    echo "== $who: create"
    timed "create infer ($who)" "$X" --home "$H" create infer --frozen
    echo "== $who: check (every module imported, the GPU measured)"
    keep='^(GPU|imports|device|context|matmul|envbox: sandbox)' timed "check infer ($who)" "$X" --home "$H" -v check infer
    [ -n "${CHECK_ONLY:-}" ] && continue
    for mode in sandbox off; do
        opt=""; [ "$mode" = off ] && opt="--sandbox off"
        rm -rf "$H/cache/compile"
        for round in cold warm; do
            keep='^world' timed "torchrun x$NGPU, $mode, $round ($who)" "$X" --home "$H" run $opt infer -- torchrun --nproc-per-node "$NGPU" /tmp/rr/job.py
        done
    done
done
if [ -n "${DIAG:-}" ]; then  # CUDA under each namespace, one at a time, with util-linux's unshare
    PYE=$(ls -d /tmp/h-new/envs/*/infer/gen-1/bin/python | head -1)
    cuda='import torch; print(torch.cuda.is_available())'
    for args in "-U -r" "-U -r -m" "-U -r -m -p -f --mount-proc" "-U -r -m -p -f --mount-proc -n -i -u"; do
        echo "unshare $args: $(unshare $args "$PYE" -c "$cuda" 2>&1 | tail -1)"
    done
    echo "no capabilities: $(setpriv --bounding-set=-all --inh-caps=-all --no-new-privs "$PYE" -c "$cuda" 2>&1 | tail -1)"
    echo "private /dev: $(unshare -U -r -m -p -f --mount-proc sh -c 'mkdir -p /tmp/d && mount -t tmpfs t /tmp/d &&
        for n in null zero urandom $(cd /dev && ls -d nvidia*); do [ -d /dev/$n ] && mkdir /tmp/d/$n || touch /tmp/d/$n; mount --bind /dev/$n /tmp/d/$n; done &&
        mount --move /tmp/d /dev && exec "$0" -c "$1"' "$PYE" "$cuda" 2>&1 | tail -1)"
fi
[ -n "${CHECK_ONLY:-}" ] && exit 0
echo "== the capabilities a root workload keeps (new)"
"$E" --home /tmp/h-new run infer -- python -c "print([l for l in open('/proc/self/status') if l.startswith(('CapEff', 'CapBnd', 'NoNewPrivs'))])"
"$E" --home /tmp/h-new run infer -- sh -c 'mount -o remount,rw,bind /tmp/h-new 2>&1; echo remount rc=$?'
