#!/usr/bin/env python3
"""`exclude-newer` in `envbox lock`: only files an index says were uploaded before the time are
candidates, by PEP 700's `upload-time` on JSON pages (served from 127.0.0.1 as PyPI serves
them); an index without upload times is an error naming it unless its [[index]] entry exempts
it, as the PyTorch indexes (HTML only) need.

    test_exclude_newer.py ENVBOX_BINARY
"""
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
import indexworld  # noqa: E402
from envboxtest import envbox, keep_or_remove, manifest_text, packages  # noqa: E402
from indexworld import pkg  # noqa: E402


def uploaded(wheel, when):
    wheel.upload_time = when
    return wheel


# PyPI's shape (microseconds, Z); sglang 0.5.12 and numpy 2.3.4 came after the cutoff.
PYPI = [
    uploaded(pkg("sglang", "0.5.11", ["numpy>=2"]), "2026-09-01T10:00:00.123456Z"),
    uploaded(pkg("sglang", "0.5.12", ["numpy>=2.3.4"]), "2026-11-20T08:00:00.000000Z"),
    uploaded(pkg("numpy", "2.3.3"), "2026-08-15T12:00:00Z"),
    uploaded(pkg("numpy", "2.3.4"), "2026-11-02T12:00:00+00:00"),
    # Just before and exactly at the cutoff (the cutoff itself is not before it).
    uploaded(pkg("edge", "1.0"), "2026-10-31T23:59:59.999999Z"),
    uploaded(pkg("edge", "1.1"), "2026-11-01T02:00:00+02:00"),
]
# The PyTorch index's shape: HTML pages, no upload times.
TORCH = [pkg("torch", "2.11.0+cu128")]
CUTOFF = "2026-11-01T00:00:00Z"


