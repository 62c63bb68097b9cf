#!/usr/bin/env python3
"""Black-box tests of `envbox tree` and `envbox why`: the real binary locks the PyTorch-shaped
world of tests/lock/indexworld.py, served from 127.0.0.1, and answers from the lock alone (its
PEP 751 `dependencies`); a lock without them, a hostile edge and an unknown package.

    test_tree.py ENVBOX_BINARY
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools"),
                os.path.join(HERE, "..", "lock")]
import envboxtest  # noqa: E402
import indexworld  # noqa: E402
from envboxtest import envbox, keep_or_remove  # noqa: E402

TREE = """\
torch 2.11.0+cu128
├── filelock 3.19.1
├── nvidia-cublas-cu12 12.8.4.1
├── nvidia-cudnn-cu12 9.10.2.21
│   └── nvidia-cublas-cu12 12.8.4.1
├── nvidia-nccl-cu12 2.27.3
├── sympy 1.14.0
│   └── mpmath 1.3.0
├── triton 3.5.0
└── typing-extensions 4.15.0
transformers 4.57.0
├── filelock 3.19.1
├── huggingface-hub 0.35.0
│   ├── filelock 3.19.1
│   ├── requests 2.32.5
│   │   ├── certifi 2025.8.3
│   │   ├── idna 3.10
│   │   └── urllib3 2.5.0
│   └── typing-extensions 4.15.0
├── numpy 2.3.3
├── requests 2.32.5 (*)
└── safetensors 0.6.2
"""

WHY_CUBLAS = """\
torch 2.11.0+cu128 → nvidia-cublas-cu12 12.8.4.1
torch 2.11.0+cu128 → nvidia-cudnn-cu12 9.10.2.21 → nvidia-cublas-cu12 12.8.4.1
"""


def without_edges(text):
    """The lock as an older envbox wrote it: no `dependencies` key anywhere."""
    return re.sub(r"^dependencies = (\[\]|\[\n(    \{[^\n]*\},\n)*\])\n", "", text, flags=re.M)


class TreeAndWhy(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-tree-")
        indexworld.build(os.path.join(cls.tmp, "www"))
        cls.server = indexworld.Server(os.path.join(cls.tmp, "www"))
        cls.project = os.path.join(cls.tmp, "proj")
        cls.home = os.path.join(cls.tmp, "home")
        os.makedirs(os.path.join(cls.project, "manifests"))
        with open(os.path.join(cls.project, "manifests", "train.toml"), "w") as f:
            f.write(indexworld.manifest(cls.server.url, "cu128", ["torch==2.11.0+cu128", "transformers>=4.56"]))
        envbox("lock", "train", home=cls.home, project=cls.project)
        cls.lock_path = os.path.join(cls.project, "manifests", "pylock.train.toml")
        with open(cls.lock_path) as f:
            cls.lock = f.read()

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        keep_or_remove(cls.tmp)

    def setUp(self):
        with open(self.lock_path, "w") as f:  # each test starts from the lock envbox wrote
            f.write(self.lock)

    def envbox(self, *args, check=True):
        return envbox(*args, home=self.home, project=self.project, check=check)

    def write_lock(self, text):
        with open(self.lock_path, "w") as f:
            f.write(text)

    def test_tree_from_the_requirements_down(self):
        r = self.envbox("tree", "train")
        self.assertEqual(r.stdout, TREE)
        self.assertEqual(self.envbox("tree", "train", "--depth", "0").stdout,
                         "torch 2.11.0+cu128\ntransformers 4.57.0\n")
        depth1 = self.envbox("tree", "train", "--depth", "1").stdout
        self.assertIn("├── huggingface-hub 0.35.0\n├── numpy", depth1)
        self.assertNotIn("mpmath", depth1)
        # The lock alone answers: with the server gone and the manifest changed, the same tree.
        manifest = os.path.join(self.project, "manifests", "train.toml")
        with open(manifest) as f:
            saved = f.read()
        try:
            with open(manifest, "w") as f:
                f.write(saved.replace('"transformers>=4.56"', '"wandb"'))
            self.assertEqual(self.envbox("tree", "train").stdout, TREE)
        finally:
            with open(manifest, "w") as f:
                f.write(saved)

    def test_tree_json(self):
        r = self.envbox("--json", "tree", "train")
        report = json.loads(r.stdout)
        self.assertEqual(report["lock"], self.lock_path)
        self.assertIsNone(report["invert"])
        self.assertEqual([(n["name"], n["version"]) for n in report["roots"]],
                         [("torch", "2.11.0+cu128"), ("transformers", "4.57.0")])
        transformers = report["roots"][1]
        requests = [c for c in transformers["children"] if c["name"] == "requests"][0]
        self.assertEqual(requests, {"name": "requests", "version": "2.32.5", "repeated": True, "children": []})
        hub = [c for c in transformers["children"] if c["name"] == "huggingface-hub"][0]
        self.assertEqual([c["name"] for c in hub["children"]], ["filelock", "requests", "typing-extensions"])

    def test_invert_shows_who_depends_on_a_package(self):
        r = self.envbox("tree", "train", "--invert", "nvidia_cublas_cu12")
        self.assertEqual(r.stdout, "nvidia-cublas-cu12 12.8.4.1\n"
                                   "├── nvidia-cudnn-cu12 9.10.2.21\n"
                                   "│   └── torch 2.11.0+cu128\n"
                                   "└── torch 2.11.0+cu128\n")
        r = self.envbox("tree", "train", "--invert", "requests")
        self.assertEqual(r.stdout, "requests 2.32.5\n"
                                   "├── huggingface-hub 0.35.0\n"
                                   "│   └── transformers 4.57.0\n"
                                   "└── transformers 4.57.0\n")
        report = json.loads(self.envbox("tree", "train", "--invert", "requests", "--json").stdout)
        self.assertEqual(report["invert"], "requests")
        self.assertEqual([c["name"] for c in report["roots"][0]["children"]], ["huggingface-hub", "transformers"])

    def test_why_through_two_paths(self):
        self.assertEqual(self.envbox("why", "train", "nvidia-cublas-cu12").stdout, WHY_CUBLAS)
        self.assertEqual(self.envbox("why", "train", "torch").stdout,
                         "torch 2.11.0+cu128 (a requirement of the manifest)\n")
        report = json.loads(self.envbox("why", "train", "Nvidia-Cublas-CU12", "--json").stdout)
        self.assertEqual(report["package"], {"name": "nvidia-cublas-cu12", "version": "12.8.4.1"})
        self.assertFalse(report["requested"])
        self.assertFalse(report["truncated"])
        self.assertEqual([[p["name"] for p in path] for path in report["paths"]],
                         [["torch", "nvidia-cublas-cu12"], ["torch", "nvidia-cudnn-cu12", "nvidia-cublas-cu12"]])

    def test_who_pulled_in_cublas_13(self):
        with open(os.path.join(self.project, "manifests", "infer.toml"), "w") as f:
            f.write(indexworld.manifest(self.server.url, "cu130", ["torch==2.11.0+cu130", "sglang"]))
        self.envbox("lock", "infer")
        self.assertEqual(self.envbox("why", "infer", "nvidia-cublas").stdout,
                         "sglang 0.5.3 → torch 2.11.0+cu130 → cuda-toolkit 13.0.1 → nvidia-cublas 13.0.0.19\n"
                         "sglang 0.5.3 → torch 2.11.0+cu130 → nvidia-cublas 13.0.0.19\n"
                         "sglang 0.5.3 → torch 2.11.0+cu130 → nvidia-cudnn-cu13 9.13.0.50 → nvidia-cublas 13.0.0.19\n"
                         "torch 2.11.0+cu130 → cuda-toolkit 13.0.1 → nvidia-cublas 13.0.0.19\n"
                         "torch 2.11.0+cu130 → nvidia-cublas 13.0.0.19\n"
                         "torch 2.11.0+cu130 → nvidia-cudnn-cu13 9.13.0.50 → nvidia-cublas 13.0.0.19\n")
        # torch is a requirement and sglang's: the inverted tree shows sglang, why shows both.
        self.assertEqual(self.envbox("tree", "infer", "--invert", "torch").stdout,
                         "torch 2.11.0+cu130\n└── sglang 0.5.3\n")
        self.assertEqual(self.envbox("why", "infer", "torch").stdout,
                         "sglang 0.5.3 → torch 2.11.0+cu130\n"
                         "torch 2.11.0+cu130 (a requirement of the manifest)\n")

    def test_unknown_package_and_bad_arguments(self):
        for args in (("why", "train", "nvidia-cublas"), ("tree", "train", "--invert", "nvidia-cublas")):
            r = self.envbox(*args, check=False)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("no package nvidia-cublas in pylock.train.toml", r.stderr)
            self.assertEqual(r.stdout, "")
        r = self.envbox("tree", "train", "--depth", "-1", check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        r = self.envbox("why", "train", check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        r = self.envbox("tree", "nothing", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("(the environments here are train; `envbox init nothing` writes one)", r.stderr)

    def test_a_lock_without_edges_still_creates_and_says_to_lock_again(self):
        old = without_edges(self.lock)
        self.assertNotIn("dependencies", old)
        self.write_lock(old)
        for args in (("tree", "train"), ("why", "train", "torch")):
            r = self.envbox(*args, check=False)
            self.assertEqual(r.returncode, 3, r.stderr)
            self.assertIn(self.lock_path + " has no dependency edges", r.stderr)
            self.assertIn("run `envbox lock train` again", r.stderr)
        # diff compares packages, not edges: the two locks are the same environment.
        other = os.path.join(self.tmp, "pylock.with-edges.toml")
        with open(other, "w") as f:
            f.write(self.lock)
        report = json.loads(self.envbox("diff", self.lock_path, other, "--format", "json").stdout)
        self.assertEqual(report["changes"], [], report)
        self.assertEqual(report["unchanged"], self.lock.count("[[packages]]"))
        # create reads it (the edges are informational), and lock writes them again.
        self.envbox("lock", "--check", "train")
        self.envbox("create", "train", "--locked")
        r = self.envbox("lock", "train")
        with open(self.lock_path) as f:
            self.assertEqual(f.read(), self.lock, "a re-lock adds exactly the edges, same versions")
        self.assertEqual(self.envbox("tree", "train").stdout, TREE)

    def test_completion_offers_the_locks_package_names(self):
        script = os.path.join(self.tmp, "envbox.bash")
        with open(script, "w") as f:
            f.write(self.envbox("completion", "bash").stdout)

        def complete(*words):
            quoted = " ".join("'" + w + "'" for w in ("envbox",) + words)
            r = subprocess.run(["bash", "-c", f'source {script}; COMP_WORDS=({quoted}); COMP_CWORD={len(words)}; '
                                '_envbox; printf "%s\\n" "${COMPREPLY[@]}"'],
                               capture_output=True, text=True, cwd=self.project, check=True)
            return sorted(r.stdout.split())

        self.assertEqual(complete("why", "train", "nvidia-cu"), ["nvidia-cublas-cu12", "nvidia-cudnn-cu12"])
        self.assertEqual(complete("tree", "train", "--invert", "sy"), ["sympy"])
        self.assertEqual(complete("tree", "tr"), ["train"])
        zsh, fish = self.envbox("completion", "zsh").stdout, self.envbox("completion", "fish").stdout
        self.assertIn("'--invert[", zsh)
        self.assertIn(":package:_envbox_packages'", zsh)
        self.assertIn("'1:environment:_envbox_envs' '2:package:_envbox_packages'", zsh)
        self.assertIn("-l invert -x -a '(__envbox_packages)'", fish)

    def test_a_hostile_edge_is_refused_naming_both(self):
        bad = self.lock.replace('    { name = "mpmath" },\n', '    { name = "mpmathh" },\n', 1)
        self.assertNotEqual(bad, self.lock)
        self.write_lock(bad)
        for args in (("tree", "train"), ("export", "train")):
            r = self.envbox(*args, check=False)
            self.assertEqual(r.returncode, 3, r.stderr)
            self.assertIn("'sympy' depends on 'mpmathh', which is not a package of this lock", r.stderr)
            self.assertIn("pylock.train.toml:", r.stderr)


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
