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
import fcntl
import glob
import io
import json
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
import registry  # noqa: E402
from wheelgen import Wheel, sha256_file  # noqa: E402

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
        verified = self.project.run("verify", "e")
        self.assertIn("built from sdists by envbox: demo (build ", verified.stderr)
        self.assertEqual(len(self.records()), 3)
        shown = json.loads(self.project.run("--json", "show", "e").stdout)
        built = {p["name"]: p["built"] for p in shown["packages"]}
        records = {os.path.basename(p) for p in self.records()}
        self.assertEqual(set(built), {"demo", "modern", "zipped"})
        self.assertEqual(set(built.values()), records)  # each names its build's record

        # pip, the oracle: the same sdists built in its own isolated build (the same Debian
        # setuptools and wheel, from --find-links) and installed into a venv.
        self.assert_installed_as_pip_installs("e", ["--no-deps"] + list(self.sdists.values()),
                                              os.path.dirname(self.build_wheels[0]))

        # export --wheels: the wheels envbox built, and a requirements file that has pip
        # install them (binary only: pip may not build) with every hash checked.
        wheels, req = os.path.join(self.tmp, "built"), os.path.join(self.tmp, "req.txt")
        self.project.run("export", "e", "--wheels", wheels, "-o", req)
        self.assertEqual(sorted(f.split("-")[0] for f in os.listdir(wheels)), ["demo", "modern", "zipped"])
        with open(req) as f:
            self.assertIn(f"--find-links {wheels}\n", f.read())
        venv = os.path.join(self.tmp, "pip-export")
        subprocess.run([PYTHON, "-m", "venv", "--without-pip", venv], check=True)
        subprocess.run([PYTHON, os.path.join(PIP_WHEEL, "pip"), "--python", os.path.join(venv, "bin", "python"),
                        "install", "--no-index", "--only-binary", ":all:", "--require-hashes",
                        "--disable-pip-version-check", "-q", "-r", req], check=True)
        out = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                              "import demo, modern, zipped; print(demo.ANSWER, zipped.Z)"],
                             capture_output=True, text=True, check=True)
        self.assertEqual(out.stdout.strip(), "42 3")

        # A link planted at a built wheel's kept archive is refused, never copied through.
        demo = next(f for f in os.listdir(wheels) if f.startswith("demo-"))
        archive = os.path.join(self.project.home, "store-v1", "wheels",
                               sha256_file(os.path.join(wheels, demo)), "archive")
        outside = os.path.join(self.tmp, "outside.whl")
        shutil.copyfile(archive, outside)
        os.chmod(archive, 0o644)
        os.rename(archive, archive + ".real")
        os.symlink(outside, archive)
        refused = self.project.run("export", "e", "--wheels", os.path.join(self.tmp, "linked"),
                                   "-o", req, check=False)
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("is a symbolic link where envbox keeps its own file", refused.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "linked", demo)))
        os.unlink(archive)
        os.rename(archive + ".real", archive)

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

        # gc: build environments are a cache. One a build holds (its lock, shared) stays; the
        # other goes, and the environments built with them are untouched.
        build_envs = os.path.join(self.project.home, "cache", "build-envs")
        held, other = sorted(os.listdir(build_envs))
        with open(os.path.join(self.project.home, "locks", f"build-env-{held}.lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_SH)
            report = json.loads(self.project.run("--json", "gc").stdout)
        self.assertEqual(report["build_environments_removed"], 1)
        self.assertEqual(os.listdir(build_envs), [held])
        self.assertEqual(json.loads(self.project.run("--json", "gc").stdout)["build_environments_removed"], 1)
        self.assertEqual(os.listdir(build_envs), [])
        for env in ("e", "f"):
            self.project.run("verify", env)
        self.assertEqual(len(self.records()), 6)  # the built wheels are the environments' own

    def node(self, name):
        """A receiving machine: a project folder and a home of its own."""
        root = os.path.join(self.tmp, name)
        return envboxtest.Project(self.tmp, root=os.path.join(root, "proj"), home=os.path.join(root, "home"))

    def assert_received_built(self, node):
        """NODE installed the built wheels it received: it built nothing (no build
        environment, no backend ran) and keeps the builder's records, byte for byte but for
        their origin: the builder's say local, the node's received (a local create there would
        build for itself)."""
        out = node.run("run", "e", "--", "python", "-c",
                       "import demo, modern, zipped; print(demo.ANSWER, zipped.Z)")
        self.assertEqual(out.stdout.strip(), "42 3")
        self.assertEqual(node.run("run", "e", "--", "demo-tool").stdout.strip(), "demo tool")
        self.assertFalse(os.path.exists(os.path.join(node.home, "cache", "build-envs")))
        self.assertIn("built from sdists by envbox: demo (build ", node.run("verify", "e").stderr)

        def records(home):
            out = {}
            for p in glob.glob(os.path.join(home, "store-v1", "builds", "*")):
                with open(p) as f:
                    out[os.path.basename(p)] = f.read()
            return out
        builder = {k: v.replace("\norigin local\n", "\norigin received\n")
                   for k, v in records(self.project.home).items()}
        self.assertTrue(all("\norigin local\n" in v for v in records(self.project.home).values()))
        self.assertEqual(records(node.home), builder)

    def test_pack_and_push_carry_built_wheels_and_a_node_never_builds(self):
        build_sha = sha256_file(os.path.join(self.manifests, "pylock.e.build.toml"))
        self.write_lock("e", list(SDISTS), build_sha)
        self.project.run("create", "e")
        built = {os.path.basename(p) for p in glob.glob(
            os.path.join(self.project.home, "store-v1", "builds", "*"))}
        self.assertEqual(len(built), 3)

        # pack: the lock, the builds list (sdist, wheel, size, name, key), every wheel, then
        # each built wheel's bytecode.
        packed = os.path.join(self.tmp, "e.tar")
        self.project.run("pack", "e", "--output", packed)
        with tarfile.open(packed) as t:
            names = t.getnames()
            builds = t.extractfile("builds").read().decode()
        self.assertEqual(names[:2], ["pylock.toml", "builds"])
        self.assertEqual(sorted(n.split("-")[0] for n in names[2:5]),
                         ["wheels/demo", "wheels/modern", "wheels/zipped"])
        self.assertEqual(len(names[5:]), 3)
        self.assertTrue(all(n.startswith("bytecode/") for n in names[5:]), names)
        lines = builds.splitlines()
        self.assertEqual(lines[0], "envbox-pack-builds 1")
        sdist_shas = {sha256_file(p) for p in self.sdists.values()}
        self.assertEqual({line.split(" ")[1] for line in lines[1:]}, sdist_shas)

        node = self.node("node")
        node.run("unpack", packed, "e")
        self.assert_received_built(node)
        # A node passes on what it received: its own pack carries the same builds.
        again = os.path.join(self.tmp, "again.tar")
        node.run("pack", "e", "--output", again)
        with tarfile.open(again) as t:
            self.assertEqual(t.extractfile("builds").read().decode(), builds)

        # Hostile packs: a wheel claimed built from another package's sdist, and a pack with
        # neither its builds nor the built wheels (a node still never builds): refused, exit 5.
        modern_sha = sha256_file(self.sdists["modern-2.0.tar.gz"])
        demo_sha = sha256_file(self.sdists["demo-1.0.tar.gz"])
        swapped = builds.replace(f"build {demo_sha}", "build SWAP").replace(
            f"build {modern_sha}", f"build {demo_sha}").replace("build SWAP", f"build {modern_sha}")
        for label, replace, why in (
                ("swapped", swapped, "is not named as a wheel of"),
                ("bare", None, "is built from its sdist, and no built wheel came with what was received")):
            hostile = os.path.join(self.tmp, f"{label}.tar")
            with tarfile.open(packed) as src, tarfile.open(hostile, "w") as dst:
                for m in src.getmembers():
                    data = src.extractfile(m).read()
                    if replace is None and m.name != "pylock.toml":
                        continue  # bare: the lock alone
                    if m.name == "builds":
                        data = replace.encode()
                    m.size = len(data)
                    dst.addfile(m, io.BytesIO(data))
            other = self.node(label)
            r = other.run("unpack", hostile, "e", check=False)
            self.assertEqual(r.returncode, 5, r.stderr)
            self.assertIn(why, r.stderr)
            self.assertFalse(os.path.exists(other.lock_path("e")))

        if not registry.available():
            return
        # push: each built wheel's layer names its sdist and its build's key; pull uses them.
        reg = registry.Registry(os.path.join(self.tmp, "registry"))
        try:
            ref = f"{reg.host}/team/e:v1"
            self.project.run("push", "e", ref, "--plain-http")
            layers = reg.get_manifest("team/e", "v1")["layers"]
            sent = {l["annotations"]["dev.envbox.built-from"]: l["annotations"]["dev.envbox.build-key"]
                    for l in layers if "dev.envbox.built-from" in l["annotations"]}
            self.assertEqual(set(sent), sdist_shas)
            for sha, key in sent.items():
                self.assertTrue(key.startswith("envbox-build-key 1\nsdist " + sha + "\n"), key)
            puller = self.node("puller")
            os.makedirs(puller.root, exist_ok=True)
            puller.run("pull", ref, "e", "--plain-http")
            self.assert_received_built(puller)
        finally:
            reg.close()

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
        self.files = files
        self.server = envboxtest.build_tools_index(os.path.join(self.tmp, "index"))

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
        # A package no longer built: its build lock goes with it (static needs zipped still).
        manifest = os.path.join(self.project.root, "manifests", "e.toml")
        with open(manifest) as f:
            text = f.read()
        with open(manifest, "w") as f:
            f.write(text.replace('requirements = ["modern", "static"]', 'requirements = ["static"]'))
        r = self.project.run("lock", "e")
        self.assertIn("removed pylock.e.build.modern.toml", r.stderr)
        left = sorted(os.path.basename(p) for p in glob.glob(
            os.path.join(self.project.root, "manifests", "pylock.e.build.*.toml")))
        self.assertEqual(left, ["pylock.e.build.static.toml", "pylock.e.build.zipped.toml"])

    assert_installed_as_pip_installs = SdistBuilds.assert_installed_as_pip_installs


class BuildLockPreferences(unittest.TestCase):
    """A build lock is kept as the main lock is: locked again, a build requirement stays at the
    version it had though a newer one appeared; `--upgrade` moves it."""

    def test_locked_again_a_build_requirement_keeps_its_version(self):
        tmp = tempfile.mkdtemp(prefix="envbox-sdist-prefs-")
        self.addCleanup(keep_or_remove, tmp)
        project = envboxtest.Project(tmp)
        files = os.path.join(tmp, "index", "files")
        os.makedirs(files)
        write_sdist(files, "pinned-1.0.tar.gz", {
            "pyproject.toml": "[build-system]\nrequires = [\"setuptools\", \"buildhelper\"]\n"
                              "build-backend = \"setuptools.build_meta\"\n",
            "PKG-INFO": "Metadata-Version: 2.2\nName: pinned\nVersion: 1.0\n"})
        Wheel("buildhelper", "1.0", {"buildhelper.py": ""}).build(files)
        server = envboxtest.build_tools_index(os.path.join(tmp, "index"))
        self.addCleanup(server.close)
        text = envboxtest.manifest_text(["pinned"], indexes=[("loopback", server.url + "/simple", "")])
        project.write("e", text.replace("requirements = [", 'build = "allow"\nrequirements = [', 1))
        build_lock = os.path.join(project.root, "manifests", "pylock.e.build.pinned.toml")

        def helper_version():
            with open(build_lock) as f:
                return f.read().split('name = "buildhelper"\nversion = "')[1].split('"')[0]
        project.run("lock", "e")
        self.assertEqual(helper_version(), "1.0")
        # buildhelper 2.0 appears; the lock is made again from nothing but its build locks.
        newer = Wheel("buildhelper", "2.0", {"buildhelper.py": ""}).build(files)
        with open(os.path.join(tmp, "index", "simple", "buildhelper", "index.html"), "a") as f:
            f.write(f'<a href="../../files/{os.path.basename(newer)}#sha256={sha256_file(newer)}">'
                    f'{os.path.basename(newer)}</a>\n')
        project.run("cache", "clean")  # the index page again, with 2.0 on it
        os.remove(project.lock_path("e"))
        project.run("lock", "e")
        self.assertEqual(helper_version(), "1.0")
        project.run("lock", "e", "--upgrade")
        self.assertEqual(helper_version(), "2.0")


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
