#!/usr/bin/env python3
"""Black-box tests of hostile locks and wheels against envbox's own files: values that reach a
path (a lock's sha256, a wheel's METADATA Name) never make envbox create, delete or link a
file outside ENVBOX_HOME and the environment; values that would break the store's records (a
Version with a blank, a folded header) are refused before anything is recorded; a wheel that is
not the version its file name and lock say is refused; a lock's size is checked for local
paths; a store object deleted by hand is drift; gc killed at any moment never leaves a stamped,
half-removed generation. The real envbox binary, real wheels, a real HTTP server on 127.0.0.1.

    test_hostile_paths.py ENVBOX_BINARY
"""
import glob
import hashlib
import http.server
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
from envboxtest import (PYTHON, current_generation, envbox, envbox_cmd, envbox_env, keep_or_remove,  # noqa: E402
                        manifest_text, sha256_file, write_manifest)
from httpserver import Cutting, HttpServer  # noqa: E402
from wheelgen import Wheel, write_lock, toml_str  # noqa: E402


class PatchedWheel(Wheel):
    """A wheel whose METADATA text (and, optionally, .dist-info directory) is given as is."""

    def __init__(self, name, version, files=None, *, metadata=None, dist_info=None, **kw):
        super().__init__(name, version, files, **kw)
        self._metadata = metadata
        self._dist_info = dist_info

    @property
    def dist_info(self):
        return self._dist_info or super().dist_info

    def _dist_info_files(self):
        out = super()._dist_info_files()
        if self._metadata is not None:
            out[f"{self.dist_info}/METADATA"] = self._metadata
        return out


def lock_text(entries):
    """A PEP 751 lock: entries are dicts with name, version, and path or url, sha256, size."""
    lines = ['lock-version = "1.0"', 'created-by = "hostile-test"']
    for e in entries:
        lines += ["", "[[packages]]", f"name = {toml_str(e['name'])}", f"version = {toml_str(e['version'])}", "",
                  "[[packages.wheels]]"]
        lines.append(f"url = {toml_str(e['url'])}" if "url" in e else f"path = {toml_str(e['path'])}")
        if e.get("size") is not None:
            lines.append(f"size = {e['size']}")
        lines.append(f"hashes = {{ sha256 = {toml_str(e['sha256'])} }}")
    return "\n".join(lines) + "\n"


def snapshot(root, skip=()):
    """path → (size, mtime_ns, inode) of every file under root, outside the `skip` subtrees."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if os.path.join(dirpath, d) not in skip]
        for n in filenames + [d for d in dirnames]:
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            out[os.path.relpath(p, root)] = (st.st_size, st.st_mtime_ns, st.st_ino)
    return out


def object_digest_reaching(relative, secret):
    """A 64-character "digest" that, as store-v1/objects/sha256/<2>/<62>, names `relative` (from
    objects/sha256/); `secret` is made to look like an untouched object (0444, 1980 mtime)."""
    pad = 64 - len(relative)
    digest = "./" * (pad // 2) + ("/" if pad % 2 else "") + relative
    assert len(digest) == 64, digest
    os.chmod(secret, 0o444)
    os.utime(secret, (315532800, 315532800))
    return digest


class Sandbox(unittest.TestCase):
    """A temporary directory holding the home, the project and canaries beside them."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-hostile-")
        self.home = os.path.join(self.tmp, "home")
        self.project = os.path.join(self.tmp, "proj")
        self.wheels = os.path.join(self.project, "wheels")
        os.makedirs(os.path.join(self.project, "manifests"))
        self.outside = os.path.join(self.tmp, "outside")
        os.makedirs(self.outside)
        self.canary = os.path.join(self.outside, "canary.whl")
        with open(self.canary, "w") as f:
            f.write("canary\n")

    def tearDown(self):
        keep_or_remove(self.tmp)

    def run_envbox(self, *args, check=False, timeout=120):
        return envbox(*args, home=self.home, project=self.project, check=check, timeout=timeout)

    def write_lock(self, env, text):
        with open(os.path.join(self.project, "manifests", f"pylock.{env}.toml"), "w") as f:
            f.write(text)

    def good_wheel(self, name="good", version="1.0"):
        return Wheel(name, version, {f"{name}/__init__.py": f"V = {version!r}\n"}).build(self.wheels)

    def outside_state(self):
        """Everything outside the home and the project: must never change."""
        return snapshot(self.tmp, skip={self.home, self.project})

    def current(self, env):
        return current_generation(self.home, env)


