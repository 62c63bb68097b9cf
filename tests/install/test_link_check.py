"""The link check, black-box: wheels of real ELF files built here with the compiler (the shapes
of NVIDIA's runtime wheels, torch's libc10.so and extensions built against them), installed
by envbox, which links each environment on paper at create.

- an extension linking the other CUDA line's libcudart is refused (exit 3), the previous
  generation stays current; `[install].allow-unlinked` lets it through as a note;
- an extension needing a c10 symbol its libc10.so no longer exports is refused (exit 8), the
  symbol demangled, the library and its wheel named;
- a needed library no wheel ships is a note, not a refusal;
- libc10.so found only by SONAME through the wheel's dependency on torch is clean, and the
  same file without that dependency is a note;
- a library using Python's C API without linking libpython is clean;
- the store keeps each wheel's ELF facts beside its file list; verify and doctor ENV list findings.

Usage: test_link_check.py ENVBOX
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
from envboxtest import PYV, Project, keep_or_remove, manifest_text  # noqa: E402
from wheelgen import Wheel  # noqa: E402

TAG = "py3-none-manylinux_2_17_x86_64"
EXT = f"cpython-{PYV.replace('.', '')}-x86_64-linux-gnu.so"

C10 = """
namespace c10 {
struct TensorImpl { int numel() const; %s };
int TensorImpl::numel() const { return 1; }
%s
}
"""


def compile_so(out, source, lang="c", soname=None, libs=(), libdirs=(), runpath=None, no_as_needed=False):
    """A shared object built from `source` by the compiler, as a wheel's build would make it."""
    src = out + (".c" if lang == "c" else ".cpp")
    with open(src, "w") as f:
        f.write(source)
    cmd = ["gcc" if lang == "c" else "g++", "-shared", "-fPIC", "-O1", "-o", out, src]
    if soname:
        cmd.append(f"-Wl,-soname,{soname}")
    cmd += [f"-L{d}" for d in libdirs] + (["-Wl,--no-as-needed"] if no_as_needed else [])
    cmd += [f"-l:{lib}" for lib in libs]
    if runpath:
        cmd.append(f"-Wl,-rpath,{runpath},--enable-new-dtags")
    subprocess.run(cmd, check=True)
    with open(out, "rb") as f:
        return f.read()


def add_dependencies(lock_path, deps):
    """Records each package's `dependencies` in the lock (every package gets the key, so the
    lock's graph is complete): `deps` maps a package to the names it depends on."""
    with open(lock_path) as f:
        text = f.read()

    def entry(m):
        name = m.group(1)
        listed = ", ".join(f'{{ name = "{d}" }}' for d in deps.get(name, ()))
        return m.group(0) + f"dependencies = [{listed}]\n"
    text = re.sub(r'name = "([^"]+)"\nversion = "[^"]+"\n', entry, text)
    with open(lock_path, "w") as f:
        f.write(text)


