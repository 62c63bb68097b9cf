#!/usr/bin/env python3
"""Black-box tests of builds that see the environment's own wheels (`[build.NAME]
dependencies`, uv's match-runtime), as a CUDA extension sees the environment's torch: over a
loopback simple index of a `torchlike` wheel (two versions, with a dependency of its own), an
sdist `ext` whose setup.py imports torchlike and bakes its version and a build variable into
the wheel it makes, and Debian's setuptools and wheel wheels.

The build sees the locked torchlike and what it depends on; its key holds those wheels by
sha256, the variables that change the output and the compilers; a speed-only variable builds
nothing again, a changed variable or runtime wheel builds again. `lock` cannot build such a
package before its runtime is locked: it asks for `requires-dist`.

    test_sdist_runtime.py ENVBOX_BINARY
"""
import glob
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
from envboxtest import keep_or_remove  # noqa: E402
from test_sdist_build import write_sdist  # noqa: E402
from wheelgen import Wheel, sha256_file  # noqa: E402

EXT_SETUP = """\
import os
from setuptools import setup
import torchlike, torchdep  # the build sees the environment's own wheels
with open("ext_built.py", "w") as f:
    f.write(f"TORCH = {torchlike.VERSION!r}\\nDEP = {torchdep.NAME!r}\\n"
            f"FLAVOR = {os.environ.get('EXT_FLAVOR')!r}\\n")
setup(name="ext", version="1.0", py_modules=["ext_built"], install_requires=["torchlike"])
"""


class BuildsThatSeeTheRuntime(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-sdist-runtime-")
        self.project = envboxtest.Project(self.tmp)
        files = os.path.join(self.tmp, "index", "files")
        os.makedirs(files)
        for version in ("1.0", "2.0"):
            Wheel("torchlike", version, {"torchlike/__init__.py": f"VERSION = {version!r}\n"},
                  requires=["torchdep"]).build(files)
        Wheel("torchdep", "1.0", {"torchdep.py": "NAME = 'dep'\n"}).build(files)
        # setuptools writes Metadata 2.1: its dependencies are the build's to say.
        write_sdist(files, "ext-1.0.tar.gz", {
            "setup.py": EXT_SETUP,
            "PKG-INFO": "Metadata-Version: 2.1\nName: ext\nVersion: 1.0\n"})
        self.server = envboxtest.build_tools_index(os.path.join(self.tmp, "index"))

    def tearDown(self):
        self.server.close()
        keep_or_remove(self.tmp)

    def write_manifest(self, torch="1.0", flavor="a", jobs="2", requires_dist=True):
        extra = ('\n[build.ext]\nbuild = "allow"\ndependencies = ["torchlike"]\n'
                 f'variables = {{ EXT_FLAVOR = "{flavor}", MAX_JOBS = "{jobs}" }}\n'
                 'speed-variables = ["MAX_JOBS"]\n')
        if requires_dist:
            extra += 'requires-dist = ["torchlike"]\n'
        self.project.write("e", envboxtest.manifest_text(
            [f"torchlike=={torch}", "ext"], indexes=[("loopback", self.server.url + "/simple", "")],
            extra=extra))

    def records(self):
        out = {}
        for p in glob.glob(os.path.join(self.project.home, "store-v1", "builds", "*")):
            with open(p) as f:
                out[os.path.basename(p)] = f.read()
        return out

    def built(self):
        return self.project.run("run", "e", "--", "python", "-c",
                                "import ext_built as b; print(b.TORCH, b.DEP, b.FLAVOR)").stdout.strip()

    def test_lock_asks_for_requires_dist_where_only_a_build_with_the_runtime_could_say(self):
        self.write_manifest(requires_dist=False)
        r = self.project.run("lock", "e", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("ext-1.0.tar.gz gives its dependencies only through a build", r.stderr)
        self.assertIn("[build.ext] requires-dist = [...]", r.stderr)
        self.assertEqual(self.records(), {})

    def test_the_build_sees_the_locked_runtime_and_its_key_holds_every_input(self):
        self.write_manifest()
        self.project.run("lock", "e")
        text = self.project.lock_text("e")
        self.assertIn('build-settings = ["ext dependency torchlike", "ext speed-variable MAX_JOBS 2", '
                      '"ext variable EXT_FLAVOR a"]', text)
        self.assertEqual(self.records(), {}, "requires-dist given: nothing is built while locking")
        self.project.run("create", "e")
        self.assertEqual(self.built(), "1.0 dep a")
        [(first, key)] = self.records().items()
        torch1 = sha256_file(os.path.join(self.tmp, "index", "files", "torchlike-1.0-py3-none-any.whl"))
        self.assertIn(f"runtime torchlike%201.0%20{torch1}\n", key)
        self.assertIn("runtime torchdep%201.0%20", key)
        self.assertIn("variable EXT_FLAVOR a\n", key)
        self.assertNotIn("MAX_JOBS", key)
        if shutil.which("cc", path="/usr/local/bin:/usr/bin:/bin"):
            self.assertRegex(key, r"toolchain cc%20/\S+%20\S+")

        # Another environment from the lock alone (no manifest: this machine's platform tag, not
        # the manifest's): the same machine builds the same wheel, so nothing is built.
        self.project.run("create", "g", "--lock", self.project.lock_path("e"))
        self.assertEqual(list(self.records()), [first])

        # Only the speed changes: the lock changes, nothing is built again.
        self.write_manifest(jobs="8")
        self.project.run("lock", "e")
        self.project.run("create", "e")
        self.assertEqual(list(self.records()), [first])
        # A variable that changes the output, then the runtime's torch: built again each time.
        self.write_manifest(flavor="b")
        self.project.run("lock", "e")
        self.project.run("create", "e")
        self.assertEqual(self.built(), "1.0 dep b")
        self.assertEqual(len(self.records()), 2)
        self.write_manifest(torch="2.0", flavor="b")
        self.project.run("lock", "e")
        self.project.run("create", "e")
        self.assertEqual(self.built(), "2.0 dep b")
        self.assertEqual(len(self.records()), 3)

        # A lock whose build names a package it does not install: refused, naming both.
        lock = self.project.lock_path("e")
        with open(lock) as f:
            edited = f.read().replace('"ext dependency torchlike"', '"ext dependency absent"')
        with open(lock, "w") as f:
            f.write(edited)
        r = self.project.run("create", "e", "--force", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("the build of ext sees absent ([build.ext] dependencies), which the lock "
                      "does not install", r.stderr)


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
