#!/usr/bin/env python3
"""Black-box tests of `envbox add` and `envbox remove` (and the change list `envbox lock`
prints): the manifest edited with its comments and layout kept, locked against real simple
indexes served from 127.0.0.1, created, and put back byte for byte when the lock fails.

    test_add_remove.py ENVBOX_BINARY
"""
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
from envboxtest import PYV, current_generation, envbox, keep_or_remove, sha256_file  # noqa: E402
from httpserver import StaticServer  # noqa: E402
from wheelgen import Wheel, normalize  # noqa: E402

# {index: [(name, version, requires)]}: "main" is the first index, "other" explicit.
WORLD = {
    "main": [("alpha", "1.0", []), ("alpha", "1.1", []), ("beta", "2.0", []),
             ("tqdm", "4.67.0", []), ("tqdm", "4.68.0", ["colorama"]), ("colorama", "0.4.6", []),
             ("gamma", "2.0", []), ("torch", "2.11.0+cu130", []),
             # wheels for other targets only: "no wheel for the target" lists their tags
             ("maconly", "1.0", [], "cp311-cp311-macosx_11_0_arm64"),
             ("maconly", "1.0", [], "cp39-cp39-win_amd64")],
    "other": [("gamma", "3.0", [])],
}

MANIFEST = """# the environment of the tests
[environment]
python = "{pyv}"  # the interpreter's
platform = "manylinux_2_28_x86_64"
requirements = [
    "alpha==1.0",  # pinned on purpose
]

[[index]]
name = "main"
url = "{url}/main"

[[index]]
name = "other"   # only what [sources] pins to it
url = "{url}/other"
explicit = true
"""


def build_indexes(root):
    """PEP 503 pages under root/INDEX/PROJECT/index.html, wheels under root/files/."""
    for index, entries in WORLD.items():
        pages = {}
        for name, version, requires, *tag in entries:
            w = Wheel(name, version, {f"{name}/__init__.py": f"__version__ = {version!r}\n"},
                      requires=requires, **({"tag": tag[0]} if tag else {}))
            path = w.build(os.path.join(root, "files", index))
            fn = os.path.basename(path)
            pages.setdefault(normalize(name), []).append(
                f'<a href="/files/{index}/{fn}#sha256={sha256_file(path)}">{fn}</a><br/>')
        for project, anchors in pages.items():
            os.makedirs(os.path.join(root, index, project))
            with open(os.path.join(root, index, project, "index.html"), "w") as f:
                f.write("<!DOCTYPE html>\n<html><body>\n" + "\n".join(anchors) + "\n</body></html>\n")


class World(unittest.TestCase):
    """WORLD served from 127.0.0.1 for the class; per test an empty project and home."""

    @classmethod
    def setUpClass(cls):
        cls.www = tempfile.mkdtemp(prefix="envbox-add-www-")
        build_indexes(cls.www)
        cls.server = StaticServer(cls.www)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        keep_or_remove(cls.www)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-add-")
        self.home = os.path.join(self.tmp, "home")
        self.proj = os.path.join(self.tmp, "proj")
        os.makedirs(os.path.join(self.proj, "manifests"))

    def tearDown(self):
        keep_or_remove(self.tmp)


