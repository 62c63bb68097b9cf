#!/usr/bin/env python3
"""Black-box tests of direct wheel references in manifests (`name @ URL`): a wheel served over
plain http from 127.0.0.1, a file:// URL and a path relative to the manifest, locked as PEP 751
`[packages.archive]` entries (sha256, size, no index) with their own Requires-Dist resolved from
a loopback index; `create` installs them with PEP 610's direct_url.json, `run` imports them,
`verify` is clean and a re-lock is byte-identical. Refused: a #sha256 fragment the wheel does
not match, an sdist (the message names the package and what to give instead), a wheel for
another platform (its tags and the target's listed), credentials in the URL, a METADATA that
is not the file name's; a changed reference makes the lock stale.

    test_direct_wheels.py ENVBOX_BINARY
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
from envboxtest import PYV, envbox, keep_or_remove, manifest_text, sha256_file, write_manifest  # noqa: E402
from httpserver import StaticServer  # noqa: E402
from wheelgen import Wheel  # noqa: E402

CP = "cp" + PYV.replace(".", "")
FLASHY = Wheel("flash-attn", "2.8.3+cu12torch2.8cxx11abiTRUE",
               {"flash_attn/__init__.py": "VALUE = 'flash'\n"}, tag=f"{CP}-{CP}-linux_x86_64",
               purelib=False, requires=["dep>=1.0", "never-installed; sys_platform == 'win32'"])
MYLIB = Wheel("mylib", "1.0", {"mylib.py": "VALUE = 'mylib'\n"})
LOCAL = Wheel("local", "1.0", {"local.py": "VALUE = 'local'\n"})
DEPS = [Wheel("dep", "0.9", {"dep.py": "VALUE = 'dep 0.9'\n"}),
        Wheel("dep", "1.2", {"dep.py": "VALUE = 'dep 1.2'\n"})]


class DirectWheels(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-direct-")
        www = os.path.join(cls.tmp, "www")
        anchors = []
        for w in DEPS:
            path = w.build(os.path.join(www, "files"))
            fn = os.path.basename(path)
            anchors.append(f'<a href="/files/{fn}#sha256={sha256_file(path)}">{fn}</a><br/>')
        os.makedirs(os.path.join(www, "simple", "dep"))
        with open(os.path.join(www, "simple", "dep", "index.html"), "w") as f:
            f.write("<html><body>\n" + "\n".join(anchors) + "\n</body></html>\n")
        cls.flashy = FLASHY.build(os.path.join(www, "direct"))
        cls.mylib = MYLIB.build(os.path.join(cls.tmp, "elsewhere"))
        cls.server = StaticServer(www)
        cls.flashy_url = f"{cls.server.url}/direct/" + os.path.basename(cls.flashy).replace("+", "%2B")

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        keep_or_remove(cls.tmp)

    def setUp(self):
        self.case = tempfile.mkdtemp(dir=self.tmp, prefix=self._testMethodName[:40] + "-")
        self.project = os.path.join(self.case, "proj")
        self.home = os.path.join(self.case, "home")
        self.wheels = os.path.join(self.project, "manifests", "wheels")
        self.local = LOCAL.build(self.wheels)

    def write(self, requirements):
        write_manifest(self.project, "e", manifest_text(
            requirements, indexes=[("loop", f"{self.server.url}/simple", "")]))

    def run_envbox(self, *args, check=True):
        return envbox(*args, home=self.home, project=self.project, check=check)

    def lock_text(self):
        with open(os.path.join(self.project, "manifests", "pylock.e.toml")) as f:
            return f.read()

    def all_three(self):
        return [f"flash-attn @ {self.flashy_url}", f"mylib @ file://{self.mylib}",
                "local @ ./wheels/" + os.path.basename(self.local)]

    def package_block(self, text, name):
        m = re.search(r'\[\[packages\]\]\nname = "%s"\n(.*?)(?=\n\[\[packages\]\]|\n\[tool|\Z)' % name,
                      text, re.S)
        self.assertIsNotNone(m, f"{name} not in the lock:\n{text}")
        return m.group(1)

    def test_lock_create_run_verify_relock(self):
        self.write(self.all_three())
        self.run_envbox("lock", "e")
        text = self.lock_text()
        flashy = self.package_block(text, "flash-attn")
        self.assertIn('version = "2.8.3+cu12torch2.8cxx11abitrue"', flashy)  # PEP 440 normal form
        self.assertNotIn("index =", flashy)
        self.assertNotIn("packages.wheels", flashy)
        self.assertIn(f'[packages.archive]\nurl = "{self.flashy_url}"\n'
                      f"size = {os.path.getsize(self.flashy)}\n"
                      f'hashes = {{ sha256 = "{sha256_file(self.flashy)}" }}', flashy)
        self.assertIn('dependencies = [\n    { name = "dep" },\n]', flashy)
        mylib = self.package_block(text, "mylib")
        self.assertIn(f'url = "file://{self.mylib}"', mylib)
        self.assertIn(f'sha256 = "{sha256_file(self.mylib)}"', mylib)
        local = self.package_block(text, "local")
        self.assertIn(f'path = "wheels/{os.path.basename(self.local)}"', local)
        self.assertIn(f"size = {os.path.getsize(self.local)}", local)
        # The wheel's own Requires-Dist came from the loopback index, at its newest version.
        dep = self.package_block(text, "dep")
        self.assertIn('version = "1.2"', dep)
        self.assertIn(f'index = "{self.server.url}/simple"', dep)
        self.assertNotIn("never-installed", text)

        self.run_envbox("create", "e")
        out = self.run_envbox("run", "e", "--", "python", "-c",
                              "import flash_attn, mylib, local, dep; "
                              "print(flash_attn.VALUE, mylib.VALUE, local.VALUE, dep.VALUE)")
        self.assertEqual(out.stdout.strip(), "flash mylib local dep 1.2")
        site = envboxtest.site_packages(os.path.join(self.project, ".envbox", "e"))
        expect = {"flash_attn-2.8.3+cu12torch2.8cxx11abiTRUE": (self.flashy_url, self.flashy),
                  "mylib-1.0": (f"file://{self.mylib}", self.mylib),
                  "local-1.0": (f"file://{os.path.realpath(self.local)}", self.local)}
        for dist, (url, wheel) in expect.items():
            with open(os.path.join(site, dist + ".dist-info", "direct_url.json")) as f:
                record = json.load(f)
            self.assertEqual(record["url"], url)
            self.assertEqual(record["archive_info"]["hashes"], {"sha256": sha256_file(wheel)})
        self.assertFalse(os.path.exists(os.path.join(site, "dep-1.2.dist-info", "direct_url.json")))
        self.run_envbox("verify", "e")
        tree = self.run_envbox("tree", "e").stdout
        self.assertIn("flash-attn 2.8.3+cu12torch2.8cxx11abitrue\n└── dep 1.2", tree)

        # Resolved again from scratch, the lock is the same bytes.
        self.run_envbox("lock", "e", "--upgrade")
        self.assertEqual(self.lock_text(), text)
        self.assertEqual(self.run_envbox("lock", "e", "--check").returncode, 0)

    def test_pip_installs_the_export(self):
        """The exported requirements name each direct wheel as pip reads it (a URL, or a path
        relative to the project root for one locked by path) and pip installs all three with
        their hashes checked, their dependency from the index line."""
        self.write(self.all_three())
        self.run_envbox("lock", "e")
        text = self.run_envbox("export", "e").stdout
        self.assertIn(f"flash-attn @ {self.flashy_url} \\\n    --hash=sha256:{sha256_file(self.flashy)}",
                      text)
        self.assertIn(f"mylib @ file://{self.mylib} \\\n", text)
        self.assertIn(f"./manifests/wheels/{os.path.basename(self.local)} \\\n"
                      f"    --hash=sha256:{sha256_file(self.local)}\n", text)
        self.assertIn(f"--index-url {self.server.url}/simple\n", text)
        req = os.path.join(self.project, "requirements.txt")
        with open(req, "w") as f:
            f.write(text)
        target = os.path.join(self.case, "target")
        r = subprocess.run(["/usr/bin/python3", "-m", "pip", "install", "--disable-pip-version-check",
                            "--require-hashes", "-r", "requirements.txt", "--target", target],
                           cwd=self.project, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for module in ("flash_attn/__init__.py", "mylib.py", "local.py", "dep.py"):
            self.assertTrue(os.path.exists(os.path.join(target, module)), module)
        with open(os.path.join(target, "dep.py")) as f:
            self.assertEqual(f.read(), "VALUE = 'dep 1.2'\n")
        # A path pip would cut short at its blank is refused, naming the package.
        lock = os.path.join(self.project, "manifests", "pylock.e.toml")
        with open(lock) as f:
            locked = f.read()
        with open(lock, "w") as f:
            f.write(locked.replace('path = "wheels/', 'path = "my wheels/'))
        r = self.run_envbox("export", "e", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("local's archive path ./manifests/my wheels/", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_create_elsewhere_fetches_the_archive_by_its_url(self):
        self.write(self.all_three())
        self.run_envbox("lock", "e")
        # Another home (another machine): nothing cached, the wheel comes from the lock's URL.
        other = os.path.join(self.case, "other-home")
        envbox("create", "e", home=other, project=self.project)
        out = envbox("run", "e", "--", "python", "-c", "import flash_attn; print(flash_attn.VALUE)",
                     home=other, project=self.project)
        self.assertEqual(out.stdout.strip(), "flash")
        # The lock is the contract: a wheel served with other bytes at that URL is refused.
        shutil.copy(self.flashy, self.flashy + ".orig")
        try:
            with open(self.flashy, "ab") as f:
                f.write(b"tampered")
            third = os.path.join(self.case, "third-home")
            r = envbox("create", "e", home=third, project=self.project, check=False)
            self.assertEqual(r.returncode, 5, r.stdout + r.stderr)
            self.assertIn("flash-attn", r.stderr)
        finally:
            shutil.move(self.flashy + ".orig", self.flashy)

    def test_a_changed_reference_makes_the_lock_stale(self):
        self.write([f"flash-attn @ {self.flashy_url}"])
        self.run_envbox("lock", "e")
        other = Wheel("flash-attn", "2.9.0", {"flash_attn/__init__.py": "VALUE = 2\n"}).build(
            os.path.join(self.case, "w2"))
        self.write([f"flash-attn @ file://{other}"])
        check = self.run_envbox("lock", "e", "--check", check=False)
        self.assertNotEqual(check.returncode, 0)
        self.assertIn(f"flash-attn @ file://{other}", check.stdout + check.stderr)
        self.run_envbox("lock", "e")
        self.assertIn('version = "2.9.0"', self.lock_text())
        self.assertNotIn('name = "dep"', self.lock_text())

    def test_a_matching_hash_fragment_locks(self):
        self.write([f"flash-attn @ {self.flashy_url}#sha256={sha256_file(self.flashy)}"])
        self.run_envbox("lock", "e")
        self.assertIn(f'url = "{self.flashy_url}"\n', self.lock_text())

    def refused(self, requirements, code, *expect):
        self.write(requirements)
        r = self.run_envbox("lock", "e", check=False)
        self.assertEqual(r.returncode, code, r.stdout + r.stderr)
        for e in expect:
            self.assertIn(e, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.project, "manifests", "pylock.e.toml")))
        return r.stderr

    def test_a_hash_fragment_mismatch_is_refused(self):
        wrong = "0" * 64
        self.refused([f"flash-attn @ {self.flashy_url}#sha256={wrong}"], 5, "flash-attn",
                     sha256_file(self.flashy), wrong)
        self.refused(["local @ ./wheels/" + os.path.basename(self.local) + "#sha256=" + wrong], 5,
                     "local", wrong)

    def test_an_sdist_is_refused_with_what_to_give_instead(self):
        err = self.refused([f"foo @ {self.server.url}/direct/foo-1.0.tar.gz"], 3, "foo @ ",
                           "source distribution", "wheel (.whl)", "find-links directory")
        self.assertIn("e.toml:", err)
        # git+ is a git source and a folder a local source (test_git_sources, test_local_sources);
        # another VCS is refused, and a folder needs a project in it.
        self.refused(["foo @ svn+https://example.invalid/foo"], 3, "VCS reference")
        self.refused(["foo @ ./wheels/"], 3, "foo", "has no pyproject.toml")

    def test_a_wheel_for_another_platform_is_refused_listing_tags(self):
        mac = Wheel("macpkg", "1.0", {"macpkg.py": ""}, tag=f"{CP}-{CP}-macosx_11_0_arm64").build(
            self.wheels)
        self.refused(["macpkg @ ./wheels/" + os.path.basename(mac)], 3, "macpkg",
                     f"{CP}-{CP}-macosx_11_0_arm64", "manylinux_2_28_x86_64", f"{CP}-{CP}-manylinux",
                     "do not fit the target")

    def test_credentials_and_foreign_schemes_are_refused(self):
        err = self.refused([f"flash-attn @ http://user:s3cret@127.0.0.1:1/x/flash_attn-1.0-py3-none-any.whl"],
                           3, "flash-attn", "credentials")
        self.assertNotIn("s3cret", err)
        self.refused(["foo @ ftp://127.0.0.1/foo-1.0-py3-none-any.whl"], 3, "ftp")

    def test_a_wheel_that_is_not_its_file_name_is_refused(self):
        liar = Wheel("liar", "1.0", {"liar.py": ""}, metadata_name="somebody-else").build(self.wheels)
        self.refused(["liar @ ./wheels/" + os.path.basename(liar)], 3, "liar", "somebody-else")
        self.refused(["notliar @ ./wheels/" + os.path.basename(liar)], 3, "project 'liar'")
        self.refused(["gone @ ./wheels/gone-1.0-py3-none-any.whl"], 3, "no wheel at")
        self.refused([f"gone @ {self.server.url}/direct/gone-1.0-py3-none-any.whl"], 4, "HTTP 404")

    def test_a_requirement_the_direct_version_fails_names_both(self):
        err = self.refused([f"flash-attn @ {self.flashy_url}", "flash-attn>=3"], 3,
                           "flash-attn>=3", "2.8.3+cu12torch2.8cxx11abitrue", self.flashy_url)
        self.assertIn("direct reference", err)
        self.refused([f"flash-attn @ {self.flashy_url}", f"flash-attn @ file://{self.flashy}"], 3,
                     "two direct references")


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
