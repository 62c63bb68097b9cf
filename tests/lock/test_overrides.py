#!/usr/bin/env python3
"""`overrides` and `constraints` in `envbox lock` (uv's override-dependencies and
constraint-dependencies), over a flat find-links directory shaped like SGLang on CUDA 12: its
metadata requires `cuda-python>=13`, which users rewrite by hand today. pip's `--constraint` is
the oracle for constraints.

    test_overrides.py ENVBOX_BINARY
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools"), HERE]
import envboxtest  # noqa: E402
from envboxtest import envbox, keep_or_remove, manifest_text, packages  # noqa: E402
from test_prerelease import pip_choice, wheel  # noqa: E402

WORLD = [
    wheel("sglang", "0.5.12", ["cuda-python>=13", "numpy>=2"]),
    wheel("cuda-python", "12.9.0"), wheel("cuda-python", "13.0.1"),
    wheel("numpy", "2.2.6"), wheel("numpy", "2.3.3"),
    wheel("torch", "2.11.0"),
]


class OverridesAndConstraints(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-ovr-")
        cls.flat = os.path.join(cls.tmp, "flat")
        for w in WORLD:
            w.build(cls.flat)
        cls.proj = os.path.join(cls.tmp, "proj")
        cls.home = os.path.join(cls.tmp, "home")

    @classmethod
    def tearDownClass(cls):
        keep_or_remove(cls.tmp)

    def write(self, env, settings, proj=None):
        text = manifest_text(["sglang"], indexes=[("wheelhouse", f"file://{self.flat}", "")])
        envboxtest.write_manifest(proj or self.proj, env, text.replace("requirements = [", settings + "requirements = [", 1))

    def lock(self, env, settings, check=True, proj=None):
        self.write(env, settings, proj)
        r = envbox("lock", env, home=self.home, project=proj or self.proj, check=check)
        if r.returncode:
            return r, None
        with open(os.path.join(proj or self.proj, "manifests", f"pylock.{env}.toml")) as f:
            return r, {n: v for n, (v, _) in packages(f.read()).items()}

    def test_an_override_replaces_a_dependencys_requirement(self):
        _, got = self.lock("plain", "")
        self.assertEqual(got["cuda-python"], "13.0.1")
        _, got = self.lock("cu12", 'overrides = ["cuda-python>=12,<13"]\n')
        self.assertEqual(got, {"sglang": "0.5.12", "cuda-python": "12.9.0", "numpy": "2.3.3"})
        # tree and why say the edge is the override's.
        tree = envbox("tree", "cu12", home=self.home, project=self.proj).stdout
        self.assertIn("cuda-python 12.9.0 (overridden: cuda-python<13,>=12)", tree)
        why = envbox("why", "cu12", "cuda-python", home=self.home, project=self.proj).stdout
        self.assertIn("sglang 0.5.12 → cuda-python 12.9.0 (overridden: cuda-python<13,>=12)", why)
        # A marker that is false on the target leaves the requirement as it was.
        _, got = self.lock("cu12-mac", "overrides = [\"cuda-python>=12,<13; sys_platform == 'darwin'\"]\n")
        self.assertEqual(got.get("cuda-python"), None)  # replaced by nothing on linux

    def test_a_constraint_narrows_and_adds_nothing_as_pip_does(self):
        _, got = self.lock("np", 'constraints = ["numpy<2.3", "torch<3"]\n')
        self.assertEqual(got, {"sglang": "0.5.12", "cuda-python": "13.0.1", "numpy": "2.2.6"})
        cfile = os.path.join(self.tmp, "constraints.txt")
        with open(cfile, "w") as f:
            f.write("numpy<2.3\ntorch<3\n")
        self.assertEqual(pip_choice(self.flat, ["sglang", "-c", cfile]), got)
        # A constraint nothing can meet is a resolution error naming it.
        r, _ = self.lock("np-none", 'constraints = ["numpy<2"]\n', check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("numpy", r.stderr)

    def test_recorded_stale_when_changed_shared_and_validated(self):
        self.lock("st", 'overrides = ["cuda-python>=12,<13"]\n')
        with open(os.path.join(self.proj, "manifests", "pylock.st.toml")) as f:
            self.assertIn('overrides = ["cuda-python<13,>=12"]', f.read())
        envbox("lock", "--check", "st", home=self.home, project=self.proj)
        self.write("st", 'overrides = ["cuda-python>=12.8,<13"]\nconstraints = ["numpy<2.3"]\n')
        r = envbox("lock", "--check", "st", home=self.home, project=self.proj, check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("override added or changed in the manifest: cuda-python<13,>=12.8", r.stderr)
        self.assertIn("constraint added or changed in the manifest: numpy<2.3", r.stderr)
        # envbox.toml's [environment] applies to a manifest without its own.
        shared = os.path.join(self.tmp, "shared")
        os.makedirs(shared, exist_ok=True)
        with open(os.path.join(shared, "envbox.toml"), "w") as f:
            f.write('[environment]\noverrides = ["cuda-python>=12,<13"]\n')
        _, got = self.lock("a", "", proj=shared)
        self.assertEqual(got["cuda-python"], "12.9.0")
        # Validated like requirements: PEP 508, no URL, one entry per package.
        for bad, says in (('overrides = ["cuda-python>>12"]', "environment.overrides[0]"),
                          ('constraints = ["x @ https://example.org/x-1.0-py3-none-any.whl"]', "not a URL"),
                          ('overrides = ["a>1", "A<3"]', "given twice")):
            with self.subTest(bad=bad):
                r, _ = self.lock("bad", bad + "\n", check=False)
                self.assertEqual(r.returncode, 3, r.stderr)
                self.assertIn(says, r.stderr)


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main()
