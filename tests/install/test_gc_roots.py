#!/usr/bin/env python3
"""Black-box tests of what gc must never delete and of the filesystems homes really live on:
a running `envbox run` job and plain processes (cwd, open file, mapped file) keep their
generation through `create` + `gc --keep 1`; a dry run reports exactly what the real run
removes; a home on FUSE (bindfs, which answers renameat2 RENAME_NOREPLACE with EINVAL as the NFS
client does), a home reached through a symlink, and a store on overlayfs (a container's image
layer below it). Real processes, real mounts (root only; skipped otherwise).

    test_gc_roots.py ENVBOX_BINARY
"""
import glob
import json
import mmap
import os
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
from envboxtest import PYTHON, Project, envbox, envbox_cmd, envbox_env, keep_or_remove, many_files  # noqa: E402
from wheelgen import Wheel  # noqa: E402

IS_ROOT = os.geteuid() == 0


def wait_for(path, proc, timeout=30):
    deadline = time.time() + timeout
    while not os.path.exists(path):
        if proc.poll() is not None:
            raise AssertionError(f"process exited {proc.returncode} before {path} appeared: "
                                 f"{proc.stdout.read() if proc.stdout else ''}")
        if time.time() > deadline:
            raise AssertionError(f"{path} never appeared")
        time.sleep(0.05)


def gens_of(p, env):
    return sorted(os.path.basename(g) for g in glob.glob(os.path.join(os.path.dirname(p.current(env)), "gen-*")))


def plain_env():
    """The caller's environment without anything that names an environment."""
    return {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "ENVBOX_HOME")}


def stopped(proc):
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)


class RootsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-roots-")
        self.p = Project(self.tmp)

    def tearDown(self):
        keep_or_remove(self.tmp)

    def two_generations(self):
        """gen-1 has `lateonly` (a module only it has); gen-2, the current one, does not."""
        p = self.p
        p.lock("env", [Wheel("lateonly", "1.0", {"lateonly.py": "WHERE = 'generation one'\n"}),
                       many_files("common", "1.0", 5)])
        p.run("create", "env")
        old = p.current("env")
        site = p.site("env")
        return old, site

    def second_generation(self):
        self.p.lock("env", [many_files("common", "2.0", 5)])
        self.p.run("create", "env")
        self.assertTrue(self.p.current("env").endswith("gen-2"))

    def gc(self, *extra):
        return json.loads(self.p.run("gc", "--keep", "1", "--json", *extra).stdout)