class DigestsAsPaths(Sandbox):
    """A lock's sha256 is 64 lowercase hex digits or the lock is refused (exit 3, file:line):
    no value reaches the download cache, the store's wheel table or a staging directory."""

    HOSTILE = ["../../../outside/canary", "../../../../../../../../../../tmp/envbox-hostile-x",
               "../../../outside/" + "a" * 48, "/etc/passwd", "a" * 63 + "/", "A" * 63 + "."]

    def test_local_path_lock_with_hostile_sha256(self):
        whl = self.good_wheel()
        before = self.outside_state()
        for k, sha in enumerate(self.HOSTILE):
            with self.subTest(sha=sha):
                self.write_lock(f"e{k}", lock_text([{"name": "good", "version": "1.0", "sha256": sha,
                                                     "path": os.path.relpath(whl, os.path.join(self.project, "manifests")),
                                                     "size": os.path.getsize(whl)}]))
                r = self.run_envbox("create", f"e{k}", "--frozen")
                self.assertEqual(r.returncode, 3, r.stderr)
                self.assertIn(f"pylock.e{k}.toml:", r.stderr)
                self.assertIn("Invalid sha256 digest", r.stderr)
                self.assertEqual(self.outside_state(), before, "a file outside the home changed")
                self.assertEqual(glob.glob(os.path.join(self.tmp, "envbox-hostile-x*")), [])

    def test_downloaded_wheel_with_hostile_sha256_deletes_nothing_outside(self):
        served = os.path.join(self.tmp, "served")
        whl = Wheel("good", "1.0", {"good/__init__.py": ""}).build(served)
        Cutting.directory, Cutting.cut, Cutting.cuts, Cutting.refuse_ranges, Cutting.log = served, 0, 0, False, []
        server = HttpServer(Cutting)
        url = f"{server.url}/" + os.path.basename(whl)
        try:
            before = self.outside_state()
            # cache/downloads/<sha>.whl would be tmp/outside/canary.whl, removed as a bad download.
            self.write_lock("web", lock_text([{"name": "good", "version": "1.0", "url": url,
                                               "sha256": "../../../outside/canary", "size": os.path.getsize(whl)}]))
            r = self.run_envbox("create", "web", "--frozen")
            self.assertEqual(r.returncode, 3, r.stderr)
            self.assertIn("Invalid sha256 digest", r.stderr)
            self.assertTrue(os.path.exists(self.canary), "the canary outside the home was deleted")
            self.assertEqual(self.outside_state(), before)
        finally:
            server.close()

    def test_file_list_planted_in_the_repository_is_never_read(self):
        # The lock's sha256 walks from store-v1/wheels/ to a file list the repository ships,
        # whose object digest walks to a secret outside: nothing may be linked from it.
        whl = self.good_wheel()
        secret = os.path.join(self.outside, "secret.txt")
        with open(secret, "w") as f:
            f.write("secret\n")
        digest = object_digest_reaching("../../../../outside/secret.txt", secret)
        planted = os.path.join(self.project, "planted")
        os.makedirs(planted)
        with open(os.path.join(planted, "files"), "w") as f:
            f.write("envbox-wheel-files 1\nwheel good-1.0-py3-none-any.whl\nname good\nversion 1.0\n"
                    "dist-info good-1.0.dist-info\nroot-is-purelib 1\nfiles 1\n"
                    f"{digest} - 7 good/secret.txt\n")
        self.write_lock("planted", lock_text([{"name": "good", "version": "1.0", "sha256": "../../../proj/planted",
                                               "path": "../wheels/" + os.path.basename(whl)}]))
        r = self.run_envbox("create", "planted", "--frozen")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertEqual(os.stat(secret).st_nlink, 1, "the secret outside was linked into an environment")
        self.assertEqual(glob.glob(os.path.join(self.home, "envs", "*", "planted", "gen-*", "lib", "*", "*", "good")), [])

    def test_file_list_in_the_store_with_hostile_digests_is_damaged(self):
        # A file list under a real wheel's name (planted in a shared home, or left by an older
        # envbox) whose object digest is a path: refused as damaged, nothing linked.
        whl = self.good_wheel()
        sha = sha256_file(whl)
        secret = os.path.join(self.outside, "secret.txt")
        with open(secret, "w") as f:
            f.write("secret\n")
        digest = object_digest_reaching("../../../../outside/secret.txt", secret)
        self.write_lock("env", lock_text([{"name": "good", "version": "1.0", "sha256": sha,
                                           "path": "../wheels/" + os.path.basename(whl), "size": os.path.getsize(whl)}]))
        listing = os.path.join(self.home, "store-v1", "wheels", sha)
        os.makedirs(listing)
        with open(os.path.join(listing, "files"), "w") as f:
            f.write("envbox-wheel-files 1\nwheel good-1.0-py3-none-any.whl\nname good\nversion 1.0\n"
                    "dist-info good-1.0.dist-info\nroot-is-purelib 1\nfiles 1\n"
                    f"{digest} - 7 good/secret.txt\n")
        r = self.run_envbox("create", "env", "--frozen")
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn("is damaged", r.stderr)
        self.assertEqual(os.stat(secret).st_nlink, 1, "the secret outside was linked into an environment")


