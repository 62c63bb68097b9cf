#!/usr/bin/env python3
"""Black-box tests of `envbox run`: its sandbox (the whole home read-only, compile caches
writable; mount flags kept; Landlock where namespaces are refused; strict mode; doctor's report),
its arguments (everything after the command is the command's) and the option checks of run and
create. Real processes, real mounts, a real unprivileged user, a real seccomp filter.

    test_sandbox.py ENVBOX_BINARY
"""
import ctypes
import glob
import json
import os
import platform
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
from envboxtest import PIP_WHEEL, keep_or_remove  # noqa: E402
from wheelgen import Wheel  # noqa: E402

NOBODY = 65534
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]

# What a container's seccomp profile does: unshare() fails with EPERM. `landlock` also makes the
# Landlock syscalls fail with ENOSYS, as on a kernel without it.
_SYSCALLS = {"x86_64": (0xC000003E, 272), "aarch64": (0xC00000B7, 97)}
_LANDLOCK = (444, 445, 446)  # the same numbers on every architecture


def refuse_namespaces(landlock_too=False):
    """A preexec_fn installing a seccomp filter in the child before it execs envbox."""
    def install():
        libc = ctypes.CDLL(None, use_errno=True)
        arch, unshare = _SYSCALLS[platform.machine()]
        ld_abs, jeq, ret = 0x20, 0x15, 0x06
        errno_of = lambda e: 0x00050000 | e  # noqa: E731  SECCOMP_RET_ERRNO
        denied = [(unshare, 1)] + ([(nr, 38) for nr in _LANDLOCK] if landlock_too else [])
        prog = [(ld_abs, 0, 0, 4), (jeq, 0, 2 * len(denied) + 1, arch), (ld_abs, 0, 0, 0)]
        for nr, err in denied:
            prog += [(jeq, 0, 1, nr), (ret, 0, 0, errno_of(err))]
        prog += [(ret, 0, 0, 0x7FFF0000)]  # SECCOMP_RET_ALLOW
        buf = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *i) for i in prog))

        class Prog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        p = Prog(len(prog), ctypes.addressof(buf))
        if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(p), 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "cannot install the seccomp filter")
    return install


class World(envboxtest.Project):
    """A project with environments `a` and `b` (and `t`, a torch-shaped one) in one home."""

    def lock(self, env, *wheels):
        super().lock(env, wheels)

    def envbox(self, *args, check=True, env=None, prefix=(), preexec=None):
        """envbox with the caller's ENVBOX_SANDBOX and ENVBOX_CUDA_DRIVER left out."""
        return self.run(*args, check=check, env=env, prefix=prefix, preexec_fn=preexec,
                        drop=("ENVBOX_SANDBOX", "ENVBOX_CUDA_DRIVER"))

    def an_object(self):
        return sorted(glob.glob(os.path.join(self.home, "store-v1", "objects", "sha256", "*", "*")))[0]


def stack(name):
    return Wheel(name, "1.0", {f"{name}/__init__.py": "X = 1\n"})


def torch_shaped(version="2.11.0+cu128"):
    return Wheel("torch", version, {"torch/__init__.py": f"__version__ = {version!r}\n"})


# Run inside the sandbox: try each write, print one JSON object path → "ok" or the error.
WRITER = """
import json, sys
out = {}
for p in sys.argv[1:]:
    try:
        with open(p, "a") as f:
            f.write("x")
        out[p] = "ok"
    except OSError as e:
        out[p] = e.strerror
print(json.dumps(out))
"""


def sandbox_works(world, **kw):
    r = world.envbox("doctor", check=False, **kw)  # exit 1 where no sandbox is possible
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("run sandbox:"))
    return line


