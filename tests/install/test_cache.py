#!/usr/bin/env python3
"""Black-box tests of `envbox cache clean` and `envbox cache prune`: a real home filled by a
lock and a create against a simple index served from 127.0.0.1 (pages in cache/http, a wheel
fetched whole in cache/downloads, an interpreter probe), plus the leftovers prune is for (a
download never finished, a probe of an interpreter that is gone, the compile cache of an
environment that no longer exists); what each removes, what it keeps, the counts and bytes it
reports, the store lock it waits for and the download it must not touch.

    test_cache.py ENVBOX_BINARY
"""
import fcntl
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
from envboxtest import PYV, envbox, envbox_cmd, envbox_env, keep_or_remove, sha256_file  # noqa: E402
from httpserver import StaticServer  # noqa: E402
from wheelgen import Wheel  # noqa: E402

MANIFEST = """[environment]
python = "{pyv}"
platform = "manylinux_2_28_x86_64"
requirements = ["alpha"]

[[index]]
name = "main"
url = "{url}/simple"
"""


def files_under(path):
    return sorted(os.path.relpath(os.path.join(d, f), path)
                  for d, _, fs in os.walk(path) for f in fs)


class Cache(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.www = tempfile.mkdtemp(prefix="envbox-cache-www-")
        path = Wheel("alpha", "1.0", {"alpha/__init__.py": "X = 1\n"}).build(os.path.join(cls.www, "files"))
        fn = os.path.basename(path)
        cls.wheel_sha = sha256_file(path)
        os.makedirs(os.path.join(cls.www, "simple", "alpha"))
        with open(os.path.join(cls.www, "simple", "alpha", "index.html"), "w") as f:
            f.write(f'<html><body><a href="/files/{fn}#sha256={cls.wheel_sha}">{fn}</a></body></html>\n')
        cls.server = StaticServer(cls.www)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        keep_or_remove(cls.www)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-cache-")
        self.home = os.path.join(self.tmp, "home")
        self.proj = os.path.join(self.tmp, "proj")
        os.makedirs(os.path.join(self.proj, "manifests"))
        with open(os.path.join(self.proj, "manifests", "env.toml"), "w") as f:
            f.write(MANIFEST.format(pyv=PYV, url=self.server.url))
        self.run_envbox("create", "env")
        self.cache = os.path.join(self.home, "cache")
        self.key = os.path.basename(glob.glob(os.path.join(self.home, "envs", "*"))[0])
        # What a real run leaves: this environment's compile cache.
        self.live_compile = os.path.join(self.cache, "compile", f"{self.key}.env")
        self.put(os.path.join(self.live_compile, "inductor", "kernel.py"), "kernel\n")
        # What prune is for.
        self.dead_compile = os.path.join(self.cache, "compile", f"{self.key}.gone")
        self.put(os.path.join(self.dead_compile, "triton", "a.bin"), "x" * 5000)
        self.part = os.path.join(self.cache, "downloads", "ab" * 32 + ".whl.part")
        self.put(self.part, "half a wheel")
        # A wheel `lock` fetched whole and `create` found in the store already (an ingest of
        # another project's create): nothing will read it again. One not ingested stays.
        shutil.copyfile(glob.glob(os.path.join(self.www, "files", "*.whl"))[0], self.downloaded_wheel())
        self.pending_wheel = os.path.join(self.cache, "downloads", "12" * 32 + ".whl")
        self.put(self.pending_wheel, "a wheel a create will ingest")
        self.orphan_lock = os.path.join(self.cache, "downloads", "cd" * 32 + ".whl.lock")
        self.put(self.orphan_lock, "")
        probes = glob.glob(os.path.join(self.cache, "interpreters", "*"))
        self.assertEqual(len(probes), 1, probes)
        self.live_probe = probes[0]
        with open(self.live_probe) as f:
            text = f.read()
        real = os.path.realpath(envboxtest.PYTHON)
        self.assertIn("\npath " + real + "\n", text)
        self.gone_probe = os.path.join(self.cache, "interpreters", "0" * 24)
        self.put(self.gone_probe, text.replace("\npath " + real + "\n", "\npath /nonexistent/python3\n"))

    def tearDown(self):
        keep_or_remove(self.tmp)

    def put(self, path, text):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    def run_envbox(self, *args, check=True):
        return envbox(*args, home=self.home, project=self.proj, check=check)

    def json_of(self, *args):
        r = self.run_envbox("--json", "cache", *args)
        return json.loads(r.stdout)

    def downloaded_wheel(self):
        return os.path.join(self.cache, "downloads", self.wheel_sha + ".whl")

    def test_the_lock_and_create_filled_every_bucket(self):
        self.assertTrue(files_under(os.path.join(self.cache, "http")))
        self.assertTrue(os.path.exists(os.path.join(self.home, "store-v1", "wheels", self.wheel_sha, "files")))

    def test_prune_removes_only_what_is_stale_or_unused(self):
        before = files_under(self.cache)
        dry = self.json_of("prune", "--dry-run")
        self.assertEqual(files_under(self.cache), before, "a dry run removed something")
        report = self.json_of("prune")
        self.assertEqual({k: v for k, v in dry.items() if k != "dry_run"},
                         {k: v for k, v in report.items() if k != "dry_run"})
        self.assertTrue(dry["dry_run"])
        self.assertFalse(report["dry_run"])
        for gone in (self.part, self.orphan_lock, self.downloaded_wheel(), self.gone_probe, self.dead_compile):
            self.assertFalse(os.path.exists(gone), gone)
        for kept in (self.live_probe, self.pending_wheel, os.path.join(self.live_compile, "inductor", "kernel.py")):
            self.assertTrue(os.path.exists(kept), kept)
        b = report["buckets"]
        self.assertEqual(b["downloads"]["entries"], 3)  # the part, the orphan lock, the ingested wheel
        self.assertEqual(b["interpreters"]["entries"], 1)
        self.assertEqual(b["compile"]["entries"], 1)  # one environment's cache, counted once
        self.assertGreaterEqual(b["compile"]["bytes"], 5000)
        # The static server sends no max-age: every page would be revalidated, so it is stale.
        self.assertGreaterEqual(b["http"]["entries"], 1)
        self.assertEqual(files_under(os.path.join(self.cache, "http")), [])
        self.assertEqual(report["entries_removed"], sum(v["entries"] for v in b.values()))
        self.assertEqual(report["bytes_freed"], sum(v["bytes"] for v in b.values()))
        # Nothing left to prune; the environment still runs and locks again.
        self.assertEqual(self.json_of("prune")["entries_removed"], 0)
        r = self.run_envbox("cache", "prune")
        self.assertIn("No stale cache entries to remove", r.stderr)
        self.run_envbox("run", "--frozen", "env", "--", "python", "-c", "import alpha")
        self.run_envbox("lock", "env", "--upgrade")

    def test_prune_keeps_a_page_still_fresh(self):
        page = os.path.join(self.cache, "http", "ff" * 16)
        self.put(page, "envbox-http-cache 1\nurl http://127.0.0.1:1/simple/x/\netag \nlast-modified \n"
                       "content-type text/html\neffective-url http://127.0.0.1:1/simple/x/\n"
                       f"stored-at {int(time.time())}\nmax-age 86400\n\n<html></html>\n")
        damaged = os.path.join(self.cache, "http", "ee" * 16)
        self.put(damaged, "not an entry\n")
        self.run_envbox("cache", "prune")
        self.assertTrue(os.path.exists(page))
        self.assertFalse(os.path.exists(damaged))

    def test_clean_removes_everything_but_compile_caches_unless_all(self):
        self.put(os.path.join(self.cache, "later-bucket", "x"), "y")
        r = self.run_envbox("cache", "clean")
        self.assertRegex(r.stderr, r"Removed \d+ cache entries \(")
        self.assertNotIn("later-bucket", os.listdir(self.cache))
        for d in ("http", "downloads", "interpreters"):
            self.assertEqual(files_under(os.path.join(self.cache, d)), [], d)
        self.assertTrue(os.path.exists(self.dead_compile))
        self.assertTrue(os.path.exists(self.live_compile))
        report = self.json_of("clean", "--all")
        self.assertEqual(report["buckets"]["compile"]["entries"], 2)
        self.assertEqual(os.listdir(os.path.join(self.cache, "compile")), [])
        # The store and the environment are untouched; a create has nothing to do, a lock
        # fills the cache again.
        self.run_envbox("verify", "env")
        self.run_envbox("run", "--frozen", "env", "--", "python", "-c", "import alpha")
        self.run_envbox("lock", "env", "--upgrade")
        self.assertTrue(files_under(os.path.join(self.cache, "http")))

    def test_one_entry_is_singular(self):
        self.run_envbox("cache", "clean", "--all")
        self.put(self.part, "half")
        r = self.run_envbox("cache", "prune")
        self.assertIn("Removed 1 cache entry (", r.stderr)

    def test_a_download_being_written_is_kept(self):
        lock = self.part[:-len(".part")] + ".lock"
        with open(lock, "w") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            for sub in ("prune", "clean"):
                report = self.json_of(sub)
                self.assertEqual(report["busy"], [self.part], sub)
                self.assertTrue(os.path.exists(self.part))
                self.assertTrue(os.path.exists(lock))
        self.run_envbox("cache", "prune")
        self.assertFalse(os.path.exists(self.part))

    def test_waits_for_a_create_holding_the_store(self):
        store_lock = os.path.join(self.home, "locks", "store.lock")
        with open(store_lock, "a") as f:
            fcntl.flock(f, fcntl.LOCK_SH)  # as a running create holds it
            p = subprocess.Popen(envbox_cmd(self.home, self.proj) + ["cache", "clean"], env=envbox_env(),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(1.0)
            self.assertIsNone(p.poll(), "cache clean did not wait for the store lock")
            self.assertTrue(os.path.exists(self.part))
        out, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 0, err)
        self.assertFalse(os.path.exists(self.part))

    def test_help_and_usage(self):
        r = self.run_envbox("cache", check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        for sub, words in (("clean", ["--all", "--dry-run", "compile"]), ("prune", ["--dry-run", "max-age"])):
            h = self.run_envbox("cache", sub, "--help").stdout
            for w in words:
                self.assertIn(w, h, sub)
        self.assertIn("cache", self.run_envbox("--help").stdout)
        zsh = self.run_envbox("completion", "zsh").stdout
        self.assertIn("'1:value:(clean prune)'", zsh)


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