class Routes(http.server.BaseHTTPRequestHandler):
    """Serves `routes` (path → (content type, bytes)); anything else is a 404."""
    routes = {}

    def do_GET(self):  # noqa: N802
        ctype, body = self.routes.get(self.path, (None, None))
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class PageDigests(Sandbox):
    """An index page's sha256 that is not 64 hex digits never reaches a lock (exit 4): with a
    PEP 658 metadata file and a size on the page, nothing else would ever hash the wheel."""

    def test_a_page_digest_that_is_not_hex_is_refused(self):
        whl = Wheel("good", "1.0", {"good/__init__.py": ""}).build(os.path.join(self.tmp, "served"))
        name = os.path.basename(whl)
        meta = b"Metadata-Version: 2.1\nName: good\nVersion: 1.0\n\n"
        page = {"meta": {"api-version": "1.0"}, "name": "good",
                "files": [{"filename": name, "url": f"/files/{name}", "size": os.path.getsize(whl),
                           "hashes": {"sha256": "../../../outside/canary"},
                           "core-metadata": {"sha256": hashlib.sha256(meta).hexdigest()}}]}
        Routes.routes = {"/simple/good/": ("application/vnd.pypi.simple.v1+json", json.dumps(page).encode()),
                         f"/files/{name}.metadata": ("application/octet-stream", meta)}
        server = HttpServer(Routes)
        try:
            pyv = subprocess.run([PYTHON, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True, check=True).stdout.strip()
            write_manifest(self.project, "env",
                           manifest_text(["good"], python=pyv, indexes=[("web", f"{server.url}/simple", "")]))
            before = self.outside_state()
            r = self.run_envbox("lock", "env")
            self.assertEqual(r.returncode, 4, r.stdout + r.stderr)
            self.assertIn("a sha256 that is not 64 hex digits", r.stderr)
            self.assertFalse(os.path.exists(os.path.join(self.project, "manifests", "pylock.env.toml")))
            self.assertEqual(self.outside_state(), before)
        finally:
            server.close()


class NamesAsPaths(Sandbox):
    """METADATA's Name builds `include/site/pythonX.Y/<Name>/` for `.data/headers`: a Name that
    is not a valid project name, or not the file name's project, is refused (exit 5)."""

    def test_headers_of_a_hostile_name_are_never_written_outside(self):
        names = ["../../../../../../../../../.." + self.outside + "/evil", self.outside + "/evil", "../../evil",
                 "good/../../../evil"]
        before = self.outside_state()
        for k, name in enumerate(names):
            with self.subTest(name=name):
                w = Wheel("good", "1.0", {"good/__init__.py": "", "good-1.0.data/headers/evil.h": "#error evil\n"},
                          metadata_name=name)
                whl = w.build(os.path.join(self.wheels, str(k)))
                write_lock(os.path.join(self.project, "manifests", f"pylock.h{k}.toml"), [whl])
                r = self.run_envbox("create", f"h{k}", "--frozen")
                self.assertEqual(r.returncode, 5, r.stderr)
                self.assertIn("METADATA Name", r.stderr)
                self.assertEqual(self.outside_state(), before, "a file outside the environment was written")
                self.assertEqual(glob.glob(os.path.join(self.home, "envs", "*", f"h{k}", "gen-*", "include", "**",
                                                        "evil.h"), recursive=True), [])

    def test_a_name_of_another_project_is_refused(self):
        w = Wheel("good", "1.0", {"good/__init__.py": ""}, metadata_name="other")
        write_lock(os.path.join(self.project, "manifests", "pylock.env.toml"), [w.build(self.wheels)])
        r = self.run_envbox("create", "env", "--frozen")
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn("METADATA Name 'other' is not the project of the file name", r.stderr)


class RecordsNoValueCanBreak(Sandbox):
    """A Version with a blank or a folded header never reaches a record: the wheel is refused
    (exit 5), nothing is published for it, and a plain gc afterwards keeps every live file list."""

    def metadata(self, name, version_header):
        return f"Metadata-Version: 2.1\nName: {name}\n{version_header}\n\n"

    def live_setup(self):
        live = self.good_wheel("live", "1.0")
        write_lock(os.path.join(self.project, "manifests", "pylock.live.toml"), [live])
        self.run_envbox("create", "live", check=True)
        return sha256_file(live)

    def check_refused_and_gc_safe(self, env, wheel, expect):
        live_sha = self.live_setup()
        whl = wheel.build(os.path.join(self.wheels, env))
        sha = sha256_file(whl)
        write_lock(os.path.join(self.project, "manifests", f"pylock.{env}.toml"), [whl])
        r = self.run_envbox("create", env, "--frozen")
        if r.returncode == 0:  # recorded: a gc must still not break the environment
            self.run_envbox("gc")
            v = self.run_envbox("verify", env)
            self.fail(f"hostile METADATA installed; after gc, verify exits {v.returncode}: {v.stdout}{v.stderr}")
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn(expect, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.home, "store-v1", "wheels", sha)), "a file list was published")
        self.run_envbox("gc", check=True)
        self.assertTrue(os.path.exists(os.path.join(self.home, "store-v1", "wheels", live_sha, "files")))
        self.assertEqual(self.run_envbox("verify", "live", "--deep").returncode, 0)

    def test_version_with_a_blank(self):
        w = PatchedWheel("spacey", "1.0", {"spacey/__init__.py": ""},
                         metadata=self.metadata("spacey", "Version: 1.0 " + "f" * 64))
        self.check_refused_and_gc_safe("spacey", w, "METADATA Version '1.0 " + "f" * 64 + "' is not a PEP 440 version")

    def test_folded_version_header(self):
        w = PatchedWheel("folded", "1.0", {"folded/__init__.py": ""},
                         metadata=self.metadata("folded", "Version: 1.0\n files 0"))
        self.check_refused_and_gc_safe("folded", w, "is not a PEP 440 version")

    def test_folded_name_header(self):
        w = PatchedWheel("foldname", "1.0", {"foldname/__init__.py": ""},
                         metadata="Metadata-Version: 2.1\nName: foldname\n version 9\nVersion: 1.0\n\n")
        self.check_refused_and_gc_safe("foldname", w, "METADATA Name")

    def test_a_broken_record_of_an_older_envbox_never_makes_gc_delete(self):
        # Format 1 wrote values as they were: a Version with a blank shifted the wheel's digest
        # out of its field. Such a record is damaged, and gc sweeps nothing on its word.
        live_sha = self.live_setup()
        gen = self.current("live")
        info = os.path.join(gen, ".envbox", "info")
        with open(info) as f:
            text = f.read()
        lines = []
        for line in text.splitlines():
            if line.startswith("envbox-generation"):
                line = "envbox-generation 1"
            if line.startswith("package "):
                f = line.split(" ")
                line = " ".join([f[0], f[1], f[2], "evil", f[3], f[4], f[5]])
            lines.append(line)
        os.chmod(info, 0o644)
        with open(info, "w") as f:
            f.write("\n".join(lines) + "\n")
        r = self.run_envbox("gc")
        self.assertEqual(r.returncode, 5, r.stdout + r.stderr)
        self.assertIn("cannot be read", r.stderr)
        self.assertTrue(os.path.exists(os.path.join(self.home, "store-v1", "wheels", live_sha, "files")),
                        "gc deleted the live environment's file list")

    def test_a_well_formed_record_of_an_older_envbox_is_still_read(self):
        live_sha = self.live_setup()
        info = os.path.join(self.current("live"), ".envbox", "info")
        with open(info) as f:
            text = f.read()
        self.assertTrue(text.startswith("envbox-generation 2\n"))
        os.chmod(info, 0o644)
        with open(info, "w") as f:
            f.write(text.replace("envbox-generation 2\n", "envbox-generation 1\n", 1))
        self.assertEqual(self.run_envbox("verify", "live").returncode, 0)
        self.run_envbox("gc", check=True)
        self.assertTrue(os.path.exists(os.path.join(self.home, "store-v1", "wheels", live_sha, "files")))

    def test_paths_with_blanks_and_percent_round_trip(self):
        # Values with blanks and '%' (a project directory's name) are recorded and read back.
        self.project = os.path.join(self.tmp, "my proj %41")
        self.wheels = os.path.join(self.project, "wheels")
        os.makedirs(os.path.join(self.project, "manifests"))
        live = self.good_wheel("live", "1.0")
        write_lock(os.path.join(self.project, "manifests", "pylock.live.toml"), [live])
        self.run_envbox("create", "live", check=True)
        r = self.run_envbox("history", "live", check=True)
        self.assertEqual(self.run_envbox("verify", "live").returncode, 0)
        self.assertEqual(self.run_envbox("create", "live", check=True).returncode, 0)
        self.assertEqual(len(glob.glob(os.path.join(self.home, "envs", "*", "live", "gen-*"))), 1, r.stdout)