class ThreeEnvironments(unittest.TestCase):
    """Environments `a`, `b` and the torch-shaped `t`, created; skipped without a mount namespace."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-sandbox-")
        self.w = World(self.tmp)
        self.w.lock("a", stack("alpha"))
        self.w.lock("b", stack("beta"))
        self.w.lock("t", torch_shaped())
        for env in ("a", "b", "t"):
            self.w.envbox("create", env)
        if "mount namespace" not in sandbox_works(self.w) or "Landlock" in sandbox_works(self.w):
            self.skipTest("no mount namespace here")

    def tearDown(self):
        keep_or_remove(self.tmp)


class HomeReadOnly(ThreeEnvironments):
    """Namespaces available: nothing in the home is writable from `run` but the compile caches."""

    def test_second_environments_interpreter_cannot_install_into_it(self):
        other = os.path.join(self.w.current("b"), "bin", "python")
        extra = Wheel("intruder", "0.1", {"intruder.py": "X = 1\n"}).build(os.path.join(self.tmp, "w"))
        r = self.w.envbox("run", "a", "--", other, os.path.join(PIP_WHEEL, "pip"), "install", "-q", "--no-deps",
                          "--no-index", "--disable-pip-version-check", extra, check=False)
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("Read-only file system", r.stdout + r.stderr)
        self.assertEqual(self.w.envbox("verify", "b", "--deep", check=False).returncode, 0)

    def test_every_write_into_the_home_fails_but_the_compile_cache(self):
        objects = os.path.join(self.w.home, "store-v1", "objects")
        targets = [os.path.join(self.w.site("b"), "stray.py"), os.path.join(self.w.site("a"), "stray.py"),
                   os.path.join(objects, "stray"), self.w.an_object(),  # root ignores the 0444 mode
                   os.path.join(self.w.home, "cache", "stray"), os.path.join(self.w.home, "locks", "stray")]
        code = "import os, sys; sys.argv += [os.environ['TORCHINDUCTOR_CACHE_DIR'] + '/k']\n" + WRITER
        r = self.w.envbox("run", "t", "python", "-c", code, *targets)
        got = json.loads(r.stdout)
        for p in targets:
            self.assertEqual(got.pop(p), "Read-only file system", p)
        (cache, result), = got.items()
        self.assertEqual(result, "ok", cache)
        self.assertTrue(cache.startswith(os.path.join(self.w.home, "cache", "compile")))
        self.assertEqual(r.stderr, "", "a sandboxed run says nothing on the workload's stderr")
        for env in ("a", "b", "t"):
            self.assertEqual(self.w.envbox("verify", env, "--deep", check=False).returncode, 0)

    def test_the_home_reached_through_a_bind_mount_is_read_only_too(self):
        if os.geteuid() != 0:
            self.skipTest("bind mounts need root")
        alias, objects = os.path.join(self.tmp, "alias"), os.path.join(self.tmp, "objects-alias")
        mounted = []
        try:
            for src, dst in ((self.w.home, alias), (os.path.join(self.w.home, "store-v1", "objects"), objects)):
                os.makedirs(dst)
                if subprocess.run(["mount", "--bind", src, dst]).returncode != 0:
                    self.skipTest("cannot bind-mount here")
                mounted.append(dst)
            site_b = os.path.join(alias, os.path.relpath(self.w.site("b"), os.path.realpath(self.w.home)))
            targets = [os.path.join(site_b, "stray.py"), os.path.join(objects, "stray"),
                       os.path.join(self.tmp, "beside-ok")]
            got = json.loads(self.w.envbox("run", "a", "python", "-c", WRITER, *targets).stdout)
            self.assertEqual(got, {targets[0]: "Read-only file system", targets[1]: "Read-only file system",
                                   targets[2]: "ok"})
        finally:
            for m in reversed(mounted):
                subprocess.run(["umount", m])

    def test_no_sandbox_writes_and_verify_sees_it(self):
        code = "import sysconfig; open(sysconfig.get_paths()['purelib'] + '/stray.py', 'w')"
        self.w.envbox("run", "a", "--no-sandbox", "--", "python", "-c", code)
        r = self.w.envbox("verify", "a", check=False)
        self.assertEqual(r.returncode, 5)
        self.assertIn("stray.py", r.stdout)

    def test_strict_runs_when_the_sandbox_works(self):
        r = self.w.envbox("run", "--sandbox", "strict", "a", "python", "-c", "print('in')")
        self.assertEqual(r.stdout, "in\n")

# Run as root inside the sandbox: each way to undo it, one JSON object name → "ok" or the error.
UNDO = r"""
import ctypes, json, os, subprocess, sys
home, gen, target = sys.argv[1:4]
libc = ctypes.CDLL(None, use_errno=True)
out = {}
def attempt(name, fn):
    try:
        out[name] = "ok" if fn() else "refused"
    except OSError as e:
        out[name] = e.strerror or str(e)
def write(path):
    with open(path, "w") as f:
        f.write("x")
    return True
