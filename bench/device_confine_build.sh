#!/bin/sh
# The CUDA-extension sdist of device_cuda_build.sh built by this build (the build confined as all
# foreign code: env/confine.hpp) and by a baseline build (BASELINE, the commit before), each in
# a home of its own, alternating, ROUNDS times: lock, cold create (the stack fetched, the build
# environment made, nvcc), the kernel run on the GPU. Usage (on the device, from the repository
# root, with both bundles, the repack script and a `wheel` wheel carried):
#   BASELINE=dist/base.tar.gz sh bench/device_confine_build.sh dist/envbox-*.tar.gz .device/repack_wheels.py OUTDIR WHEEL_WHL
set -u
bundle="$1"; repack="$2"; out="$3"; wheel_whl="$4"
mkdir -p "$out"
exec > "$out/device_confine_build.txt" 2>&1
. bench/device_common.sh
. bench/device_cudaext.sh
export ENVBOX_PYTHON="$PY"
manifest 9.0 16
for round in $(seq "${ROUNDS:-1}"); do
    for who in new base; do
        if [ "$who" = new ]; then X=$E; else X=$B; fi
        rm -rf "/tmp/h-$who" manifests/pylock.gpu.toml
        echo "== round $round, $who"
        t "lock ($who)" "$X" --home "/tmp/h-$who" lock gpu
        t "create gpu, cold, nvcc build ($who)" "$X" --home "/tmp/h-$who" create gpu
        "$X" --home "/tmp/h-$who" run gpu -- python -c "
import torch, cudaext
print('cudaext.add_one', cudaext.add_one(torch.arange(4, dtype=torch.float32, device='cuda')).tolist())"
        tail -3 "/tmp/h-$who"/tmp/build-*/build.log 2>/dev/null
    done
done