class VersionMismatch(Sandbox):
    """A wheel whose METADATA or .dist-info version differs from its file name's (and so the
    lock's) is refused naming both versions, as pip and uv refuse it (exit 5)."""

    def test_metadata_version_differs(self):
        w = PatchedWheel("mis", "1.0", {"mis/__init__.py": ""},
                         metadata="Metadata-Version: 2.1\nName: mis\nVersion: 2.0\n\n")
        write_lock(os.path.join(self.project, "manifests", "pylock.env.toml"), [w.build(self.wheels)])
        r = self.run_envbox("create", "env", "--frozen")
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn("mis-1.0-py3-none-any.whl", r.stderr)
        self.assertIn("METADATA Version 2.0 differs from the version in the file name and the lock, 1.0", r.stderr)
        self.assertIsNone(self.current("env"))

    def test_dist_info_version_differs(self):
        w = PatchedWheel("mis", "1.0", {"mis/__init__.py": ""}, dist_info="mis-3.0.dist-info")
        write_lock(os.path.join(self.project, "manifests", "pylock.env.toml"), [w.build(self.wheels)])
        r = self.run_envbox("create", "env", "--frozen")
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn("mis-3.0.dist-info names version 3.0, the file name and the lock 1.0", r.stderr)

    def test_equal_versions_spelled_differently_install(self):
        w = PatchedWheel("same", "1.0", {"same/__init__.py": ""},
                         metadata="Metadata-Version: 2.1\nName: Same\nVersion: 1.0.0\n\n")
        write_lock(os.path.join(self.project, "manifests", "pylock.env.toml"), [w.build(self.wheels)])
        self.run_envbox("create", "env", "--frozen", check=True)


