"""Run-time compile caches, black-box: every cache variable envbox sets for a library the
environment holds points into the environment's own folder under ENVBOX_HOME, per torch build
(two environments with torch +cu128 and +cu130 get different folders for every variable), is
writable inside the sandbox, and a value the user sets (the calling environment, or the
manifest's [run].env) wins; `run -v` says which ones envbox set.

Usage: test_compile_caches.py ENVBOX
"""
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
from envboxtest import Project, keep_or_remove, manifest_text  # noqa: E402
from wheelgen import Wheel  # noqa: E402

DRIVER = {"ENVBOX_CUDA_DRIVER": "580.82.07"}
# Each library envbox keeps a cache for, and the variables it sets for it.
LIBRARIES = {
    "torch": ["TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR"],
    "flashinfer-python": ["FLASHINFER_WORKSPACE_BASE"],
    "apache-tvm-ffi": ["TVM_FFI_CACHE_DIR"],
    "deep-gemm": ["DG_JIT_CACHE_DIR", "DG_CACHE_DIR"],
    "sglang": ["SGLANG_CACHE_DIR", "SGLANG_JIT_CACHE_DIR", "SGLANG_DG_CACHE_DIR"],
    "tilelang": ["TILELANG_CACHE_DIR"],
    "numba": ["NUMBA_CACHE_DIR"],
    "jax": ["JAX_COMPILATION_CACHE_DIR"],
    "vllm": ["VLLM_CACHE_ROOT"],
    "cupy": ["CUPY_CACHE_DIR"],
}
VARIABLES = sorted({v for vs in LIBRARIES.values() for v in vs} | {"CUDA_CACHE_PATH"})
# Prints each variable, and whether a file can be written in its folder (inside the sandbox).
PROBE = """
import json, os, sys
out = {}
for v in sys.argv[1:]:
    d = os.environ.get(v)
    ok = None
    if d:
        try:
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "probe"), "w") as f:
                f.write("x")
            ok = True
        except OSError as e:
            ok = e.strerror
    out[v] = [d, ok]
print(json.dumps(out))
"""


class CompileCaches(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-caches-")
        cls.p = Project(cls.tmp)
        others = [Wheel(n, "1.0", {n.replace("-", "_") + "/__init__.py": ""}) for n in LIBRARIES
                  if n not in ("torch", "cupy")]
        for env, label, cupy in (("train", "cu128", "cupy-cuda12x"), ("infer", "cu130", "cupy-cuda13x")):
            cls.p.write(env, manifest_text(["torch"]))
            cls.p.lock(env, [Wheel("torch", f"2.11.0+{label}", {"torch/__init__.py": ""}),
                             Wheel(cupy, "13.6.0", {"cupy/__init__.py": ""})] + others)
            cls.p.run("create", env, env=DRIVER)

    @classmethod
    def tearDownClass(cls):
        keep_or_remove(cls.tmp)

    def probe(self, env, extra=None):
        r = self.p.run("-v", "run", env, "--", "python", "-c", PROBE, *VARIABLES, env=dict(DRIVER, **(extra or {})))
        return json.loads(r.stdout), r.stderr

    def test_each_variable_per_environment_and_build_writable_in_the_sandbox(self):
        seen = {}
        for env, build in (("train", "torch-2.11.0+cu128"), ("infer", "torch-2.11.0+cu130")):
            got, said = self.probe(env)
            for v in VARIABLES:
                folder, writable = got[v]
                self.assertIsNotNone(folder, v)
                self.assertTrue(folder.startswith(os.path.join(self.p.home, "cache", "compile") + os.sep), folder)
                self.assertIn(os.sep + build + os.sep, folder)
                self.assertIs(writable, True, (v, writable))
                self.assertIn(f"set {v}={folder}", said)
            seen[env] = got
        for v in VARIABLES:
            self.assertNotEqual(seen["train"][v][0], seen["infer"][v][0], v)
        # show counts their bytes (each probe wrote one byte per folder).
        shown = json.loads(self.p.run("--json", "show", "train").stdout)["compile_caches"]
        self.assertEqual(shown["bytes"], len({folder for folder, _ in seen["train"].values()}))
        self.assertIn("compile caches: ", self.p.run("show", "train").stdout)

    def test_the_users_value_wins(self):
        own = os.path.join(self.tmp, "my-triton")
        got, said = self.probe("train", {"TRITON_CACHE_DIR": own})
        self.assertEqual(got["TRITON_CACHE_DIR"][0], own)
        self.assertIn("kept TRITON_CACHE_DIR as set", said)
        self.assertNotEqual(got["TORCHINDUCTOR_CACHE_DIR"][0], None)
        # The manifest's [run].env wins too.
        self.p.write("train", manifest_text(["torch"], extra='\n[run.env]\nCUPY_CACHE_DIR = "/tmp/cupy-mine"\n'))
        try:
            got, _ = self.probe("train")
            self.assertEqual(got["CUPY_CACHE_DIR"][0], "/tmp/cupy-mine")
        finally:
            self.p.write("train", manifest_text(["torch"]))

    def test_an_environment_without_those_libraries_gets_none(self):
        self.p.write("plain", manifest_text(["solo"]))
        self.p.lock("plain", [Wheel("solo", "1.0", {"solo.py": ""})])
        self.p.run("create", "plain")
        got, _ = self.probe("plain")
        self.assertEqual({v: d for v, (d, _) in got.items() if d}, {})


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
