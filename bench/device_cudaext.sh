# Sourced by device_cuda_build.sh and device_confine_build.sh after device_common.sh and
# `wheel_whl` are set: defines `t` (a step's wall time and status), prints the machine, writes
# the CUDA-extension sdist (an add-one kernel built by torch.utils.cpp_extension) into /tmp/wh
# beside the repacked stack, defines `manifest ARCH JOBS` (manifests/gpu.toml locking it with
# `[build.cudaext] dependencies = ["torch"]`) and enters the project /tmp/p.
t() { # t LABEL CMD... : wall seconds and exit status
    label="$1"; shift
    s=$(date +%s%N); "$@" > /tmp/t.out 2> /tmp/t.err; rc=$?; e=$(date +%s%N)
    printf '%-44s %7d ms  rc=%s\n' "$label" "$(( (e - s) / 1000000 ))" "$rc"
    [ "$rc" = 0 ] || tail -25 /tmp/t.err
}
echo "== machine"; head -1 /etc/os-release; nproc; nvidia-smi -L; $E --version
NVCC=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
CUDA_HOME=$(dirname "$(dirname "$NVCC")")
echo "nvcc: $NVCC ($("$NVCC" --version | grep release))"; c++ --version | head -1
"$PY" -c "import sysconfig, os; p = sysconfig.get_paths()['include']; print('Python.h', p, os.path.exists(p + '/Python.h'))"
TORCH=$(grep '^torch==' /tmp/repack.txt | cut -f1 | sed 's/^torch==//')
echo "torch $TORCH; build requirements on the host: $(grep -E '^(setuptools|wheel|ninja)==' /tmp/repack.txt | cut -f1 | tr '\n' ' ')"
grep -q '^wheel==' /tmp/repack.txt || cp "$wheel_whl" /tmp/wh/

echo "== the sdist"
rm -rf /tmp/src /tmp/h /tmp/p; mkdir -p /tmp/src/cudaext-1.0/cudaext /tmp/src/cudaext-1.0/csrc /tmp/p/manifests
cd /tmp/src/cudaext-1.0
cat > pyproject.toml <<'TOML'
[build-system]
requires = ["setuptools>=64", "wheel"]
build-backend = "setuptools.build_meta"
TOML
printf 'Metadata-Version: 2.1\nName: cudaext\nVersion: 1.0\n' > PKG-INFO
cat > setup.py <<'PY'
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension
setup(name="cudaext", version="1.0", packages=["cudaext"], install_requires=["torch"],
      ext_modules=[CUDAExtension("cudaext._C", ["csrc/add.cpp", "csrc/add_kernel.cu"])],
      cmdclass={"build_ext": BuildExtension})
PY
printf 'import torch\nfrom ._C import add_one\n' > cudaext/__init__.py
cat > csrc/add.cpp <<'CPP'
#include <torch/extension.h>
torch::Tensor add_one_cuda(torch::Tensor x);
torch::Tensor add_one(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    return add_one_cuda(x);
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("add_one", &add_one); }
CPP
cat > csrc/add_kernel.cu <<'CU'
#include <torch/extension.h>
__global__ void add_one_kernel(const float* x, float* y, int64_t n) {
    const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) y[i] = x[i] + 1.0f;
}
torch::Tensor add_one_cuda(torch::Tensor x) {
    auto in = x.contiguous().to(torch::kFloat);
    auto y = torch::empty_like(in);
    const int64_t n = in.numel();
    add_one_kernel<<<(n + 255) / 256, 256>>>(in.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
CU
tar -C /tmp/src -czf /tmp/wh/cudaext-1.0.tar.gz cudaext-1.0
manifest() { # manifest ARCH JOBS
cat > /tmp/p/manifests/gpu.toml <<TOML
[environment]
python = "3.12"
platform = "manylinux_2_28_x86_64"
requirements = ["torch==$TORCH", "cudaext"]

[[index]]
name = "stack"
url = "file:///tmp/wh"

[build.cudaext]
build = "allow"
dependencies = ["torch"]
requires-dist = ["torch"]
variables = { TORCH_CUDA_ARCH_LIST = "$1", CUDA_HOME = "$CUDA_HOME", MAX_JOBS = "$2" }
speed-variables = ["MAX_JOBS"]
TOML
}
cd /tmp/p
