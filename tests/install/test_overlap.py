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
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
from envboxtest import (PIP_WHEEL, Fixture, current_generation, envbox, keep_or_remove,  # noqa: E402
                        manifest_text, pip_comparable, pip_install, site_packages, write_manifest)
from wheelgen import Wheel, record_hash, write_lock  # noqa: E402


EMPTY_INIT_ROW = ["nvidia/__init__.py", "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU", "0"]
NVIDIA_LICENSE = "End User License Agreement\n--------------------------\nNVIDIA Software License Agreement ...\n"


def nvidia_wheel(project, version, lib, sonames, headers, tag, requires=()):
    """A wheel laid out as the real nvidia-*-cu12 ones are: the empty namespace
    `nvidia/__init__.py` every one of them ships, `nvidia/<lib>/{__init__.py,include,lib}`, and
    a dist-info with License.txt and top_level.txt `nvidia`."""
    dist = project.replace("-", "_")
    files = {"nvidia/__init__.py": "", f"nvidia/{lib}/__init__.py": "",
             f"nvidia/{lib}/include/__init__.py": "", f"nvidia/{lib}/lib/__init__.py": "",
             f"{dist}-{version}.dist-info/License.txt": NVIDIA_LICENSE,
             f"{dist}-{version}.dist-info/top_level.txt": "nvidia\n"}
    for h in headers:
        files[f"nvidia/{lib}/include/{h}"] = f"/* {h} of {project} {version} */\n#pragma once\n"
    for so in sonames:
        files[f"nvidia/{lib}/lib/{so}"] = b"\x7fELF\x02\x01\x01" + f"{so} {version}".encode() * 64
    return Wheel(project, version, files, tag=tag, requires=requires,
                 executables={f"nvidia/{lib}/lib/{so}" for so in sonames})


def cuda12_wheels():
    return [
        nvidia_wheel("nvidia-cublas-cu12", "12.8.4.1", "cublas",
                     ["libcublas.so.12", "libcublasLt.so.12", "libnvblas.so.12"],
                     ["cublas.h", "cublas_v2.h", "cublasLt.h"], "py3-none-manylinux_2_27_x86_64"),
        nvidia_wheel("nvidia-cuda-runtime-cu12", "12.8.90", "cuda_runtime", ["libcudart.so.12"],
                     ["cuda_runtime.h", "cuda_runtime_api.h", "driver_types.h"],
                     "py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64"),
        nvidia_wheel("nvidia-cudnn-cu12", "9.10.2.21", "cudnn",
                     ["libcudnn.so.9", "libcudnn_graph.so.9", "libcudnn_ops.so.9"],
                     ["cudnn.h", "cudnn_version.h"], "py3-none-manylinux_2_27_x86_64",
                     requires=["nvidia-cublas-cu12"]),
    ]


def record_rows(root, dist_info):
    with open(os.path.join(site_packages(root), dist_info, "RECORD"), encoding="utf-8") as f:
        return [row for row in csv.reader(f) if "__pycache__" not in row[0] and not row[0].endswith("/INSTALLER")]


def normalised(root):
    """The tree as the pip differential compares it, RECORD and INSTALLER left out."""
    t = pip_comparable(root)
    return {rel: v for rel, v in t.items()
            if not rel.endswith(".dist-info/RECORD") and not rel.endswith(".dist-info/INSTALLER")}


def assert_records_true(test, root):
    """Every hash every RECORD of the environment lists is its file's."""
    sp = site_packages(root)
    for record in glob.glob(os.path.join(sp, "*.dist-info", "RECORD")):
        with open(record, encoding="utf-8") as f:
            for path, digest, size in csv.reader(f):
                if not digest:
                    continue
                with open(os.path.normpath(os.path.join(sp, path)), "rb") as g:
                    data = g.read()
                test.assertEqual((record_hash(data), str(len(data))), (digest, size), f"{record}: {path}")