def remount():  # mount -o remount,rw,bind HOME
    if libc.mount(None, home.encode(), None, 32 | 4096, None) != 0:
        return False
    return write(target)
def shell(*prefix):
    cmd = 'mount -o remount,rw,bind "$0" && touch "$1"'
    return subprocess.run([*prefix, "sh", "-c", cmd, home, target],
                          stderr=subprocess.DEVNULL).returncode == 0
attempt("remount", remount)
attempt("unshare -m", lambda: shell("unshare", "-m"))
attempt("unshare -Urm", lambda: shell("unshare", "-Urm"))
attempt("/proc/1/root", lambda: write("/proc/1/root" + target))
attempt("/proc/ppid/root", lambda: write("/proc/%d/root%s" % (os.getppid(), target)))
attempt("chmod", lambda: os.chmod(gen, 0o777) or True)
attempt("ptrace", lambda: libc.ptrace(16, os.getppid(), 0, 0) == 0)  # PTRACE_ATTACH
caps = next(int(l.split()[1], 16) for l in open("/proc/self/status") if l.startswith("CapEff"))
out["sys_admin"] = "ok" if caps & (1 << 21) else "refused"
print(json.dumps(out))
"""


@unittest.skipUnless(os.geteuid() == 0, "the root case (CI's): run keeps no power to undo its sandbox")
class RootWorkload(ThreeEnvironments):
    """As root, a workload cannot undo run's read-only mounts or reach around them."""

    def undo(self, *options):
        gen = os.path.realpath(self.w.current("b"))
        target = os.path.join(gen, "planted")
        r = self.w.envbox("run", *options, "a", "python", "-c", UNDO, self.w.home, gen, target,
                          check=False)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return json.loads(r.stdout), target

    def test_remounts_namespaces_proc_root_chmod_and_ptrace_fail(self):
        said, target = self.undo()
        for name, result in said.items():
            self.assertNotEqual(result, "ok", f"{name}: {said}")
        self.assertFalse(os.path.exists(target))
        self.assertEqual(self.w.envbox("verify", "b", "--deep", check=False).returncode, 0)

    def test_keep_cap_keeps_one_on_purpose_and_refuses_unknown_names(self):
        said, _ = self.undo("--keep-cap", "sys_admin")
        self.assertEqual(said["sys_admin"], "ok")
        r = self.w.envbox("run", "--keep-cap", "net_magic", "a", "true", check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--keep-cap net_magic", r.stderr)
        self.assertEqual(self.w.envbox("run", "--sandbox", "off", "a", "python", "-c",
                                       "import sys; caps = [l for l in open('/proc/self/status') "
                                       "if l.startswith('CapEff')][0]; "
                                       "sys.exit(0 if int(caps.split()[1], 16) & (1 << 21) else 1)",
                                       check=False).returncode, 0)

    def test_a_compile_into_the_cache_still_works(self):
        # Triton's and Inductor's shape: gcc writes a shared object into the compile cache, and
        # the workload loads it.
        code = ("import ctypes, os, subprocess\n"
                "d = os.environ['TORCHINDUCTOR_CACHE_DIR']\n"
                "os.makedirs(d, exist_ok=True)\n"
                "src = os.path.join(d, 'k.c')\n"
                "open(src, 'w').write('int k(void) { return 42; }')\n"
                "subprocess.run(['gcc', '-shared', '-fPIC', '-o', src[:-2] + '.so', src], check=True)\n"
                "print(ctypes.CDLL(src[:-2] + '.so').k())\n")
        r = self.w.envbox("run", "t", "python", "-c", code, check=False)
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "42"), r.stderr)


