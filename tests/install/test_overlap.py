#!/usr/bin/env python3
"""Black-box tests of files several wheels ship (the `nvidia/__init__.py` of every CUDA 12
wheel, opencv-python beside opencv-python-headless) and of launchers under paths with
shell-special characters: the real envbox binary, real wheels shaped like the real ones, the
real interpreter, and pip as the reference installer.

    test_overlap.py ENVBOX_BINARY
"""
import csv
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
sys.path.insert(0, HERE)
from wheelgen import Wheel, record_hash, write_lock  # noqa: E402
import test_install  # noqa: E402
from test_install import PIP_WHEEL, PYTHON, keep_or_remove, tree  # noqa: E402

ENVBOX = None
PY_XY = f"{sys.version_info[0]}.{sys.version_info[1]}"


def envbox(*args, home, project, check=True, env=None):
    test_install.ENVBOX = ENVBOX
    return test_install.envbox(*args, home=home, project=project, check=check, env=env)


def manifest(project, env, requirements, extra=""):
    with open(os.path.join(project, "manifests", f"{env}.toml"), "w", encoding="utf-8") as f:
        f.write(f'[environment]\npython = "{PY_XY}"\nplatform = "manylinux_2_28_x86_64"\n'
                f"requirements = {requirements!r}\n".replace("'", '"') + extra)


def current(home, env):
    return os.path.realpath(glob.glob(os.path.join(home, "envs", "*", env, "current"))[0])


class ShellSpecialPaths(unittest.TestCase):
    """A home and project whose paths hold `$HOME x (1)`, quotes, a backquote and a backslash:
    console-script launchers and `#!python` scripts are executed for real, directly and through
    `envbox run`, and print what they should."""

    SPECIAL = "$HOME x (1) it's `id` \"q\" back\\slash"

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-shell-")
        base = os.path.join(cls.tmp, cls.SPECIAL)
        cls.home = os.path.join(base, "home")
        cls.project = os.path.join(base, "proj")
        os.makedirs(os.path.join(cls.project, "manifests"))
        w = Wheel("quoted-tool", "1.0", {
            "quoted_tool/__init__.py": "import sys\ndef main():\n    print('tool ran', sys.argv[1:])\n    return 3\n",
            "quoted_tool-1.0.data/scripts/quoted-script": "#!python\nimport sys\nprint('script ran', sys.argv[1:])\n",
        }, entry_points={"console_scripts": {"quoted-tool": "quoted_tool:main"}},
            executables={"quoted_tool-1.0.data/scripts/quoted-script"})
        write_lock(os.path.join(cls.project, "manifests", "pylock.env.toml"),
                   [w.build(os.path.join(cls.project, "wheels"))])
        manifest(cls.project, "env", ["quoted-tool"])
        envbox("create", "env", home=cls.home, project=cls.project)
        cls.root = current(cls.home, "env")

    @classmethod
    def tearDownClass(cls):
        keep_or_remove(cls.tmp)

    def test_console_script_runs_when_executed_directly(self):
        self.assertIn(self.SPECIAL, self.root)
        r = subprocess.run([os.path.join(self.root, "bin", "quoted-tool"), "a b", "$x"],
                           capture_output=True, text=True)
        self.assertEqual((r.returncode, r.stdout, r.stderr), (3, "tool ran ['a b', '$x']\n", ""))

    def test_rewritten_script_runs_when_executed_directly(self):
        r = subprocess.run([os.path.join(self.root, "bin", "quoted-script"), "'quoted'"],
                           capture_output=True, text=True)
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "script ran [\"'quoted'\"]\n", ""))

    def test_console_script_runs_through_envbox_run(self):
        r = envbox("run", "env", "--", "quoted-tool", home=self.home, project=self.project, check=False)
        self.assertEqual((r.returncode, r.stdout), (3, "tool ran []\n"), r.stderr)

    def test_verify_is_clean(self):
        envbox("verify", "env", "--deep", home=self.home, project=self.project)


if __name__ == "__main__":
    ENVBOX = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=1)