class CudaNamespaceAgainstPip(unittest.TestCase):
    """Three wheels shaped like nvidia-cublas-cu12, nvidia-cuda-runtime-cu12 and
    nvidia-cudnn-cu12, each with the same empty `nvidia/__init__.py`: envbox installs them
    as pip does, file by file and RECORD row by RECORD row, verify is clean, and a later
    generation without one of them keeps the shared file."""

    @classmethod
    def setUpClass(cls):
        if not PIP_WHEEL:
            raise unittest.SkipTest("python3-pip-whl is not installed")
        cls.tmp = tempfile.mkdtemp(prefix="envbox-cuda12-")
        cls.home = os.path.join(cls.tmp, "home")
        cls.wheels = cuda12_wheels()
        cls.fx = Fixture(cls.tmp, "proj", cls.wheels)
        envbox("create", "env", home=cls.home, project=cls.fx.project)
        cls.root = current_generation(cls.home, "env")
        cls.venv = os.path.join(cls.tmp, "pipvenv")
        pip_install(cls.venv, cls.fx.wheel_dir, [f"{w.name}=={w.version}" for w in cls.wheels])

    @classmethod
    def tearDownClass(cls):
        keep_or_remove(cls.tmp)

    def test_trees_match_pip_file_by_file(self):
        ours, pips = normalised(self.root), normalised(self.venv)
        self.assertEqual(sorted(set(pips) ^ set(ours)), [])
        for rel in pips:
            self.assertEqual(ours[rel], pips[rel], rel)

    def test_every_record_lists_the_shared_file_as_pip_writes_it(self):
        for w in self.wheels:
            with self.subTest(wheel=w.name):
                ours, pips = record_rows(self.root, w.dist_info), record_rows(self.venv, w.dist_info)
                self.assertIn(EMPTY_INIT_ROW, ours)
                self.assertEqual(sorted(ours), sorted(pips))
        assert_records_true(self, self.root)

    def test_the_shared_file_is_one_store_object(self):
        st = os.stat(os.path.join(site_packages(self.root), "nvidia", "__init__.py"))
        self.assertEqual(st.st_size, 0)
        self.assertEqual(st.st_mode & 0o222, 0)

    def test_imports_and_metadata(self):
        py = os.path.join(self.root, "bin", "python")
        r = subprocess.run([py, "-c", "import nvidia.cublas, nvidia.cuda_runtime, nvidia.cudnn, importlib.metadata as m;"
                                      "print(sorted(str(f) for d in ('nvidia-cublas-cu12', 'nvidia-cudnn-cu12', "
                                      "'nvidia-cuda-runtime-cu12') for f in m.files(d) if f.name == '__init__.py' "
                                      "and f.parent.name == 'nvidia'))"], capture_output=True, text=True)
        self.assertEqual(r.stdout, str(["nvidia/__init__.py"] * 3) + "\n", r.stderr)

    def test_verify_and_deep_verify_are_clean(self):
        envbox("verify", "env", home=self.home, project=self.fx.project)
        envbox("verify", "env", "--deep", home=self.home, project=self.fx.project)

    def test_a_generation_without_one_claimant_keeps_the_file(self):
        home = os.path.join(self.tmp, "home-drop")
        envbox("create", "drop", "--lock", self.fx.lock, home=home, project=self.fx.project)
        lock = os.path.join(self.tmp, "pylock.drop.toml")
        for keep in (self.fx.paths[1:], self.fx.paths[1:2]):  # without cublas, then runtime alone
            write_lock(lock, keep)
            envbox("create", "drop", "--lock", lock, home=home, project=self.fx.project)
            root = current_generation(home, "drop")
            sp = site_packages(root)
            self.assertTrue(os.path.isfile(os.path.join(sp, "nvidia", "__init__.py")))
            self.assertFalse(os.path.exists(os.path.join(sp, "nvidia", "cublas")))
            self.assertEqual(len(glob.glob(os.path.join(sp, "*.dist-info"))), len(keep))
            envbox("verify", "drop", "--deep", home=home, project=self.fx.project)
            assert_records_true(self, root)


def opencv_wheels(headless_init=None, headless_exec=None):
    """opencv-python and opencv-python-headless as they overlap for real: the same `cv2/` tree,
    `cv2/__init__.py` and the extension differing, `cv2/data/` identical, each with its own
    `.libs` directory."""
    tag = "cp37-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64"
    cascade = "<?xml version=\"1.0\"?>\n<opencv_storage><cascade>frontalface</cascade></opencv_storage>\n"
    out = []
    for project, flavour in (("opencv-python", "gui"), ("opencv-python-headless", "headless")):
        dist = project.replace("-", "_")
        init = f"FLAVOUR = {flavour!r}\n" if flavour == "gui" or headless_init is None else headless_init
        files = {"cv2/__init__.py": init,
                 "cv2/cv2.abi3.so": b"\x7fELF\x02\x01\x01" + flavour.encode() * 100,
                 "cv2/data/__init__.py": "",
                 "cv2/data/haarcascade_frontalface_default.xml": cascade,
                 "cv2/config.py": "import os\nBINARIES_PATHS = [os.path.dirname(__file__)]\n",
                 f"{dist}.libs/libavcodec-{flavour}.so.59": b"\x7fELF" + flavour.encode() * 50,
                 f"{dist}-4.10.0.84.dist-info/LICENSE.txt": "MIT License\n",
                 f"{dist}-4.10.0.84.dist-info/top_level.txt": "cv2\n"}
        execs = {"cv2/cv2.abi3.so", f"{dist}.libs/libavcodec-{flavour}.so.59"}
        if flavour == "headless" and headless_exec:
            execs |= set(headless_exec)
        out.append(Wheel(project, "4.10.0.84", files, tag=tag, purelib=False, executables=execs))
    return out