class MountFlags(unittest.TestCase):
    """The read-only remount keeps the home's nodev/nosuid/noexec (real tmpfs mounts)."""

    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("mounting a tmpfs needs root")
        self.tmp = tempfile.mkdtemp(prefix="envbox-flags-")
        os.chmod(self.tmp, 0o755)
        self.mnt = os.path.join(self.tmp, "mnt")
        os.makedirs(self.mnt)
        self.mounted = False

    def tearDown(self):
        if self.mounted:
            subprocess.run(["umount", self.mnt])
        keep_or_remove(self.tmp)

    def mount(self, options):
        if subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", self.mnt]).returncode != 0:
            self.skipTest("cannot mount a tmpfs here")
        self.mounted = True

    def flags_inside(self, w, prefix=()):
        code = ("import os, sys; f = os.statvfs(sys.argv[1]).f_flag\n"
                "print(' '.join(n for n in ('ST_RDONLY', 'ST_NODEV', 'ST_NOSUID', 'ST_NOEXEC') "
                "if f & getattr(os, n)))")
        r = w.envbox("-v", "run", "a", "--", "python", "-c", code, w.current("a"), prefix=prefix)
        return r.stdout.split(), r.stderr

    def test_nodev_nosuid_home_of_a_user_who_is_not_root(self):
        if subprocess.run(AS_NOBODY + ["unshare", "-U", "-r", "true"], capture_output=True).returncode != 0:
            self.skipTest("user namespaces are not available to an unprivileged user here")
        self.mount("nodev,nosuid,mode=0755")
        os.chown(self.mnt, NOBODY, NOBODY)
        w = World(self.mnt)
        w.lock("a", stack("alpha"))
        for dirpath, dirnames, filenames in os.walk(self.mnt):
            for n in [dirpath] + [os.path.join(dirpath, f) for f in filenames]:
                os.chown(n, NOBODY, NOBODY)
        w.envbox("create", "a", prefix=AS_NOBODY, env={"HOME": self.mnt})
        flags, err = self.flags_inside(w, prefix=AS_NOBODY)
        self.assertIn("in the read-only sandbox", err)
        self.assertEqual(flags, ["ST_RDONLY", "ST_NODEV", "ST_NOSUID"])
        r = w.envbox("run", "a", "python", "-c", WRITER, os.path.join(w.site("a"), "stray.py"), prefix=AS_NOBODY)
        self.assertEqual(list(json.loads(r.stdout).values()), ["Read-only file system"])

    def test_root_keeps_noexec(self):
        self.mount("noexec,nodev,nosuid")
        w = World(self.tmp, home=os.path.join(self.mnt, "home"))
        w.lock("a", stack("alpha"))
        w.envbox("create", "a")
        if sandbox_works(w) != "run sandbox: read-only mount namespace":
            self.skipTest("no mount namespace here")
        flags, err = self.flags_inside(w)
        self.assertIn("in the read-only sandbox", err)
        self.assertEqual(flags, ["ST_RDONLY", "ST_NODEV", "ST_NOSUID", "ST_NOEXEC"])