class MemberSizes(Sandbox):
    """A member's size in the zip directory must be RECORD's before a byte is decoded: a
    directory that claims a gigabyte RECORD never listed writes nothing (exit 5)."""

    def test_directory_size_unlike_records_is_refused_before_decoding(self):
        w = Wheel("bomb", "1.0", {"bomb/__init__.py": "", "bomb/zeros.bin": b"\0" * 30_000_000})

        def shrink(rows):
            return [(p, h, "10" if p == "bomb/zeros.bin" else n) for p, h, n in rows]
        w.record_override = shrink
        write_lock(os.path.join(self.project, "manifests", "pylock.env.toml"), [w.build(self.wheels)])
        r = self.run_envbox("create", "env", "--frozen")
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn("size mismatch for 'bomb/zeros.bin': RECORD says 10 bytes, the zip directory 30000000; "
                      "nothing was decoded", r.stderr)
        self.assertEqual(os.listdir(os.path.join(self.home, "tmp")), [])

    def test_oversized_dist_info_texts_are_refused(self):
        for leaf, size in [("METADATA", 17 << 20), ("WHEEL", 2 << 20)]:
            with self.subTest(leaf=leaf):
                name = f"big{leaf.lower()}"
                text = (f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n\n" if leaf == "METADATA" else
                        "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n\n")
                w = PatchedWheel(name, "1.0", {f"{name}/__init__.py": ""})
                base = w._dist_info_files

                def padded(base=base, leaf=leaf, text=text, w=w):
                    out = base()
                    out[f"{w.dist_info}/{leaf}"] = text + "x" * size
                    return out
                w._dist_info_files = padded
                write_lock(os.path.join(self.project, "manifests", f"pylock.{name}.toml"), [w.build(self.wheels)])
                r = self.run_envbox("create", name, "--frozen")
                self.assertEqual(r.returncode, 5, r.stderr)
                self.assertIn(f"envbox reads at most", r.stderr)
                self.assertIn(f"bytes of a wheel's {leaf}", r.stderr)


