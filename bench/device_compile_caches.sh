#!/bin/sh
# Run-time compile caches per environment, on the GPU host (device tool): the installed PyTorch
# stack repacked into wheels and created as two environments of one lock, `a` and `b`; a real
# torch.utils.cpp_extension.load_inline CUDA extension (an add-one kernel, nvcc and ninja at run
# time) built and run in `a` through `envbox run`, run again in `a` (the cache: nothing built),
# then in `b` (its own folder: built again, never `a`'s `.so`). Shows each run's
# TORCH_EXTENSIONS_DIR, the module file it loaded and the folders with their bytes.
# Usage (on the device, from the repository root, with the bundle and the repack script carried):
#   sh bench/device_compile_caches.sh dist/envbox-*.tar.gz .device/repack_wheels.py OUTDIR
set -u
bundle="$1"; repack="$2"; out="$3"
mkdir -p "$out"
exec > "$out/device_compile_caches.txt" 2>&1
. bench/device_common.sh
REPO=$(pwd)
echo "== machine"; head -1 /etc/os-release; nproc; nvidia-smi -L; $E --version
NVCC=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
export CUDA_HOME=$(dirname "$(dirname "$NVCC")")
export PATH="$CUDA_HOME/bin:$PATH" TORCH_CUDA_ARCH_LIST=9.0
echo "nvcc: $NVCC ($("$NVCC" --version | grep release))"
rm -rf /tmp/cc /tmp/hc; mkdir -p /tmp/cc/manifests && cd /tmp/cc
"$PY" "$REPO/tools/wheelgen.py" lock manifests/pylock.a.toml /tmp/wh/*.whl > /dev/null
cp manifests/pylock.a.toml manifests/pylock.b.toml
export ENVBOX_PYTHON="$PY"
for env in a b; do
    s=$(date +%s%N); "$E" --home /tmp/hc create "$env" --no-compile > /dev/null 2> /tmp/cc/$env.err
    echo "create $env: rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms"; tail -3 /tmp/cc/$env.err
done
cat > /tmp/cc/ext.py <<'PY'
import os, time, torch
from torch.utils.cpp_extension import load_inline
cuda = r'''
__global__ void add_one_kernel(float* x, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}
torch::Tensor add_one(torch::Tensor x) {
    add_one_kernel<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), x.numel());
    return x;
}
'''
t = time.perf_counter()
m = load_inline("envbox_add_one", cpp_sources="torch::Tensor add_one(torch::Tensor x);",
                cuda_sources=cuda, functions=["add_one"])
took = time.perf_counter() - t
x = m.add_one(torch.zeros(4, device="cuda"))
print(f"load_inline {took:.1f} s; result {x.tolist()}")
print("TORCH_EXTENSIONS_DIR", os.environ.get("TORCH_EXTENSIONS_DIR"))
print("module", m.__file__)
PY
for step in "a" "a (again)" "b"; do
    env=${step%% *}
    echo "== run in $step"
    s=$(date +%s%N)
    "$E" --home /tmp/hc run -v "$env" -- python /tmp/cc/ext.py > /tmp/cc/run.out 2>&1
    echo "rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms"
    grep -E "load_inline|TORCH_EXTENSIONS_DIR|^module|set TORCH_EXTENSIONS_DIR|Error|error" /tmp/cc/run.out | head -12
done
echo "== the compile caches envbox made"
find /tmp/hc/cache/compile -maxdepth 3 -mindepth 3 -type d | sort
find /tmp/hc/cache/compile -name '*.so' | sort
for env in a b; do "$E" --home /tmp/hc --json show "$env" | "$PY" -c "import json, sys; r = json.load(sys.stdin); c = r['compile_caches']; print('show $env compile_caches:', c['path'], c['bytes'], 'bytes')"; done