class WithoutNamespaces(unittest.TestCase):
    """The kernel refuses namespaces (a container's seccomp filter): Landlock, or a loud warning."""

    def setUp(self):
        if platform.machine() not in _SYSCALLS:
            self.skipTest("no seccomp filter for this architecture in the test")
        self.tmp = tempfile.mkdtemp(prefix="envbox-nons-")
        # The home one level down, so that its parent has a sibling to write into.
        self.w = World(self.tmp, home=os.path.join(self.tmp, "store", "home"))
        self.w.lock("a", stack("alpha"))
        self.w.lock("b", stack("beta"))
        self.w.lock("t", torch_shaped())
        for env in ("a", "b", "t"):
            self.w.envbox("create", env)

    def tearDown(self):
        keep_or_remove(self.tmp)

    def test_landlock_keeps_the_home_read_only(self):
        kw = {"preexec": refuse_namespaces()}
        if "Landlock (" not in sandbox_works(self.w, **kw):
            self.skipTest("no Landlock in this kernel: " + sandbox_works(self.w, **kw))
        outside = os.path.join(self.tmp, "proj", "written-outside")
        targets = [os.path.join(self.w.site("b"), "stray.py"), os.path.join(self.w.site("a"), "stray.py"),
                   os.path.join(self.w.home, "store-v1", "objects", "stray"), self.w.an_object(),
                   os.path.join(self.w.home, "cache", "stray")]
        code = "import os, sys; sys.argv += [os.environ['TRITON_CACHE_DIR'] + '/k']\n" + WRITER
        r = self.w.envbox("run", "t", "--", "python", "-c", code, *targets, outside, **kw)
        self.assertIn("no mount namespace here", r.stderr, "said without -v")
        self.assertIn("Landlock", r.stderr)
        got = json.loads(r.stdout)
        for p in targets:
            self.assertEqual(got.pop(p), "Permission denied", p)
        self.assertEqual(got.pop(outside), "ok", "outside the home writes still work")
        (cache, result), = got.items()
        self.assertEqual(result, "ok", cache)
        other = os.path.join(self.w.current("b"), "bin", "python")
        extra = Wheel("intruder", "0.1", {"intruder.py": "X = 1\n"}).build(os.path.join(self.tmp, "proj", "w"))
        r = self.w.envbox("run", "a", "--", other, os.path.join(PIP_WHEEL, "pip"), "install", "-q", "--no-deps",
                          "--no-index", "--disable-pip-version-check", extra, check=False, **kw)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("Permission denied", r.stdout + r.stderr)
        self.assertEqual(self.w.envbox("run", "--sandbox", "strict", "a", "true", **kw).returncode, 0)
        # /tmp holds this home: no new file directly in it (gcc would abort), and run says so.
        mkstemp = "import tempfile; print(tempfile.mkstemp()[1])"
        r = self.w.envbox("run", "a", "python", "-c", mkstemp, check=False, **kw)
        self.assertIn("holds the envbox home", r.stderr)
        elsewhere = os.path.join(self.tmp, "proj")
        r = self.w.envbox("run", "a", "python", "-c", mkstemp, env={"TMPDIR": elsewhere}, **kw)
        self.assertNotIn("holds the envbox home", r.stderr)
        self.assertTrue(r.stdout.startswith(elsewhere), r.stdout)
        for env in ("a", "b", "t"):
            self.assertEqual(self.w.envbox("verify", env, "--deep", check=False).returncode, 0)

    def test_landlock_covers_a_bind_mount_of_the_home(self):
        kw = {"preexec": refuse_namespaces()}
        if os.geteuid() != 0 or "Landlock (" not in sandbox_works(self.w, **kw):
            self.skipTest("needs root (bind mounts) and Landlock")
        alias = os.path.join(self.tmp, "alias")
        os.makedirs(alias)
        if subprocess.run(["mount", "--bind", self.w.home, alias]).returncode != 0:
            self.skipTest("cannot bind-mount here")
        try:
            site_b = os.path.join(alias, os.path.relpath(self.w.site("b"), os.path.realpath(self.w.home)))
            targets = [os.path.join(site_b, "stray.py"), os.path.join(self.tmp, "proj", "beside-ok")]
            got = json.loads(self.w.envbox("run", "a", "python", "-c", WRITER, *targets, **kw).stdout)
            self.assertEqual(got, {targets[0]: "Permission denied", targets[1]: "ok"})
        finally:
            subprocess.run(["umount", alias])

    def test_no_sandbox_at_all_warns_every_time_and_strict_refuses(self):
        kw = {"preexec": refuse_namespaces(landlock_too=True)}
        line = sandbox_works(self.w, **kw)
        self.assertIn("run sandbox: none", line)
        self.assertIn("unshare", line)
        for args in (["run", "a", "true"], ["-q", "run", "a", "true"]):
            r = self.w.envbox(*args, **kw)
            self.assertIn("warning: running WITHOUT the sandbox", r.stderr)
            self.assertIn("Operation not permitted", r.stderr)
        for args, env in ((["run", "--sandbox", "strict", "a", "true"], {}),
                          (["run", "a", "true"], {"ENVBOX_SANDBOX": "strict"})):
            r = self.w.envbox(*args, check=False, env=env, **kw)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("refusing to run without the sandbox", r.stderr)
        r = self.w.envbox("run", "--no-sandbox", "a", "true", env={"ENVBOX_SANDBOX": "strict"}, **kw)
        self.assertEqual(r.stderr, "", "--no-sandbox is asked for, so nothing to warn about")

    def test_root_without_cap_sys_admin_still_gets_namespaces(self):
        if os.geteuid() != 0 or not shutil.which("capsh"):
            self.skipTest("needs root and capsh")
        prefix = ["capsh", "--drop=cap_sys_admin", "--"]
        r = self.w.envbox("run", "a", "python", "-c", WRITER, os.path.join(self.w.site("b"), "stray.py"),
                          prefix=[prefix[0], prefix[1], "--", "-c", 'exec "$@"', "sh"])
        if "Landlock" in r.stderr or "WITHOUT" in r.stderr:
            self.skipTest("user namespaces refused here too: " + r.stderr)
        self.assertEqual(list(json.loads(r.stdout).values()), ["Read-only file system"])