class AddRemove(World):
    def setUp(self):
        super().setUp()
        self.manifest_path = os.path.join(self.proj, "manifests", "env.toml")
        self.lock_path = os.path.join(self.proj, "manifests", "pylock.env.toml")
        self.original = MANIFEST.format(pyv=PYV, url=self.server.url)
        self.write(self.original)

    def write(self, text):
        with open(self.manifest_path, "w") as f:
            f.write(text)

    def manifest(self):
        with open(self.manifest_path) as f:
            return f.read()

    def lock_text(self):
        with open(self.lock_path) as f:
            return f.read()

    def run_envbox(self, *args, check=True):
        return envbox(*args, home=self.home, project=self.proj, check=check)

    def python(self, code):
        return self.run_envbox("run", "--frozen", "env", "--", "python", "-c", code, check=False)

    def test_add_keeps_comments_locks_creates_and_lists_the_changes(self):
        r = self.run_envbox("add", "env", "tqdm")
        # A bare name gets the locked version as its lower bound, as `uv add` writes it.
        self.assertEqual(self.manifest(), self.original.replace(
            '"alpha==1.0",  # pinned on purpose\n', '"alpha==1.0",  # pinned on purpose\n    "tqdm>=4.68.0",\n'))
        lines = r.stderr.splitlines()
        self.assertIn("Added tqdm>=4.68.0 to manifests/env.toml", lines)
        self.assertIn("+ tqdm 4.68.0", lines)
        self.assertIn("+ colorama 0.4.6", lines)
        self.assertIn("+ alpha 1.0", lines)  # the first lock: everything is new
        self.assertTrue(any(line.startswith("Installed 3 packages") for line in lines), r.stderr)
        self.assertIsNotNone(current_generation(self.home, "env"))
        self.assertEqual(self.python("import tqdm, colorama; print(tqdm.__version__)").stdout, "4.68.0\n")
        # The lock matches the manifest: nothing left to do.
        self.run_envbox("lock", "--check", "env")

        # Another add lists only what it changed; a requirement of a required package replaces
        # it where it stands, its comment kept.
        r = self.run_envbox("add", "env", "ALPHA>=1.1", "tqdm<4.68")
        lines = r.stderr.splitlines()
        self.assertIn('    "ALPHA>=1.1",  # pinned on purpose', self.manifest().splitlines())
        self.assertIn('    "tqdm<4.68",', self.manifest().splitlines())
        self.assertEqual(self.manifest().count("alpha"), 0)
        self.assertIn("~ alpha 1.0 → 1.1", lines)
        self.assertIn("~ tqdm 4.68.0 → 4.67.0", lines)
        self.assertIn("- colorama 0.4.6", lines)
        self.assertFalse(any(line.startswith("+ ") for line in lines), r.stderr)
        self.assertEqual(self.python("import alpha; print(alpha.__version__)").stdout, "1.1\n")

    def test_add_then_remove_gives_back_the_original_bytes(self):
        self.run_envbox("add", "env", "tqdm", "beta")
        r = self.run_envbox("remove", "env", "Beta", "TQDM")
        self.assertEqual(self.manifest(), self.original)
        lines = r.stderr.splitlines()
        self.assertIn("Removed Beta, TQDM from manifests/env.toml", lines)
        for line in ("- tqdm 4.68.0", "- colorama 0.4.6", "- beta 2.0"):
            self.assertIn(line, lines)
        r = self.python("import tqdm")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("ModuleNotFoundError", r.stderr)
        # Removing the last requirement leaves a valid, empty array and an empty environment.
        self.run_envbox("remove", "env", "alpha")
        self.assertIn("requirements = [\n]\n", self.manifest())
        self.assertIn("# the environment of the tests\n", self.manifest())
        self.assertEqual(self.python("print('empty')").stdout, "empty\n")

    def test_a_symlinked_manifest_is_edited_where_it_points(self):
        shared = os.path.join(self.tmp, "shared.toml")
        os.rename(self.manifest_path, shared)
        os.symlink(shared, self.manifest_path)
        self.run_envbox("add", "env", "beta", "--no-sync")
        self.assertTrue(os.path.islink(self.manifest_path))
        with open(shared) as f:
            self.assertIn('    "beta>=2.0",\n', f.read())

    def test_index_pins_the_package_in_sources(self):
        r = self.run_envbox("add", "env", "gamma", "--index", "other", "--no-sync")
        self.assertEqual(self.manifest(), self.original.replace(
            '# pinned on purpose\n', '# pinned on purpose\n    "gamma>=3.0",\n') + '\n[sources]\ngamma = "other"\n')
        self.assertIn("+ gamma 3.0", r.stderr.splitlines())
        self.assertIn(f"{self.server.url}/other", self.lock_text())
        # --no-sync stopped after the lock.
        self.assertIsNone(current_generation(self.home, "env"))
        self.assertIn("Not creating env (--no-sync)", r.stderr)
        # An index the manifest does not have is refused, naming the ones it has.
        before = self.manifest()
        r = self.run_envbox("add", "env", "beta", "--index", "pypi", check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--index pypi", r.stderr)
        self.assertIn("its indexes are main, other", r.stderr)
        self.assertEqual(self.manifest(), before)

    def test_a_failed_resolution_says_what_the_index_has(self):
        """No version matching: the index (and the [sources] pin) named, with the versions it
        has; no wheel for the target: the tags its wheels do have."""
        def fails(*reqs):
            r = self.run_envbox("add", "env", *reqs, check=False)
            self.assertEqual(r.returncode, 3, r.stderr)
            self.assertEqual(self.manifest(), self.original)  # put back
            return r.stderr
        err = fails("gamma==2.0", "--index", "other")
        self.assertIn("you require gamma==2.0 (no version of gamma matches; gamma is pinned to "
                      "index other in [sources], which has 3.0)", err)
        err = fails("alpha>=5")
        self.assertIn("(no version of alpha matches; index main has 1.1, 1.0)", err)
        err = fails("nothere")
        self.assertIn("you require nothere (not found on index main)", err)
        err = fails("maconly")
        cp = "cp" + PYV.replace(".", "")
        self.assertIn(f"maconly has no wheel for the target (CPython {PYV}", err)
        self.assertIn(f"{cp}-{cp}-manylinux_2_28_x86_64; its wheels are for "
                      "cp311-cp311-macosx_11_0_arm64, cp39-cp39-win_amd64)", err)

    def test_refusals_write_nothing(self):
        self.run_envbox("lock", "env")
        lock = self.lock_text()
        for args, status, words in (
                (("add", "env", "tqdm>>4"), 2, "invalid requirement 'tqdm>>4'"),
                (("add", "env", "beta", "tqdm==="), 2, "invalid requirement 'tqdm==='"),
                (("remove", "env", "scipy"), 2, "'scipy' is not a requirement of"),
                (("remove", "env", "not a name"), 2, "invalid package name"),
                (("add", "nothere", "tqdm"), 3, "no manifest"),
        ):
            with self.subTest(args=args):
                r = self.run_envbox(*args, check=False)
                self.assertEqual(r.returncode, status, r.stderr)
                self.assertIn(words, r.stderr)
                self.assertEqual(self.manifest(), self.original)
                self.assertEqual(self.lock_text(), lock)
        r = self.run_envbox("remove", "env", "scipy", check=False)
        self.assertIn("it requires alpha==1.0", r.stderr)
        r = self.run_envbox("add", "nothere", "tqdm", check=False)
        self.assertIn("the environments here are env", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.proj, "manifests", "nothere.toml")))

    def test_a_failed_lock_puts_the_manifest_and_lock_back(self):
        self.run_envbox("lock", "env")
        lock = self.lock_text()
        r = self.run_envbox("add", "env", "beta", "nosuchpackage", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("nosuchpackage", r.stderr)
        self.assertIn("env.toml is as it was", r.stderr)
        self.assertEqual(self.manifest(), self.original)
        self.assertEqual(self.lock_text(), lock)
        self.assertIsNone(current_generation(self.home, "env"))
        # With no lock before, none after.
        os.remove(self.lock_path)
        r = self.run_envbox("add", "env", "alpha==9.9", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(self.manifest(), self.original)
        self.assertFalse(os.path.exists(self.lock_path))

    def test_a_failed_create_puts_the_manifest_and_lock_back(self):
        self.run_envbox("add", "env", "beta")
        manifest, lock = self.manifest(), self.lock_text()
        gen = current_generation(self.home, "env")
        old_driver = {"ENVBOX_CUDA_DRIVER": "550.54.15"}  # cannot run CUDA 13
        r = envbox("add", "env", "torch==2.11.0+cu130", home=self.home, project=self.proj, check=False,
                   env=old_driver)
        self.assertEqual(r.returncode, 6, r.stderr)
        self.assertIn("env.toml is as it was, and its lock too", r.stderr)
        self.assertEqual(self.manifest(), manifest)
        self.assertEqual(self.lock_text(), lock)
        self.assertEqual(current_generation(self.home, "env"), gen)
        # --no-sync stops after the lock, which this driver does not concern.
        r = envbox("add", "env", "torch==2.11.0+cu130", "--no-sync", home=self.home, project=self.proj,
                   env=old_driver)
        self.assertIn("+ torch 2.11.0+cu130", r.stderr.splitlines())
        self.assertIn('"torch==2.11.0+cu130"', self.manifest())

    def test_a_bare_name_gets_a_lower_bound_without_the_local_label(self):
        # PEP 440 allows a local label only with == and ===: the bound is the public version.
        r = self.run_envbox("--json", "add", "env", "torch; sys_platform == 'linux'", "--no-sync")
        self.assertIn("""    'torch>=2.11.0; sys_platform == "linux"',\n""", self.manifest())
        self.assertEqual(json.loads(r.stdout)["added"], ['torch>=2.11.0; sys_platform == "linux"'])
        self.assertIn({"name": "torch", "old": None, "new": "2.11.0+cu130"}, json.loads(r.stdout)["changes"])
        self.run_envbox("lock", "--check", "env")
        # A requirement already there exactly as written, or typed with a specifier or a URL,
        # stays as typed.
        self.run_envbox("add", "env", "beta<3", "--no-sync")
        self.assertIn('    "beta<3",\n', self.manifest())

    def test_lock_prints_the_change_list_and_json_has_it(self):
        r = self.run_envbox("lock", "env")
        self.assertIn("+ alpha 1.0", r.stderr.splitlines())
        self.write(self.original.replace('"alpha==1.0",', '"alpha==1.1", "beta",'))
        r = self.run_envbox("--json", "lock", "env")
        report = json.loads(r.stdout)
        self.assertEqual(report["changes"], [{"name": "alpha", "old": "1.0", "new": "1.1"},
                                             {"name": "beta", "old": None, "new": "2.0"}])
        self.assertNotIn("+ beta", r.stderr)
        self.write(self.original)
        r = self.run_envbox("-q", "lock", "env")
        self.assertEqual(r.stderr, "")
        self.assertIn('version = "1.0"', self.lock_text())
        # Nothing changed: no list.
        r = self.run_envbox("lock", "env", "--upgrade")
        self.assertFalse(any(line[:2] in ("+ ", "- ", "~ ") for line in r.stderr.splitlines()), r.stderr)
        r = self.run_envbox("--json", "lock", "env")
        self.assertEqual(json.loads(r.stdout)["changes"], [])

    def test_help_and_completion_know_the_commands(self):
        r = self.run_envbox("add", "--help")
        for words in ("--index", "--no-sync", "REQ", "put back"):
            self.assertIn(words, r.stdout)
        r = self.run_envbox("remove", "--help")
        self.assertIn("canonicalized", r.stdout)
        r = self.run_envbox("completion", "bash")
        self.assertIn("add", r.stdout)
        self.assertIn("--no-sync", r.stdout)


PROJECT_FILE = """# shared by every environment of the project
default-env = "a"

[[index]]
name = "main"
url = "{url}/main"

[[index]]
name = "other"
url = "{url}/other"
explicit = true

[sources]
gamma = "other"

[run]
env = {{ SHARED = "project", WHO = "project" }}
"""

BARE = """[environment]
python = "{pyv}"
platform = "manylinux_2_28_x86_64"
requirements = {reqs}
"""


class ProjectFile(World):
    """`envbox.toml` at the project root: indexes, [sources], [run].env and default-env shared
    by manifests that do not repeat them."""

    def setUp(self):
        super().setUp()
        self.shared = os.path.join(self.proj, "envbox.toml")
        self.write_file(self.shared, PROJECT_FILE.format(url=self.server.url))
        self.write_env("a", '["alpha"]', '\n[run]\nenv = { WHO = "a" }\n')
        self.write_env("b", '["gamma"]')

    def write_file(self, path, text):
        with open(path, "w") as f:
            f.write(text)

    def write_env(self, env, reqs, extra=""):
        self.write_file(os.path.join(self.proj, "manifests", env + ".toml"),
                        BARE.format(pyv=PYV, reqs=reqs) + extra)

    def lock_text(self, env):
        with open(os.path.join(self.proj, "manifests", f"pylock.{env}.toml")) as f:
            return f.read()

    def run_envbox(self, *args, check=True, cwd=None):
        if cwd:
            return envbox(*args, home=self.home, cwd=cwd, check=check)
        return envbox(*args, home=self.home, project=self.proj, check=check)

    def test_manifests_use_the_shared_indexes_sources_and_run_env(self):
        self.run_envbox("lock", "a")
        self.assertIn(f'index = "{self.server.url}/main"', self.lock_text("a"))
        self.run_envbox("lock", "b")  # gamma pinned to the explicit index by envbox.toml
        self.assertIn('version = "3.0"', self.lock_text("b"))
        self.assertIn(f'index = "{self.server.url}/other"', self.lock_text("b"))
        # add --index knows the project's indexes; the pin goes into the manifest.
        self.run_envbox("add", "b", "beta", "--index", "main", "--no-sync")
        with open(os.path.join(self.proj, "manifests", "b.toml")) as f:
            self.assertIn('[sources]\nbeta = "main"\n', f.read())
        # default-env picks the environment of a bare `run`; [run].env merges, the manifest's
        # own value winning.
        r = self.run_envbox("run", "--", "python", "-c",
                            "import os, alpha; print(os.environ['SHARED'], os.environ['WHO'], alpha.__version__)",
                            cwd=self.proj)
        self.assertEqual(r.stdout, "project a 1.1\n")
        r = self.run_envbox("run", "b", "--", "python", "-c", "import os, gamma; print(os.environ['WHO'])")
        self.assertEqual(r.stdout, "project\n")

    def test_init_leaves_the_indexes_to_the_shared_file(self):
        r = self.run_envbox("init", "c", cwd=self.proj)
        self.assertIn(f"Indexes from {self.shared}: main, other", r.stderr)
        with open(os.path.join(self.proj, "manifests", "c.toml")) as f:
            text = f.read()
        self.assertNotIn("[[index]]", text)
        self.assertNotIn("pypi", text)
        self.assertIn("# Indexes: the project's (main, other), from ../envbox.toml", text)
        r = self.run_envbox("add", "c", "alpha", "--no-sync", cwd=self.proj)
        self.assertIn("+ alpha 1.1", r.stderr.splitlines())
        # With --cuda the PyTorch index is the manifest's own, ahead of the project's.
        self.run_envbox("init", "g", "--cuda", "12.8", cwd=self.proj)
        with open(os.path.join(self.proj, "manifests", "g.toml")) as f:
            text = f.read()
        self.assertIn('url = "https://download.pytorch.org/whl/cu128"', text)
        self.assertIn("# Then the project's indexes (main, other), from ../envbox.toml", text)
        self.assertNotIn("pypi", text)

    def test_init_never_hides_a_project_index_of_the_same_name(self):
        self.write_file(self.shared, f"""[[index]]
name = "pytorch-cu128"
url = "{self.server.url}/main"
explicit = true

[[index]]
name = "pypi"
url = "{self.server.url}/main"
""")
        r = self.run_envbox("init", "g", "--cuda", "12.8", cwd=self.proj)
        self.assertIn("come from index pytorch-cu128 of envbox.toml only", r.stderr)
        self.assertIn(f"Indexes from {self.shared}: pytorch-cu128, pypi", r.stderr)
        with open(os.path.join(self.proj, "manifests", "g.toml")) as f:
            text = f.read()
        self.assertNotIn("[[index]]", text)
        self.assertIn('torch = "pytorch-cu128"', text)
        # A mirror given by flag is the manifest's own, and the message no longer names the
        # project's entry it replaces.
        r = self.run_envbox("init", "h", "--default-index", self.server.url + "/other", cwd=self.proj)
        self.assertIn(f"Indexes from {self.shared}: pytorch-cu128\n", r.stderr)
        with open(os.path.join(self.proj, "manifests", "h.toml")) as f:
            self.assertIn(f'name = "pypi"\nurl = "{self.server.url}/other"', f.read())

    def test_a_change_to_the_shared_file_makes_the_locks_stale(self):
        self.run_envbox("lock", "b")
        self.run_envbox("lock", "--check", "b")
        with open(self.shared) as f:
            text = f.read()
        self.write_file(self.shared, text.replace('gamma = "other"\n', ""))
        r = self.run_envbox("lock", "--check", "b", check=False)
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertIn("source pin no longer in the manifest or envbox.toml: gamma = other", r.stdout + r.stderr)
        self.assertIn("1 stale lock;", r.stderr)
        for cmd in (("tree", "b"), ("why", "b", "gamma"), ("export", "b")):
            r = self.run_envbox(*cmd)  # the lock as it is, with a note that it is stale
            self.assertIn("note: the lock of b is stale (source pin no longer in the manifest or "
                          "envbox.toml: gamma = other); `envbox lock b` updates it", r.stderr)
            self.assertIn("gamma", r.stdout)
        r = self.run_envbox("lock", "--check", "b", "a", "--json", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        b, a = [json.loads(line) for line in r.stdout.splitlines()]
        self.assertEqual((b["environment"], b["stale"]), ("b", True))
        self.assertIn("source pin no longer in the manifest or envbox.toml: gamma = other", b["reasons"])
        self.assertEqual(b["lock"], os.path.join(self.proj, "manifests", "pylock.b.toml"))
        self.assertEqual((a["environment"], a["stale"]), ("a", True))  # never locked
        self.assertNotIn("stale:", r.stderr)
        r = self.run_envbox("run", "b", "--", "python", "-c", "import gamma; print(gamma.__version__)")
        self.assertEqual(r.stdout, "2.0\n")  # re-locked from main before running
        self.assertIn('version = "2.0"', self.lock_text("b"))
        # A line the shared file adds is named as the shared file's.
        self.write_file(self.shared, text)
        r = self.run_envbox("lock", "--check", "b", check=False)
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertIn("source pin added or changed in envbox.toml: gamma = other", r.stdout + r.stderr)

    def test_a_manifest_index_of_the_same_name_replaces_the_shared_one(self):
        self.write_env("b", '["gamma"]', f'\n[[index]]\nname = "other"\nurl = "{self.server.url}/main"\n')
        self.run_envbox("lock", "b")
        self.assertIn('version = "2.0"', self.lock_text("b"))
        self.assertNotIn("/other", self.lock_text("b"))

    def test_a_bad_shared_file_is_refused_naming_it(self):
        with open(self.shared) as f:
            text = f.read()
        for bad, expect in ((text.replace("default-env", "default-envs"), "envbox.toml:2"),
                            (text.replace('default-env = "a"', 'default-env = "../a"'), "default-env"),
                            (text.replace('gamma = "other"', 'gamma = "nowhere"'), "nowhere")):
            self.write_file(self.shared, bad)
            r = self.run_envbox("lock", "a", check=False)
            self.assertEqual(r.returncode, 3, r.stderr)
            self.assertIn(self.shared, r.stderr)
            self.assertIn(expect, r.stderr)
            self.assertFalse(os.path.exists(os.path.join(self.proj, "manifests", "pylock.a.toml")))


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
