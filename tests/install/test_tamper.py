#!/usr/bin/env python3
"""Black-box tests of tampering and repair: a write into a hard-linked file changes the shared
store object and every environment linking it; `verify` must see it from any of them, `create`
must never link a touched object, and `create --force` must repair. Also: a read-only project,
a umask that would leak into the store, and a user who may only read the home.

    test_tamper.py ENVBOX_BINARY

Real processes, real files, real mounts (root only; skipped otherwise).
"""
import glob
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
from envboxtest import envbox, keep_or_remove, small_tmpfs  # noqa: E402
from httpserver import StaticServer  # noqa: E402
from wheelgen import Wheel, write_lock  # noqa: E402

OBJECT_MTIME = 315532800  # 1980-01-01, every store object's


class Project(envboxtest.Project):
    """Two environments, `a` and `b`, built from the same wheel: every file shared."""

    def __init__(self, tmp):
        super().__init__(tmp)
        files = {"shared/__init__.py": "VALUE = 'pristine'\n", "shared/data.txt": "x" * 100}
        self.wheel = Wheel("shared", "1.0", files).build(self.wheels)
        for env in ("a", "b"):
            write_lock(self.lock_path(env), [self.wheel])

    def module(self, env):
        return glob.glob(os.path.join(self.current(env), "lib", "python*", "site-packages", "shared",
                                      "__init__.py"))[0]

    def value(self, env):
        """VALUE as the source file ENV links says it (read and run: the import itself takes
        the .pyc, compiled from the source as stored)."""
        return self.run("run", env, "--no-sandbox", "--", "python", "-c",
                        "import shared; ns = {}; exec(open(shared.__file__).read(), ns); "
                        "print(ns['VALUE'])").stdout.strip()

    def imported(self, env):
        """VALUE as `import shared` gives it in ENV."""
        return self.run("run", env, "--no-sandbox", "--", "python", "-c",
                        "import shared; print(shared.VALUE)").stdout.strip()


