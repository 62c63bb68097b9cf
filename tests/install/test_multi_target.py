#!/usr/bin/env python3
"""Black-box tests of one lock for several targets (`platforms = [x86_64, aarch64]`): the real
binary locks a PyTorch-shaped world with wheels for both machines, served from 127.0.0.1, and
creates an environment on a "host" of each target (`create --target`, so not this machine's).

The world: torch 2.11.0+cu128 for both machines; the CUDA 12 wheels with their real names and
tags (`py3-none-manylinux_2_27_x86_64` / `_aarch64`); triton with an x86_64 wheel only (torch
needs it there alone); torchvision whose newest version has no aarch64 wheel (both targets
agree on the older one); bitsandbytes whose versions have one machine's wheel each (the targets
must differ, with markers).

Each environment is checked against that target's own single-target resolution (a manifest
with `platform` alone, locked from the same preferences), by the name, version and wheel tag of
every installed distribution.

    test_multi_target.py ENVBOX_BINARY
"""
import glob
import json
import os
import re
import shutil
import sys
import tempfile
import unittest
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools"),
                os.path.join(HERE, "..", "lock")]
import envboxtest  # noqa: E402
import indexworld  # noqa: E402
from envboxtest import PYV, envbox, keep_or_remove, manifest_text  # noqa: E402
from indexworld import PY, pkg  # noqa: E402

X86, ARM = "manylinux_2_28_x86_64", "manylinux_2_28_aarch64"
BOTH = [X86, ARM]


def binary(machine):
    return f"{PY}-{PY}-manylinux_2_28_{machine}"


def cuda(machine):
    return f"py3-none-manylinux_2_27_{machine}"


def world():
    torch_deps = ["typing-extensions>=4.10.0", "filelock", "nvidia-cublas-cu12==12.8.4.1",
                  "nvidia-cudnn-cu12==9.10.2.21", "nvidia-nccl-cu12==2.27.3",
                  "triton==3.5.0; platform_machine == 'x86_64'"]
    torch = []
    for m in ("x86_64", "aarch64"):
        torch += [pkg("torch", "2.11.0+cu128", torch_deps, tag=binary(m)),
                  pkg("torch", "2.10.0+cu128", torch_deps, tag=binary(m)),
                  pkg("torchvision", "0.25.0+cu128", ["torch>=2.10", "numpy"], tag=binary(m))]
    torch += [pkg("torchvision", "0.26.0+cu128", ["torch==2.11.0", "numpy"], tag=binary("x86_64")),
              pkg("triton", "3.5.0", tag=binary("x86_64"))]
    pypi = [pkg("typing-extensions", "4.15.0"), pkg("filelock", "3.19.1")]
    for m in ("x86_64", "aarch64"):
        pypi += [pkg("nvidia-cublas-cu12", "12.8.4.1", tag=cuda(m)),
                 pkg("nvidia-cudnn-cu12", "9.10.2.21", ["nvidia-cublas-cu12"], tag=cuda(m)),
                 pkg("nvidia-nccl-cu12", "2.27.3", tag=f"py3-none-manylinux_2_18_{m}"),
                 pkg("numpy", "2.3.3", tag=binary(m))]
    pypi += [pkg("bitsandbytes", "0.48.1", ["torch", "numpy"], tag=binary("x86_64")),
             pkg("bitsandbytes", "0.47.0", ["torch", "numpy"], tag=binary("aarch64")),
             # CUDA 13 on aarch64 alone: a lock of the 12.8 line is incoherent there only.
             pkg("gh-kernels", "1.0", ["nvidia-cublas==13.0.0.19; platform_machine == 'aarch64'"])]
    pypi += [pkg("nvidia-cublas", "13.0.0.19", tag=cuda(m)) for m in ("x86_64", "aarch64")]
    return {"pytorch-cu128": torch, "pypi": pypi}


REQUIREMENTS = ["torch==2.11.0+cu128", "torchvision", "bitsandbytes", "numpy"]