class DifferentContent(unittest.TestCase):
    """A path two wheels ship with different content is an install conflict (exit 7) naming
    the path and both wheels, unless `[install] prefer` names the wheel whose file wins."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-overlap-")
        self.home = os.path.join(self.tmp, "home")

    def tearDown(self):
        keep_or_remove(self.tmp)

    def project(self, wheels, prefer=None):
        fx = Fixture(self.tmp, "proj", wheels)
        extra = "" if prefer is None else f"[install]\nprefer = {prefer!r}\n".replace("'", '"')
        write_manifest(fx.project, "env", manifest_text(["opencv-python", "opencv-python-headless"], extra=extra))
        return fx

    def create(self, fx, check=True):
        return envbox("create", "env", home=self.home, project=fx.project, check=check)

    def generations(self):
        return glob.glob(os.path.join(self.home, "envs", "*", "env", "gen-*"))

    def test_conflict_names_the_path_and_both_wheels_and_exits_7(self):
        fx = self.project(opencv_wheels())
        r = self.create(fx, check=False)
        self.assertEqual(r.returncode, 7, r.stderr)
        self.assertIn("site-packages/cv2/", r.stderr)
        self.assertIn("opencv-python 4.10.0.84 (opencv_python-4.10.0.84-", r.stderr)
        self.assertIn("opencv-python-headless 4.10.0.84 (opencv_python_headless-4.10.0.84-", r.stderr)
        self.assertIn("[install] prefer", r.stderr)
        self.assertEqual(self.generations(), [], "a refused build left a generation behind")

    def test_a_mode_difference_is_a_conflict_too(self):
        w = opencv_wheels(headless_init="FLAVOUR = 'gui'\n", headless_exec={"cv2/__init__.py"})
        for x in w:
            del x.files["cv2/cv2.abi3.so"]
        r = self.create(self.project(w), check=False)
        self.assertEqual(r.returncode, 7, r.stderr)
        self.assertIn("cv2/__init__.py is installed by two wheels with different modes", r.stderr)

    def test_prefer_installs_the_winner_and_the_loser_record_omits_its_files(self):
        wheels = opencv_wheels()
        fx = self.project(wheels, prefer=["opencv-python-headless"])
        r = self.create(fx)
        self.assertIn("opencv-python-headless 4.10.0.84", r.stderr)
        self.assertIn("wins 2 paths over opencv-python 4.10.0.84", r.stderr)
        root = current_generation(self.home, "env")
        py = os.path.join(root, "bin", "python")
        out = subprocess.run([py, "-c", "import cv2, cv2.data; print(cv2.FLAVOUR)"], capture_output=True, text=True)
        self.assertEqual(out.stdout, "headless\n", out.stderr)
        gui, headless = record_rows(root, wheels[0].dist_info), record_rows(root, wheels[1].dist_info)
        gui_paths = {row[0] for row in gui}
        self.assertNotIn("cv2/__init__.py", gui_paths)
        self.assertNotIn("cv2/cv2.abi3.so", gui_paths)
        for shared in ("cv2/data/haarcascade_frontalface_default.xml", "cv2/config.py", "cv2/data/__init__.py"):
            self.assertIn(shared, gui_paths)
            self.assertIn(shared, {row[0] for row in headless})
        assert_records_true(self, root)
        envbox("verify", "env", home=self.home, project=fx.project)
        envbox("verify", "env", "--deep", home=self.home, project=fx.project)
        # pip, installing the loser first and the winner over it, leaves the same files.
        if PIP_WHEEL:
            venv = os.path.join(self.tmp, "pipvenv")
            pip_install(venv, fx.wheel_dir, ["opencv-python==4.10.0.84"], ["opencv-python-headless==4.10.0.84"])
            ours, pips = normalised(root), normalised(venv)
            self.assertEqual(sorted(set(pips) ^ set(ours)), [])
            for rel in pips:
                self.assertEqual(ours[rel], pips[rel], rel)
            self.assertEqual(sorted(headless), sorted(record_rows(venv, wheels[1].dist_info)))
            # pip's loser RECORD still claims the overwritten files with their old hashes;
            # envbox's leaves exactly those rows out.
            pip_gui = record_rows(venv, wheels[0].dist_info)
            self.assertEqual(sorted(gui), sorted(row for row in pip_gui if row[0] in gui_paths))
            self.assertEqual(sorted(row[0] for row in pip_gui if row[0] not in gui_paths),
                             ["cv2/__init__.py", "cv2/cv2.abi3.so"])

    def test_changing_the_winner_builds_a_new_generation(self):
        fx = self.project(opencv_wheels(), prefer=["opencv-python-headless"])
        self.create(fx)
        first = current_generation(self.home, "env")
        write_manifest(fx.project, "env", manifest_text(["opencv-python", "opencv-python-headless"],
                                                        extra='[install]\nprefer = ["opencv-python"]\n'))
        r = self.create(fx)
        self.assertNotIn("up to date", r.stderr)
        root = current_generation(self.home, "env")
        self.assertNotEqual(root, first)
        with open(os.path.join(site_packages(root), "cv2", "__init__.py")) as f:
            self.assertEqual(f.read(), "FLAVOUR = 'gui'\n")
        envbox("verify", "env", "--deep", home=self.home, project=fx.project)
        self.assertIn("up to date", self.create(fx).stderr)

    def test_prefer_must_name_a_locked_package(self):
        fx = self.project(opencv_wheels(), prefer=["opencv-contrib-python"])
        r = self.create(fx, check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("env.toml:6: 'opencv-contrib-python' is not a package of the lock in 'install.prefer'", r.stderr)

    def test_overlaps_no_preference_settles(self):
        cases = [
            ("a file in one wheel, a directory in another",
             [Wheel("fd-a", "1.0", {"shared/x": "file\n"}), Wheel("fd-b", "1.0", {"shared/x/y.py": ""})],
             "shared/x is a file in fd-a 1.0"),
            ("one wheel claiming a path twice (root and .data/purelib)",
             [Wheel("twice", "1.0", {"twice/m.py": "a\n", "twice-1.0.data/purelib/twice/m.py": "b\n"})],
             "twice/m.py is claimed by one wheel twice: twice 1.0"),
            ("a file in another wheel's .dist-info",
             [Wheel("meta-a", "1.0", {"meta_a.py": ""}),
              Wheel("meta-b", "1.0", {"meta_b-1.0.data/purelib/meta_a-1.0.dist-info/METADATA": "Name: hijack\n"})],
             "(the path is in the first one's .dist-info)"),
        ]
        for what, wheels, expect in cases:
            with self.subTest(what):
                shutil.rmtree(os.path.join(self.tmp, "proj"), ignore_errors=True)
                fx = Fixture(self.tmp, "proj", wheels)
                names = [w.name for w in wheels]
                write_manifest(fx.project, "env",
                               manifest_text(names, extra=f"[install]\nprefer = {names!r}\n".replace("'", '"')))
                r = self.create(fx, check=False)
                self.assertEqual(r.returncode, 7, r.stderr)
                self.assertIn(expect, r.stderr)

    def test_prefer_naming_both_is_a_conflict(self):
        fx = self.project(opencv_wheels(), prefer=["opencv-python", "opencv-python-headless"])
        r = self.create(fx, check=False)
        self.assertEqual(r.returncode, 7, r.stderr)
        self.assertIn("[install] prefer names both", r.stderr)


class UnknownManifestKeys(unittest.TestCase):
    """`explict = true` (for `explicit`) stops create and lock with the file, the line and the
    key meant, before any index is asked."""

    def test_typo_is_an_error_with_the_key_meant(self):
        tmp = tempfile.mkdtemp(prefix="envbox-keys-")
        try:
            fx = Fixture(tmp, "proj", [Wheel("plain", "1.0", {"plain.py": ""})])
            typo = ('[[index]]\nname = "pytorch-cu128"\nurl = "https://download.pytorch.org/whl/cu128"\n'
                    'explict = true\n[tool.mine]\nanything = 1\n')
            write_manifest(fx.project, "env", manifest_text(["plain"], extra=typo))
            for command in ("create", "lock"):
                r = envbox(command, "env", home=os.path.join(tmp, "home"), project=fx.project, check=False)
                self.assertEqual(r.returncode, 3, r.stderr)
                self.assertIn("env.toml:8: Unknown key 'index[0].explict' (did you mean 'explicit'?)", r.stderr)
        finally:
            keep_or_remove(tmp)


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
        write_manifest(cls.project, "env", manifest_text(["quoted-tool"]))
        envbox("create", "env", home=cls.home, project=cls.project)
        cls.root = current_generation(cls.home, "env")

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

    def test_activate_sets_the_path_as_it_is(self):
        for shell in ("bash", "sh"):
            r = subprocess.run([shell, "-c", '. "$1/bin/activate" && printf "%s\\n" "$VIRTUAL_ENV" && command -v python',
                                "_", self.root], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.splitlines(), [self.root, os.path.join(self.root, "bin", "python")], shell)

    def test_verify_is_clean(self):
        envbox("verify", "env", "--deep", home=self.home, project=self.project)


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
