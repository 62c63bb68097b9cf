#!/usr/bin/env python3
"""Black-box tests of the link rule (docs/SECURITY.md): a symbolic link that someone other than
the user planted inside ENVBOX_HOME (a member of a group-shared home) or in a project (a
committed `.envbox`) never makes envbox delete, empty or write anything outside. Each case
plants a link to a "victim" folder or file outside both, runs the command, and checks that
the victim is exactly as it was, and that envbox said which link it refused (exit 5) or
removed only the link itself. Also: a revision handed to `envbox diff` is never a git option.
The real envbox binary, real wheels, a real interpreter.

    test_planted_links.py ENVBOX_BINARY
"""
import glob
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
from envboxtest import Project, keep_or_remove, tree as snapshot  # noqa: E402  (what a victim must keep)
from wheelgen import Wheel  # noqa: E402


class PlantedLinks(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-links-")
        self.p = Project(self.tmp)
        self.p.lock("app", [Wheel("alpha", "1.0", {"alpha/__init__.py": "X = 1\n"})])
        # The victim looks like envbox's own folders, so that a command following a link
        # would find something to act on: generations, a completion stamp, shards, files.
        self.victim = os.path.join(self.tmp, "victim")
        for d in ("gen-1/.envbox", "gen-2/.envbox", "app/gen-1/.envbox", "ab"):
            os.makedirs(os.path.join(self.victim, d))
        for f in ("gen-1/.envbox/complete", "gen-2/.envbox/complete", "app/gen-1/.envbox/complete",
                  "ab/cdef", "precious.txt"):
            with open(os.path.join(self.victim, f), "w") as fh:
                fh.write("keep me\n")
        self.before = snapshot(self.victim)

    def tearDown(self):
        keep_or_remove(self.tmp)

    def assertVictimIntact(self):
        self.assertEqual(snapshot(self.victim), self.before, "the link's target was changed")

    def assertRefused(self, r, link):
        self.assertEqual(r.returncode, 5, r.stdout + r.stderr)
        self.assertIn(link, r.stderr)
        self.assertIn("symbolic link", r.stderr)

    def create(self):
        self.p.run("create", "app", "--frozen")
        return os.path.dirname(self.p.current("app"))  # envs/<key>/app

    def replace_with_link(self, path, target):
        subprocess.run(["rm", "-rf", path], check=True)
        os.symlink(target, path)

    # --- delete -------------------------------------------------------------------------

    def test_delete_refuses_an_environment_folder_that_is_a_link(self):
        edir = self.create()
        self.replace_with_link(edir, self.victim)
        r = self.p.run("delete", "app", check=False)
        self.assertRefused(r, edir)
        self.assertVictimIntact()

    def test_delete_refuses_a_project_folder_that_is_a_link(self):
        edir = self.create()
        key = os.path.dirname(edir)
        os.rename(key, key + ".moved")
        os.symlink(self.victim, key)
        os.symlink(os.path.join(key + ".moved", "app"), os.path.join(self.victim, "app-link"))
        before = snapshot(self.victim)
        r = self.p.run("delete", "app", check=False)
        self.assertRefused(r, key)
        self.assertEqual(snapshot(self.victim), before)

    def test_delete_refuses_a_compile_cache_that_is_a_link(self):
        self.create()
        caches = glob.glob(os.path.join(self.p.home, "cache", "compile", "*.app"))
        self.assertEqual(len(caches), 0)
        key = os.path.basename(os.path.dirname(os.path.dirname(self.p.current("app"))))
        os.makedirs(os.path.join(self.p.home, "cache", "compile"), exist_ok=True)
        link = os.path.join(self.p.home, "cache", "compile", key + ".app")
        os.symlink(self.victim, link)
        r = self.p.run("delete", "app", check=False)
        self.assertRefused(r, link)
        self.assertVictimIntact()

    def test_delete_removes_a_generation_tree_without_following_links_inside_it(self):
        gen = self.create() + "/gen-1"
        # A link inside a generation (as a job with write access could leave): removed itself.
        os.chmod(gen, 0o755)
        os.symlink(self.victim, os.path.join(gen, "planted"))
        self.p.run("delete", "app")
        self.assertFalse(os.path.lexists(gen))
        self.assertVictimIntact()

    # --- gc -----------------------------------------------------------------------------

    def test_gc_refuses_a_project_folder_that_is_a_link(self):
        self.create()
        os.symlink(self.victim, os.path.join(self.p.home, "envs", "planted-000000000000"))
        r = self.p.run("gc", "--keep", "1", check=False)
        self.assertRefused(r, os.path.join(self.p.home, "envs", "planted-000000000000"))
        self.assertVictimIntact()

    def test_gc_refuses_an_environment_folder_that_is_a_link(self):
        edir = self.create()
        link = os.path.join(os.path.dirname(edir), "other")
        os.symlink(self.victim, link)
        r = self.p.run("gc", "--keep", "1", check=False)
        self.assertRefused(r, link)
        self.assertVictimIntact()

    def test_a_store_shard_that_is_a_link_is_refused(self):
        self.create()
        shard = os.path.join(self.p.home, "store-v1", "objects", "sha256", "ab")
        self.replace_with_link(shard, os.path.join(self.victim, "ab"))
        r = self.p.run("gc", check=False)
        self.assertRefused(r, shard)
        self.assertVictimIntact()

    def test_gc_removes_a_link_in_tmp_itself(self):
        self.create()
        planted = os.path.join(self.p.home, "tmp", "staging-planted")
        os.symlink(self.victim, planted)
        self.p.run("gc")
        self.assertFalse(os.path.lexists(planted))
        self.assertVictimIntact()

    def test_a_fixed_folder_of_the_home_that_is_a_link_is_refused(self):
        self.create()
        for rel in ("tmp", "locks", "store-v1/wheels", "cache/http"):
            with self.subTest(folder=rel):
                path = os.path.join(self.p.home, rel)
                os.makedirs(path, exist_ok=True)
                os.rename(path, path + ".real")
                os.symlink(self.victim, path)
                r = self.p.run("gc", check=False)
                self.assertRefused(r, path)
                self.assertVictimIntact()
                os.unlink(path)
                os.rename(path + ".real", path)

    # --- cache --------------------------------------------------------------------------

    def test_cache_clean_refuses_a_bucket_that_is_a_link(self):
        self.create()
        downloads = os.path.join(self.p.home, "cache", "downloads")
        os.makedirs(os.path.dirname(downloads), exist_ok=True)
        if os.path.lexists(downloads):
            subprocess.run(["rm", "-rf", downloads], check=True)
        os.symlink(self.victim, downloads)
        for args in (["cache", "clean"], ["cache", "prune"]):
            with self.subTest(args=args):
                r = self.p.run(*args, check=False)
                self.assertRefused(r, downloads)
                self.assertVictimIntact()

    def test_cache_clean_removes_links_inside_buckets_themselves(self):
        self.create()
        compile_root = os.path.join(self.p.home, "cache", "compile")
        meta = os.path.join(self.p.home, "cache", "metadata")
        os.makedirs(compile_root, exist_ok=True)
        os.makedirs(meta, exist_ok=True)
        os.symlink(self.victim, os.path.join(compile_root, "gone-000000000000.app"))
        os.symlink(self.victim, os.path.join(meta, "planted"))
        self.p.run("cache", "prune")
        self.assertFalse(os.path.lexists(os.path.join(compile_root, "gone-000000000000.app")))
        self.p.run("cache", "clean", "--all")
        self.assertFalse(os.path.lexists(os.path.join(meta, "planted")))
        self.assertVictimIntact()

    # --- create ---------------------------------------------------------------------------

    def test_create_writes_nothing_through_a_committed_dot_envbox_link(self):
        os.symlink(self.victim, os.path.join(self.p.root, ".envbox"))
        r = self.p.run("create", "app", "--frozen")
        self.assertIn("symbolic link", r.stderr)  # a note: the generation is built and current
        self.assertTrue(self.p.current("app"))
        self.assertVictimIntact()

    def test_create_refuses_a_dangling_link_as_its_lock_file(self):
        self.create()
        key = os.path.basename(os.path.dirname(os.path.dirname(self.p.current("app"))))
        lock = os.path.join(self.p.home, "locks", f"{key}.app.lock")
        os.unlink(lock)
        target = os.path.join(self.victim, "created-by-envbox")
        os.symlink(target, lock)
        r = self.p.run("create", "app", "--frozen", "--force", check=False)
        self.assertRefused(r, lock)
        self.assertFalse(os.path.lexists(target))
        self.assertVictimIntact()

    def test_create_refuses_an_environment_folder_that_is_a_link(self):
        edir = self.create()
        self.replace_with_link(edir, self.victim)
        r = self.p.run("create", "app", "--frozen", "--force", check=False)
        self.assertRefused(r, edir)
        self.assertVictimIntact()

    # --- a generation's own lock ------------------------------------------------------------

    def test_a_generations_lock_is_never_read_through_a_link(self):
        # .envbox/ stays writable in a sealed generation: a link there to a device or a FIFO
        # must not make every status command read forever, nor diff read the victim.
        edir = self.create()
        lock = os.path.join(self.p.current("app"), ".envbox", "pylock.toml")
        for target in ("/dev/zero", os.path.join(self.victim, "precious.txt")):
            with self.subTest(target=target):
                self.replace_with_link(lock, target)
                for args in (("list",), ("show", "app"), ("verify", "app"), ("lock", "--check", "app")):
                    r = self.p.run(*args, check=False, timeout=30)
                    self.assertNotIn("precious", r.stdout)
                r = self.p.run("diff", "app#1", check=False, timeout=30)
                self.assertRefused(r, lock)
                self.assertVictimIntact()
        self.assertTrue(os.path.isdir(edir))

    # --- pins and the event log (known-good generations) -------------------------------------

    def test_a_link_planted_where_the_pins_go_is_refused(self):
        edir = self.create()
        precious = os.path.join(self.victim, "precious.txt")
        for target in (precious, os.path.join(self.victim, "created-by-envbox")):  # a dangling one too
            with self.subTest(target=target):
                link = os.path.join(edir, "pins")
                os.symlink(target, link)
                for args in (("pin", "app"), ("unpin", "app", "1"), ("history", "app"), ("gc", "--keep", "1"),
                             ("list",), ("show", "app")):
                    r = self.p.run(*args, check=False)
                    self.assertRefused(r, link)
                self.assertTrue(os.path.islink(link))
                self.assertFalse(os.path.lexists(os.path.join(self.victim, "created-by-envbox")))
                self.assertVictimIntact()
                os.unlink(link)

    def test_a_link_planted_where_the_event_log_goes_is_refused(self):
        edir = self.create()
        self.p.run("create", "app", "--frozen", "--force")  # gen-2, current
        for target in (os.path.join(self.victim, "precious.txt"), os.path.join(self.victim, "created-by-envbox")):
            with self.subTest(target=target):
                link = os.path.join(edir, "events")
                os.symlink(target, link)
                for args in (("rollback", "app"), ("pin", "app", "1"), ("unpin", "app", "1"), ("history", "app")):
                    r = self.p.run(*args, check=False)
                    self.assertRefused(r, link)
                # Refused before anything changed: still on generation 2, nothing pinned.
                self.assertTrue(self.p.current("app").endswith("gen-2"))
                self.assertFalse(os.path.lexists(os.path.join(edir, "pins")))
                self.assertFalse(os.path.lexists(os.path.join(self.victim, "created-by-envbox")))
                self.assertVictimIntact()
                os.unlink(link)

    # --- diff: a revision is never an option ------------------------------------------------

    def test_diff_revision_is_never_a_git_option(self):
        subprocess.run(["git", "init", "-q", self.p.root], check=True)
        out = os.path.join(self.tmp, "written-by-git")
        for spec in (f"app@--output={out}", "app@-p", "app@HEAD:other"):
            with self.subTest(spec=spec):
                r = self.p.run("diff", spec, check=False)
                self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
                self.assertIn("not a git revision", r.stderr)
                self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