@unittest.skipUnless(shutil.which("gcc") and shutil.which("g++"), "needs gcc and g++")
class LinkCheck(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-link-")
        b = os.path.join(cls.tmp, "build")
        os.makedirs(b)
        runtime = "int cudaRuntimeGetVersion(int* v) { *v = %d; return 0; }\n"
        cudart12 = compile_so(os.path.join(b, "libcudart.so.12"), runtime % 12080,
                              soname="libcudart.so.12")
        cudart13 = compile_so(os.path.join(b, "libcudart.so.13"), runtime % 13000,
                              soname="libcudart.so.13")
        os.makedirs(os.path.join(b, "old"))
        compile_so(os.path.join(b, "old", "libc10.so"), C10 % ("int gone() const;",
                   "int TensorImpl::gone() const { return 2; }"), "c++", soname="libc10.so")
        libc10 = compile_so(os.path.join(b, "libc10.so"), C10 % ("", ""), "c++", soname="libc10.so")
        # torch's shape: libtorch_nvshmem.so takes c10::cuda symbols from libc10_cuda.so, which
        # it does not name (torch loads its libraries with RTLD_GLOBAL first).
        libc10_cuda = compile_so(os.path.join(b, "libc10_cuda.so"),
                                 "namespace c10 { namespace cuda { int device() { return 0; } } }\n", "c++",
                                 soname="libc10_cuda.so")
        nvshmem = compile_so(os.path.join(b, "libtorch_nvshmem.so"),
                             "namespace c10 { namespace cuda { int device(); } }\nint h() { return c10::cuda::device(); }\n",
                             "c++", soname="libtorch_nvshmem.so", libs=["libc10.so"], libdirs=[b],
                             runpath="$ORIGIN", no_as_needed=True)
        compile_so(os.path.join(b, "libnowhere.so.3"), "int nowhere(void) { return 3; }\n",
                   soname="libnowhere.so.3")
        uses_cuda = "int cudaRuntimeGetVersion(int*);\nint v(void) { int x; cudaRuntimeGetVersion(&x); return x; }\n"
        cu12ext = compile_so(os.path.join(b, "cu12ext.so"), uses_cuda, libs=["libcudart.so.12"],
                             libdirs=[b], runpath="$ORIGIN/../nvidia/cuda_runtime/lib")
        cu13ext = compile_so(os.path.join(b, "cu13ext.so"), uses_cuda, libs=["libcudart.so.13"],
                             libdirs=[b], runpath="$ORIGIN/../nvidia/cu13/lib")
        uses_c10 = ("namespace c10 { struct TensorImpl { int numel() const; int gone() const; }; }\n"
                    "int f(const c10::TensorImpl& t) { return t.%s(); }\n")
        abiext = compile_so(os.path.join(b, "abiext.so"), uses_c10 % "gone", "c++", libs=["libc10.so"],
                            libdirs=[os.path.join(b, "old")], runpath="$ORIGIN/../torch/lib")
        byname = compile_so(os.path.join(b, "byname.so"), uses_c10 % "numel", "c++", libs=["libc10.so"],
                            libdirs=[b])
        optext = compile_so(os.path.join(b, "optext.so"),
                            "int nowhere(void);\nint g(void) { return nowhere(); }\n",
                            libs=["libnowhere.so.3"], libdirs=[b])
        capi = compile_so(os.path.join(b, "libcapi.so"),
                          "void* PyLong_FromLong(long);\nvoid* make(long x) { return PyLong_FromLong(x); }\n",
                          soname="libcapi.so")
        cls.wheels = {
            "cu12rt": Wheel("nvidia-cuda-runtime-cu12", "12.8.90", {
                "nvidia/cuda_runtime/lib/libcudart.so.12": cudart12}, tag=TAG),
            "cu13rt": Wheel("nvidia-cuda-runtime", "13.0.96", {
                "nvidia/cu13/lib/libcudart.so.13": cudart13}, tag=TAG),
            "torch": Wheel("torch", "2.11.0+cu130", {
                "torch/__init__.py": "", "torch/lib/libc10.so": libc10, "torch/lib/libc10_cuda.so": libc10_cuda,
                "torch/lib/libtorch_nvshmem.so": nvshmem}, tag=TAG),
            "cu12ext": Wheel("cu12ext", "1.0", {f"cu12ext/_C.{EXT}": cu12ext}, tag=TAG),
            "cu13ext": Wheel("cu13ext", "1.0", {f"cu13ext/_C.{EXT}": cu13ext}, tag=TAG),
            "abiext": Wheel("abiext", "1.0", {f"abiext/_C.{EXT}": abiext}, tag=TAG),
            "byname": Wheel("byname", "1.0", {f"byname/_C.{EXT}": byname}, tag=TAG),
            "optext": Wheel("optext", "1.0", {f"optext/_C.{EXT}": optext}, tag=TAG),
            "capi": Wheel("capi", "1.0", {"capi/lib/libcapi.so": capi}, tag=TAG),
        }

    @classmethod
    def tearDownClass(cls):
        keep_or_remove(cls.tmp)

    def setUp(self):
        self.dir = tempfile.mkdtemp(dir=self.tmp)
        self.project = Project(self.dir)

    def lock(self, env, names, deps=None):
        self.project.lock(env, [self.wheels[n] for n in names])
        add_dependencies(self.project.lock_path(env), deps or {})

    def create(self, env, check=True):
        return self.project.run("--json", "create", env, check=check)

    def findings(self, env):
        report = json.loads(self.project.run("--json", "verify", env).stdout)
        return report["link"]["findings"]

    CLEAN = ["torch", "cu13rt", "cu13ext", "capi", "byname"]
    CLEAN_DEPS = {"byname": ["torch"], "cu13ext": ["nvidia-cuda-runtime"]}

    def test_clean_environment_creates_as_before(self):
        self.lock("e", self.CLEAN, self.CLEAN_DEPS)
        out = json.loads(self.create("e").stdout)
        self.assertEqual(out["link"]["findings"], [])
        self.assertEqual(out["link"]["native_files"], 7)
        self.assertEqual(self.findings("e"), [])
        self.assertFalse(out["link"]["cached"])
        # Another environment of the same wheels: the kept result, while the host's files it
        # read (the interpreter, libc, libstdc++) are unchanged.
        shutil.copyfile(self.project.lock_path("e"), self.project.lock_path("f"))
        again = json.loads(self.create("f").stdout)["link"]
        self.assertTrue(again["cached"])
        self.assertEqual((again["native_files"], again["findings"]), (7, []))
        # Other dependencies, or none recorded, are another key: linked again.
        self.lock("g", self.CLEAN, {"byname": ["torch"]})
        self.assertFalse(json.loads(self.create("g").stdout)["link"]["cached"])
        self.project.lock("h", [self.wheels[n] for n in self.CLEAN])  # no dependencies recorded
        self.assertFalse(json.loads(self.create("h").stdout)["link"]["cached"])
        # The facts are kept in the store, beside each wheel's file list, and read from there.
        facts = [os.path.join(r, f) for r, _, fs in os.walk(os.path.join(self.project.home, "store-v1", "wheels"))
                 for f in fs if f == "elf"]
        self.assertEqual(len(facts), 5)
        texts = []
        for path in facts:
            with open(path) as f:
                texts.append(f.read())
        text = next(t for t in texts if "torch/lib/libc10.so" in t)
        self.assertIn("soname libc10.so\n", text)
        self.assertIn("def _ZNK3c1010TensorImpl5numelEv", text)
        # A stored wheel whose facts were not kept (a store an older envbox filled): the check
        # reads them from its objects and keeps them.
        torch_facts = facts[texts.index(text)]
        os.remove(torch_facts)
        self.lock("i", self.CLEAN, {"byname": ["torch"], "capi": ["torch"]})
        out = json.loads(self.create("i").stdout)["link"]
        self.assertEqual((out["cached"], out["native_files"], out["findings"]), (False, 7, []))
        with open(torch_facts) as f:
            self.assertEqual(f.read(), text)

    def test_other_cuda_line_refused_previous_generation_stays(self):
        self.lock("e", self.CLEAN, self.CLEAN_DEPS)
        self.create("e")
        first = os.path.realpath(self.project.current("e"))
        # No package says CUDA 12 (torch_memory_saver 0.0.9's shape): only its ELF file does.
        self.lock("e", self.CLEAN + ["cu12ext"], self.CLEAN_DEPS)
        refused = self.create("e", check=False)
        self.assertEqual(refused.returncode, 3, refused.stderr)
        self.assertIn(f"lib/python{PYV}/site-packages/cu12ext/_C.{EXT} (cu12ext-1.0-{TAG}.whl) links "
                      "libcudart.so.12, a library of CUDA 12; the environment is on CUDA 13", refused.stderr)
        self.assertEqual(os.path.realpath(self.project.current("e")), first)
        # allow-unlinked names the package: created, the finding a note.
        self.project.write("e", manifest_text(["torch"], extra='\n[install]\nallow-unlinked = ["cu12ext"]\n'))
        self.lock("e", self.CLEAN + ["cu12ext"], self.CLEAN_DEPS)
        created = self.create("e")
        self.assertIn("link check: ", created.stderr)
        self.assertIn("links libcudart.so.12", created.stderr)
        kinds = [(f["kind"], f["package"], f["what"]) for f in self.findings("e")]
        self.assertEqual(kinds, [("cuda-line", "cu12ext", "libcudart.so.12"),
                                 ("not-found", "cu12ext", "libcudart.so.12")])
        # Beside the CUDA 12 runtime's wheel, the name-based check refuses first.
        self.lock("e", self.CLEAN + ["cu12rt", "cu12ext"], self.CLEAN_DEPS)
        self.assertIn("the lock mixes CUDA lines", self.create("e", check=False).stderr)

    def test_other_cuda_line_refused_found_or_not(self):
        # A CUDA 13 environment by its manifest's line alone (no package names one), holding an
        # extension whose only CUDA tie is DT_NEEDED libcudart.so.12 with no CUDA 12 runtime
        # anywhere (torch_memory_saver 0.0.9's shape): a conflict, not a "not found" note.
        self.lock("e", ["cu12ext"])
        with open(self.project.lock_path("e"), "a") as f:
            f.write('\n[tool.envbox]\ncuda = "13.0"\n')
        refused = self.create("e", check=False)
        self.assertEqual(refused.returncode, 3, refused.stderr)
        self.assertIn("links libcudart.so.12, a library of CUDA 12; the environment is on CUDA 13",
                      refused.stderr)
        self.assertIsNone(self.project.current("e"))
        # Without a line (no package, no manifest line), there is nothing to conflict with.
        self.lock("f", ["cu12ext"])
        self.create("f")

    def test_symbol_missing_from_the_environments_library_refused(self):
        self.lock("e", ["torch", "abiext"], {"abiext": ["torch"]})
        refused = self.create("e", check=False)
        self.assertEqual(refused.returncode, 8, refused.stderr)
        self.assertIn(f"abiext/_C.{EXT} (abiext-1.0-{TAG}.whl) needs c10::TensorImpl::gone() const from "
                      f"lib/python{PYV}/site-packages/torch/lib/libc10.so (torch-2.11.0+cu130-{TAG}.whl), "
                      "which does not export it", refused.stderr)
        self.assertIsNone(self.project.current("e"))
        # A kept result refuses the same, and verify links afresh.
        shutil.copyfile(self.project.lock_path("e"), self.project.lock_path("f"))
        again = self.create("f", check=False)
        self.assertEqual(again.returncode, 8)
        self.assertIn("c10::TensorImpl::gone() const", again.stderr)

    def test_library_found_nowhere_is_a_note(self):
        self.lock("e", ["optext"])
        created = self.create("e")
        self.assertIn(f"optext/_C.{EXT} (optext-1.0-{TAG}.whl) needs libnowhere.so.3: not found",
                      created.stderr)
        (finding,) = self.findings("e")
        self.assertEqual((finding["kind"], finding["what"], finding["refuses"]),
                         ("not-found", "libnowhere.so.3", False))
        # doctor ENV says the same of this machine, in words and in JSON.
        doctor = self.project.run("doctor", "e", check=False)
        self.assertIn("link check of e: 1 native files, 1 findings", doctor.stdout)
        self.assertIn("not-found: ", doctor.stdout)
        report = json.loads(self.project.run("--json", "doctor", "e", check=False).stdout)
        self.assertEqual([f["what"] for f in report["link"]["findings"]], ["libnowhere.so.3"])

    def test_soname_only_through_the_wheels_dependency(self):
        # byname needs libc10.so with no RUNPATH: `import torch` loaded it first. Without the
        # dependency recorded, nothing loaded it: a note.
        self.lock("e", ["torch", "byname"], {})
        self.create("e")
        self.assertEqual([(f["kind"], f["what"]) for f in self.findings("e")], [("not-found", "libc10.so")])
        self.lock("e", ["torch", "byname"], {"byname": ["torch"]})
        self.create("e")
        self.assertEqual(self.findings("e"), [])


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