def manifest(url, platforms):
    """The world's manifest for `platforms` (a list: `platforms = [...]`; a string: `platform`)."""
    text = manifest_text(REQUIREMENTS, cuda="12.8",
                         indexes=[("pytorch-cu128", f"{url}/pytorch-cu128", "explicit = true\n"),
                                  ("pypi", f"{url}/pypi", "")],
                         sources='torch = "pytorch-cu128"\ntorchvision = "pytorch-cu128"\n'
                                 'triton = "pytorch-cu128"\n')
    if isinstance(platforms, str):
        return text.replace(f'platform = "{X86}"', f'platform = "{platforms}"')
    listed = ", ".join(f'"{p}"' for p in platforms)
    return text.replace(f'platform = "{X86}"', f"platforms = [{listed}]")


def locked_entries(text):
    """[(name, version, marker or None, [wheel file names])] of a lock's text, in order."""
    out = []
    for block in text.split("\n[[packages]]\n")[1:]:
        block = block.split("\n[tool.envbox]\n")[0]
        name = re.search(r'^name = "([^"]+)"', block, re.M).group(1)
        version = re.search(r'^version = "([^"]+)"', block, re.M).group(1)
        marker = re.search(r'^marker = "([^"]+)"', block, re.M)
        wheels = re.findall(r'\[\[packages\.wheels\]\]\nname = "([^"]+)"', block)
        out.append((name, version, marker.group(1) if marker else None, wheels))
    return out


def single_target_expectation(text):
    """{name: (version, wheel file name)} of a single-target lock."""
    return {name: (version, wheels[0]) for name, version, _marker, wheels in locked_entries(text)}


def installed(generation):
    """{name: (version, wheel tag)} of every distribution in a generation's site-packages."""
    out = {}
    for d in glob.glob(os.path.join(generation, "lib", "python*", "site-packages", "*.dist-info")):
        with open(os.path.join(d, "METADATA")) as f:
            meta = f.read()
        name = re.search(r"^Name: (.+)$", meta, re.M).group(1).strip().lower()
        version = re.search(r"^Version: (.+)$", meta, re.M).group(1).strip()
        with open(os.path.join(d, "WHEEL")) as f:
            tag = re.search(r"^Tag: (.+)$", f.read(), re.M).group(1).strip()
        out[name] = (version, tag)
    return out


def tag_of(filename):
    return "-".join(filename[:-len(".whl")].split("-")[-3:])