class LocalSizesAndFiles(Sandbox):
    """A lock's `size` holds for a local path too, and only a regular file is opened."""

    def test_wrong_size_for_a_local_path(self):
        whl = self.good_wheel()
        write_lock(os.path.join(self.project, "manifests", "pylock.env.toml"), [whl])
        path = os.path.join(self.project, "manifests", "pylock.env.toml")
        with open(path) as f:
            text = f.read()
        size = os.path.getsize(whl)
        with open(path, "w") as f:
            f.write(text.replace(f"size = {size}", f"size = {size + 1}"))
        r = self.run_envbox("create", "env", "--frozen")
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn(f"the lock says {size + 1} bytes, the file has {size}", r.stderr)
        self.assertIsNone(self.current("env"))

    def test_a_device_or_fifo_named_by_the_lock_is_not_read(self):
        for k, make in enumerate([lambda p: os.symlink("/dev/zero", p), os.mkfifo]):
            with self.subTest(kind=["/dev/zero", "fifo"][k]):
                d = os.path.join(self.wheels, str(k))
                os.makedirs(d)
                p = os.path.join(d, "good-1.0-py3-none-any.whl")
                make(p)
                self.write_lock(f"d{k}", lock_text([{"name": "good", "version": "1.0", "sha256": "0" * 64,
                                                     "path": os.path.relpath(p, os.path.join(self.project, "manifests"))}]))
                try:
                    r = self.run_envbox("create", f"d{k}", "--frozen", timeout=30)
                except subprocess.TimeoutExpired:
                    self.fail("create hung reading a device or FIFO named by the lock")
                self.assertEqual(r.returncode, 5, r.stderr)
                self.assertIn("is not a regular file", r.stderr)


