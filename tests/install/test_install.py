#!/usr/bin/env python3
"""Black-box tests of `envbox create` and `envbox run`: the real envbox binary, real wheels
(Debian's and generated ones), a real interpreter, a real HTTP server on 127.0.0.1, and pip as
the reference installer.

    test_install.py ENVBOX_BINARY

The interpreter is /usr/bin/python3 (ENVBOX_PYTHON is set to it), never a pyenv one.
"""
import glob
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
from envboxtest import (DEBIAN_WHEELS, PIP_WHEEL, Fixture, envbox, envbox_cmd, envbox_env,  # noqa: E402
                        keep_or_remove, manifest_text, metadata_name, pip_comparable, pip_install, sha256_file,
                        store_listing, tree)
from httpserver import Cutting, HttpServer, StaticServer  # noqa: E402
from wheelgen import Wheel, write_lock, record_hash  # noqa: E402
from quirks import quirk_wheels  # noqa: E402


# Intended differences from pip, each for a reason:
# - INSTALLER holds "envbox"; RECORD rows of launchers and rewritten scripts carry different
#   hashes because the files embed the environment's path.
# - A `.data/scripts/` file stored without the exec bit: pip installs it non-executable, envbox
#   makes every script executable (a script in bin/ that cannot run is useless).
INTENDED_EXEC_BIT = {"bin/quirk-shell"}
# - pip lists a setuptools wrapper it skipped (replaced by the entry-point launcher) in RECORD
#   although it never wrote it; envbox's RECORD lists only files that exist.
INTENDED_RECORD_ONLY_PIP = {"Quirk.Dotted_Name-1.0.data/scripts/quirk-cli-script.py"}