class MultiTarget(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-multi-")
        cls.www = os.path.join(cls.tmp, "www")
        indexworld.write_indexes(cls.www, world(), html_only=("pytorch-cu128",))
        cls.server = indexworld.Server(cls.www)
        cls.home = os.path.join(cls.tmp, "home")
        cls.project = cls.new_project("proj", BOTH)
        cls.first = envbox("lock", "train", home=cls.home, project=cls.project)
        with open(cls.lock_path(cls.project)) as f:
            cls.lock = f.read()

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        keep_or_remove(cls.tmp)

    @classmethod
    def new_project(cls, name, platforms, seed_lock=None):
        project = os.path.join(cls.tmp, name)
        os.makedirs(os.path.join(project, "manifests"), exist_ok=True)
        with open(os.path.join(project, "manifests", "train.toml"), "w") as f:
            f.write(manifest(cls.server.url, platforms))
        if seed_lock is not None:
            with open(cls.lock_path(project), "w") as f:
                f.write(seed_lock)
        return project

    @staticmethod
    def lock_path(project):
        return os.path.join(project, "manifests", "pylock.train.toml")

    def own_resolution(self, platform):
        """The single-target lock of `platform`, resolved with the multi-target lock's versions
        as its preferences (as a re-lock keeps them), as {name: (version, wheel)}."""
        project = self.new_project("own-" + platform, platform, seed_lock=self.lock)
        envbox("lock", "train", home=self.home, project=project)
        with open(self.lock_path(project)) as f:
            return single_target_expectation(f.read())

    def create_on(self, platform, *extra):
        envbox("create", "train", "--target", platform, *extra, home=self.home,
               project=self.project)
        return os.path.join(self.project, ".envbox", "train")

    def test_one_lock_names_both_targets_and_agrees_where_it_can(self):
        self.assertIn(
            f"environments = [\"python_version == '{PYV}' and sys_platform == 'linux' and "
            f"platform_machine == 'x86_64'\", \"python_version == '{PYV}' and sys_platform == "
            f"'linux' and platform_machine == 'aarch64'\"]\n", self.lock)
        self.assertIn('platforms = ["manylinux_2_28_x86_64", "manylinux_2_28_aarch64"]', self.lock)
        entries = {(n, v): (m, w) for n, v, m, w in locked_entries(self.lock)}
        # torch agrees: one entry, no marker, a wheel per machine.
        marker, wheels = entries[("torch", "2.11.0+cu128")]
        self.assertIsNone(marker)
        self.assertEqual(sorted(tag_of(w) for w in wheels), [binary("aarch64"), binary("x86_64")])
        marker, wheels = entries[("nvidia-cublas-cu12", "12.8.4.1")]
        self.assertEqual((marker, sorted(tag_of(w) for w in wheels)),
                         (None, [cuda("aarch64"), cuda("x86_64")]))
        # torchvision's newest has no aarch64 wheel: both targets take 0.25.0, one entry.
        self.assertEqual([k for k in entries if k[0] == "torchvision"], [("torchvision", "0.25.0+cu128")])
        self.assertIsNone(entries[("torchvision", "0.25.0+cu128")][0])
        # triton only where torch needs it; bitsandbytes at one version per machine.
        self.assertEqual(entries[("triton", "3.5.0")][0], "platform_machine == 'x86_64'")
        self.assertEqual(entries[("bitsandbytes", "0.48.1")][0], "platform_machine == 'x86_64'")
        self.assertEqual(entries[("bitsandbytes", "0.47.0")][0], "platform_machine == 'aarch64'")
        # lock says where the targets differ, and why.
        self.assertIn(f"bitsandbytes: 0.48.1 on {X86}, 0.47.0 on {ARM} ({ARM}: 0.48.1 has no wheel "
                      f"for the target", self.first.stderr)
        self.assertIn(f"triton: 3.5.0 on {X86} (nothing requires it on {ARM})", self.first.stderr)
        self.assertNotIn("torchvision:", self.first.stderr)

    def test_a_single_target_would_take_the_newest_torchvision(self):
        project = self.new_project("x86-alone", X86)
        envbox("lock", "train", home=self.home, project=project)
        with open(self.lock_path(project)) as f:
            self.assertEqual(single_target_expectation(f.read())["torchvision"][0], "0.26.0+cu128")

    def test_each_target_installs_its_own_resolution(self):
        for platform in BOTH:
            with self.subTest(platform=platform):
                expected = {n: (v, tag_of(w)) for n, (v, w) in self.own_resolution(platform).items()}
                self.assertEqual(installed(self.create_on(platform)), expected)
        # Without --target: this machine's target.
        host = {"x86_64": X86, "aarch64": ARM}.get(os.uname().machine)
        if host:
            envbox("create", "train", home=self.home, project=self.project)
            expected = {n: (v, tag_of(w)) for n, (v, w) in self.own_resolution(host).items()}
            self.assertEqual(installed(os.path.join(self.project, ".envbox", "train")), expected)
        # By machine name too, and the lock is not rewritten by creating.
        self.assertEqual(installed(self.create_on("aarch64"))["bitsandbytes"],
                         ("0.47.0", binary("aarch64")))
        with open(self.lock_path(self.project)) as f:
            self.assertEqual(f.read(), self.lock)

    def test_export_and_check_per_target(self):
        r = envbox("lock", "train", "--check", home=self.home, project=self.project)
        self.assertEqual(r.returncode, 0)
        for target in ("aarch64", X86):
            envbox("lock", "train", "--check", "--target", target, home=self.home, project=self.project)
        r = envbox("lock", "train", "--check", "--target", "ppc64le", home=self.home, project=self.project,
                   check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("names no such platform", r.stderr)
        # A manifest that gained a platform its lock lacks: stale for that target (exit 3).
        project = self.new_project("grown", BOTH, seed_lock=None)
        with open(self.lock_path(project), "w") as f:
            f.write(self.lock.replace("platforms = [", "platforms_was = ["))
        r = envbox("lock", "train", "--check", "--target", "aarch64", home=self.home, project=project,
                   check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn(f"does not cover {ARM}", r.stderr)
        # A target the manifest does not name is refused, naming those it does.
        r = envbox("create", "train", "--target", "ppc64le", home=self.home, project=self.project,
                   check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(f"locks for {X86}, {ARM} only", r.stderr)

    def test_tree_why_and_export_per_target(self):
        def run(*args, check=True):
            return envbox(*args, home=self.home, project=self.project, check=check)
        arm_tree = run("tree", "train", "--target", "aarch64").stdout
        x86_tree = run("tree", "train", "--target", X86).stdout
        self.assertIn("bitsandbytes 0.47.0\n", arm_tree)
        self.assertNotIn("triton", arm_tree)
        self.assertIn("bitsandbytes 0.48.1\n", x86_tree)
        self.assertIn("── triton 3.5.0\n", x86_tree)
        self.assertEqual(run("why", "train", "triton", "--target", "x86_64").stdout,
                         "bitsandbytes 0.48.1 → torch 2.11.0+cu128 → triton 3.5.0\n"
                         "torch 2.11.0+cu128 → triton 3.5.0\n"
                         "torchvision 0.25.0+cu128 → torch 2.11.0+cu128 → triton 3.5.0\n")
        r = run("why", "train", "triton", "--target", "aarch64", check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        # export: every entry with its marker (pip picks per machine), or one target's alone.
        everything = run("export", "train").stdout
        self.assertIn("bitsandbytes==0.47.0 ; platform_machine == \"aarch64\"", everything)
        self.assertIn("bitsandbytes==0.48.1 ; platform_machine == \"x86_64\"", everything)
        arm = run("export", "train", "--target", "aarch64").stdout
        self.assertIn("bitsandbytes==0.47.0", arm)
        self.assertNotIn("0.48.1", arm)
        self.assertNotIn("triton", arm)
        r = run("export", "train", "--target", "riscv64", check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(f"is locked for {X86}, {ARM} only", r.stderr)
        r = run("export", "train", "--format", "pylock", "--target", "aarch64", check=False)
        self.assertEqual(r.returncode, 2, r.stderr)

    def test_diff_per_target(self):
        project = self.new_project("diffed", BOTH, seed_lock=self.lock)
        old = os.path.join(self.tmp, "old.pylock.toml")
        with open(old, "w") as f:
            f.write(self.lock)
        new = self.lock_path(project)
        with open(new, "w") as f:  # the aarch64 bitsandbytes entry gone: one target changed
            f.write(re.sub(r'\n\[\[packages\]\]\nname = "bitsandbytes"\nversion = "0.47.0"\n.*?(?=\n\[\[packages\]\])',
                           "", self.lock, flags=re.S))
        def diff(*extra):
            return envbox("diff", old, new, *extra, home=self.home, project=project).stdout
        self.assertIn("- bitsandbytes 0.47.0", diff("--target", "aarch64"))
        self.assertIn("no changes", diff("--target", "x86_64"))
        self.assertIn("- bitsandbytes [platform_machine == \"aarch64\"] 0.47.0", diff())

    def test_a_universal_lock_of_another_tool_installs_per_machine(self):
        # The lock as a `--universal`-style tool writes one: markers of its own spelling, one
        # environment for Linux, no [tool.envbox]; installed with create --lock alone.
        text = self.lock.split("\n[tool.envbox]\n")[0] + "\n"
        text = text.replace('created-by = "envbox"', 'created-by = "uv"')
        text = re.sub(r"^environments = .*$", "environments = [\"sys_platform == 'linux'\"]", text, flags=re.M)
        text = re.sub(r"^marker = \"platform_machine == '(\w+)'\"$",
                      "marker = \"sys_platform == 'linux' and platform_machine == '\\1'\"", text, flags=re.M)
        path = os.path.join(self.tmp, "pylock.universal.toml")
        with open(path, "w") as f:
            f.write(text)
        for platform in BOTH:
            with self.subTest(platform=platform):
                expected = {n: (v, tag_of(w)) for n, (v, w) in self.own_resolution(platform).items()}
                envbox("create", "universal", "--lock", path, "--target", platform, home=self.home,
                       project=self.project)
                gen = os.path.join(self.project, ".envbox", "universal")
                self.assertEqual(installed(gen), expected)

    def test_cuda_coherence_and_the_driver_per_target(self):
        project = self.new_project("mixed", BOTH)
        path = os.path.join(project, "manifests", "train.toml")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace('"numpy"]', '"numpy", "gh-kernels"]'))
        r = envbox("lock", "train", home=self.home, project=project, check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("nvidia-cublas", r.stderr)
        self.assertIn(f"on {ARM}", r.stderr)
        self.assertFalse(os.path.exists(self.lock_path(project)))
        # The driver is checked for the CUDA line of the target being built (cu128 needs 525.60.13).
        r = envbox("create", "train", "--target", "aarch64", home=self.home, project=self.project,
                   env={"ENVBOX_CUDA_DRIVER": "520.0"}, check=False)
        self.assertEqual(r.returncode, 6, r.stderr)

    def test_a_lock_for_other_machines_is_refused_naming_its_targets(self):
        # A bare --lock of aarch64 alone, on this (x86_64) machine: refused by its environments.
        project = self.new_project("arm-alone", ARM)
        envbox("lock", "train", home=self.home, project=project)
        r = envbox("create", "other", "--lock", self.lock_path(project), home=self.home,
                   project=project, check=False)
        if os.uname().machine != "x86_64":
            self.skipTest("this host is not x86_64")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("the lock is for python_version == ", r.stderr)
        self.assertIn("platform_machine == \"aarch64\"", r.stderr)

    def test_relock_is_byte_identical_and_an_upgrade_a_small_diff(self):
        project = self.new_project("relock", BOTH, seed_lock=self.lock)
        r = envbox("--json", "lock", "train", "--upgrade", home=self.home, project=project)
        self.assertEqual([n.split(":")[0] for n in json.loads(r.stdout)["targets_differ"]],
                         ["bitsandbytes", "triton"])
        with open(self.lock_path(project)) as f:
            self.assertEqual(f.read(), self.lock)
        # A cold lock (a new home, nothing cached) writes the same bytes.
        cold_home = os.path.join(self.tmp, "cold-home")
        os.remove(self.lock_path(project))
        envbox("lock", "train", home=cold_home, project=project)
        with open(self.lock_path(project)) as f:
            self.assertEqual(f.read(), self.lock)
        # A new numpy for both machines: --upgrade-package numpy changes numpy's lines alone.
        extra = os.path.join(self.tmp, "www-new")
        shutil.copytree(self.www, extra)
        w = world()
        w["pypi"] += [pkg("numpy", "2.3.4", tag=binary(m)) for m in ("x86_64", "aarch64")]
        indexworld.write_indexes(extra, w, html_only=("pytorch-cu128",))
        server = indexworld.Server(extra)
        try:
            with open(os.path.join(project, "manifests", "train.toml"), "w") as f:
                f.write(manifest(server.url, BOTH))
            envbox("lock", "train", home=self.home, project=project)  # the new URLs
            with open(self.lock_path(project)) as f:
                before = f.read()
            r = envbox("lock", "train", "--upgrade-package", "numpy", home=self.home, project=project)
            with open(self.lock_path(project)) as f:
                after = f.read()
        finally:
            server.close()
        self.assertIn("numpy 2.3.3 → 2.3.4", r.stdout + r.stderr)
        gone, new = Counter(before.splitlines()), Counter(after.splitlines())
        changed = sorted((gone - new).elements()) + sorted((new - gone).elements())
        self.assertTrue(changed)
        self.assertLessEqual(len(changed), 14, "\n".join(changed))
        self.assertTrue(all("numpy" in line or "sha256" in line or line.startswith(("size", 'version = "2.3.'))
                            for line in changed),
                        "\n".join(changed))


MISSION_DIR = os.path.join(HERE, "..", "..", "manifests")
MISSIONS = ("train-cu128", "infer-cu130")


class MissionManifests(unittest.TestCase):
    """The repository's own manifests (manifests/train-cu128.toml and infer-cu130.toml), copied
    as they are, locked for both machines through mirrors (`ENVBOX_INDEX_<NAME>_URL`) of the
    PyTorch-shaped world with an x86_64 and an aarch64 wheel of every binary package, for
    CPython 3.12 as the manifests say. Each target of each lock selects what that target's own
    resolution chose."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-mission-")
        www = os.path.join(cls.tmp, "www")
        indexworld.write_indexes(www, indexworld.world("cp312", ("x86_64", "aarch64")),
                                 html_only=("pytorch-cu128", "pytorch-cu130"))
        cls.server = indexworld.Server(www)
        cls.mirrors = {"ENVBOX_INDEX_PYTORCH_CU128_URL": f"{cls.server.url}/pytorch-cu128",
                       "ENVBOX_INDEX_PYTORCH_CU130_URL": f"{cls.server.url}/pytorch-cu130/",
                       "ENVBOX_INDEX_PYPI_URL": f"{cls.server.url}/pypi"}
        cls.home = os.path.join(cls.tmp, "home")
        cls.project = os.path.join(cls.tmp, "mission")
        os.makedirs(os.path.join(cls.project, "manifests"))
        for env in MISSIONS:
            shutil.copy(os.path.join(MISSION_DIR, env + ".toml"), os.path.join(cls.project, "manifests"))
        cls.first = envbox("lock", *MISSIONS, home=cls.home, project=cls.project, env=cls.mirrors)
        cls.locks = {}
        for env in MISSIONS:
            with open(os.path.join(cls.project, "manifests", f"pylock.{env}.toml")) as f:
                cls.locks[env] = f.read()

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        keep_or_remove(cls.tmp)

    def test_each_lock_covers_both_machines_at_one_version(self):
        for env, line in (("train-cu128", "cu128"), ("infer-cu130", "cu130")):
            with self.subTest(env=env):
                lock = self.locks[env]
                self.assertIn("environments = [\"python_version == '3.12' and sys_platform == 'linux' and "
                              "platform_machine == 'x86_64'\", \"python_version == '3.12' and "
                              "sys_platform == 'linux' and platform_machine == 'aarch64'\"]\n", lock)
                entries = locked_entries(lock)
                # The real stack agrees on every machine: one entry a package, no markers.
                self.assertEqual([(n, m) for n, _v, m, _w in entries if m], [])
                self.assertEqual(len({n for n, *_ in entries}), len(entries))
                by_name = {n: (v, w) for n, v, _m, w in entries}
                self.assertEqual(by_name["torch"][0], f"2.11.0+{line}")
                for name in ("torch", "triton", "numpy"):
                    self.assertEqual(sorted(tag_of(w) for w in by_name[name][1]),
                                     ["cp312-cp312-manylinux_2_28_aarch64", "cp312-cp312-manylinux_2_28_x86_64"])
                cuda_libs = sorted(n for n in by_name if n.startswith("nvidia-"))
                if line == "cu128":
                    self.assertEqual(cuda_libs, ["nvidia-cublas-cu12", "nvidia-cudnn-cu12", "nvidia-nccl-cu12"])
                else:
                    self.assertEqual(cuda_libs, ["nvidia-cublas", "nvidia-cudnn-cu13", "nvidia-nccl-cu13"])
                    self.assertIn("sglang", by_name)
                for name in cuda_libs:
                    self.assertEqual(sorted(re.search(r"_(aarch64|x86_64)\.whl$", w).group(1)
                                            for w in by_name[name][1]), ["aarch64", "x86_64"])
                # Wheels come from the mirror; the lock records the manifest's own indexes and
                # the files as they would serve them (the mirror's layout under the index).
                self.assertNotIn(self.server.url, lock)
                self.assertIn(f'url = "https://download.pytorch.org/whl/files/pytorch-{line}/torch-2.11.0%2B{line}',
                              lock)
                self.assertIn(f'"pytorch-{line} https://download.pytorch.org/whl/{line} explicit"', lock)
                self.assertNotIn("targets differ", self.first.stderr)

    def own_resolution(self, env, platform):
        """{name: (version, sha256)} of `env` locked for `platform` alone, from the mission lock's
        versions as preferences."""
        project = os.path.join(self.tmp, f"own-{env}-{platform}")
        os.makedirs(os.path.join(project, "manifests"), exist_ok=True)
        with open(os.path.join(MISSION_DIR, env + ".toml")) as f:
            text = f.read()
        alone = re.sub(r"^platforms = \[.*\]$", f'platform = "{platform}"', text, flags=re.M)
        self.assertNotEqual(alone, text)
        with open(os.path.join(project, "manifests", env + ".toml"), "w") as f:
            f.write(alone)
        with open(os.path.join(project, "manifests", f"pylock.{env}.toml"), "w") as f:
            f.write(self.locks[env])
        envbox("lock", env, home=self.home, project=project, env=self.mirrors)
        with open(os.path.join(project, "manifests", f"pylock.{env}.toml")) as f:
            single = f.read()
        out = {}
        for block in single.split("\n[[packages]]\n")[1:]:
            name = re.search(r'^name = "([^"]+)"', block, re.M).group(1)
            version = re.search(r'^version = "([^"]+)"', block, re.M).group(1)
            out[name] = (version, re.findall(r'^hashes = \{ sha256 = "([0-9a-f]{64})" \}', block, re.M))
        return out

    def test_each_target_selects_its_own_resolution(self):
        for env in MISSIONS:
            for platform in BOTH:
                with self.subTest(env=env, platform=platform):
                    own = self.own_resolution(env, platform)
                    exported = envbox("export", env, "--target", platform, home=self.home,
                                      project=self.project).stdout
                    pins = dict(re.findall(r"^([A-Za-z0-9._-]+)==(\S+)", exported, re.M))
                    self.assertEqual(pins, {n: v for n, (v, _h) in own.items()})
                    # Each target's wheel is the one its own resolution locked.
                    for name, (_v, hashes) in own.items():
                        self.assertEqual(len(hashes), 1, name)
                        self.assertIn(f"--hash=sha256:{hashes[0]}", exported, name)

    def test_the_locks_are_fresh_without_the_mirrors(self):
        for env in MISSIONS:
            envbox("lock", env, "--check", home=self.home, project=self.project)
            for target in ("x86_64", "aarch64"):
                envbox("lock", env, "--check", "--target", target, home=self.home, project=self.project)

    def test_a_bad_mirror_is_refused_naming_the_variable(self):
        project = os.path.join(self.tmp, "bad-mirror")
        os.makedirs(os.path.join(project, "manifests"))
        shutil.copy(os.path.join(MISSION_DIR, "train-cu128.toml"), os.path.join(project, "manifests"))
        for value, expect in (("ftp://127.0.0.1/pypi", "ENVBOX_INDEX_PYPI_URL (the mirror of index pypi): "
                                                       "expected an http(s):// or file:// URL"),
                              (f"http://user:s3cret@{self.server.url[7:]}/pypi",
                               "ENVBOX_INDEX_PYPI_URL (the mirror of index pypi) has credentials in its URL"),
                              ("https://mirror example/pypi",
                               "ENVBOX_INDEX_PYPI_URL (the mirror of index pypi): 'https://mirror example/pypi' "
                               "is not a valid URL")):
            with self.subTest(value=value):
                r = envbox("lock", "train-cu128", home=self.home, project=project, check=False,
                           env=dict(self.mirrors, ENVBOX_INDEX_PYPI_URL=value))
                self.assertEqual(r.returncode, 3, r.stderr)
                self.assertIn(expect, r.stderr)
                self.assertNotIn("s3cret", r.stderr + r.stdout)
                self.assertFalse(os.path.exists(os.path.join(project, "manifests", "pylock.train-cu128.toml")))


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
