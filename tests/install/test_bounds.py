#!/usr/bin/env python3
"""Black-box tests of bounded, typed reads of what envbox takes as input: a lock that is a FIFO,
a link to /dev/zero or a 20 MiB sparse file is refused at once (exit 3) without being read; an
environment's events file that is a FIFO is exit 5 naming it; `verify ""` is a usage error;
`doctor` says ENVBOX_PYTHON is set when the interpreter it names cannot be used; a staging folder
a killed ingest left is removed by the next one; a wheel shipping `pip/__init__.py` beside
envbox's pip is a named conflict (exit 7); `pip show` escapes METADATA's control characters. The
real envbox binary and real wheels, run as whoever runs the suite (root on CI).

    test_bounds.py ENVBOX_BINARY
"""
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
from envboxtest import Project, keep_or_remove  # noqa: E402
from wheelgen import Wheel  # noqa: E402


class BoundedInputs(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-bounds-")
        self.p = Project(self.tmp)
        self.p.lock("env", [Wheel("alpha", "1.0", {"alpha/__init__.py": "X = 1\n"})])
        self.p.run("create", "env")

    def tearDown(self):
        keep_or_remove(self.tmp)

    def refused(self, *args, code, says, timeout=30):
        started = time.monotonic()
        r = self.p.run(*args, check=False, timeout=timeout)
        self.assertEqual(r.returncode, code, r.stdout + r.stderr)
        self.assertIn(says, r.stderr)
        self.assertLess(time.monotonic() - started, timeout)
        return r

    def test_a_lock_that_is_no_regular_file_or_too_large_is_never_read(self):
        lock = self.p.lock_path("env")
        os.remove(lock)
        os.mkfifo(lock)  # no writer: a read would hang
        self.refused("create", "env", "--frozen", code=3, says="is not a regular file (a FIFO)")
        os.remove(lock)
        os.symlink("/dev/zero", lock)  # a read would never end
        self.refused("create", "env", "--frozen", code=3, says="is a symbolic link")
        os.remove(lock)
        with open(lock, "wb") as f:  # 20 MiB, nearly all a hole
            f.truncate(20 << 20)
        self.refused("create", "env", "--frozen", code=3, says="is larger than 16 MiB")
        other = os.path.join(self.tmp, "other.toml")
        os.mkfifo(other)
        self.refused("create", "env2", "--lock", other, code=3, says="is not a regular file (a FIFO)")

    def test_an_events_file_that_is_a_fifo_is_exit_5_naming_it(self):
        envs = os.path.join(self.p.home, "envs")
        env_dir = next(os.path.join(r, d) for r, ds, _ in os.walk(envs) for d in ds if d == "env")
        events = os.path.join(env_dir, "events")
        if os.path.exists(events):
            os.remove(events)
        os.mkfifo(events)
        r = self.refused("pin", "env", code=5, says=events)
        self.assertIn("not a regular file", r.stderr)
        self.refused("history", "env", code=5, says=events)

    def test_an_empty_env_argument_is_a_usage_error(self):
        self.refused("verify", "", code=2, says="an empty ENV names no environment")

    def test_doctor_names_envbox_python_when_it_is_set(self):
        bogus = os.path.join(self.tmp, "no-python")
        r = self.p.run("doctor", check=False, env={"ENVBOX_PYTHON": bogus})
        self.assertIn("ENVBOX_PYTHON is set", r.stdout)
        self.assertNotIn("or set ENVBOX_PYTHON", r.stdout)

    def test_a_killed_ingests_staging_is_removed_by_the_next(self):
        left = os.path.join(self.p.home, "tmp", "ingest-0123456789abcdef-999999-0")
        os.makedirs(left)
        with open(os.path.join(left, "m0"), "wb") as f:
            f.write(b"x" * 4096)
        old = time.time() - 3600
        os.utime(left, (old, old))
        self.p.lock("other", [Wheel("beta", "1.0", {"beta/__init__.py": "Y = 2\n"})])
        self.p.run("create", "other")
        self.assertFalse(os.path.exists(left))

    def test_a_wheel_shipping_pip_is_a_named_conflict(self):
        self.p.lock("shadow", [Wheel("shadow", "1.0", {"shadow.py": "", "pip/__init__.py": "X = 1\n"})])
        r = self.p.run("create", "shadow", check=False)
        self.assertEqual(r.returncode, 7, r.stderr)
        self.assertIn("pip/__init__.py is installed by shadow", r.stderr)
        self.assertNotIn("File exists", r.stderr)

    def test_pip_show_escapes_control_characters(self):
        class Loud(Wheel):
            def _dist_info_files(self):
                out = super()._dist_info_files()
                meta = f"{self.dist_info}/METADATA"
                out[meta] = out[meta].replace("\n\n", "\nSummary: red \x1b[31mtext\x1b[0m\x07!\n\n", 1)
                return out
        wheel = Loud("loud", "1.0", {"loud.py": ""})
        self.p.lock("loud", [wheel])
        self.p.run("create", "loud")
        r = self.p.run("run", "loud", "--", "pip", "show", "loud")
        self.assertNotIn("\x1b", r.stdout)
        self.assertIn("Summary: red \\x1b[31mtext\\x1b[0m\\x07!", r.stdout)

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("unshare"), "needs root for a bind mount")
    def test_a_store_on_a_mount_of_its_own_is_named_not_exdev(self):
        # store-v1 bind-mounted alone (read-write, then read-only): objects move from tmp/ into
        # it by rename, which crosses mounts; the error says so instead of "Invalid cross-device
        # link".
        self.p.lock("other", [Wheel("gamma", "1.0", {"gamma/__init__.py": "Z = 3\n" * 100})])
        store = os.path.join(self.p.home, "store-v1")
        for extra in ("", " && mount -o remount,ro,bind \"$1\""):
            cmd = envboxtest.envbox_cmd(self.p.home, self.p.root) + ["create", "other"]
            r = subprocess.run(["unshare", "-m", "sh", "-c",
                                'mount --make-rprivate / && mount --bind "$1" "$1"' + extra +
                                ' && shift && exec "$@"', "sh", store] + cmd,
                               capture_output=True, text=True, env=envboxtest.envbox_env())
            self.assertNotEqual(r.returncode, 0, r.stderr)
            self.assertIn("the whole ENVBOX_HOME must be one writable mount", r.stderr)
            self.assertNotIn("Invalid cross-device link", r.stderr)


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