class Arguments(unittest.TestCase):
    """Everything from the command's first word on belongs to the command."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-args-")
        cls.w = World(cls.tmp)
        cls.w.lock("a", stack("alpha"))
        cls.w.envbox("create", "a")

    @classmethod
    def tearDownClass(cls):
        keep_or_remove(cls.tmp)

    def argv(self, *args):
        return json.loads(self.w.envbox(*args).stdout)

    def test_options_after_the_command_are_the_commands(self):
        code = "import json, sys; print(json.dumps(sys.argv[1:]))"
        self.assertEqual(self.argv("run", "a", "python", "-c", code, "-v", "--json", "-V", "--home", "x", "--"),
                         ["-v", "--json", "-V", "--home", "x", "--"])
        self.assertEqual(self.argv("run", "a", "--", "python", "-c", code, "-v", "--", "-q"), ["-v", "--", "-q"])
        self.assertEqual(self.argv("-q", "run", "--no-sandbox", "a", "python", "-c", code, "list"), ["list"])
        self.assertEqual(self.argv("run", "-q", "a", "--no-sandbox", "--", "python", "-c", code), [])
        r = self.w.envbox("run", "a", "python", "-V")
        self.assertTrue((r.stdout + r.stderr).startswith("Python 3"), r.stdout + r.stderr)
        r = self.w.envbox("-v", "run", "a", "python", "-c", "pass")
        self.assertIn("envbox: running in", r.stderr, "-v before ENV is envbox's")

    def test_bad_run_options_are_usage_errors(self):
        for args, env, says in ((["run", "a", "--frobnicate", "python"], {}, "--frobnicate"),
                                (["run", "--sandbox", "maybe", "a", "true"], {}, "--sandbox"),
                                (["run", "a", "true"], {"ENVBOX_SANDBOX": "maybe"}, "ENVBOX_SANDBOX"),
                                (["run", "--sandbox", "strict", "--no-sandbox", "a", "true"], {}, "sandbox"),
                                (["run", "a"], {}, "no command")):
            r = self.w.envbox(*args, check=False, env=env)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(says, r.stderr, args)


class OptionChecks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-opts-")
        cls.w = World(cls.tmp)
        cls.w.lock("t", torch_shaped())
        cls.w.envbox("create", "t", env={"ENVBOX_CUDA_DRIVER": "580.82.07"})

    @classmethod
    def tearDownClass(cls):
        keep_or_remove(cls.tmp)

    def test_locked_with_frozen_is_a_usage_error(self):
        r = self.w.envbox("create", "t", "--locked", "--frozen", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--locked", r.stderr)
        self.assertIn("--frozen", r.stderr)

    def test_garbage_in_envbox_cuda_driver_is_an_error_naming_it(self):
        for bad in ("abc", "550.", "-1", "999999999999.1", "550.54.15 ", "5x0.1"):
            for args in (["run", "t", "true"], ["create", "t"], ["doctor"], ["list"]):
                r = self.w.envbox(*args, check=False, env={"ENVBOX_CUDA_DRIVER": bad})
                self.assertEqual(r.returncode, 2, (bad, args, r.stderr))
                self.assertIn("ENVBOX_CUDA_DRIVER", r.stderr)
        for good in ("580.82.07", "570.86", "575.51.103"):
            self.w.envbox("run", "t", "true", env={"ENVBOX_CUDA_DRIVER": good})
        r = self.w.envbox("run", "t", "true", check=False, env={"ENVBOX_CUDA_DRIVER": "520.61.05"})
        self.assertEqual(r.returncode, 6, "a driver too old for CUDA 12.8 still refuses")

    def test_no_driver_note_belongs_to_create_not_run(self):
        if os.path.exists("/sys/module/nvidia") or os.path.exists("/proc/driver/nvidia"):
            self.skipTest("this machine has an NVIDIA driver")
        r = self.w.envbox("run", "t", "python", "-c", "import sys; sys.stderr.write('job\\n')")
        self.assertEqual(r.stderr, "job\n", "run leaves the workload's stderr to the workload")
        self.assertIn("no NVIDIA driver", self.w.envbox("-v", "run", "t", "true").stderr)
        self.w.lock("t", torch_shaped("2.11.0+cu126"))  # another line: on purpose
        self.assertIn("no NVIDIA driver", self.w.envbox("create", "t", "--allow-cuda-change").stderr)


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
