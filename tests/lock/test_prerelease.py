#!/usr/bin/env python3
"""Pre-releases in `envbox lock`, with pip (Debian's, on this machine) as the oracle: the SGLang
shape, where the newest release pins a dependency's pre-release exactly
(`cuda-tile==1.6.0rc5`) and needs a package published only as betas (`flash-attn-4>=4.0.0b13`),
over a flat find-links directory, under each `prerelease` policy.

    test_prerelease.py ENVBOX_BINARY
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
from envboxtest import envbox, keep_or_remove, manifest_text, packages  # noqa: E402
from wheelgen import Wheel  # noqa: E402

DEBIAN_PYTHON = "/usr/bin/python3"


def wheel(name, version, requires=()):
    mod = name.replace("-", "_")
    return Wheel(name, version, {f"{mod}/__init__.py": f"__version__ = {version!r}\n"}, requires=list(requires))


# SGLang's shape in 2026: the newest release pins a release candidate of cuda-tile and needs a
# beta-only package; the release before needs neither. numpy has a newer release candidate that
# nothing asks for.
WORLD = [
    wheel("sglang", "0.5.11", ["cuda-tile>=1.5,<2", "numpy>=2"]),
    wheel("sglang", "0.5.12", ["cuda-tile==1.6.0rc5", "flash-attn-4>=4.0.0b13", "numpy>=2"]),
    wheel("cuda-tile", "1.5.0"), wheel("cuda-tile", "1.6.0rc5"),
    wheel("flash-attn-4", "4.0.0b13"), wheel("flash-attn-4", "4.0.0b14"),
    wheel("numpy", "2.3.3"), wheel("numpy", "2.3.4rc1"),
]


def pip_choice(flat, requirements, pre=False):
    """{name: version} pip installs for `requirements` from `flat` alone (a dry run)."""
    cmd = [DEBIAN_PYTHON, "-m", "pip", "--isolated", "--disable-pip-version-check", "install", "--dry-run",
           "--ignore-installed", "--break-system-packages", "--no-index", "--find-links", flat, "--quiet",
           "--report", "-"] + (["--pre"] if pre else []) + list(requirements)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return {i["metadata"]["name"]: i["metadata"]["version"] for i in json.loads(r.stdout)["install"]}


class Prerelease(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-pre-")
        cls.flat = os.path.join(cls.tmp, "flat")
        for w in WORLD:
            w.build(cls.flat)
        cls.proj = os.path.join(cls.tmp, "proj")
        cls.home = os.path.join(cls.tmp, "home")
        cls.has_pip = subprocess.run([DEBIAN_PYTHON, "-m", "pip", "--version"], capture_output=True).returncode == 0

    @classmethod
    def tearDownClass(cls):
        keep_or_remove(cls.tmp)

    def lock(self, env, requirements, prerelease=None, check=True):
        extra = f'prerelease = "{prerelease}"\n' if prerelease else ""
        text = manifest_text(requirements, indexes=[("wheelhouse", f"file://{self.flat}", "")])
        text = text.replace("requirements = [", extra + "requirements = [", 1)
        envboxtest.write_manifest(self.proj, env, text)
        r = envbox("lock", env, home=self.home, project=self.proj, check=check)
        if r.returncode != 0:
            return r, None
        with open(os.path.join(self.proj, "manifests", f"pylock.{env}.toml")) as f:
            return r, {n: v for n, (v, _) in packages(f.read()).items()}

    def test_a_dependencys_prerelease_pin_is_followed_as_pip_does(self):
        _, got = self.lock("sgl", ["sglang"])
        self.assertEqual(got, {"sglang": "0.5.12", "cuda-tile": "1.6.0rc5", "flash-attn-4": "4.0.0b14",
                               "numpy": "2.3.3"})
        self.assertTrue(self.has_pip, "Debian's pip (python3-pip) is the oracle here")
        self.assertEqual(pip_choice(self.flat, ["sglang"]), got)

    def test_a_pin_of_a_version_left_behind_admits_nothing(self):
        # apkg 2.0 names bpkg's rc but cannot be used (cpkg>=5 does not exist); apkg 1.0 asks for
        # bpkg>=1.0, which admits no pre-release: pip takes bpkg 1.0, and so must envbox.
        flat = os.path.join(self.tmp, "left-behind")
        for w in (wheel("apkg", "1.0", ["bpkg>=1.0"]), wheel("apkg", "2.0", ["bpkg==2.0rc1", "cpkg>=5"]),
                  wheel("bpkg", "1.0"), wheel("bpkg", "2.0rc1"), wheel("cpkg", "1.0")):
            w.build(flat)
        text = manifest_text(["apkg"], indexes=[("wheelhouse", f"file://{flat}", "")])
        envboxtest.write_manifest(self.proj, "left", text)
        envbox("lock", "left", home=self.home, project=self.proj)
        with open(os.path.join(self.proj, "manifests", "pylock.left.toml")) as f:
            got = {n: v for n, (v, _) in packages(f.read()).items()}
        self.assertEqual(got, {"apkg": "1.0", "bpkg": "1.0"})
        self.assertEqual(pip_choice(flat, ["apkg"]), got)

    def test_each_policy(self):
        expected = {
            # "explicit" is any requirement naming a pre-release, a dependency's included.
            "explicit": {"sglang": "0.5.12", "cuda-tile": "1.6.0rc5", "flash-attn-4": "4.0.0b14",
                         "numpy": "2.3.3"},
            # cuda-tile has a stable release, so its rc is not "necessary": the older SGLang.
            "if-necessary": {"sglang": "0.5.11", "cuda-tile": "1.5.0", "numpy": "2.3.3"},
            "disallow": {"sglang": "0.5.11", "cuda-tile": "1.5.0", "numpy": "2.3.3"},
            "allow": {"sglang": "0.5.12", "cuda-tile": "1.6.0rc5", "flash-attn-4": "4.0.0b14",
                      "numpy": "2.3.4rc1"},
        }
        for policy, want in expected.items():
            with self.subTest(policy=policy):
                _, got = self.lock("p-" + policy, ["sglang"], policy)
                self.assertEqual(got, want)
        self.assertEqual(pip_choice(self.flat, ["sglang"], pre=True), expected["allow"])

    def test_an_older_version_of_a_requirement_says_why(self):
        r, got = self.lock("why", ["sglang"], "if-necessary")
        self.assertEqual(got["sglang"], "0.5.11")
        self.assertIn("note: sglang 0.5.11 locked, not 0.5.12: Because sglang==0.5.12 depends on "
                      "cuda-tile==1.6.0rc5 and only pre-releases of cuda-tile==1.6.0rc5 exist", r.stderr)
        # A version kept from the lock says so, with the command that takes the newest.
        r = envbox("lock", "why", "--upgrade-package", "numpy", home=self.home, project=self.proj)
        self.assertNotIn("numpy", r.stderr)
        with open(os.path.join(self.proj, "manifests", "why.toml")) as f:
            text = f.read()
        envboxtest.write_manifest(self.proj, "why", text.replace('"if-necessary"', '"allow"'))
        r = envbox("lock", "why", home=self.home, project=self.proj)
        self.assertIn("note: sglang 0.5.11 locked, not 0.5.12: kept from the lock "
                      "(`envbox lock why --upgrade-package sglang` takes the newest)", r.stderr)
        # -v says it for every package, --json lists them.
        r = envbox("-v", "--json", "lock", "why", "--upgrade-package", "cuda-tile", home=self.home,
                   project=self.proj)
        older = json.loads(r.stdout)["older"]
        self.assertEqual([line.split(" locked")[0] for line in older], ["numpy 2.3.3", "sglang 0.5.11"])

    def test_a_beta_only_package_and_what_disallow_says(self):
        _, got = self.lock("fa", ["flash-attn-4"])
        self.assertEqual(got, {"flash-attn-4": "4.0.0b14"})
        r, _ = self.lock("fa-none", ["flash-attn-4"], "disallow", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("flash-attn-4", r.stderr)
        # The message names the policy in force and the setting that admits them.
        self.assertIn('the manifest\'s prerelease = "disallow" excludes them (prerelease = "allow" under '
                      '[environment] admits them)', r.stderr)
        r, _ = self.lock("fa-explicit", ["flash-attn-4"], "explicit", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn('under prerelease = "explicit" a pre-release is used only when a requirement names one '
                      '(e.g. flash-attn-4>=4.0.0b14)', r.stderr)

    def test_the_policy_is_recorded_and_a_change_makes_the_lock_stale(self):
        self.lock("st", ["numpy"])
        envbox("lock", "--check", "st", home=self.home, project=self.proj)
        path = os.path.join(self.proj, "manifests", "st.toml")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace("requirements = [", 'prerelease = "allow"\nrequirements = [', 1))
        r = envbox("lock", "--check", "st", home=self.home, project=self.proj, check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("prerelease changed: the lock has 'if-necessary-or-explicit', the manifest 'allow'", r.stderr)
        # The locked version is kept (as any re-lock keeps it) until --upgrade...
        envbox("lock", "st", home=self.home, project=self.proj)
        with open(os.path.join(self.proj, "manifests", "pylock.st.toml")) as f:
            lock = f.read()
        self.assertIn('prerelease = "allow"', lock)
        self.assertEqual(packages(lock)["numpy"][0], "2.3.3")
        envbox("lock", "--upgrade", "st", home=self.home, project=self.proj)
        with open(os.path.join(self.proj, "manifests", "pylock.st.toml")) as f:
            self.assertEqual(packages(f.read())["numpy"][0], "2.3.4rc1")
        # ...but a locked pre-release the policy now excludes is not kept.
        with open(path, "w") as f:
            f.write(text.replace("requirements = [", 'prerelease = "disallow"\nrequirements = [', 1))
        envbox("lock", "st", home=self.home, project=self.proj)
        with open(os.path.join(self.proj, "manifests", "pylock.st.toml")) as f:
            self.assertEqual(packages(f.read())["numpy"][0], "2.3.3")

    def test_envbox_toml_sets_it_for_every_manifest_and_values_are_checked(self):
        proj = os.path.join(self.tmp, "shared")
        text = manifest_text(["numpy"], indexes=[("wheelhouse", f"file://{self.flat}", "")])
        envboxtest.write_manifest(proj, "a", text)
        with open(os.path.join(proj, "envbox.toml"), "w") as f:
            f.write('[environment]\nprerelease = "allow"\n')
        envbox("lock", "a", home=self.home, project=proj)
        with open(os.path.join(proj, "manifests", "pylock.a.toml")) as f:
            self.assertEqual(packages(f.read())["numpy"][0], "2.3.4rc1")
        # Only resolution settings may be shared; a bad value names the key and the choices.
        with open(os.path.join(proj, "envbox.toml"), "w") as f:
            f.write('[environment]\npython = "3.12"\n')
        r = envbox("lock", "a", home=self.home, project=proj, check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("environment.python", r.stderr)
        envboxtest.write_manifest(proj, "a", text.replace("requirements = [", 'prerelease = "yes"\nrequirements = ['))
        os.remove(os.path.join(proj, "envbox.toml"))
        r = envbox("lock", "a", home=self.home, project=proj, check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn('Expected one of "if-necessary-or-explicit"', r.stderr)


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main()
