#!/usr/bin/env python3
"""The incident envbox exists for, replayed by habit in a git repository over the
PyTorch-shaped loopback world (tests/lock/indexworld.py): a cu128 training environment, then an
inference stack that wants CUDA 13. Each step is what a user does without reading the manual;
envbox must keep the training environment on its line and point at a separate environment.

    test_incident.py ENVBOX_BINARY
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "lock"),
                os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
from envboxtest import envbox, keep_or_remove  # noqa: E402

PROBE = "import torch; print(torch.__version__)"


def git(cwd, *args):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout


def suggested_init(stderr):
    """The `envbox init …` line a refusal suggests, as argv (without `envbox`)."""
    lines = [l.strip() for l in stderr.splitlines() if l.strip().startswith("envbox init ")]
    assert lines, stderr
    return shlex.split(lines[0])[1:]


class Incident(unittest.TestCase):
    """train-cu128 is made and committed; then the habits that caused the incident."""

    @classmethod
    def setUpClass(cls):
        import indexworld
        from indexworld import TAG, pkg
        cls.tmp = tempfile.mkdtemp(prefix="envbox-incident-")
        world = indexworld.world()
        # An inference kernel that needs a torch only the CUDA 13 index has.
        world["pytorch-cu130"] += [pkg("torch", "2.12.0+cu130", ["typing-extensions>=4.10.0", "filelock"],
                                       tag=TAG)]
        world["pypi"] += [pkg("sgl-kernel", "0.3.0", ["torch==2.12.0"])]
        indexworld.write_indexes(os.path.join(cls.tmp, "www"), world, ("pytorch-cu128", "pytorch-cu130"))
        cls.server = indexworld.Server(os.path.join(cls.tmp, "www"))
        cls.url = cls.server.url

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        keep_or_remove(cls.tmp)

    def setUp(self):
        self.case = tempfile.mkdtemp(prefix="case-", dir=self.tmp)
        self.home = os.path.join(self.case, "home")
        self.proj = os.path.join(self.case, "proj")
        os.makedirs(self.proj)
        git(self.proj, "init", "-q")
        self.e("init", "train-cu128", "--cuda", "12.8", "--default-index", self.url + "/pypi",
               "--cuda-index", self.url + "/pytorch-cu128")
        r = self.e("add", "train-cu128", "torch", "transformers")
        self.assertIn("+ torch 2.11.0+cu128", r.stderr.splitlines())
        git(self.proj, "add", "-A")
        git(self.proj, "commit", "-qm", "train-cu128")
        self.assertEqual(self.e("run", "train-cu128", "--", "python", "-c", PROBE).stdout, "2.11.0+cu128\n")

    def e(self, *args, check=True):
        return envbox(*args, home=self.home, cwd=self.proj, check=check)

    def path(self, name):
        return os.path.join(self.proj, "manifests", name)

    def read(self, name):
        with open(self.path(name)) as f:
            return f.read()

    def generation(self):
        return os.path.basename(envboxtest.current_generation(self.home, "train-cu128"))

    def test_a_package_of_another_line_points_at_an_environment_of_its_own(self):
        manifest, lock = self.read("train-cu128.toml"), self.read("pylock.train-cu128.toml")
        r = self.e("add", "train-cu128", "sgl-kernel", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("[sources]", r.stderr)
        # The README's quick start shows this refusal: its lines are these.
        with open(os.path.join(HERE, "..", "..", "README.md"), encoding="utf-8") as f:
            readme = f.read()
        for line in r.stderr.splitlines()[:3]:
            self.assertIn(line, readme)
        argv = suggested_init(r.stderr)
        self.assertEqual(argv[:4], ["init", "train-cu130", "--cuda", "13.0"], r.stderr)
        self.assertEqual((self.read("train-cu128.toml"), self.read("pylock.train-cu128.toml")), (manifest, lock))
        # The suggestion is a command that works as printed: the CUDA 13 stack gets its own
        # environment from the project's own mirrors, and train-cu128 is untouched.
        self.e(*argv)
        r = self.e("add", "train-cu130", "sgl-kernel")
        self.assertIn("+ torch 2.12.0+cu130", r.stderr.splitlines())
        self.assertEqual(self.e("run", "train-cu130", "--", "python", "-c", PROBE).stdout, "2.12.0+cu130\n")
        self.assertEqual(self.e("run", "train-cu128", "--", "python", "-c", PROBE).stdout, "2.11.0+cu128\n")

    def test_two_edits_do_not_move_the_environment_to_another_line(self):
        lock = self.read("pylock.train-cu128.toml")
        # The natural edit after a refusal: the manifest's line and its index, cu128 → cu130.
        text = self.read("train-cu128.toml").replace("12.8", "13.0").replace("cu128", "cu130")
        with open(self.path("train-cu128.toml"), "w") as f:
            f.write(text)
        # What says the lock is stale offers the flag and the undo, never the command that refuses.
        for argv in (("lock", "--check", "train-cu128"), ("tree", "train-cu128")):
            r = self.e(*argv, check=False)
            self.assertIn("envbox lock train-cu128 --allow-cuda-change", r.stderr, argv)
            self.assertIn("git checkout -- manifests/train-cu128.toml", r.stderr, argv)
            self.assertNotIn("run `envbox lock` to update", r.stderr, argv)
        r = self.e("lock", "train-cu128", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("train-cu128: CUDA 12.8 → 13.0 (torch 2.11.0+cu128 → 2.12.0+cu130)", r.stderr)
        self.assertEqual(suggested_init(r.stderr)[:4], ["init", "train-cu130", "--cuda", "13.0"])
        self.assertIn("envbox lock train-cu128 --allow-cuda-change", r.stderr)
        self.assertEqual(self.read("pylock.train-cu128.toml"), lock)
        # add (and remove) lock too: the same refusal, the edit put back.
        r = self.e("add", "train-cu128", "requests>=2", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("envbox add train-cu128 'requests>=2' --allow-cuda-change", r.stderr)
        self.assertEqual((self.read("train-cu128.toml"), self.read("pylock.train-cu128.toml")), (text, lock))
        # run syncs first, and its sync never changes a line: it stops, names the command that
        # would, and the generation stays.
        r = self.e("run", "train-cu128", "--", "python", "-c", PROBE, check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("CUDA 12.8 → 13.0", r.stderr)
        self.assertIn("--allow-cuda-change", r.stderr)
        self.assertNotIn("creating", r.stderr)
        self.assertEqual(self.read("pylock.train-cu128.toml"), lock)
        self.assertEqual(self.generation(), "gen-1")
        # On purpose: the flag writes it, and the change list says the line first.
        r = self.e("lock", "train-cu128", "--allow-cuda-change")
        changes = [l for l in r.stderr.splitlines() if l[:2] in ("! ", "~ ", "+ ", "- ")]
        self.assertEqual(changes[0], "! CUDA 12.8 → 13.0 (torch 2.11.0+cu128 → 2.12.0+cu130)", r.stderr)
        self.assertIn("~ torch 2.11.0+cu128 → 2.12.0+cu130", changes)
        # A lock on another line (this one, or a teammate's from git) is still not run's to
        # build: only an explicit create moves the environment.
        r = self.e("run", "train-cu128", "--", "python", "-c", PROBE, check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("run does not move train-cu128 (generation 1) to another CUDA line", r.stderr)
        self.assertNotIn("creating", r.stderr)
        self.assertEqual(self.generation(), "gen-1")
        self.assertEqual(self.e("run", "--frozen", "train-cu128", "--", "python", "-c", PROBE).stdout,
                         "2.11.0+cu128\n")
        self.e("create", "train-cu128")
        self.assertEqual(self.e("run", "train-cu128", "--", "python", "-c", PROBE).stdout, "2.12.0+cu130\n")

    def test_a_teammates_lock_moves_the_line_only_on_purpose_on_every_deploy_path(self):
        # A teammate moves train-cu128 to CUDA 13 on purpose, in a clone, and commits it.
        mate, mate_home = os.path.join(self.case, "mate"), os.path.join(self.case, "mate-home")
        git(self.case, "clone", "-q", self.proj, mate)
        manifest = os.path.join(mate, "manifests", "train-cu128.toml")
        with open(manifest) as f:
            text = f.read().replace("12.8", "13.0").replace("cu128", "cu130")
        with open(manifest, "w") as f:
            f.write(text)
        envbox("lock", "train-cu128", "--allow-cuda-change", home=mate_home, cwd=mate)
        git(mate, "commit", "-qam", "train on CUDA 13")
        # A new environment on the teammate's machine is no move.
        envbox("create", "train-cu128", home=mate_home, cwd=mate)
        packed = os.path.join(self.case, "train.tar")
        envbox("pack", "train-cu128", "--output", packed, home=mate_home, cwd=mate)

        # `git pull && envbox create`: the change list with its CUDA headline, and the flag.
        git(self.proj, "pull", "-q", mate)
        r = self.e("create", "train-cu128", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("train-cu128: ! CUDA 12.8 → 13.0 (torch 2.11.0+cu128 → 2.12.0+cu130)", r.stderr)
        self.assertIn("~ torch 2.11.0+cu128 → 2.12.0+cu130", r.stderr.splitlines())
        self.assertIn("to move it on purpose: envbox create train-cu128 --allow-cuda-change", r.stderr)
        self.assertEqual(self.generation(), "gen-1")
        # unpack of the teammate's artifact into the existing environment: the same.
        r = self.e("unpack", packed, "train-cu128", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("! CUDA 12.8 → 13.0", r.stderr)
        self.assertIn(f"envbox unpack {packed} train-cu128 --allow-cuda-change", r.stderr)
        self.assertEqual(self.generation(), "gen-1")
        self.assertEqual(self.e("run", "--frozen", "train-cu128", "--", "python", "-c", PROBE).stdout,
                         "2.11.0+cu128\n")
        # Each accepted with the flag.
        r = self.e("unpack", packed, "train-cu128", "--allow-cuda-change")
        self.assertIn("! CUDA 12.8 → 13.0", r.stderr)
        self.assertEqual(self.e("run", "train-cu128", "--", "python", "-c", PROBE).stdout, "2.12.0+cu130\n")
        self.e("rollback", "train-cu128")
        self.e("create", "train-cu128", "--allow-cuda-change")
        self.assertEqual(self.e("run", "train-cu128", "--", "python", "-c", PROBE).stdout, "2.12.0+cu130\n")

    def test_mixing_lines_points_at_an_environment_of_its_own(self):
        r = self.e("add", "train-cu128", "nvidia-cublas==13.0.0.19", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("CUDA", r.stderr)
        refusal = r.stderr[r.stderr.index("refusing"):]
        self.assertLess(refusal.index("envbox init train-cu130 --cuda 13.0"), refusal.index("--allow-mixed-cuda"))


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main()