class RunningJobs(RootsTest):
    def test_a_job_keeps_its_generation_through_create_and_gc(self):
        p = self.p
        old, site = self.two_generations()
        ready, go = os.path.join(self.tmp, "ready"), os.path.join(self.tmp, "go")
        # `env -i` drops every variable that names the generation, and the late import goes
        # through sys.path alone: only the lock inherited across both execs protects the job.
        code = ("import os, sys, time\n"
                "sys.path.insert(0, sys.argv[1])\n"
                "open(sys.argv[2], 'w').close()\n"
                "while not os.path.exists(sys.argv[3]): time.sleep(0.05)\n"
                "import lateonly\n"
                "print(lateonly.WHERE)\n")
        job = subprocess.Popen(envbox_cmd(p.home, p.root) + ["run", "env", "--",
                                "env", "-i", PYTHON, "-c", code, site, ready, go],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env=envbox_env())
        try:
            wait_for(ready, job)
            self.second_generation()
            dry = self.gc("--dry-run")
            r = self.gc()
            self.assertEqual(r, dry | {"dry_run": False})
            self.assertEqual(r["generations_removed"], 0, r)
            self.assertEqual(len(r["in_use"]), 1, r)
            self.assertIn("gen-1", r["in_use"][0])
            self.assertIn("envbox run", r["in_use"][0])
            self.assertEqual(gens_of(p, "env"), ["gen-1", "gen-2"])
            open(go, "w").close()
            out, _ = job.communicate(timeout=60)
        finally:
            if job.poll() is None:
                job.kill()
                job.wait()
        self.assertEqual(job.returncode, 0, out)
        self.assertEqual(out, "generation one\n")
        # The job is gone: nothing holds gen-1 any more.
        r = self.gc()
        self.assertEqual(r["removed"], [os.path.basename(os.path.dirname(os.path.dirname(old))) + " env gen-1"])
        self.assertEqual(gens_of(p, "env"), ["gen-2"])
        self.assertEqual(p.run("verify", "env", "--deep").returncode, 0)

    def test_a_job_started_while_gc_removes_its_old_generation_runs_in_the_current_one(self):
        p = self.p
        self.two_generations()
        self.second_generation()
        gc = subprocess.Popen(envbox_cmd(p.home, p.root) + ["gc", "--keep", "1"],
                              env=envbox_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
        for _ in range(5):
            r = p.run("run", "env", "--", "python", "-c", "import common; print(common.VERSION)")
            self.assertEqual(r.stdout, "2.0\n")
        gc.communicate(timeout=60)
        self.assertEqual(gc.returncode, 0)


class PlainProcesses(RootsTest):
    """Processes not started by envbox run (an activated venv, an IDE): found in /proc."""

    def hold(self, code, cwd=None):
        ready = os.path.join(self.tmp, f"ready-{len(os.listdir(self.tmp))}")
        proc = subprocess.Popen([PYTHON, "-c", code, ready], cwd=cwd, env=plain_env())
        wait_for(ready, proc)
        return proc

    def assert_kept_by(self, proc, what):
        r = self.gc()
        self.assertEqual(r["generations_removed"], 0, r)
        self.assertEqual(len(r["in_use"]), 1, r)
        self.assertIn(f"pid {proc.pid}", r["in_use"][0])
        self.assertIn(what, r["in_use"][0])
        self.assertEqual(gens_of(self.p, "env"), ["gen-1", "gen-2"])
        stopped(proc)
        r = self.gc()
        self.assertEqual(r["generations_removed"], 1, r)
        self.assertEqual(r["in_use"], [])
        self.assertEqual(gens_of(self.p, "env"), ["gen-2"])

    def test_working_directory_inside_the_old_generation(self):
        old, site = self.two_generations()
        self.second_generation()
        proc = self.hold("import sys, time; open(sys.argv[1], 'w').close(); time.sleep(600)", cwd=site)
        self.assert_kept_by(proc, "working directory")

    def test_a_file_held_open_under_the_old_generation(self):
        old, site = self.two_generations()
        self.second_generation()
        path = os.path.join(site, "lateonly.py")
        proc = self.hold(f"import sys, time; f = open({path!r}); open(sys.argv[1], 'w').close(); time.sleep(600)",
                         cwd=self.tmp)
        self.assert_kept_by(proc, "open")

    def test_a_file_mapped_but_closed(self):
        old, site = self.two_generations()
        self.second_generation()
        path = os.path.join(site, "lateonly.py")
        # libc's mmap, not Python's (which keeps a duplicate descriptor): only maps shows it.
        code = ("import ctypes, os, sys, time\n"
                "libc = ctypes.CDLL(None, use_errno=True)\n"
                "libc.mmap.restype = ctypes.c_void_p\n"
                "libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,"
                " ctypes.c_long]\n"
                f"fd = os.open({path!r}, os.O_RDONLY)\n"
                "assert libc.mmap(None, 4096, 1, 2, fd, 0) not in (None, ctypes.c_void_p(-1).value)\n"
                "os.close(fd)\n"
                "open(sys.argv[1], 'w').close(); time.sleep(600)\n")
        proc = self.hold(code, cwd=self.tmp)
        self.assert_kept_by(proc, "maps")

    def test_an_activated_environment(self):
        old, site = self.two_generations()
        self.second_generation()
        env = dict(plain_env(), VIRTUAL_ENV=old, PATH=os.path.join(old, "bin") + ":" + os.environ.get("PATH", ""))
        ready = os.path.join(self.tmp, "ready-env")
        proc = subprocess.Popen([PYTHON, "-c", "import sys, time; open(sys.argv[1], 'w').close(); time.sleep(600)",
                                 ready], cwd=self.tmp, env=env)
        wait_for(ready, proc)
        self.assert_kept_by(proc, "environment")


class DryRunIsExact(RootsTest):
    def test_gen_1_and_gen_10(self):
        p = self.p
        for v in range(1, 11):  # gen-10 is current; gen-1 … gen-9 go
            p.lock("env", [many_files("churn", f"{v}.0", 3), Wheel(f"only{v}", "1.0", {f"only{v}.py": ""})])
            p.run("create", "env")
        self.assertTrue(p.current("env").endswith("gen-10"))
        dry = self.gc("--dry-run")
        self.assertEqual(len(os.listdir(os.path.dirname(p.current("env")))), 11, "the dry run removed something")
        r = self.gc()
        self.assertEqual(r, dry | {"dry_run": False})
        self.assertEqual(r["generations_removed"], 9)
        self.assertEqual(r["wheels_removed"], 18)
        self.assertEqual(gens_of(p, "env"), ["gen-10"])
        self.assertEqual(p.run("verify", "env", "--deep").returncode, 0)

    def test_gen_1_kept_while_gen_10_goes(self):
        # The case a prefix match gets wrong: gen-1 stays (current) while gen-10 is removed,
        # so what only gen-10 and gen-1N need must not be counted as gen-1's.
        p = self.p
        for v in range(1, 12):
            p.lock("env", [many_files("churn", f"{v}.0", 3), Wheel(f"only{v}", "1.0", {f"only{v}.py": ""})])
            p.run("create", "env")
        p.run("rollback", "env", "--to", "1")
        dry = self.gc("--dry-run")
        self.assertEqual(len(gens_of(p, "env")), 11, "the dry run removed something")
        r = self.gc()
        self.assertEqual(r, dry | {"dry_run": False})
        self.assertEqual(r["generations_removed"], 9)
        self.assertEqual(r["wheels_removed"], 18)
        self.assertEqual(gens_of(p, "env"), ["gen-1", "gen-11"])
        self.assertEqual(p.run("verify", "env", "--deep").returncode, 0)


@unittest.skipUnless(IS_ROOT and shutil.which("bindfs") and os.path.exists("/dev/fuse"),
                     "needs root, /dev/fuse and bindfs")
class FuseHome(unittest.TestCase):
    """A home on FUSE: bindfs refuses RENAME_NOREPLACE with EINVAL, as NFS, sshfs and 9p do."""

    def test_create_stores_objects_by_link_and_doctor_says_so(self):
        tmp = tempfile.mkdtemp(prefix="envbox-fuse-")
        backing, mnt = os.path.join(tmp, "backing"), os.path.join(tmp, "mnt")
        os.makedirs(backing)
        os.makedirs(mnt)
        subprocess.run(["bindfs", backing, mnt], check=True)
        try:
            p = Project(tmp)
            p.home = os.path.join(mnt, "home")
            p.lock("env", [many_files("fused", "1.0", 40, big=100_000)])
            r = p.run("create", "env", check=False)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(p.run("verify", "env", "--deep").returncode, 0)
            out = p.run("run", "env", "--", "python", "-c", "import fused; print(fused.VERSION)").stdout
            self.assertEqual(out, "1.0\n")
            self.assertEqual(os.listdir(os.path.join(p.home, "tmp")), [], "no staged object left behind")
            # A second environment with the same wheel: every object exists (EEXIST), reused.
            p.lock("two", [many_files("fused", "1.0", 40, big=100_000)])
            p.run("create", "two")
            self.assertEqual(p.run("verify", "two", "--deep").returncode, 0)
            doctor = p.run("doctor").stdout
            self.assertIn("link fallback", doctor)
        finally:
            unmount = next((["fusermount" + v, "-u"] for v in ("", "3") if shutil.which("fusermount" + v)), ["umount"])
            subprocess.run(unmount + [mnt], check=False)
            keep_or_remove(tmp)


class SymlinkedHome(unittest.TestCase):
    def test_verify_through_the_link_and_the_real_path(self):
        tmp = tempfile.mkdtemp(prefix="envbox-symhome-")
        try:
            p = Project(tmp)
            real = os.path.join(tmp, "real-home")
            os.makedirs(real)
            link = os.path.join(tmp, "home-link")
            os.symlink(real, link)
            p.home = link
            p.lock("env", [many_files("linked", "1.0", 10)])
            p.run("create", "env")
            for home in (link, real):
                r = envbox("verify", "env", "--json", home=home, project=p.root, check=False)
                self.assertEqual(r.returncode, 0, f"verify via {home}: {r.stdout}{r.stderr}")
                self.assertTrue(json.loads(r.stdout)["clean"])
            # The real path is what the environment records.
            run = envbox("run", "env", "--", "python", "-c", "import sys; print(sys.prefix)",
                         home=link, project=p.root)
            self.assertTrue(run.stdout.strip().startswith(real + os.sep), run.stdout)
        finally:
            keep_or_remove(tmp)

    @unittest.skipUnless(IS_ROOT, "needs root for a bind mount")
    def test_verify_through_a_bind_mount(self):
        tmp = tempfile.mkdtemp(prefix="envbox-bindhome-")
        bind = os.path.join(tmp, "bound-home")
        os.makedirs(bind)
        try:
            p = Project(tmp)
            p.lock("env", [many_files("bound", "1.0", 10)])
            p.run("create", "env")
            subprocess.run(["mount", "--bind", p.home, bind], check=True)
            try:
                r = envbox("verify", "env", "--json", home=bind, project=p.root, check=False)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                # A create through the other name finds the same environment up to date.
                r = envbox("create", "env", home=bind, project=p.root)
                self.assertIn("up to date", r.stderr)
            finally:
                subprocess.run(["umount", bind], check=False)
        finally:
            keep_or_remove(tmp)


@unittest.skipUnless(IS_ROOT, "needs root to mount overlayfs")
class OverlayStore(unittest.TestCase):
    """A store in a container image's layer: linking its objects copies them up."""

    def test_copy_up_is_reported_as_copies(self):
        tmp = tempfile.mkdtemp(prefix="envbox-ovl-")
        lower, upper, work, mnt = (os.path.join(tmp, d) for d in ("lower", "upper", "work", "mnt"))
        for d in (upper, work, mnt):
            os.makedirs(d)
        wheels = [many_files("layered", "1.0", 30, big=50_000)]
        image = Project(os.path.join(tmp, "image"))
        image.home = lower
        image.lock("env", wheels)
        image.run("create", "env")
        try:
            subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                            f"lowerdir={lower},upperdir={upper},workdir={work}", mnt], check=True)
        except subprocess.CalledProcessError:
            self.skipTest("overlayfs cannot be mounted here")
        try:
            p = Project(os.path.join(tmp, "container"))
            p.home = mnt
            p.lock("env", wheels)
            r = json.loads(p.run("create", "env", "--json").stdout)
            objects = len(glob.glob(os.path.join(lower, "store-v1", "objects", "sha256", "*", "*")))
            self.assertGreater(r["copied"], 0, r)
            self.assertLessEqual(r["copied"], objects, r)
            self.assertEqual(r["hardlinked"] + r["copied"] + r["reflinked"] + r["generated"], r["files"])
            self.assertEqual(p.run("verify", "env", "--deep").returncode, 0)
            # Once copied up, an object is linked for real: a second environment gets hard links.
            p.lock("again", wheels)
            again = json.loads(p.run("create", "again", "--json").stdout)
            self.assertEqual(again["copied"], 0, again)
        finally:
            subprocess.run(["umount", mnt], check=False)
            keep_or_remove(tmp)


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main()