class DifferentialAgainstPip(unittest.TestCase):
    """envbox and pip install the same wheels; the trees must match file by file."""

    @classmethod
    def setUpClass(cls):
        if not PIP_WHEEL:
            raise unittest.SkipTest("python3-pip-whl is not installed")
        cls.tmp = tempfile.mkdtemp(prefix="envbox-diff-")
        cls.home = os.path.join(cls.tmp, "home")
        cls.fx = Fixture(cls.tmp, "proj", quirk_wheels() + DEBIAN_WHEELS)
        # envbox
        envbox("create", "env", home=cls.home, project=cls.fx.project)
        cls.env_root = os.path.realpath(glob.glob(os.path.join(cls.home, "envs", "*", "env", "current"))[0])
        # pip, from Debian's pip wheel, into a fresh venv of the same interpreter
        cls.venv = os.path.join(cls.tmp, "pipvenv")
        # pip names the headers directory after the requirement as typed: type the METADATA
        # Name, which is what envbox uses.
        names = [metadata_name(p) + "==" + os.path.basename(p).split("-")[1] for p in cls.fx.paths]
        pip_install(cls.venv, cls.fx.wheel_dir, names)

    @classmethod
    def tearDownClass(cls):
        keep_or_remove(cls.tmp)

    def normalised(self, root):
        return pip_comparable(root)

    def test_trees_match_file_by_file(self):
        ours = self.normalised(self.env_root)
        pips = self.normalised(self.venv)
        # Intended differences: INSTALLER says who installed; RECORD is compared separately.
        for t in (ours, pips):
            for rel in list(t):
                if rel.endswith(".dist-info/INSTALLER") or rel.endswith(".dist-info/RECORD"):
                    del t[rel]
        self.assertEqual(sorted(set(pips) - set(ours)), [], "files pip installed that envbox did not")
        self.assertEqual(sorted(set(ours) - set(pips)), [], "files envbox installed that pip did not")
        for rel in sorted(pips):
            with self.subTest(path=rel):
                self.assertEqual(ours[rel][0], pips[rel][0])
                self.assertEqual(ours[rel][1], pips[rel][1], f"content differs: {rel}")
                if rel in INTENDED_EXEC_BIT:
                    self.assertTrue(ours[rel][2], rel)
                    continue
                self.assertEqual(ours[rel][2], pips[rel][2], f"exec bit differs: {rel}")

    def test_record_rows_match(self):
        for record in glob.glob(os.path.join(self.venv, "lib", "python*", "site-packages", "*.dist-info", "RECORD")):
            rel = os.path.relpath(record, self.venv)
            with self.subTest(record=rel):
                def rows(path, root):
                    out = {}
                    with open(path, encoding="utf-8") as f:
                        import csv
                        for p, h, s in csv.reader(f):
                            if "__pycache__" in p or p.endswith("/INSTALLER") or p in INTENDED_RECORD_ONLY_PIP:
                                continue
                            out[p] = (h, s)
                    return out
                ours = rows(os.path.join(self.env_root, rel), self.env_root)
                pips = rows(record, self.venv)
                self.assertEqual(sorted(ours), sorted(pips))
                for p in pips:
                    # Launchers and rewritten scripts embed the environment path, so their
                    # hashes differ by design; every other row must be identical.
                    if p.startswith("../../../bin/"):
                        continue
                    self.assertEqual(ours[p], pips[p], p)

    def test_installer_and_requested(self):
        for di in glob.glob(os.path.join(self.env_root, "lib", "python*", "site-packages", "*.dist-info")):
            with open(os.path.join(di, "INSTALLER")) as f:
                self.assertEqual(f.read(), "envbox\n")

    def test_files_are_hard_links_to_read_only_store_objects(self):
        init = glob.glob(os.path.join(self.env_root, "lib", "python*", "site-packages", "pip", "__init__.py"))[0]
        st = os.stat(init)
        self.assertGreaterEqual(st.st_nlink, 2)
        self.assertEqual(stat.S_IMODE(st.st_mode) & 0o222, 0, "store objects must be read-only")

    def test_pip_and_importlib_see_exactly_the_locked_distributions(self):
        py = os.path.join(self.env_root, "bin", "python")
        locked = sorted((os.path.basename(p).split("-")[0].replace("_", "-").replace(".", "-").lower(),
                         os.path.basename(p).split("-")[1]) for p in self.fx.paths)
        r = subprocess.run([py, "-m", "pip", "list", "--format=json", "--disable-pip-version-check"],
                           capture_output=True, text=True, check=True)
        listed = sorted((d["name"].replace("_", "-").replace(".", "-").lower(), d["version"]) for d in json.loads(r.stdout))
        self.assertEqual(listed, locked)
        r = subprocess.run([py, "-m", "pip", "check", "--disable-pip-version-check"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = subprocess.run([py, "-c", "import importlib.metadata as m, json; print(json.dumps(sorted("
                                      "(d.metadata['Name'], d.version) for d in m.distributions())))"],
                           capture_output=True, text=True, check=True)
        seen = sorted((n.replace("_", "-").replace(".", "-").lower(), v) for n, v in json.loads(r.stdout))
        self.assertEqual(seen, locked)

    def test_scripts_run_through_envbox_run(self):
        r = envbox("run", "env", "--", "quirk-cli", home=self.home, project=self.fx.project)
        self.assertEqual(r.stdout, "quirk-cli ran\n")
        r = envbox("run", "env", "--", "quirk-plain", home=self.home, project=self.fx.project)
        self.assertEqual(r.stdout, "quirk\n")
        r = envbox("run", "env", "--", "進入點", home=self.home, project=self.fx.project)
        self.assertEqual(r.stdout, "unicode\n")
        r = envbox("run", "env", "--", "python", "-c",
                   "from வணக்கம் import નમસ્તે; import nvshare.cu13.lib; print(નમસ્તે.GREETING)",
                   home=self.home, project=self.fx.project)
        self.assertEqual(r.stdout, "hello\n")


class RunEnvironment(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-run-")
        cls.home = os.path.join(cls.tmp, "home")
        cls.fx = Fixture(cls.tmp, "proj", [Wheel("runner", "1.0", {"runner.py": "X = 1\n"})])
        with open(os.path.join(cls.fx.project, "manifests", "env.toml"), "w") as f:
            f.write(manifest_text(["runner"], platform="manylinux_2_17_x86_64",
                                  extra='[run]\nenv = { ENVBOX_TEST_VAR = "from-manifest" }\n'))
        envbox("create", "env", home=cls.home, project=cls.fx.project)

    @classmethod
    def tearDownClass(cls):
        keep_or_remove(cls.tmp)

    def run_py(self, code, env=None, check=True):
        return envbox("run", "env", "--", "python", "-c", code, home=self.home, project=self.fx.project,
                      env=env, check=check)

    def test_computed_environment(self):
        code = ("import os, sys, json; print(json.dumps({k: os.environ.get(k) for k in "
                "['VIRTUAL_ENV','PYTHONPATH','PYTHONHOME','PYTHONNOUSERSITE','ENVBOX_TEST_VAR','PATH']} | "
                "{'prefix': sys.prefix, 'base': sys.base_prefix}))")
        r = self.run_py(code, env={"PYTHONPATH": "/nonexistent", "ENVBOX_TEST_VAR": "caller"})
        d = json.loads(r.stdout)
        self.assertIsNone(d["PYTHONPATH"])
        self.assertIsNone(d["PYTHONHOME"])
        self.assertEqual(d["PYTHONNOUSERSITE"], "1")
        self.assertEqual(d["ENVBOX_TEST_VAR"], "from-manifest")
        self.assertEqual(d["prefix"], d["VIRTUAL_ENV"])
        self.assertNotEqual(d["prefix"], d["base"])
        self.assertTrue(d["PATH"].startswith(d["VIRTUAL_ENV"] + "/bin:"))

    def test_exit_status_passes_through(self):
        r = self.run_py("import sys; sys.exit(42)", check=False)
        self.assertEqual(r.returncode, 42)

    def test_requested_only_for_manifest_requirements(self):
        gen = glob.glob(os.path.join(self.home, "envs", "*", "env", "current"))[0]
        self.assertTrue(glob.glob(os.path.join(gen, "lib", "python*", "site-packages", "runner-1.0.dist-info", "REQUESTED")))

    def test_second_create_is_a_no_op(self):
        r = envbox("create", "env", home=self.home, project=self.fx.project)
        self.assertIn("up to date", r.stderr)

    def test_list_and_show(self):
        r = envbox("list", "--json", home=self.home, project=self.fx.project)
        envs = json.loads(r.stdout)
        self.assertEqual([(e["name"], e["packages"]) for e in envs], [("env", 1)])
        r = envbox("show", "env", "--json", home=self.home, project=self.fx.project)
        d = json.loads(r.stdout)
        self.assertEqual(d["packages"], [{"name": "runner", "version": "1.0", "built": None}])
        self.assertGreater(d["files"], 3)

    def test_project_link_for_ides(self):
        link = os.path.join(self.fx.project, ".envbox", "env")
        self.assertTrue(os.path.exists(os.path.join(link, "pyvenv.cfg")))

    def test_missing_interpreter_exits_3(self):
        r = envbox("create", "other", home=self.home, project=self.fx.project, check=False,
                   env={"ENVBOX_PYTHON": "/nonexistent/python3"})
        self.assertEqual(r.returncode, 3, r.stderr)


class FetchOverHttp(unittest.TestCase):
    def test_create_from_http_urls_and_file_urls(self):
        tmp = tempfile.mkdtemp(prefix="envbox-http-")
        try:
            wheels_dir = os.path.join(tmp, "served")
            paths = [Wheel("httppkg", "1.0", {"httppkg.py": "print('over http')\n"}).build(wheels_dir)]
            paths += [shutil.copy(w, wheels_dir) for w in DEBIAN_WHEELS if "wheel-" in w]
            server = StaticServer(wheels_dir)
            try:
                project = os.path.join(tmp, "p")
                os.makedirs(os.path.join(project, "manifests"))
                write_lock(os.path.join(project, "manifests", "pylock.web.toml"), paths, url_prefix=server.url)
                envbox("create", "web", home=os.path.join(tmp, "home"), project=project)
                r = envbox("run", "web", "--", "python", "-m", "httppkg", home=os.path.join(tmp, "home"), project=project)
                self.assertEqual(r.stdout, "over http\n")
                # A 404 is a network error (exit 4) naming the URL.
                write_lock(os.path.join(project, "manifests", "pylock.gone.toml"), paths,
                           url_prefix=server.url + "/missing")
                r = envbox("create", "gone", home=os.path.join(tmp, "home2"), project=project, check=False)
                self.assertEqual(r.returncode, 4, r.stderr)
                self.assertIn("/missing/", r.stderr)
            finally:
                server.close()
            # file:// URLs
            write_lock(os.path.join(project, "manifests", "pylock.files.toml"), paths,
                       url_prefix="file://" + wheels_dir)
            envbox("create", "files", home=os.path.join(tmp, "home3"), project=project)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class ResumedDownloads(unittest.TestCase):
    """A download cut short is continued with a Range request, within one create (retries) and
    across creates (the part stays in cache/downloads); a server that ignores ranges starts over."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-resume-")
        served = os.path.join(self.tmp, "served")
        payload = {f"big/blob{i}.bin": os.urandom(200_000).hex() for i in range(4)}
        payload["big/__init__.py"] = "print('resumed')\n"
        self.paths = [Wheel("big", "1.0", payload).build(served)]
        self.size = os.path.getsize(self.paths[0])
        Cutting.directory, Cutting.cut, Cutting.cuts, Cutting.refuse_ranges, Cutting.log = served, 0, 0, False, []
        server = HttpServer(Cutting)
        self.httpd, self.url = server.httpd, server.url
        self.project = os.path.join(self.tmp, "p")
        os.makedirs(os.path.join(self.project, "manifests"))
        write_lock(os.path.join(self.project, "manifests", "pylock.web.toml"), self.paths, url_prefix=self.url)
        self.home = os.path.join(self.tmp, "home")

    def tearDown(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def leave_part(self, data):
        """A part as an interrupted download would leave it; returns its folder."""
        part_dir = os.path.join(self.home, "cache", "downloads")
        os.makedirs(part_dir)
        sha = sha256_file(self.paths[0])
        with open(os.path.join(part_dir, sha + ".whl.part"), "wb") as f:
            f.write(data)
        return part_dir

    def run_module(self):
        return envbox("run", "web", "--", "python", "-c", "import big", home=self.home, project=self.project).stdout

    def test_resumed_within_one_create(self):
        Cutting.cut, Cutting.cuts = self.size // 3, 1  # the first response stops a third of the way in
        envbox("create", "web", home=self.home, project=self.project)
        self.assertEqual(self.run_module(), "resumed\n")
        self.assertEqual(Cutting.log[0][1], None)
        self.assertEqual(Cutting.log[1][1], f"bytes={self.size // 3}-", Cutting.log)
        self.assertEqual(len(Cutting.log), 2)
        self.assertEqual([f for f in os.listdir(os.path.join(self.home, "cache", "downloads"))
                          if not f.endswith(".lock")], [], "a stored wheel's download is removed")

    def test_resumed_by_the_next_create(self):
        Cutting.cut, Cutting.cuts, Cutting.refuse_ranges = self.size // 2, 1000, True
        r = envbox("create", "web", home=self.home, project=self.project, check=False)
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn(self.url, r.stderr)
        parts = glob.glob(os.path.join(self.home, "cache", "downloads", "*.whl.part"))
        self.assertEqual(len(parts), 1)
        self.assertEqual(os.path.getsize(parts[0]), self.size // 2)
        Cutting.cuts, Cutting.refuse_ranges, Cutting.log = 0, False, []
        envbox("create", "web", home=self.home, project=self.project)
        self.assertEqual(Cutting.log, [("/" + os.path.basename(self.paths[0]), f"bytes={self.size // 2}-")])
        self.assertEqual(self.run_module(), "resumed\n")

    def test_a_server_ignoring_ranges_sends_it_all_again(self):
        self.leave_part(b"garbage that is not the start of the wheel")
        class NoRanges(Cutting):
            def do_GET(self):  # noqa: N802
                del self.headers["Range"]
                super().do_GET()
        self.httpd.RequestHandlerClass = NoRanges
        envbox("create", "web", home=self.home, project=self.project)
        self.assertEqual(self.run_module(), "resumed\n")

    def test_a_bad_part_is_refused_then_removed(self):
        part_dir = self.leave_part(b"X" * 1000)  # wrong bytes where the wheel's first kilobyte belongs
        r = envbox("create", "web", home=self.home, project=self.project, check=False)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn("hash mismatch", r.stderr)
        self.assertEqual([f for f in os.listdir(part_dir) if not f.endswith(".lock")], [],
                         "a download that proved bad is removed")
        envbox("create", "web", home=self.home, project=self.project)
        self.assertEqual(self.run_module(), "resumed\n")


class LinkModesAndConcurrency(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-link-")
        # Many files with long names: RECORD is over 1 MiB, as torch's is.
        files = {f"bigrecord/{'sub%03d' % (i % 50)}/{'m' * 80}_{i}.py": f"V = {i}\n" for i in range(9000)}
        files["bigrecord/__init__.py"] = ""
        cls.fx = Fixture(cls.tmp, "proj", [Wheel("bigrecord", "1.0", files),
                                           Wheel("small", "1.0", {"small.py": "S = 1\n"})])

    @classmethod
    def tearDownClass(cls):
        keep_or_remove(cls.tmp)

    def site_file(self, home, env, rel):
        gen = glob.glob(os.path.join(home, "envs", "*", env, "current"))[0]
        return glob.glob(os.path.join(gen, "lib", "python*", "site-packages", rel))[0]

    def test_copy_mode_makes_independent_files(self):
        home = os.path.join(self.tmp, "home-copy")
        envbox("create", "env", "--link-mode", "copy", home=home, project=self.fx.project)
        st = os.stat(self.site_file(home, "env", "small.py"))
        self.assertEqual(st.st_nlink, 1)
        r = envbox("run", "env", "--", "python", "-c", "import small, bigrecord; print(small.S)",
                   home=home, project=self.fx.project)
        self.assertEqual(r.stdout, "1\n")

    def test_reflink_mode_works_or_falls_back_loudly(self):
        home = os.path.join(self.tmp, "home-reflink")
        r = envbox("create", "env", "--link-mode", "reflink", home=home, project=self.fx.project)
        st = os.stat(self.site_file(home, "env", "small.py"))
        self.assertEqual(st.st_nlink, 1)
        if "used copy" not in r.stderr:
            self.assertEqual(r.stderr.count("note:"), 0)  # reflinks worked on this filesystem

    def test_concurrent_creates_share_one_store(self):
        home = os.path.join(self.tmp, "home-concurrent")
        e = envbox_env()
        procs = [subprocess.Popen(envbox_cmd(home, self.fx.project) + ["create", name,
                                   "--lock", self.fx.lock], env=e, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for name in ("one", "two", "three")]
        for p in procs:
            out, err = p.communicate()
            self.assertEqual(p.returncode, 0, err)
        inodes = {os.stat(self.site_file(home, n, "small.py")).st_ino for n in ("one", "two", "three")}
        self.assertEqual(len(inodes), 1, "one store object, linked into every environment")
        self.assertEqual(os.listdir(os.path.join(home, "tmp")), [])


def hostile(name, mutate):
    w = Wheel(name, "1.0", {f"{name.replace('-', '_')}/__init__.py": "ok = True\n"})
    mutate(w)
    return w


def with_symlink(w):
    info = zipfile.ZipInfo("evil_link", (1980, 1, 1, 0, 0, 0))
    info.external_attr = (0o120777) << 16
    w.extra_members.append((info, b"/etc/passwd"))
    w.record_override = lambda rows: rows + [("evil_link", record_hash(b"/etc/passwd"), "11")]


def member(name, data=b"x"):
    def m(w):
        w.extra_members.append((name, data))
        w.record_override = lambda rows: rows + [(name, record_hash(data), str(len(data)))]
    return m


def bad_hash(w):
    w.record_override = lambda rows: [(p, record_hash(b"other") if p.endswith("__init__.py") else h, s)
                                      for p, h, s in rows]


def bad_size(w):
    w.record_override = lambda rows: [(p, h, "999" if p.endswith("__init__.py") else s) for p, h, s in rows]


def unlisted(w):
    w.extra_members.append(("unlisted.py", b"x = 1\n"))


def missing_record(w):
    w.omit_record = True


def weak_hash(w):
    import base64
    w.record_override = lambda rows: [
        (p, "md5=" + base64.urlsafe_b64encode(hashlib.md5(b"ok = True\n").digest()).rstrip(b"=").decode()
         if p.endswith("__init__.py") else h, s) for p, h, s in rows]


def duplicate(w):
    w.extra_members.append((f"{w.dist}/__init__.py", b"ok = True\n"))


def collide(w):
    w.extra_members.append((f"{w.dist}/./__init__.py", b"ok = True\n"))


def listed_missing(w):
    w.record_override = lambda rows: rows + [("ghost.py", record_hash(b""), "0")]


class HostileInput(unittest.TestCase):
    """Each bad wheel or lock fails with a clear error and exit code, and leaves the store and
    the existing environment untouched."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-hostile-")
        cls.home = os.path.join(cls.tmp, "home")
        cls.good = Fixture(cls.tmp, "proj", [Wheel("good", "1.0", {"good.py": "G = 1\n"})])
        envbox("create", "env", home=cls.home, project=cls.good.project)
        cls.env_current = os.path.realpath(glob.glob(os.path.join(cls.home, "envs", "*", "env", "current"))[0])

    @classmethod
    def tearDownClass(cls):
        keep_or_remove(cls.tmp)

    def attempt(self, lock_text=None, wheel=None, expect_code=5, expect_text=()):
        before_store = store_listing(self.home)
        before_env = tree(self.env_current)
        lock = self.good.lock
        with open(lock, encoding="utf-8") as f:
            good_lock = f.read()
        try:
            if wheel is not None:
                path = wheel.build(self.good.wheel_dir)
                write_lock(lock, self.good.paths + [path])
            if lock_text is not None:
                with open(lock, "w", encoding="utf-8") as f:
                    f.write(lock_text)
            r = envbox("create", "env", home=self.home, project=self.good.project, check=False)
        finally:
            with open(lock, "w", encoding="utf-8") as f:
                f.write(good_lock)
        self.assertEqual(r.returncode, expect_code, r.stderr)
        for t in expect_text:
            self.assertIn(t, r.stderr)
        self.assertEqual(store_listing(self.home), before_store, "the store changed")
        self.assertEqual(os.path.realpath(glob.glob(os.path.join(self.home, "envs", "*", "env", "current"))[0]),
                         self.env_current, "current moved")
        self.assertEqual(tree(self.env_current), before_env, "the environment changed")
        self.assertEqual(os.listdir(os.path.join(self.home, "tmp")), [], "temporary files left behind")
        return r

    def test_zip_slip(self):
        self.attempt(wheel=hostile("slip", member("../evil.py")), expect_text=["../evil.py", "unsafe"])

    def test_zip_slip_dot(self):
        self.attempt(wheel=hostile("slipdot", member("./../evil.py")), expect_text=["unsafe"])

    def test_absolute_path(self):
        self.attempt(wheel=hostile("absolute", member("/tmp/envbox-evil")), expect_text=["absolute"])

    def test_symlink_member(self):
        self.attempt(wheel=hostile("linky", with_symlink), expect_text=["symbolic link"])

    def test_duplicate_member(self):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.attempt(wheel=hostile("dupe", duplicate), expect_text=["twice"])

    def test_names_colliding_after_normalisation(self):
        self.attempt(wheel=hostile("collide", collide), expect_text=["collides"])

    def test_record_hash_mismatch(self):
        self.attempt(wheel=hostile("badhash", bad_hash), expect_text=["hash mismatch", "__init__.py"])

    def test_record_size_mismatch(self):
        self.attempt(wheel=hostile("badsize", bad_size), expect_text=["size mismatch"])

    def test_unlisted_file(self):
        self.attempt(wheel=hostile("unlisted", unlisted), expect_text=["not listed in RECORD"])

    def test_listed_but_missing(self):
        self.attempt(wheel=hostile("ghosted", listed_missing), expect_text=["ghost.py"])

    def test_weak_hash(self):
        self.attempt(wheel=hostile("weak", weak_hash), expect_text=["md5"])

    def test_missing_record(self):
        self.attempt(wheel=hostile("norecord", missing_record), expect_text=["RECORD"])

    def test_truncated_archive(self):
        w = Wheel("truncated", "1.0", {"truncated/__init__.py": "x" * 5000})
        path = w.build(self.good.wheel_dir)
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) // 2)
        write_lock(self.good.lock + ".tmp", self.good.paths + [path])
        with open(self.good.lock + ".tmp", encoding="utf-8") as f:
            text = f.read()
        os.unlink(self.good.lock + ".tmp")
        self.attempt(lock_text=text, expect_text=["truncated-1.0"])

    def test_lock_hash_mismatch(self):
        w = Wheel("lockhash", "1.0", {"lockhash.py": ""})
        path = w.build(self.good.wheel_dir)
        write_lock(self.good.lock + ".tmp", self.good.paths + [path], sha_override={w.filename: "0" * 64})
        with open(self.good.lock + ".tmp", encoding="utf-8") as f:
            text = f.read()
        os.unlink(self.good.lock + ".tmp")
        r = self.attempt(lock_text=text, expect_text=["hash mismatch", w.filename, "0" * 64])
        with open(path, "rb") as f:
            self.assertIn(hashlib.sha256(f.read()).hexdigest(), r.stderr)

    def test_unknown_lock_version(self):
        self.attempt(lock_text='lock-version = "2.0"\ncreated-by = "x"\n[[packages]]\nname = "a"\n',
                     expect_code=3, expect_text=["lock-version"])

    def test_missing_keys(self):
        self.attempt(lock_text='created-by = "x"\n', expect_code=3, expect_text=["lock-version"])
        self.attempt(lock_text='lock-version = "1.0"\ncreated-by = "x"\n[[packages]]\nversion = "1"\n',
                     expect_code=3, expect_text=["name"])

    def test_two_wheels_claiming_one_file(self):
        a = Wheel("claim-a", "1.0", {"shared/same.py": "a\n"})
        b = Wheel("claim-b", "1.0", {"shared/same.py": "b\n"})
        pa, pb = a.build(self.good.wheel_dir), b.build(self.good.wheel_dir)
        write_lock(self.good.lock + ".tmp", self.good.paths + [pa, pb])
        with open(self.good.lock + ".tmp", encoding="utf-8") as f:
            text = f.read()
        os.unlink(self.good.lock + ".tmp")
        # The wheels themselves are valid, so their objects enter the store; the environment
        # must not change and the error must name both wheels.
        before_env = tree(self.env_current)
        with open(self.good.lock, encoding="utf-8") as f:
            good = f.read()
        with open(self.good.lock, "w", encoding="utf-8") as f:
            f.write(text)
        try:
            r = envbox("create", "env", home=self.home, project=self.good.project, check=False)
        finally:
            with open(self.good.lock, "w", encoding="utf-8") as f:
                f.write(good)
        self.assertEqual(r.returncode, 7, r.stderr)  # an install conflict
        self.assertIn("claim-a", r.stderr)
        self.assertIn("claim-b", r.stderr)
        self.assertEqual(tree(self.env_current), before_env)
        gens = glob.glob(os.path.join(os.path.dirname(self.env_current), "gen-*"))
        self.assertEqual(gens, [self.env_current], "a failed build left a generation behind")


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
