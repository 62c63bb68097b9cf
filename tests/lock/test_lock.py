#!/usr/bin/env python3
"""Black-box tests of `envbox lock`: the real binary against real simple indexes (HTML and
JSON, metadata files or not) served from 127.0.0.1 by tests/lock/indexworld.py, the
PyTorch-shaped world of the mission.

    test_lock.py ENVBOX_BINARY        (ENVBOX_ACCEPT_GOLDEN=1 rewrites the golden files)
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
import indexworld  # noqa: E402
from envboxtest import PYV, envbox, golden, keep_or_remove, manifest_text, packages  # noqa: E402
from httpserver import HttpServer, QuietFiles  # noqa: E402
from indexworld import manifest  # noqa: E402


class LockTheMissionWorld(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-lock-")
        indexworld.build(os.path.join(cls.tmp, "www"))
        cls.server = indexworld.Server(os.path.join(cls.tmp, "www"))
        cls.project = os.path.join(cls.tmp, "proj")
        cls.home = os.path.join(cls.tmp, "home")
        os.makedirs(os.path.join(cls.project, "manifests"))
        cls.write("train", manifest(cls.server.url, "cu128",
                                    ["torch==2.11.0+cu128", "transformers>=4.56", "datasets", "safetensors", "wandb"]))
        cls.write("infer", manifest(cls.server.url, "cu130", ["torch==2.11.0+cu130", "sglang"]))

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        keep_or_remove(cls.tmp)

    @classmethod
    def write(cls, env, text):
        with open(os.path.join(cls.project, "manifests", f"{env}.toml"), "w") as f:
            f.write(text)

    def envbox(self, *args, check=True, home=None, env=None):
        return envbox(*args, home=home or self.home, project=self.project, check=check, env=env)

    def lock_text(self, env):
        with open(os.path.join(self.project, "manifests", f"pylock.{env}.toml")) as f:
            return f.read()

    def test_train_lock_has_the_right_versions_labels_and_indexes(self):
        self.envbox("lock", "train")
        p = packages(self.lock_text("train"))
        self.assertEqual(p["torch"], ("2.11.0+cu128", "pytorch-cu128"))
        self.assertEqual(p["triton"], ("3.5.0", "pytorch-cu128"))
        self.assertEqual(p["nvidia-cublas-cu12"], ("12.8.4.1", "pypi"))
        self.assertEqual(p["transformers"], ("4.57.0", "pypi"))
        self.assertEqual(p["numpy"], ("2.3.3", "pypi"), "a pre-release is never chosen unasked")
        # Generic packages come from PyPI even though the PyTorch index carries (stale) copies.
        for generic in ("typing-extensions", "requests", "filelock"):
            self.assertEqual(p[generic][1], "pypi", generic)
        self.assertEqual(p["typing-extensions"][0], "4.15.0")
        self.assertFalse(any(n.startswith("nvidia-") and not n.endswith("-cu12") for n in p), p)
        # Deterministic: locking again from scratch gives the same bytes.
        first = self.lock_text("train")
        self.envbox("lock", "train", "--upgrade")
        self.assertEqual(self.lock_text("train"), first)
        text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", first)
        text = re.sub(r'sha256 = "[0-9a-f]{64}"', 'sha256 = "…"', text)
        text = re.sub(r"cp3\d+", "cpXY", text).replace(f"'{PYV}'", "'X.Y'").replace(f'"{PYV}"', '"X.Y"')
        text = text.replace(f"=={PYV}.*", "==X.Y.*")
        text = re.sub(r'manifest-digest = "[0-9a-f]{64}"', 'manifest-digest = "…"', text)
        text = re.sub(r"size = \d+", "size = N", text)
        self.assertEqual(text, golden("train.pylock.toml", text))

    def test_infer_lock_uses_the_cu13_family(self):
        self.envbox("lock", "infer")
        p = packages(self.lock_text("infer"))
        self.assertEqual(p["torch"], ("2.11.0+cu130", "pytorch-cu130"))
        self.assertEqual(p["cuda-toolkit"], ("13.0.1", "pypi"))
        self.assertEqual(p["nvidia-cublas"], ("13.0.0.19", "pypi"))
        self.assertEqual(p["sglang"], ("0.5.3", "pypi"))
        self.assertFalse(any(n.endswith("-cu12") for n in p), p)

    def test_create_from_the_lock_and_run(self):
        self.envbox("lock", "train")
        self.envbox("create", "train")
        r = self.envbox("run", "train", "--", "python", "-c",
                        "import torch, transformers, typing_extensions; print(torch.__version__)")
        self.assertEqual(r.stdout, "2.11.0+cu128\n")

    def test_check_reports_staleness_and_create_relocks(self):
        self.write("check", manifest(self.server.url, "cu128", ["torch==2.11.0+cu128"]))
        self.assertEqual(self.envbox("lock", "check", "--check", check=False).returncode, 3)
        r = self.envbox("create", "check")  # no lock yet: create locks first
        self.assertTrue(os.path.exists(os.path.join(self.project, "manifests", "pylock.check.toml")))
        self.assertEqual(self.envbox("lock", "check", "--check").returncode, 0)
        self.write("check", manifest(self.server.url, "cu128", ["torch==2.11.0+cu128", "wandb"]))
        r = self.envbox("lock", "check", "--check", check=False)
        self.assertEqual(r.returncode, 3)
        self.assertIn("requirement added or changed in the manifest: wandb", r.stderr)
        r = self.envbox("create", "check", "--locked", check=False)
        self.assertEqual(r.returncode, 3)
        self.assertIn("wandb", r.stderr)
        r = self.envbox("create", "check")
        self.assertIn("wandb", packages(self.lock_text("check")))
        self.assertEqual(self.envbox("lock", "check", "--check").returncode, 0)

    def test_no_solution_is_explained_in_the_users_terms(self):
        self.write("conflict", manifest(self.server.url, "cu128", ["torch==2.11.0+cu128", "nvidia-cublas-cu12==12.9.1.4"]))
        r = self.envbox("lock", "conflict", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("torch==2.11.0+cu128 depends on nvidia-cublas-cu12==12.8.4.1", r.stderr)
        self.assertIn("the requirements are unsatisfiable", r.stderr)
        text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", r.stderr)
        text = text.replace(f"CPython {PYV}", "CPython X.Y")
        self.assertEqual(text, golden("conflict.explanation.txt", text))

    def test_install_prefer_must_name_a_package_of_the_lock(self):
        text = manifest(self.server.url, "cu128", ["torch==2.11.0+cu128"])
        self.write("prefers", text + '\n[install]\nprefer = ["opencv-python-headless"]\n')
        r = self.envbox("lock", "prefers", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("prefers.toml:", r.stderr)
        self.assertIn("'opencv-python-headless' is not a package of the lock", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.project, "manifests", "pylock.prefers.toml")))

    def test_unpinned_torch_comes_from_pypi_never_an_explicit_index(self):
        self.write("plain", manifest(self.server.url, "cu128", ["torch"]).replace('torch = "pytorch-cu128"\n', ""))
        self.envbox("lock", "plain")
        self.assertEqual(packages(self.lock_text("plain"))["torch"], ("2.11.0", "pypi"))

    def test_cuda_coherence_is_checked_at_lock_time(self):
        # torch +cu128 with the cu13 toolkit: refused, naming both sides.
        self.write("mixed", manifest(self.server.url, "cu128", ["torch==2.11.0+cu128", "cuda-toolkit==13.0.1"]).replace(
            'cuda = "12.8"\n', ""))
        r = self.envbox("lock", "mixed", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("mixes CUDA lines", r.stderr)
        self.assertIn("CUDA 12: ", r.stderr)
        self.assertIn("torch 2.11.0+cu128", r.stderr)
        self.assertIn("CUDA 13: ", r.stderr)
        self.assertIn("cuda-toolkit 13.0.1", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.project, "manifests", "pylock.mixed.toml")))
        r = self.envbox("lock", "mixed", "--allow-mixed-cuda")
        self.assertIn('allow-mixed-cuda = "true"', self.lock_text("mixed"))
        # A manifest declaring 13.0 with a cu128 torch.
        self.write("declared", manifest(self.server.url, "cu128", ["torch==2.11.0+cu128"]).replace(
            'cuda = "12.8"', 'cuda = "13.0"'))
        r = self.envbox("lock", "declared", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn('declares cuda = "13.0"', r.stderr)
        self.assertIn("torch 2.11.0+cu128", r.stderr)

    def test_create_refuses_a_lock_that_mixes_cuda_lines(self):
        """A lock mixing CUDA lines that does not record --allow-mixed-cuda (hand-edited, or
        another tool's) is refused by create as by lock, with --frozen and --lock too."""
        self.write("mixed2", manifest(self.server.url, "cu128", ["torch==2.11.0+cu128", "cuda-toolkit==13.0.1"]).replace(
            'cuda = "12.8"\n', ""))
        self.envbox("lock", "mixed2", "--allow-mixed-cuda")
        home = os.path.join(self.project, "home-mixed")
        self.envbox("create", "mixed2", "--frozen", home=home)  # recorded: allowed
        path = os.path.join(self.project, "manifests", "pylock.mixed2.toml")
        edited = self.lock_text("mixed2").replace('allow-mixed-cuda = "true"\n', "")
        with open(path, "w") as f:
            f.write(edited)
        other = os.path.join(self.project, "home-mixed-2")
        for args in (("create", "mixed2", "--frozen"), ("create", "other", "--lock", path)):
            r = self.envbox(*args, check=False, home=other)
            self.assertEqual(r.returncode, 3, r.stderr)
            self.assertIn("mixes CUDA lines", r.stderr)
            self.assertIn("torch 2.11.0+cu128", r.stderr)
            self.assertIn("cuda-toolkit 13.0.1", r.stderr)
            self.assertIn("refusing to create an environment from " + path, r.stderr)
            self.assertFalse(os.path.exists(os.path.join(other, "envs")), r.stderr)

    def test_driver_checks_on_create_and_run(self):
        self.envbox("lock", "train")
        self.envbox("lock", "infer")
        old = {"ENVBOX_CUDA_DRIVER": "550.54.15"}
        r = self.envbox("create", "infer", check=False, env=old)
        self.assertEqual(r.returncode, 6, r.stderr)
        self.assertIn("cannot run CUDA 13", r.stderr)
        self.assertIn("update the driver", r.stderr)
        self.envbox("create", "train", env=old)
        self.envbox("run", "train", "--", "python", "-c", "pass", env=old)
        new = {"ENVBOX_CUDA_DRIVER": "580.82.07"}
        self.envbox("create", "infer", env=new)
        self.envbox("create", "train", env=new)
        r = self.envbox("run", "infer", "--", "python", "-c", "pass", check=False, env=old)
        self.assertEqual(r.returncode, 6, r.stderr)

    def test_diff_between_locks_generations_and_git_revisions(self):
        import json
        self.envbox("lock", "train")
        self.envbox("lock", "infer")
        m = os.path.join(self.project, "manifests")
        d = json.loads(self.envbox("diff", f"{m}/pylock.train.toml", f"{m}/pylock.infer.toml", "--format", "json").stdout)
        torch = next(c for c in d["changes"] if c["name"] == "torch")
        self.assertEqual((torch["kind"], torch["before"], torch["after"]), ("local label changed", "2.11.0+cu128", "2.11.0+cu130"))
        self.assertEqual((torch["cuda_before"], torch["cuda_after"]), ("12.8", "13.0"))
        self.assertTrue(torch["index_before"].endswith("pytorch-cu128") and torch["index_after"].endswith("pytorch-cu130"))
        kinds = {c["name"]: c["kind"] for c in d["changes"]}
        self.assertEqual(kinds["nvidia-cublas-cu12"], "removed")
        self.assertEqual(kinds["cuda-toolkit"], "added")
        md = self.envbox("diff", f"{m}/pylock.train.toml", f"{m}/pylock.infer.toml", "--format", "markdown").stdout
        self.assertIn("| package | before | after | change | CUDA | download |", md)
        self.assertIn("| `torch` | 2.11.0+cu128 | 2.11.0+cu130 | local label changed | **12.8 → 13.0** |", md)
        text = self.envbox("diff", "--textconv", f"{m}/pylock.train.toml").stdout
        self.assertIn("torch==2.11.0+cu128  [CUDA 12.8]", text)
        # An environment against its lock, and a lock at a git revision.
        self.envbox("create", "train")
        self.assertIn("no changes", self.envbox("diff", "train").stdout)
        git = lambda *a: subprocess.run(["git", "-C", self.project, *a], check=True, capture_output=True)  # noqa: E731
        git("init", "-q")
        git("-c", "user.email=t@e", "-c", "user.name=t", "add", "manifests")
        git("-c", "user.email=t@e", "-c", "user.name=t", "commit", "-qm", "locks")
        self.write("train", manifest(self.server.url, "cu128", ["torch==2.11.0+cu128", "transformers==4.56.2"]))
        self.envbox("lock", "train")
        d = json.loads(self.envbox("diff", "train@HEAD", "train", "--format", "json").stdout)
        self.assertIn({"name": "transformers", "kind": "downgraded"},
                      [{"name": c["name"], "kind": c["kind"]} for c in d["changes"]])
        d = json.loads(self.envbox("diff", "train", "--format", "json").stdout)  # generation 1 → the new lock
        self.assertTrue(any(c["name"] == "transformers" for c in d["changes"]))
        self.write("train", manifest(self.server.url, "cu128",
                                     ["torch==2.11.0+cu128", "transformers>=4.56", "datasets", "safetensors", "wandb"]))
        self.envbox("lock", "train", "--upgrade")

    def test_run_filters_ld_library_path_and_keeps_compile_caches_per_cuda_line(self):
        self.envbox("lock", "train")
        self.envbox("lock", "infer")
        new = {"ENVBOX_CUDA_DRIVER": "580.82.07"}
        self.envbox("create", "train", env=new)
        self.envbox("create", "infer", env=new)
        cuda_dir = os.path.join(self.tmp, "system-cuda")
        other_dir = os.path.join(self.tmp, "other-libs")
        os.makedirs(cuda_dir, exist_ok=True)
        os.makedirs(other_dir, exist_ok=True)
        open(os.path.join(cuda_dir, "libcudart.so.12"), "w").close()
        code = "import os; print(os.environ.get('LD_LIBRARY_PATH')); print(os.environ['TORCHINDUCTOR_CACHE_DIR'])"
        out = {}
        for env in ("train", "infer"):
            r = self.envbox("-v", "run", env, "--", "python", "-c", code,
                            env=dict(new, LD_LIBRARY_PATH=f"{cuda_dir}:{other_dir}"))
            ld, cache = r.stdout.splitlines()
            self.assertEqual(ld, other_dir)
            self.assertIn(f"removed {cuda_dir} from LD_LIBRARY_PATH", r.stderr)
            self.assertTrue(os.path.isdir(cache))
            out[env] = cache
        self.assertIn("torch-2.11.0+cu128", out["train"])
        self.assertIn("torch-2.11.0+cu130", out["infer"])
        self.assertNotEqual(out["train"], out["infer"])

    def test_find_links_directory_as_an_index(self):
        # A flat directory of wheels (pip's --find-links) named by a file:// URL.
        flat = os.path.join(self.tmp, "flat")
        os.makedirs(flat, exist_ok=True)
        for w in glob.glob("/usr/share/python-wheels/*.whl"):
            shutil.copy(w, flat)
        self.write("flat", manifest_text(["wheel", "pip"], indexes=[("wheelhouse", f"file://{flat}", "")]))
        self.envbox("lock", "flat")
        p = packages(self.lock_text("flat"))
        self.assertEqual(sorted(p), ["pip", "wheel"])
        self.assertIn("file://" + flat, self.lock_text("flat"))
        self.envbox("create", "flat")
        r = self.envbox("run", "flat", "--", "python", "-c", "import wheel; print(wheel.__version__)")
        self.assertTrue(r.stdout.strip())

    def test_a_wheel_fetched_whole_while_locking_is_not_downloaded_again(self):
        # An index with no hashes and no metadata files, on a server without range support
        # (Python's http.server): lock must fetch each wheel whole (for METADATA and sha256);
        # create then finds them in cache/downloads and asks the server for nothing.
        www = os.path.join(self.tmp, "bare")
        os.makedirs(os.path.join(www, "files"), exist_ok=True)
        for w in glob.glob("/usr/share/python-wheels/*.whl"):
            shutil.copy(w, os.path.join(www, "files"))
            name = re.sub(r"[-_.]+", "-", os.path.basename(w).split("-")[0]).lower()
            os.makedirs(os.path.join(www, "simple", name), exist_ok=True)
            with open(os.path.join(www, "simple", name, "index.html"), "w") as f:
                f.write(f'<a href="../../files/{os.path.basename(w)}">{os.path.basename(w)}</a>\n')
        seen = []

        class Handler(QuietFiles):
            def __init__(self, *a, **k):
                super().__init__(*a, directory=www, **k)

            def do_GET(self):  # noqa: N802
                seen.append((self.path, self.headers.get("Range")))
                super().do_GET()

        server = HttpServer(Handler)
        try:
            self.write("bare", manifest_text(["wheel", "pip"], indexes=[("bare", f"{server.url}/simple", "")]))
            home = os.path.join(self.tmp, "bare-home")
            self.envbox("lock", "bare", home=home)
            wheel_gets = [p for p, _ in seen if p.startswith("/files/")]
            self.assertTrue(wheel_gets)
            self.assertEqual(len(wheel_gets), len(set(wheel_gets)), f"each wheel fetched once: {wheel_gets}")
            seen.clear()
        finally:
            server.close()
        # The server is gone: create builds from what lock fetched.
        self.envbox("create", "bare", "--locked", home=home)
        r = self.envbox("run", "bare", "--", "python", "-c", "import wheel; print(wheel.__version__)", home=home)
        self.assertTrue(r.stdout.strip())
        self.assertEqual(glob.glob(os.path.join(home, "cache", "downloads", "*.whl")), [],
                         "downloads go once their wheels are stored")

    def test_warm_relock_and_offline(self):
        import json
        self.envbox("lock", "train")
        d = json.loads(self.envbox("--json", "lock", "train").stdout)
        self.assertTrue(d["up_to_date"])
        self.assertEqual(d["requests"], 0, "an up-to-date lock asks no index")
        d = json.loads(self.envbox("--json", "lock", "train", "--upgrade").stdout)
        self.assertFalse(d["changed"])
        self.assertGreater(d["requests"], 10)
        self.assertEqual(d["cache_hits"], d["requests"], "every page revalidated (304), every metadata file cached")
        self.envbox("lock", "train", "--offline")
        r = self.envbox("lock", "train", "--offline", "--upgrade", check=False, home=os.path.join(self.tmp, "empty-home"))
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn("--offline", r.stderr)


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
