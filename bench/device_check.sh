#!/bin/sh
# `envbox check` on the real stack, on the GPU host (device tool): the installed PyTorch stack
# repacked into wheels and created as environment `infer`; checked (every module imported, the
# GPU figures); then a second generation of the same lock with `[run.env] CUDA_MODULE_LOADING =
# "EAGER"` in the manifest (every kernel of every loaded library is loaded at context creation:
# the context's memory grows by hundreds of MB), checked with `--compare 1`; then `history`.
# Usage (on the device, from the repository root, with the bundle and the repack script carried):
#   sh bench/device_check.sh dist/envbox-*.tar.gz .device/repack_wheels.py OUTDIR
set -u
bundle="$1"; repack="$2"; out="$3"
mkdir -p "$out"
exec > "$out/device_check.txt" 2>&1
. bench/device_common.sh
REPO=$(pwd)
echo "== machine"; head -1 /etc/os-release; nproc; nvidia-smi -L; $E --version
echo "stack: $(wc -l < /tmp/repack.txt) wheels from $SP"
rm -rf /tmp/ck /tmp/hk; mkdir -p /tmp/ck/manifests && cd /tmp/ck
"$PY" "$REPO/tools/wheelgen.py" lock manifests/pylock.infer.toml /tmp/wh/*.whl > /dev/null
export ENVBOX_PYTHON="$PY"
s=$(date +%s%N); "$E" --home /tmp/hk create infer --frozen > /dev/null 2> /tmp/ck/create.err
echo "create: rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms"
echo "== check, generation 1"
s=$(date +%s%N); "$E" --home /tmp/hk -v check infer > /tmp/ck/check1.txt 2> /tmp/ck/check1.err; rc=$?
echo "rc=$rc $(( ($(date +%s%N) - s) / 1000000 )) ms"
grep -v "^import .* ok " /tmp/ck/check1.txt; tail -3 /tmp/ck/check1.err
echo "the slowest imports:"; grep "^import .* ok " /tmp/ck/check1.txt | sort -k4 -n -r | head -8
echo "which wheels install a top-level scripts/ folder:"
for w in /tmp/wh/*.whl; do "$PY" -c "import sys, zipfile; n = [m for m in zipfile.ZipFile(sys.argv[1]).namelist() if m.startswith('scripts/')]; n and print(sys.argv[1].rsplit('/', 1)[1], len(n), 'members, e.g.', n[0])" "$w"; done
echo "== generation 2: the same lock, [run.env] CUDA_MODULE_LOADING = \"EAGER\""
# The lock was made from the wheels alone: a manifest written now would be newer than it, so
# the second generation is built from the same lock with --frozen and the variable set through
# the manifest's [run.env], which run and check read.
cat > manifests/infer.toml <<EOF
[environment]
python = "$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
platform = "$("$PY" -c 'import platform; print("manylinux_%s_x86_64" % platform.libc_ver()[1].replace(".", "_"))')"
requirements = []

[run.env]
CUDA_MODULE_LOADING = "EAGER"
EOF
"$E" --home /tmp/hk create infer --frozen --force > /dev/null 2>> /tmp/ck/create.err; rc=$?
echo "create --force: rc=$rc"
if [ $rc -ne 0 ]; then  # the variable from the calling environment instead
    tail -3 /tmp/ck/create.err; rm manifests/infer.toml; export CUDA_MODULE_LOADING=EAGER
    "$E" --home /tmp/hk create infer --frozen --force > /dev/null 2>> /tmp/ck/create.err
fi
s=$(date +%s%N); "$E" --home /tmp/hk -v check infer --compare 1 > /tmp/ck/check2.txt 2> /tmp/ck/check2.err; rc=$?
grep -v "^import .* ok " /tmp/ck/check2.txt; grep -i "cuda_module\|sandbox\|error" /tmp/ck/check2.err
echo "rc=$rc $(( ($(date +%s%N) - s) / 1000000 )) ms"
echo "== history"
"$E" --home /tmp/hk history infer | grep -v "^           [+~-] " | head -20
echo "== the kept records"
ls -l /tmp/hk/envs/*/infer/checks/
