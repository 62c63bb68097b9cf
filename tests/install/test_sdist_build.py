#!/usr/bin/env python3
"""Black-box tests of create from a lock that names sdists: each sdist (written with Python's
tarfile and zipfile in the shapes setuptools makes: a plain setup.py that reads a file beside it
and installs a script, a pyproject.toml over setuptools, a .zip) is built once by envbox's PEP
517 frontend in a build environment made from the PEP 751 lock the main lock names for it
(`[tool.envbox] builds`, Debian's setuptools and wheel wheels), and the installed files equal
what pip installs from the same sdists (pip is the oracle). A second environment from the same
lock builds nothing; a changed build lock builds again; a failing build names the sdist and its
log and stores nothing; a build lock that is not the recorded one is refused.

    test_sdist_build.py ENVBOX_BINARY
"""
import glob
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
from envboxtest import DEBIAN_WHEELS, PIP_WHEEL, PYTHON, envbox, keep_or_remove, pip_comparable  # noqa: E402
from httpserver import StaticServer  # noqa: E402
from wheelgen import sha256_file  # noqa: E402

SDISTS = {
    "demo-1.0.tar.gz": {
        "setup.py": "from setuptools import setup\n"
                    "setup(name='demo', version=open('VERSION').read().strip(),\n"
                    "      py_modules=['demo'], scripts=['bin/demo-tool'])\n",
        "VERSION": "1.0\n",
        "demo.py": "ANSWER = 42\n",
        "bin/demo-tool": "#!python\nprint('demo tool')\n",
    },
    "modern-2.0.tar.gz": {
        "pyproject.toml": "[build-system]\nrequires = [\"setuptools>=40.8\", \"wheel\"]\n"
                          "build-backend = \"setuptools.build_meta\"\n",
        "setup.cfg": "[metadata]\nname = modern\nversion = 2.0\n"
                     "[options]\npackages = modern\n"
                     "[options.entry_points]\nconsole_scripts =\n    modern-cli = modern:main\n",
        "modern/__init__.py": "def main():\n    print('modern cli')\n",
    },
    "zipped-3.0.zip": {
        "setup.py": "from setuptools import setup\nsetup(name='zipped', version='3.0', py_modules=['zipped'])\n",
        "zipped.py": "Z = 3\n",
    },
}


def write_sdist(folder, filename, files):
    top = filename[:-len(".tar.gz")] if filename.endswith(".tar.gz") else filename[:-len(".zip")]
    path = os.path.join(folder, filename)
    if filename.endswith(".zip"):
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            for name, text in files.items():
                z.writestr(f"{top}/{name}", text)
    else:
        with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as t:
            for name, text in files.items():
                data = text.encode()
                info = tarfile.TarInfo(f"{top}/{name}")
                info.size, info.mode = len(data), 0o755 if name.startswith("bin/") else 0o644
                t.addfile(info, io.BytesIO(data))
    return path


def package_entry(name, version, path, manifests):
    return (f'[[packages]]\nname = "{name}"\nversion = "{version}"\n\n[packages.sdist]\n'
            f'path = "{os.path.relpath(path, manifests)}"\nsize = {os.path.getsize(path)}\n'
            f'hashes = {{ sha256 = "{sha256_file(path)}" }}\n\n')


