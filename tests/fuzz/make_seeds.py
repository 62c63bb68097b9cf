#!/usr/bin/env python3
"""Writes the seed corpus of each fuzz target into OUT_DIR/<target>/ from the repository's test
data: the standards corpus (tests/data/corpus), the golden lock, the manifests, dist-info files
of Debian's wheels, small archives built here with zipfile, and tests/fuzz/regressions/<target>/
(inputs that once crashed a target). Nothing binary is kept in the repository.
Usage: make_seeds.py SOURCE_DIR OUT_DIR"""
import hashlib, io, json, os, shutil, sys, tarfile, zipfile

src, out = sys.argv[1], sys.argv[2]
corpus = os.path.join(src, "tests", "data", "corpus")
MAX_SEEDS = 3000


def writer(target):
    d = os.path.join(out, target)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    seen = set()

    def put(data):
        if isinstance(data, str):
            data = data.encode()
        h = hashlib.sha1(data).hexdigest()
        if h not in seen and len(seen) < MAX_SEEDS:
            seen.add(h)
            open(os.path.join(d, h), "wb").write(data)
    return put


def strings(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for v in node.values():
            yield from strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from strings(v)


def dicts(node):
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from dicts(v)
    elif isinstance(node, list):
        for v in node:
            yield from dicts(v)


def load(name):
    with open(os.path.join(corpus, name)) as f:
        return json.load(f)


def files_under(top, suffixes):
    for root, _, names in os.walk(top):
        for n in sorted(names):
            if n.endswith(suffixes):
                yield os.path.join(root, n)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def regressions(put, target):
    d = os.path.join(src, "tests", "fuzz", "regressions", target)
    if os.path.isdir(d):
        for n in sorted(os.listdir(d)):
            put(read(os.path.join(d, n)))


# ---- PEP 440 / 508: every short string of the version, specifier, requirement, marker tables
put = writer("fuzz_pep440_508")
pep_strings = []
for name in ("versions.json", "specifiers.json", "requirements.json", "markers.json",
             "derived_local_versions.json"):
    for s in strings(load(name)):
        if 0 < len(s) <= 300 and "\n" not in s:
            pep_strings.append(s)
for i, s in enumerate(pep_strings):
    put(s)
    put(s + "\n" + pep_strings[(i * 7919) % len(pep_strings)])  # specifier, then a candidate
regressions(put, "fuzz_pep440_508")

# ---- index pages: pip's verbatim pages, every anchor of the table, every JSON page
put = writer("fuzz_simple_page")
for p in files_under(os.path.join(corpus, "simple_index"), (".html",)):
    put(read(p))
index = load("simple_index.json")
for s in strings(index):
    if "<a" in s:
        put("<!DOCTYPE html><html><body>" + s + "</body></html>")
for d in dicts(index):
    if "files" in d and isinstance(d["files"], list):
        put(json.dumps(d))
put('{"meta": {"api-version": "1.1"}, "name": "pkg", "files": [{"filename": "pkg-1.0-py3-none-any.whl", '
    '"url": "../../files/pkg-1.0-py3-none-any.whl#sha256=' + "0" * 64 + '", "hashes": {"sha256": "' + "a" * 64 +
    '"}, "requires-python": ">=3.8", "core-metadata": {"sha256": "' + "b" * 64 + '"}, "yanked": "broken", '
    '"size": 1234, "upload-time": "2024-01-01T00:00:00Z"}], "versions": ["1.0"]}')
regressions(put, "fuzz_simple_page")

# ---- wheel text files: dist-info files of Debian's wheels, the wheel-install table's strings
put = writer("fuzz_metadata")
wheels = "/usr/share/python-wheels"
for n in sorted(os.listdir(wheels)) if os.path.isdir(wheels) else []:
    if not n.endswith(".whl"):
        continue
    with zipfile.ZipFile(os.path.join(wheels, n)) as z:
        for info in z.infolist():
            leaf = info.filename.rsplit("/", 1)[-1]
            if ".dist-info/" in info.filename and leaf in ("METADATA", "WHEEL", "RECORD", "entry_points.txt"):
                put(z.read(info)[:32768])
for s in strings(load("wheel_install.json")):
    if len(s) > 3 and (":" in s or "," in s or "=" in s):
        put(s)
put("Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\nRequires-Dist: b (>=1); extra == 'x'\n"
    "Requires-Python: >=3.8\nProvides-Extra: x\nSummary: folded\n  continuation\n\nbody\n")
put("[console_scripts]\nfoo = pkg.mod:main [extra]\n[gui_scripts]\nbar=pkg:App.run\n")
regressions(put, "fuzz_metadata")

# ---- manifests and locks
put = writer("fuzz_manifest_pylock")
for top in (os.path.join(corpus, "pylock"), os.path.join(src, "tests", "lock", "golden"),
            os.path.join(src, "manifests"), os.path.join(src, "examples")):
    for p in files_under(top, (".toml",)):
        put(read(p))
for s in strings(load("pylock.json")):
    if "=" in s and "\n" in s:
        put(s)
regressions(put, "fuzz_manifest_pylock")

# ---- archives: small zips with every feature wheels use (stored, deflate, zip64 extras,
# data descriptors, directories, modes, a comment) and a minimal wheel
put = writer("fuzz_zip")


class Unseekable(io.RawIOBase):
    def __init__(self, f):
        self.f = f

    def writable(self):
        return True

    def write(self, b):
        return self.f.write(b)


def archive(build, unseekable=False):
    buf = io.BytesIO()
    with zipfile.ZipFile(Unseekable(buf) if unseekable else buf, "w") as z:
        build(z)
    put(buf.getvalue())


text = b"".join(b"line %d\n" % i for i in range(200))
archive(lambda z: z.writestr("a.txt", b"hello\n"))
archive(lambda z: z.writestr("a.txt", text, compress_type=zipfile.ZIP_DEFLATED))
archive(lambda z: (z.writestr("a.txt", text, compress_type=zipfile.ZIP_DEFLATED),
                   z.writestr("b.bin", bytes(range(256)))), unseekable=True)


def zip64(z):
    with z.open("big", "w", force_zip64=True) as f:
        f.write(text)


archive(zip64)


def featureful(z):
    z.comment = b"a comment"
    z.writestr("dir/", b"")
    info = zipfile.ZipInfo("dir/run.sh")
    info.external_attr = 0o100755 << 16
    z.writestr(info, b"#!/bin/sh\necho hi\n", compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    z.writestr("empty", b"", compress_type=zipfile.ZIP_DEFLATED)
    z.writestr("pkg/வணக்கம்.py", b"print('hi')\n")


archive(featureful)


def wheel(z):
    z.writestr("pkg/__init__.py", b"VALUE = 1\n", compress_type=zipfile.ZIP_DEFLATED)
    z.writestr("pkg-1.0.dist-info/METADATA", b"Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n")
    z.writestr("pkg-1.0.dist-info/WHEEL", b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr("pkg-1.0.dist-info/RECORD", b"pkg/__init__.py,sha256=x,10\npkg-1.0.dist-info/RECORD,,\n")


archive(wheel)
regressions(put, "fuzz_zip")

# ---- tar archives, uncompressed (fuzz_tar gzips its input): what setuptools' sdists hold (PAX
# headers, directories, an executable), GNU long names, ustar prefixes, a pax global header
put = writer("fuzz_tar")


def tar(build, fmt, **options):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt, **options) as t:
        build(t)
    put(buf.getvalue())


def add(t, name, data=b"", kind=tarfile.REGTYPE, mode=0o644):
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.size = kind, mode, len(data) if kind == tarfile.REGTYPE else 0
    t.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)


def sdist(t):
    add(t, "pkg-1.0", kind=tarfile.DIRTYPE, mode=0o755)
    add(t, "pkg-1.0/PKG-INFO", b"Metadata-Version: 2.2\nName: pkg\nVersion: 1.0\n")
    add(t, "pkg-1.0/setup.py", b"from setuptools import setup\nsetup()\n")
    add(t, "pkg-1.0/bin/tool", b"#!/bin/sh\n", mode=0o755)
    long = "d" * 120 + "/" + "\u00e9" * 90 if t.format != tarfile.USTAR_FORMAT else "d" * 90 + "/e"
    add(t, "pkg-1.0/" + long + ".py", b"x = 1\n")  # past ustar's 100 bytes: prefix, pax, GNU


for fmt in (tarfile.PAX_FORMAT, tarfile.GNU_FORMAT, tarfile.USTAR_FORMAT):
    tar(sdist, fmt)
tar(lambda t: add(t, "p/a", text), tarfile.PAX_FORMAT, pax_headers={"comment": "global"})
tar(lambda t: add(t, "p/link", kind=tarfile.SYMTYPE), tarfile.PAX_FORMAT)
regressions(put, "fuzz_tar")

# ---- ELF files: small shared libraries the compiler builds here (C and C++, with a SONAME,
# DT_NEEDED, RUNPATH and versioned references), as a wheel's `.so` holds them.
put = writer("fuzz_elf")
import subprocess, tempfile  # noqa: E402
with tempfile.TemporaryDirectory() as d:
    sources = {"c": "int f(void);\nint g(void) { return f() + 1; }\n",
               "cpp": "#include <cmath>\nnamespace n { double r(double x) { return std::sqrt(x); } }\n"}
    for lang, text in sources.items():
        path = os.path.join(d, "s." + lang)
        open(path, "w").write(text)
        so = os.path.join(d, "lib" + lang + ".so")
        cc = "cc" if lang == "c" else "c++"
        if shutil.which(cc) and subprocess.run(
                [cc, "-shared", "-fPIC", "-Os", "-s", "-o", so, path, "-Wl,-soname,lib" + lang + ".so.1",
                 "-Wl,-rpath,$ORIGIN/../lib,--enable-new-dtags"]).returncode == 0:
            put(open(so, "rb").read())
regressions(put, "fuzz_elf")

# ---- envbox check: the probe's output (first byte odd) and kept records (even), as the probe
# and envbox write them, with a failure message, GPU figures and compile caches.
put = writer("fuzz_check_record")
probe = ("envbox-check-probe 1\npython 3.12.3\nimport torch ok 1.204 \nimport nsp.inner ok 0.001 \n"
         "import flashy failed 0.012 ImportError:%20undefined%20symbol:%20_ZNK3c1010TensorImpl5numelEv\n"
         "import slow timeout 2.001 timed%20out%20after%202%20s\n")
gpu = ("torch 2.11.0+cu130\ncuda 13.0\ncudnn 91300\nnccl 2.27.7\ndevice NVIDIA%20H100%2080GB%20HBM3\n"
       "capability sm_90\narch-list sm_75,sm_80,sm_86,sm_90,sm_100,sm_120,compute_120\n"
       "context-bytes 534773760\nmatmul-tflops 712.4\ngpu-error NVML:%20no%20process%20list\n")
record = probe.replace("envbox-check-probe 1\n", "envbox-check 1\ngeneration 3\nwhen 2026-12-06T10:00:00Z\n")
put(b"\x01" + probe.encode())
put(b"\x01" + (probe + gpu).encode())
put(b"\x01" + (probe + "gpu-none torch.cuda.is_available()%20is%20False\n").encode())
put(b"\x01" + (probe + "gpu-failed the%20GPU%20measurement%20failed\n").encode())
put(b"\x00" + (record + gpu + "cache TORCH_EXTENSIONS_DIR 3 6000060\n").encode())
regressions(put, "fuzz_check_record")

for t in sorted(os.listdir(out)):
    print(f"{t}: {len(os.listdir(os.path.join(out, t)))} seeds")
