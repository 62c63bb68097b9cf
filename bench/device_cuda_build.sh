#!/bin/sh
# A CUDA extension built from its sdist against the environment's own torch, on the GPU host
# (device tool): the installed PyTorch stack repacked into wheels in a flat folder with an sdist
# beside them whose setup.py builds a torch.utils.cpp_extension.CUDAExtension (an add-one kernel
# compiled by nvcc), locked with `[build.cudaext] dependencies = ["torch"]` (the build sees the
# lock's own torch) and created: the build's time, the kernel run on the GPU in the environment,
# a second environment of the same lock (the store's wheel: nothing built), a speed-only
# variable changed (nothing built) and TORCH_CUDA_ARCH_LIST changed (built again).
# Usage (on the device, from the repository root, with the bundle, the repack script and a
# `wheel` wheel carried, for a host whose stack has none):
#   sh bench/device_cuda_build.sh dist/envbox-*.tar.gz .device/repack_wheels.py OUTDIR WHEEL_WHL
set -u
bundle="$1"; repack="$2"; out="$3"; wheel_whl="$4"
mkdir -p "$out"
exec > "$out/device_cuda_build.txt" 2>&1
. bench/device_common.sh
. bench/device_cudaext.sh
export ENVBOX_PYTHON="$PY"
records() { ls /tmp/h/store-v1/builds | wc -l; }
manifest 9.0 16
echo "== lock and create"
t "lock" "$E" --home /tmp/h lock gpu
grep -A8 '^\[tool.envbox\]' manifests/pylock.gpu.toml | grep -E 'builds|build-settings'
t "create gpu (cold: fetch, build env, nvcc build)" "$E" --home /tmp/h create gpu
echo "build records: $(records)"; grep -h '^toolchain\|^runtime torch%20\|^variable' /tmp/h/store-v1/builds/*
echo "== the kernel runs on the GPU, in the environment"
"$E" --home /tmp/h run gpu -- python -c "
import torch, cudaext
x = torch.arange(8, dtype=torch.float32, device='cuda')
y = cudaext.add_one(x); torch.cuda.synchronize()
print('cudaext.add_one', y.tolist(), 'on', torch.cuda.get_device_name(0), 'torch', torch.__version__)"
echo "== again from the store"
t "create gpu2 (same lock: the store's wheel)" "$E" --home /tmp/h create gpu2 --lock manifests/pylock.gpu.toml
echo "build records: $(records)"
manifest 9.0 4
t "lock (MAX_JOBS 4: speed only)" "$E" --home /tmp/h lock gpu
t "create gpu (nothing built)" "$E" --home /tmp/h create gpu
echo "build records: $(records)"
manifest "9.0+PTX" 16
t "lock (TORCH_CUDA_ARCH_LIST 9.0+PTX)" "$E" --home /tmp/h lock gpu
t "create gpu (built again)" "$E" --home /tmp/h create gpu
echo "build records: $(records)"
"$E" --home /tmp/h run gpu -- python -c "
import torch, cudaext; print('after the rebuild', cudaext.add_one(torch.ones(2, device='cuda')).tolist())"