class StoreObjectDeleted(Sandbox):
    """A store object deleted by hand is drift: `verify` (and `--deep`) report it, exit 5, and
    `create --force` puts it back."""

    def test_deleted_object_is_reported_and_repaired(self):
        whl = Wheel("good", "1.0", {"good/__init__.py": "V = 1\n", "good/data.txt": "some data\n"}).build(self.wheels)
        write_lock(os.path.join(self.project, "manifests", "pylock.env.toml"), [whl])
        self.run_envbox("create", "env", check=True)
        digest = hashlib.sha256(b"some data\n").hexdigest()
        obj = os.path.join(self.home, "store-v1", "objects", "sha256", digest[:2], digest[2:])
        self.assertTrue(os.path.exists(obj))
        os.unlink(obj)
        for deep in ([], ["--deep"]):
            r = self.run_envbox("verify", "env", *deep)
            self.assertEqual(r.returncode, 5, r.stdout + r.stderr)
            self.assertIn(digest[2:], r.stdout + r.stderr)
            self.assertIn("missing", r.stdout + r.stderr)
        self.run_envbox("create", "env", "--force", check=True)
        self.assertTrue(os.path.exists(obj))
        self.assertEqual(self.run_envbox("verify", "env").returncode, 0)


class GcKillSafety(Sandbox):
    """SIGKILL `envbox gc` at random moments while it removes generations: any generation that
    still has its completion stamp is whole (every file it had), `current` is never touched, and
    a last gc finishes the work."""

    KILLS = int(os.environ.get("ENVBOX_TEST_KILLS", "20"))

    def test_sigkill_during_gc(self):
        rng = random.Random(13)
        e = envbox_env()
        killed = half = 0
        lock = os.path.join(self.project, "manifests", "pylock.env.toml")
        listings = {}

        def build_generations(n, start):
            for v in range(start, start + n):
                files = {f"pkg/sub{i % 30}/m{i}.py": f"V = {i}  # {v}\n" for i in range(1500)}
                write_lock(lock, [Wheel("pkg", f"{v}.0", files).build(self.wheels)])
                self.run_envbox("create", "env", "-q", check=True)
                gen = self.current("env")
                listings[gen] = snapshot(gen)

        build_generations(4, 1)
        started = time.perf_counter()
        r = subprocess.run(envbox_cmd(self.home, self.project) + ["gc", "--keep", "1", "--dry-run"], env=e,
                           capture_output=True)
        estimate = max(0.05, (time.perf_counter() - started) * 3)
        version = 5
        for i in range(self.KILLS):
            gens = sorted(glob.glob(os.path.join(self.home, "envs", "*", "env", "gen-*")))
            if len(gens) < 3:
                build_generations(3, version)
                version += 3
            current = self.current("env")
            proc = subprocess.Popen(envbox_cmd(self.home, self.project) + ["gc", "--keep", "1", "-q"], env=e,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            started = time.perf_counter()
            time.sleep(rng.uniform(0.0, estimate))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                killed += 1
            else:
                estimate = max(0.02, min(estimate, time.perf_counter() - started))
            proc.wait()
            self.assertEqual(self.current("env"), current, "gc moved or removed the current generation")
            for gen in glob.glob(os.path.join(self.home, "envs", "*", "env", "gen-*")):
                if not os.path.exists(os.path.join(gen, ".envbox", "complete")):
                    half += 1  # killed while removing this one: it must not pass for whole
                else:
                    self.assertEqual(snapshot(gen), listings[os.path.realpath(gen)],
                                     f"after kill {i}: {gen} is stamped complete but not whole")
            self.assertEqual(self.run_envbox("verify", "env").returncode, 0)
        print(f"\n  {killed} of {self.KILLS} gc runs killed, {half} while removing a generation", file=sys.stderr)
        self.assertGreaterEqual(killed, self.KILLS // 4, "too few gc runs were actually killed mid-way")
        self.run_envbox("gc", "--keep", "1", check=True)
        self.assertEqual(len(glob.glob(os.path.join(self.home, "envs", "*", "env", "gen-*"))), 1)
        self.assertEqual(self.run_envbox("verify", "env", "--deep").returncode, 0)


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
