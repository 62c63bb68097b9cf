#!/bin/sh
# The link check on the real stack, on the GPU host (device tool): the installed PyTorch stack
# repacked into wheels, locked with each package's dependencies from its METADATA (as a lock
# from `envbox lock` records them), then created cold and warm: the check's findings (the
# target: none that refuse; every note listed), its cost against the whole create (cold creates
# with the check and without it, ENVBOX_BENCH_NO_LINK_CHECK, alternately), the SONAMEs
# of NVIDIA's CUDA libraries in the stack (the family table's evidence), and two extensions
# built here with the compiler against the real stack: one linking CUDA 12's libcudart (refused,
# exit 3) and one needing a c10 symbol the real libc10.so does not export (refused, exit 8).
# Usage (on the device, from the repository root, with the bundle and the repack script carried):
#   sh bench/device_link_check.sh dist/envbox-*.tar.gz .device/repack_wheels.py OUTDIR
set -u
bundle="$1"; repack="$2"; out="$3"
mkdir -p "$out"
exec > "$out/device_link_check.txt" 2>&1
. bench/device_common.sh
REPO=$(pwd)
echo "== machine"; head -1 /etc/os-release; nproc; nvidia-smi -L; $E --version
echo "stack: $(wc -l < /tmp/repack.txt) wheels from $SP"
mkdir -p /tmp/p/manifests
"$PY" tools/wheelgen.py lock /tmp/p/manifests/pylock.torch.toml /tmp/wh/*.whl
# Each package's dependencies, from its METADATA's Requires-Dist (those without an extra).
"$PY" - /tmp/p/manifests/pylock.torch.toml /tmp/wh <<'PYEOF'
import glob, os, re, sys, zipfile
lock, wh = sys.argv[1], sys.argv[2]
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
deps = {}
for w in glob.glob(os.path.join(wh, "*.whl")):
    z = zipfile.ZipFile(w)
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    text = z.read(meta).decode("utf-8", "replace").split("\n\n")[0]
    name = norm(re.search(r"^Name: *(.+)$", text, re.M).group(1).strip())
    reqs = [l[len("Requires-Dist:"):].strip() for l in text.splitlines() if l.startswith("Requires-Dist:")]
    deps[name] = sorted({norm(re.match(r"[A-Za-z0-9._-]+", r).group(0)) for r in reqs if "extra" not in r})
text = open(lock).read()
names = set(re.findall(r'^name = "([^"]+)"$', text, re.M))
def entry(m):
    listed = ", ".join(f'{{ name = "{d}" }}' for d in deps.get(m.group(1), []) if d in names)
    return m.group(0) + f"dependencies = [{listed}]\n"
open(lock, "w").write(re.sub(r'name = "([^"]+)"\nversion = "[^"]+"\n', entry, text))
print("dependencies recorded for", len(names), "packages")
PYEOF
cd /tmp/p
export ENVBOX_PYTHON="$PY"
report() { # report LABEL JSON-FILE: the whole create's seconds, the check's, and its findings
    "$PY" - "$1" "$2" <<'PYEOF'
import json, sys, collections
label, path = sys.argv[1], sys.argv[2]
try:
    r = json.loads(open(path).read().strip().splitlines()[-1])
except Exception as e:
    print(label, "no JSON:", e); sys.exit()
l = r["link"]
kinds = collections.Counter(f["kind"] for f in l["findings"])
print(f"{label:28s} create {r['seconds']:7.2f} s  link check {l['seconds']:6.3f} s (facts {l.get('facts_seconds', 0):.3f} s) "
      f"({100 * l['seconds'] / r['seconds']:.1f} %)  native files {l['native_files']}  findings {dict(kinds)}")
for f in l["findings"]:
    print("   ", f["kind"], "|", f["message"])
PYEOF
}
echo "== create cold (empty store): with the check and without it (ENVBOX_BENCH_NO_LINK_CHECK), alternately, three times each"
: > /tmp/totals.txt
for k in 1 2 3; do
    rm -rf /tmp/h0
    "$E" --home /tmp/h0 --json create torch > /tmp/c0.json 2> /tmp/c0.err; echo "rc=$?"; tail -3 /tmp/c0.err
    report "cold $k" /tmp/c0.json
    "$PY" -c "import json; print('with', json.loads(open('/tmp/c0.json').read().strip().splitlines()[-1])['seconds'])" >> /tmp/totals.txt
    rm -rf /tmp/h0
    ENVBOX_BENCH_NO_LINK_CHECK=1 "$E" --home /tmp/h0 --json create torch > /tmp/n0.json 2> /dev/null; echo "rc=$?"
    "$PY" -c "import json; s = json.loads(open('/tmp/n0.json').read().strip().splitlines()[-1])['seconds']; print(f'cold {$k}, no check              create {s:7.2f} s'); open('/tmp/totals.txt', 'a').write(f'without {s}\n')"
done
"$PY" - <<'PYEOF'
import statistics
runs = {"with": [], "without": []}
for line in open("/tmp/totals.txt"):
    k, v = line.split()
    runs[k].append(float(v))
w, n = statistics.median(runs["with"]), statistics.median(runs["without"])
print(f"cold create, median of {len(runs['with'])}: with the check {w:.2f} s, without {n:.2f} s: {100 * (w - n) / n:+.1f} %")
PYEOF
rm -rf /tmp/h0
"$E" --home /tmp/h1 --json create torch > /tmp/c1.json 2> /tmp/c1.err; echo "rc=$?"
report "cold (kept for what follows)" /tmp/c1.json
"$E" --home /tmp/h1 --json create torch2 --lock /tmp/p/manifests/pylock.torch.toml > /tmp/w1.json 2>/dev/null
report "warm" /tmp/w1.json
"$E" --home /tmp/h1 --json create torch3 --lock /tmp/p/manifests/pylock.torch.toml > /tmp/w2.json 2>/dev/null
report "warm (again)" /tmp/w2.json
s=$(date +%s%N); "$E" --home /tmp/h1 verify torch > /dev/null 2>&1; echo "verify rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms"
echo "== torchaudio's requirements (its libraries need libc10.so by SONAME)"
"$PY" -c "import glob, zipfile; z = zipfile.ZipFile(glob.glob('/tmp/wh/torchaudio-*.whl')[0]); m = [n for n in z.namelist() if n.endswith('.dist-info/METADATA')][0]; print([l for l in z.read(m).decode().splitlines() if l.startswith('Requires-Dist')] or 'torchaudio requires nothing')"
echo "== the ELF facts kept in the store"
du -shc /tmp/h1/store-v1/wheels/*/elf | tail -1
echo "== NVIDIA's CUDA libraries in the stack: SONAME (the family table's evidence)"
grep -h '^soname lib\(cudart\|cublas\|cublasLt\|nvrtc\|nvJitLink\|cupti\|cufft\|cufftw\|curand\|cusolver\|cusolverMg\|cusparse\)\.so' /tmp/h1/store-v1/wheels/*/elf | sort -u
awk '/^file /{f=$2} /^soname libcupti\.so\.12/{print "libcupti.so.12 is", f}' /tmp/h1/store-v1/wheels/*/elf
grep -h '^needed lib\(cupti\|cudart\|cublas\|cufft\|cusparse\|cusolver\|curand\|nvrtc\)\.so' /tmp/h1/store-v1/wheels/*/elf | sort | uniq -c
echo "== two extensions built here against the real stack"
mkdir -p /tmp/x && cd /tmp/x
printf 'int cudaRuntimeGetVersion(int* v) { *v = 12080; return 0; }\n' > rt.c
gcc -shared -fPIC -o libcudart.so.12 rt.c -Wl,-soname,libcudart.so.12
printf 'int cudaRuntimeGetVersion(int*);\nint v(void) { int x; cudaRuntimeGetVersion(&x); return x; }\n' > cu12.c
gcc -shared -fPIC -o cu12.so cu12.c -L. -l:libcudart.so.12 -Wl,-rpath,'$ORIGIN/../nvidia/cuda_runtime/lib'
cat > abi.cpp <<'CPP'
namespace c10 { struct TensorImpl { bool envbox_gone_in_this_build() const; }; }
bool f(const c10::TensorImpl& t) { return t.envbox_gone_in_this_build(); }
CPP
g++ -shared -fPIC -o abi.so abi.cpp -L"$SP/torch/lib" -Wl,--no-as-needed -lc10 -Wl,-rpath,'$ORIGIN/../torch/lib'
"$PY" - "$REPO/tools" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[1])
from wheelgen import Wheel
tag = "py3-none-manylinux_2_17_x86_64"
Wheel("memsaver", "0.0.9", {"memsaver/_C.so": open("cu12.so", "rb").read()}, tag=tag).build("/tmp/x/wh")
Wheel("abiext", "1.0", {"abiext/_C.so": open("abi.so", "rb").read()}, tag=tag).build("/tmp/x/wh")
PYEOF
for ext in memsaver abiext; do
    "$PY" "$REPO/tools/wheelgen.py" lock /tmp/p/manifests/pylock.$ext.toml /tmp/wh/*.whl /tmp/x/wh/$ext-*.whl
    cd /tmp/p
    "$E" --home /tmp/h1 create $ext > /dev/null 2> /tmp/$ext.err; echo "$ext: rc=$?"; cat /tmp/$ext.err
    cd /tmp/x
done