class ExcludeNewer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-xn-")
        www = os.path.join(cls.tmp, "www")
        indexworld.write_indexes(www, {"pypi": PYPI, "pytorch": TORCH}, html_only=("pytorch",))
        hostile = [uploaded(pkg("bad", "1.0"), '2026-01-01T00:00:00Z\nupload-time = 1\n[x]')]
        indexworld.write_indexes(www, {"hostile": hostile})
        cls.server = indexworld.Server(www)
        cls.home = os.path.join(cls.tmp, "home")

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        keep_or_remove(cls.tmp)

    def lock(self, env, requirements, setting=None, indexes=None, check=True, project=None):
        project = project or os.path.join(self.tmp, "proj")
        text = manifest_text(requirements, indexes=indexes or [("pypi", f"{self.server.url}/pypi", "")])
        if setting:
            text = text.replace("requirements = [", f"exclude-newer = {setting}\nrequirements = [", 1)
        envboxtest.write_manifest(project, env, text)
        r = envbox("lock", env, home=self.home, project=project, check=check)
        lock_path = os.path.join(project, "manifests", f"pylock.{env}.toml")
        if r.returncode != 0 or not os.path.exists(lock_path):
            return r, None, None
        with open(lock_path) as f:
            text = f.read()
        return r, {n: v for n, (v, _) in packages(text).items()}, text

    def test_only_files_uploaded_before_the_time_are_candidates(self):
        _, newest, text = self.lock("now", ["sglang", "edge"])
        self.assertEqual(newest, {"sglang": "0.5.12", "numpy": "2.3.4", "edge": "1.1"})
        # Without the setting, no upload-time: a lock's bytes are its packages'.
        self.assertNotIn("upload-time", text)
        self.assertNotIn("exclude-newer", text)
        _, then, text = self.lock("then", ["sglang", "edge"], f'"{CUTOFF}"')
        self.assertEqual(then, {"sglang": "0.5.11", "numpy": "2.3.3", "edge": "1.0"})
        self.assertIn(f'exclude-newer = "{CUTOFF}"', text)
        # With it, PEP 751's upload-time of each wheel, as UTC: the evidence of the cut.
        self.assertIn("upload-time = 2026-09-01T10:00:00.123456Z\n", text)
        self.assertIn("upload-time = 2026-08-15T12:00:00Z\n", text)
        # A date is its first instant in UTC; an offset names the same instant; a TOML
        # date-time works as well as a string.
        for setting in ('"2026-11-01"', '"2026-11-01T01:00:00+01:00"', "2026-11-01T00:00:00Z"):
            with self.subTest(setting=setting):
                _, got, text = self.lock("then", ["sglang", "edge"], setting)
                self.assertEqual(got, then)
                self.assertIn(f'exclude-newer = "{CUTOFF}"', text)

    def test_a_version_after_the_time_says_so(self):
        r, _, _ = self.lock("pinned", ["sglang==0.5.12"], f'"{CUTOFF}"', check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn(f"sglang==0.5.12 was uploaded after exclude-newer ({CUTOFF})", r.stderr)

    def test_an_index_without_upload_times_is_named_unless_exempt(self):
        torch = ("pytorch", f"{self.server.url}/pytorch", "explicit = true\n")
        pypi = ("pypi", f"{self.server.url}/pypi", "")
        project = os.path.join(self.tmp, "torch")
        text = manifest_text(["torch", "sglang"], indexes=[torch, pypi], sources='torch = "pytorch"\n')
        envboxtest.write_manifest(project, "t", text.replace("requirements", f'exclude-newer = "{CUTOFF}"\nrequirements', 1))
        r = envbox("lock", "t", home=self.home, project=project, check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn(f"index pytorch ({self.server.url}/pytorch/torch/) gives no upload time for "
                      "torch-2.11.0+cu128-py3-none-any.whl", r.stderr)
        self.assertIn("exclude-newer = false", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(project, "manifests", "pylock.t.toml")))
        # Exempt, the index's files are all candidates; PyPI's are still cut.
        exempt = (torch[0], torch[1], torch[2] + "exclude-newer = false\n")
        text = manifest_text(["torch", "sglang"], indexes=[exempt, pypi], sources='torch = "pytorch"\n')
        envboxtest.write_manifest(project, "t", text.replace("requirements", f'exclude-newer = "{CUTOFF}"\nrequirements', 1))
        envbox("lock", "t", home=self.home, project=project)
        with open(os.path.join(project, "manifests", "pylock.t.toml")) as f:
            got = {n: v for n, (v, _) in packages(f.read()).items()}
        self.assertEqual(got, {"torch": "2.11.0+cu128", "sglang": "0.5.11", "numpy": "2.3.3"})

    def test_a_hostile_upload_time_is_refused_and_never_written(self):
        hostile = [("hostile", f"{self.server.url}/hostile", "")]
        r, _, _ = self.lock("bad", ["bad"], f'"{CUTOFF}"', indexes=hostile, check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("gives upload-time '2026-01-01T00:00:00Z\\nupload-time = 1\\n[x]' for bad-1.0", r.stderr)
        # Without the setting it is not read, and the lock stays one valid document.
        _, got, text = self.lock("bad", ["bad"], indexes=hostile)
        self.assertEqual(got, {"bad": "1.0"})
        self.assertNotIn("upload-time", text)
        self.assertNotIn("[x]", text)

    def test_a_change_makes_the_lock_stale_and_envbox_toml_shares_it(self):
        project = os.path.join(self.tmp, "stale")
        self.lock("s", ["numpy"], f'"{CUTOFF}"', project=project)
        envbox("lock", "--check", "s", home=self.home, project=project)
        self.lock("s2", ["numpy"], project=project)
        path = os.path.join(project, "manifests", "s.toml")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace(CUTOFF, "2026-12-01T00:00:00Z"))
        r = envbox("lock", "--check", "s", home=self.home, project=project, check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn(f"exclude-newer changed: the lock has '{CUTOFF}', the manifest '2026-12-01T00:00:00Z'",
                      r.stderr)
        # envbox.toml gives it to a manifest without its own.
        with open(os.path.join(project, "envbox.toml"), "w") as f:
            f.write(f'[environment]\nexclude-newer = "{CUTOFF}"\n')
        r = envbox("lock", "--check", "s2", home=self.home, project=project, check=False)
        self.assertIn(f"exclude-newer changed: the lock has none, the manifest '{CUTOFF}'", r.stderr)
        envbox("lock", "--upgrade", "s2", home=self.home, project=project)
        with open(os.path.join(project, "manifests", "pylock.s2.toml")) as f:
            self.assertEqual(packages(f.read())["numpy"][0], "2.3.3")

    def test_values_are_checked(self):
        for bad in ('"yesterday"', '"2026-11-01T00:00:00"', "2026-11-01T00:00:00", '"2026-02-30"', "1"):
            with self.subTest(value=bad):
                r, _, _ = self.lock("v", ["numpy"], bad, check=False)
                self.assertEqual(r.returncode, 3, r.stderr)
                self.assertIn("environment.exclude-newer", r.stderr)
                self.assertIn("RFC 3339", r.stderr)


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main()