class SdistBuilds(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-sdist-build-")
        self.project = envboxtest.Project(self.tmp)
        self.manifests = os.path.join(self.project.root, "manifests")
        sdists = os.path.join(self.manifests, "sdists")
        os.makedirs(sdists)
        self.sdists = {fn: write_sdist(sdists, fn, files) for fn, files in SDISTS.items()}
        # The build environment's lock: Debian's setuptools and wheel wheels.
        self.build_wheels = [w for w in DEBIAN_WHEELS
                             if os.path.basename(w).startswith(("setuptools-", "wheel-"))]
        self.assertEqual(len(self.build_wheels), 2)
        self.write_build_lock("")

    def tearDown(self):
        keep_or_remove(self.tmp)

    def write_build_lock(self, extra):
        text = 'lock-version = "1.0"\ncreated-by = "test"\n\n'
        for w in self.build_wheels:
            name, version = os.path.basename(w).split("-")[:2]
            text += (f'[[packages]]\nname = "{name}"\nversion = "{version}"\n\n[[packages.wheels]]\n'
                     f'path = "{w}"\nhashes = {{ sha256 = "{sha256_file(w)}" }}\n\n')
        path = os.path.join(self.manifests, "pylock.e.build.toml")
        with open(path, "w") as f:
            f.write(text + extra)
        return sha256_file(path)

    def write_lock(self, env, names, build_sha, url=None):
        text = 'lock-version = "1.0"\ncreated-by = "test"\n\n'
        builds = []
        for fn in names:
            name, version = fn.split("-")[0], fn.split("-")[1].replace(".tar.gz", "").replace(".zip", "")
            text += package_entry(name, version, self.sdists.get(fn) or fn, self.manifests)
            if url:  # the sdist by URL instead of by path
                text = text.replace(f'path = "sdists/{fn}"', f'url = "{url}/{fn}"')
            builds.append(f'"{name} pylock.e.build.toml {build_sha}"')
        text += "[tool.envbox]\nbuilds = [" + ", ".join(builds) + "]\n"
        with open(self.project.lock_path(env), "w") as f:
            f.write(text)

    def records(self):
        return {p: os.stat(p).st_mtime_ns for p in glob.glob(os.path.join(self.project.home, "store-v1", "builds", "*"))}

    def assert_installed_as_pip_installs(self, env, pip_args, find_links):
        """ENV's site-packages and scripts equal what pip installs with `pip_args`, building
        from `find_links` (pip is the oracle)."""
        venv = os.path.join(self.tmp, "pip-venv-" + env)
        subprocess.run([PYTHON, "-m", "venv", "--without-pip", venv], check=True)
        subprocess.run([PYTHON, os.path.join(PIP_WHEEL, "pip"), "--python", os.path.join(venv, "bin", "python"),
                        "install", "--no-index", "--no-compile", "--disable-pip-version-check",
                        "-q", "--find-links", find_links] + pip_args, check=True)
        ours, pips = pip_comparable(self.project.current(env)), pip_comparable(venv)
        for t in (ours, pips):
            for rel in list(t):
                # Who installed, the hashes of rows with paths, and pip's record of installing
                # from a file (PEP 610: envbox installs from the lock, not a direct reference).
                if rel.endswith((".dist-info/INSTALLER", ".dist-info/RECORD", ".dist-info/direct_url.json")):
                    del t[rel]
        for built in ("demo.py", "demo-1.0.dist-info/METADATA"):
            self.assertTrue(any(rel.endswith("site-packages/" + built) for rel in pips), built)
        self.assertIn("bin/demo-tool", pips)
        self.assertEqual(sorted(set(pips) - set(ours)), [], "files pip installed that envbox did not")
        self.assertEqual(sorted(set(ours) - set(pips)), [], "files envbox installed that pip did not")
        for rel in sorted(pips):
            with self.subTest(path=rel):
                self.assertEqual(ours[rel][1], pips[rel][1], f"content differs: {rel}")
                self.assertEqual(ours[rel][2], pips[rel][2], f"exec bit differs: {rel}")

    def test_built_once_installed_as_pip_installs(self):
        build_sha = sha256_file(os.path.join(self.manifests, "pylock.e.build.toml"))
        self.write_lock("e", list(SDISTS), build_sha)
        self.project.run("create", "e")
        out = self.project.run("run", "e", "--", "python", "-c",
                               "import demo, modern, zipped; print(demo.ANSWER, zipped.Z)")
        self.assertEqual(out.stdout.strip(), "42 3")
        self.assertEqual(self.project.run("run", "e", "--", "demo-tool").stdout.strip(), "demo tool")
        self.assertEqual(self.project.run("run", "e", "--", "modern-cli").stdout.strip(), "modern cli")
        self.project.run("verify", "e")
        self.assertEqual(len(self.records()), 3)

        # pip, the oracle: the same sdists built in its own isolated build (the same Debian
        # setuptools and wheel, from --find-links) and installed into a venv.
        self.assert_installed_as_pip_installs("e", ["--no-deps"] + list(self.sdists.values()),
                                              os.path.dirname(self.build_wheels[0]))

        # Shipping: a node never builds, and push/pack do not carry built wheels yet: refused,
        # saying so, before anything is written.
        r = self.project.run("pack", "e", "--output", os.path.join(self.tmp, "e.tar"), check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("push and pack do not carry built wheels yet", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "e.tar")))

        # Another environment of the same lock: every wheel is the store's, nothing is built.
        before = self.records()
        shutil.copyfile(self.project.lock_path("e"), self.project.lock_path("f"))
        self.project.run("create", "f")
        self.assertEqual(self.records(), before)
        self.assertEqual(self.project.run("run", "f", "--", "python", "-c", "import demo; print(demo.ANSWER)")
                         .stdout.strip(), "42")

        # A changed build environment builds again: three new keys beside the old.
        self.write_lock("f", list(SDISTS), self.write_build_lock("# another build environment\n"))
        self.project.run("create", "f")
        self.assertEqual(len(self.records()), 6)

    def test_an_sdist_by_url_is_downloaded_and_hashed_and_never_offline(self):
        build_sha = sha256_file(os.path.join(self.manifests, "pylock.e.build.toml"))
        server = StaticServer(os.path.join(self.manifests, "sdists"))
        try:
            self.write_lock("e", ["demo-1.0.tar.gz"], build_sha, url=server.url)
            r = self.project.run("create", "e", "--offline", check=False)
            self.assertEqual(r.returncode, 4, r.stderr)
            self.assertIn(f"--offline: demo-1.0.tar.gz would be downloaded from {server.url}/demo-1.0.tar.gz",
                          r.stderr)
            self.project.run("create", "e")
            self.assertEqual(self.project.run("run", "e", "--", "python", "-c", "import demo; print(demo.ANSWER)")
                             .stdout.strip(), "42")
            # Bytes other than the lock's: refused, and the bad download is not kept.
            with open(self.sdists["demo-1.0.tar.gz"], "ab") as f:
                f.write(b"tampered")
            self.write_lock("f", ["demo-1.0.tar.gz"], build_sha, url=server.url)
            with open(self.project.lock_path("f")) as f:
                text = f.read()
            with open(self.project.lock_path("f"), "w") as f:  # the lock keeps the old digest
                f.write(text.replace(sha256_file(self.sdists["demo-1.0.tar.gz"]), "1" * 64))
            r = self.project.run("create", "f", check=False)
            self.assertEqual(r.returncode, 5, r.stderr)
            self.assertIn("hash mismatch for demo-1.0.tar.gz", r.stderr)
        finally:
            server.close()

    def test_a_failing_build_names_the_sdist_and_its_log_and_stores_nothing(self):
        bad = write_sdist(os.path.join(self.manifests, "sdists"), "broken-1.0.tar.gz",
                          {"setup.py": "raise SystemExit('broken cannot build here')\n"})
        self.sdists["broken-1.0.tar.gz"] = bad
        self.write_lock("e", ["broken-1.0.tar.gz"], sha256_file(os.path.join(self.manifests, "pylock.e.build.toml")))
        r = self.project.run("create", "e", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("building broken-1.0.tar.gz: the backend failed (exit 1)", r.stderr)
        self.assertIn("broken cannot build here", r.stderr)
        log = r.stderr.split("its log is ")[1].split(":\n")[0]
        self.assertTrue(os.path.isfile(log), log)
        self.assertEqual(self.records(), {})
        self.assertIsNone(self.project.current("e"))

    def test_a_build_lock_other_than_the_recorded_one_is_refused(self):
        self.write_lock("e", ["demo-1.0.tar.gz"], "0" * 64)
        r = self.project.run("create", "e", check=False)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn("pylock.e.build.toml is not the build lock", r.stderr)
        self.assertEqual(self.records(), {})


# The sdists of a loopback index, as setuptools writes them: PKG-INFO Metadata 2.1 (its
# dependencies are the build's to say), one PEP 643 Metadata 2.2 PKG-INFO with nothing dynamic
# (read as it is: no build while locking), and an old .zip with no PKG-INFO.
INDEX_SDISTS = {
    "demo-1.0.tar.gz": dict(SDISTS["demo-1.0.tar.gz"],
                            **{"PKG-INFO": "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n"}),
    "modern-2.0.tar.gz": dict(SDISTS["modern-2.0.tar.gz"], **{
        "setup.cfg": SDISTS["modern-2.0.tar.gz"]["setup.cfg"].replace(
            "packages = modern\n", "packages = modern\ninstall_requires = demo\n"),
        "PKG-INFO": "Metadata-Version: 2.1\nName: modern\nVersion: 2.0\n"}),
    "static-1.0.tar.gz": {
        "setup.py": "from setuptools import setup\nsetup(name='static', version='1.0', py_modules=['static'],\n"
                    "      install_requires=['zipped'])\n",
        "static.py": "S = 1\n",
        "PKG-INFO": "Metadata-Version: 2.2\nName: static\nVersion: 1.0\nRequires-Dist: zipped\n",
    },
    "zipped-3.0.zip": SDISTS["zipped-3.0.zip"],
    # A build requirement that would have lock read a file of this machine into a build lock.
    "sneaky-1.0.tar.gz": {
        "pyproject.toml": "[build-system]\nrequires = [\"setuptools @ file:///etc/passwd\"]\n"
                          "build-backend = \"setuptools.build_meta\"\n",
        "PKG-INFO": "Metadata-Version: 2.1\nName: sneaky\nVersion: 1.0\n",
    },
}


class LockedFromSdists(unittest.TestCase):
    """`lock` over a loopback simple index whose packages are sdists only, Debian's setuptools
    and wheel wheels beside them."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-sdist-lock-")
        self.project = envboxtest.Project(self.tmp)
        files = os.path.join(self.tmp, "index", "files")
        os.makedirs(files)
        self.sdists = [write_sdist(files, fn, members) for fn, members in INDEX_SDISTS.items()]
        for w in DEBIAN_WHEELS:
            if os.path.basename(w).startswith(("setuptools-", "wheel-")):
                shutil.copy(w, files)
        self.files = files
        for fn in sorted(os.listdir(files)):
            name = fn.split("-")[0].lower()
            page = os.path.join(self.tmp, "index", "simple", name)
            os.makedirs(page, exist_ok=True)
            with open(os.path.join(page, "index.html"), "a") as f:
                f.write(f'<a href="../../files/{fn}#sha256={sha256_file(os.path.join(files, fn))}">{fn}</a>\n')
        self.server = StaticServer(os.path.join(self.tmp, "index"))

    def tearDown(self):
        self.server.close()
        keep_or_remove(self.tmp)

    def records(self):
        return glob.glob(os.path.join(self.project.home, "store-v1", "builds", "*"))

    def write_manifest(self, env, extra=""):
        text = envboxtest.manifest_text(["modern", "static"],
                                        indexes=[("loopback", self.server.url + "/simple", "")])
        self.project.write(env, text.replace("requirements = [", extra + "requirements = [", 1))

    def test_builds_are_refused_unless_the_manifest_allows_them(self):
        self.write_manifest("e")
        r = self.project.run("lock", "e", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("has only a source distribution, and building it is not allowed", r.stderr)
        self.assertIn('[build.modern] build = "allow"', r.stderr)
        self.assertEqual(self.records(), [])
        # Per package: every build allowed but demo's (modern's dependency), which [environment]
        # allows and [build.demo] does not.
        self.write_manifest("e", 'build = "allow"\n')
        with open(os.path.join(self.project.root, "manifests", "e.toml"), "a") as f:
            f.write('\n[build.demo]\nbuild = "never"\n')
        r = self.project.run("lock", "e", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("[build.demo]", r.stderr)
        # A build requirement is the sdist's say: never a URL or a path.
        self.project.write("s", envboxtest.manifest_text(
            ["sneaky"], indexes=[("loopback", self.server.url + "/simple", "")]).replace(
            "requirements = [", 'build = "allow"\nrequirements = [', 1))
        r = self.project.run("lock", "s", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("[build-system] requires 'setuptools @ file:///etc/passwd' is a direct reference", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.project.root, "manifests", "pylock.s.toml")))

    def test_lock_chooses_sdists_and_create_installs_what_pip_installs(self):
        self.write_manifest("e", 'build = "allow"\n')
        self.project.run("lock", "e")
        text = self.project.lock_text("e")
        for fn in INDEX_SDISTS:
            if fn.startswith("sneaky"):
                continue
            self.assertIn(f'[packages.sdist]\nname = "{fn}"\nurl = "{self.server.url}/files/{fn}"', text)
        self.assertNotIn("[[packages.wheels]]", text)
        # Each sdist's build environment is locked beside the lock, and named with its digest.
        builds = text.split("builds = [")[1].split("]")[0]
        for name in ("demo", "modern", "static", "zipped"):
            build_lock = os.path.join(self.project.root, "manifests", f"pylock.e.build.{name}.toml")
            self.assertIn(f'"{name} pylock.e.build.{name}.toml {sha256_file(build_lock)}"', builds)
            with open(build_lock) as f:
                built_from = f.read()
            self.assertIn('name = "setuptools"', built_from)
            self.assertIn('name = "wheel"', built_from)
        # Metadata 2.1 or none: built while locking (and kept); static's PKG-INFO is read as is.
        self.assertEqual(len(self.records()), 3)
        self.project.run("create", "e")
        self.assertEqual(len(self.records()), 4)
        out = self.project.run("run", "e", "--", "python", "-c",
                               "import demo, modern, static, zipped; print(demo.ANSWER, static.S, zipped.Z)")
        self.assertEqual(out.stdout.strip(), "42 1 3")
        self.assertEqual(self.project.run("run", "e", "--", "modern-cli").stdout.strip(), "modern cli")
        self.assert_installed_as_pip_installs("e", ["modern", "static"], self.files)
        # Locked again: up to date, nothing built. A build lock gone: locked again, the same bytes
        # written back, nothing built either (the wheels are the store's by their keys).
        r = self.project.run("lock", "e")
        self.assertIn("up to date", r.stdout + r.stderr)
        demo_lock = os.path.join(self.project.root, "manifests", "pylock.e.build.demo.toml")
        before = sha256_file(demo_lock)
        os.remove(demo_lock)
        r = self.project.run("lock", "e")
        self.assertNotIn("up to date", r.stdout + r.stderr)
        self.assertEqual(sha256_file(demo_lock), before)
        self.assertEqual(self.project.lock_text("e"), text)
        self.assertEqual(len(self.records()), 4)
        # Build locks are not environments: `verify` of every environment checks e alone.
        out = self.project.run("verify")
        self.assertNotIn("e.build.", out.stdout + out.stderr)
        r = self.project.run("create", "e.build.demo", check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("'.build.' names build locks", r.stderr)

    assert_installed_as_pip_installs = SdistBuilds.assert_installed_as_pip_installs


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