class Tampering(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-tamper-")
        self.p = Project(self.tmp)
        self.p.run("create", "a")
        self.p.run("create", "b")

    def tearDown(self):
        keep_or_remove(self.tmp)

    def write_through_a(self, text):
        # What root (or a run without the sandbox that chmods first) can do: write in place.
        path = self.p.module("a")
        os.chmod(path, 0o644)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o444)

    def test_write_into_one_environment_is_seen_from_the_other(self):
        p = self.p
        self.assertEqual(os.stat(p.module("a")).st_ino, os.stat(p.module("b")).st_ino)
        self.write_through_a("VALUE = 'tampered'\n")
        self.assertEqual(p.value("b"), "tampered", "b links the same object")
        # The import takes the unchecked-hash .pyc, compiled from the stored source: a write
        # into a source never runs (verify, below, reports it).
        self.assertEqual(p.imported("b"), "pristine")
        r = p.run("verify", "b", "--json", check=False)
        self.assertEqual(r.returncode, 5, r.stdout + r.stderr)
        report = json.loads(r.stdout)
        store = [d for d in report["drift"] if d["kind"] == "store"]
        self.assertEqual(len(store), 1, report)
        self.assertIn("/store-v1/objects/sha256/", store[0]["path"])
        self.assertIn("shared/__init__.py", store[0]["detail"])
        # Every environment that shares the object is named.
        self.assertIn("a generation 1", store[0]["detail"])
        self.assertIn("b generation 1", store[0]["detail"])
        self.assertIn("envbox create --force b", r.stderr)
        # The plain text report says the same, and `a` sees it too.
        r = p.run("verify", "a", check=False)
        self.assertEqual(r.returncode, 5)
        self.assertIn("store", r.stdout)

    def test_chmod_of_an_object_is_seen(self):
        p = self.p
        for mode in (0o400, 0o644):  # narrower or wider than the store's 0444: both are drift
            os.chmod(p.module("b"), mode)
            r = p.run("verify", "a", "--json", check=False)
            self.assertEqual(r.returncode, 5, f"{mode:o}")
            details = " ".join(d["detail"] for d in json.loads(r.stdout)["drift"])
            self.assertIn(f"mode {mode:04o}, expected 0444", details)

    def test_create_never_links_a_touched_object(self):
        p = self.p
        self.write_through_a("VALUE = 'tampered'\n")
        # A third environment from the same wheel: the object is stored again from the wheel first.
        write_lock(os.path.join(p.root, "manifests", "pylock.c.toml"), [p.wheel])
        r = p.run("create", "c")
        self.assertIn("storing shared-1.0-py3-none-any.whl again", r.stderr)
        self.assertIn("Repaired 1 wheel ", r.stderr)
        self.assertEqual(p.value("c"), "pristine")
        self.assertEqual(p.run("verify", "c", "--deep").returncode, 0)
        st = os.stat(p.module("c"))
        self.assertEqual((stat.S_IMODE(st.st_mode), int(st.st_mtime)), (0o444, OBJECT_MTIME))
        # The environments that linked the touched inode still hold it, and verify says so.
        r = p.run("verify", "b", check=False)
        self.assertEqual(r.returncode, 5)
        self.assertIn("shared/__init__.py", r.stdout)

    def test_create_force_repairs(self):
        p = self.p
        self.write_through_a("VALUE = 'tampered'\n")
        self.assertIn("up to date", p.run("create", "b").stderr)
        r = p.run("create", "--force", "b")
        self.assertIn("generation 2", r.stderr)
        self.assertEqual(p.value("b"), "pristine")
        self.assertEqual(p.run("verify", "b").returncode, 0)
        self.assertEqual(p.run("verify", "b", "--deep").returncode, 0)
        # --reinstall is the same repair, for a for `a` too.
        p.run("create", "--reinstall", "a")
        self.assertEqual(p.run("verify", "a", "--deep").returncode, 0)

    def test_force_finds_same_size_same_mtime_writes_by_content(self):
        p = self.p
        path = p.module("a")
        with open(path) as f:
            original = f.read()
        self.write_through_a(original.replace("pristine", "tampered"))
        os.utime(path, (OBJECT_MTIME, OBJECT_MTIME))  # the stat now looks untouched
        self.assertEqual(p.run("verify", "b").returncode, 0, "only hashing can see this")
        self.assertEqual(p.run("verify", "b", "--deep", check=False).returncode, 5)
        p.run("create", "--force", "b")
        self.assertEqual(p.value("b"), "pristine")
        self.assertEqual(p.run("verify", "b", "--deep").returncode, 0)


    def test_verify_store_checks_every_object_of_every_wheel(self):
        p = self.p
        r = p.run("verify", "--store", "--deep", "--json")
        report = json.loads(r.stdout)
        self.assertTrue(report["clean"], report)
        self.assertEqual(report["wheels"], 1)
        self.assertGreaterEqual(report["objects"], 3)  # two files, METADATA, RECORD, WHEEL
        self.assertEqual(report["hashed"], report["objects"])
        path = p.module("a")
        with open(path) as f:
            original = f.read()
        self.write_through_a(original.replace("pristine", "tampered"))
        os.utime(path, (OBJECT_MTIME, OBJECT_MTIME))
        self.assertEqual(p.run("verify", "--store").returncode, 0, "only hashing can see this")
        r = p.run("verify", "--store", "--deep", check=False)
        self.assertEqual(r.returncode, 5, r.stdout + r.stderr)
        self.assertIn("shared/__init__.py of shared-1.0-py3-none-any.whl): content differs", r.stdout)
        self.assertIn(": 1 problem (1 wheel,", r.stderr)
        self.assertIn("envbox create --force", r.stderr)
        p.run("create", "--force", "b")
        self.assertEqual(p.run("verify", "--store", "--deep").returncode, 0)
        # Without ENV, every environment of the project is verified; outside a project there is
        # nothing to verify but the store.
        r = p.run("verify", "--json", check=False)
        self.assertEqual(sorted(json.loads(line)["environment"] for line in r.stdout.splitlines()), ["a", "b"],
                         r.stdout + r.stderr)
        r = envbox("verify", home=p.home, cwd=self.tmp, check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--store", r.stderr)
        # An environment whose `current` was removed is not "never created": it fails.
        os.unlink(glob.glob(os.path.join(p.home, "envs", "*", "a", "current"))[0])
        r = p.run("verify", check=False)
        self.assertNotEqual(r.returncode, 0, r.stderr)
        self.assertIn("a: ", r.stderr)
        self.assertIn("1 not checked, 0 never created", r.stderr)


class SharedAndReadOnly(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-share-")
        self.p = Project(self.tmp)

    def tearDown(self):
        keep_or_remove(self.tmp)

    def test_umask_does_not_leak_into_the_store(self):
        p = self.p
        p.run("create", "a", preexec_fn=lambda: os.umask(0o077))
        objects = glob.glob(os.path.join(p.home, "store-v1", "objects", "sha256", "*", "*"))
        self.assertTrue(objects)
        modes = {oct(stat.S_IMODE(os.stat(o).st_mode)) for o in objects}
        self.assertEqual(modes, {"0o444"})
        self.assertEqual(p.run("verify", "a").returncode, 0)

    def test_read_only_project_is_not_a_failure(self):
        if os.geteuid() != 0:
            self.skipTest("a read-only bind mount needs root")
        p = self.p
        ro = os.path.join(self.tmp, "ro")
        os.makedirs(ro)
        if subprocess.run(["mount", "--bind", p.root, ro]).returncode != 0:
            self.skipTest("cannot bind-mount here")
        try:
            subprocess.run(["mount", "-o", "remount,bind,ro", ro], check=True)
            r = envbox("create", "a", home=p.home, project=ro, check=False)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("generation 1 is current, but", r.stderr)
            self.assertIn("Read-only file system", r.stderr)
            self.assertEqual(envbox("verify", "a", home=p.home, project=ro).returncode, 0)
        finally:
            subprocess.run(["umount", ro])

    def test_a_user_who_may_only_read_the_home(self):
        if os.geteuid() != 0:
            self.skipTest("switching users needs root")
        p = self.p
        p.run("create", "a")
        # The home readable by all, writable by its owner only; the reader is `nobody`.
        os.chmod(self.tmp, 0o755)
        for dirpath, dirnames, filenames in os.walk(self.tmp):
            for d in dirnames:
                path = os.path.join(dirpath, d)
                if not os.path.islink(path):
                    os.chmod(path, os.stat(path).st_mode | 0o555)
            for f in filenames:
                path = os.path.join(dirpath, f)
                if not os.path.islink(path):
                    os.chmod(path, os.stat(path).st_mode | 0o444)

        def as_nobody():
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)

        env = {"HOME": self.tmp}
        r = p.run("create", "a", env=env, preexec_fn=as_nobody, check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("up to date", r.stderr)
        r = p.run("gc", "--dry-run", env=env, preexec_fn=as_nobody, check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = p.run("verify", "a", env=env, preexec_fn=as_nobody, check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        for args in (["list"], ["show", "a"], ["history", "a"]):
            r = p.run(*args, env=env, preexec_fn=as_nobody, check=False)
            self.assertEqual(r.returncode, 0, r.stderr)
        r = p.run("run", "a", "--", "python", "-c", "import shared; print(shared.VALUE)", env=env,
                  preexec_fn=as_nobody, check=False)
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "pristine"), r.stderr)


def ensure_user(name, group):
    subprocess.run(["groupadd", "-f", group], check=True)
    if subprocess.run(["id", name], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "--system", "--no-create-home", "-g", group, name], check=True)
    ids = subprocess.run(["id", "-u", name], capture_output=True, text=True, check=True).stdout
    gid = subprocess.run(["getent", "group", group], capture_output=True, text=True, check=True).stdout
    return int(ids), int(gid.split(":")[2])


class GroupSharedHome(unittest.TestCase):
    """One home, two members of a group (a set-group-ID home directory): each creates
    environments, neither's umask locks the other out, and objects stay 0444."""

    def test_two_members_share_one_home(self):
        if os.geteuid() != 0 or not shutil.which("useradd"):
            self.skipTest("making users needs root and useradd")
        alice = ensure_user("envbox-alice", "envbox-team")
        bob = ensure_user("envbox-bob", "envbox-team")
        tmp = tempfile.mkdtemp(prefix="envbox-team-")
        try:
            os.chmod(tmp, 0o755)
            p = Project(tmp)
            for dirpath, dirnames, filenames in os.walk(p.root):
                for n in dirnames + filenames:
                    os.chmod(os.path.join(dirpath, n), 0o755)
            os.chmod(p.root, 0o755)
            extra = Wheel("bobs", "1.0", {"bobs.py": "B = 1\n"}).build(os.path.join(p.root, "wheels"))
            os.chmod(extra, 0o644)
            write_lock(os.path.join(p.root, "manifests", "pylock.b.toml"), [p.wheel, extra])
            os.makedirs(p.home)
            os.chown(p.home, 0, alice[1])
            os.chmod(p.home, 0o2775)  # group-shared: set-group-ID

            def as_user(uid_gid, umask):
                def switch():
                    os.setgroups([uid_gid[1]])
                    os.setgid(uid_gid[1])
                    os.setuid(uid_gid[0])
                    os.umask(umask)
                return switch

            env = {"HOME": tmp}
            # Alice's umask would lock everyone out of what she makes; Bob's is the usual one.
            r = p.run("create", "a", env=env, preexec_fn=as_user(alice, 0o077), check=False)
            self.assertEqual(r.returncode, 0, r.stderr)
            r = p.run("--json", "create", "b", env=env, preexec_fn=as_user(bob, 0o022), check=False)
            self.assertEqual(r.returncode, 0, r.stderr)
            report = json.loads(r.stdout)
            self.assertEqual(report["files"], report["hardlinked"] + report["copied"] + report["reflinked"] +
                             report["generated"])
            objects = glob.glob(os.path.join(p.home, "store-v1", "objects", "sha256", "*", "*"))
            self.assertEqual({stat.S_IMODE(os.stat(o).st_mode) for o in objects}, {0o444})
            owners = {os.stat(o).st_uid for o in objects}
            self.assertEqual(owners, {alice[0], bob[0]}, "both members stored objects")
            shard = os.path.join(p.home, "store-v1", "objects", "sha256", "00")
            self.assertEqual(stat.S_IMODE(os.stat(shard).st_mode) & 0o070, 0o070)
            for who, name in ((alice, "a"), (bob, "b"), (alice, "b"), (bob, "a")):
                r = p.run("verify", name, env=env, preexec_fn=as_user(who, 0o022), check=False)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            r = p.run("run", "b", "--", "python", "-c", "import bobs, shared; print(bobs.B, shared.VALUE)",
                      env=env, preexec_fn=as_user(alice, 0o022), check=False)
            self.assertEqual(r.stdout.strip(), "1 pristine", r.stderr)
            r = p.run("gc", "--dry-run", env=env, preexec_fn=as_user(bob, 0o022), check=False)
            self.assertEqual(r.returncode, 0, r.stderr)
        finally:
            keep_or_remove(tmp)


class FullDiskWhileDownloading(unittest.TestCase):
    def test_enospc_is_named_and_nothing_is_left(self):
        tmp, mnt = small_tmpfs(self, "envbox-dlfull-", "4m")
        server = None
        try:
            served = os.path.join(tmp, "served")
            # Incompressible, so the 6 MB download cannot fit on the 4 MB home.
            big = Wheel("big", "1.0", {"big/blob.bin": os.urandom(6_000_000)}).build(served)
            server = StaticServer(served)
            project = os.path.join(tmp, "proj")
            os.makedirs(os.path.join(project, "manifests"))
            write_lock(os.path.join(project, "manifests", "pylock.env.toml"), [big], url_prefix=server.url)
            home = os.path.join(mnt, "home")
            r = envbox("create", "env", home=home, project=project, check=False)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("No space left on device", r.stderr)
            self.assertNotIn("No such file or directory", r.stderr)
            left = [f for f in os.listdir(os.path.join(home, "cache", "downloads")) if not f.endswith(".lock")]
            self.assertEqual(left, [], "no part of the download is left to fill the disk")
            self.assertEqual(os.listdir(os.path.join(home, "tmp")), [])
            self.assertLess(shutil.disk_usage(mnt).used, 1_000_000)
        finally:
            if server:
                server.close()
            subprocess.run(["umount", mnt])
            keep_or_remove(tmp)

    def test_lock_reads_a_local_wheels_metadata_in_place(self):
        # A flat file:// folder whose wheel is larger than the home's whole disk: lock reads its
        # METADATA where it lies (no copy into tmp/), so it locks and leaves nothing behind.
        tmp, mnt = small_tmpfs(self, "envbox-lockfull-", "4m")
        try:
            folder = os.path.join(tmp, "wheels")
            Wheel("big", "1.0", {"big/blob.bin": os.urandom(6_000_000)}).build(folder)
            project = os.path.join(tmp, "proj")
            envboxtest.write_manifest(project, "env", envboxtest.manifest_text(
                ["big"], indexes=[("local", "file://" + folder, "")]))
            home = os.path.join(mnt, "home")
            r = envbox("lock", "env", home=home, project=project, check=False)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(project, "manifests", "pylock.env.toml")) as f:
                self.assertIn('name = "big"', f.read())
            self.assertEqual(os.listdir(os.path.join(home, "tmp")) if os.path.isdir(
                os.path.join(home, "tmp")) else [], [])
            self.assertLess(shutil.disk_usage(mnt).used, 1_000_000)
        finally:
            subprocess.run(["umount", mnt])
            keep_or_remove(tmp)


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
