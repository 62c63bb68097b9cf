#!/usr/bin/env python3
"""Black-box tests of the team's own code: the project's package and a library beside it,
named in `[sources]` as `{ path = "…", editable = true }` (uv's form), over a loopback simple
index of a dependency and Debian's setuptools and wheel wheels.

The project (src layout, setuptools, a console script, an extra) is locked as PEP 751
`[packages.directory]` with its `[project]` dependencies and extras resolved; installed editable
(PEP 660 `build_editable` in the sandbox), so an edit of src/ is seen by the next `run` with no
create, and its script runs; nothing of its tree is copied into the store. A non-editable path
dependency is built once, keyed by its content: a second create builds nothing, an edited file
builds again. A change to the project's dependencies makes the lock stale and says so. pip is
the oracle for what an editable install and a path install put in site-packages (the same
dist-info names and the same import answer). Refused, each naming the culprit: a path outside
the project, a folder without pyproject.toml, a `[project]` of another name, dynamic
dependencies.

    test_local_sources.py ENVBOX_BINARY
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
from envboxtest import DEBIAN_WHEELS, PYTHON, keep_or_remove  # noqa: E402
from wheelgen import Wheel  # noqa: E402

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61", "wheel"]
build-backend = "setuptools.build_meta"

[project]
name = "mylab"
version = "0.1.0"
dependencies = [{deps}]

[project.optional-dependencies]
train = ["trainlib"]

[project.scripts]
mylab-train = "mylab.train:main"
"""

TOKENIZER = """\
[build-system]
requires = ["setuptools>=61", "wheel"]
build-backend = "setuptools.build_meta"

[project]
name = "tokenizer"
version = "2.0"
"""


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


class LocalSources(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-local-")
        self.project = envboxtest.Project(self.tmp)
        files = os.path.join(self.tmp, "index", "files")
        os.makedirs(files)
        Wheel("helper", "1.0", {"helper.py": "NAME = 'helper'\n"}).build(files)
        Wheel("trainlib", "1.0", {"trainlib.py": "T = 1\n"}).build(files)
        self.server = envboxtest.build_tools_index(os.path.join(self.tmp, "index"))
        root = self.project.root
        self.write_pyproject('"helper"')
        write(os.path.join(root, "src", "mylab", "__init__.py"), "")
        write(os.path.join(root, "src", "mylab", "train.py"),
              "def main():\n    print('train v1')\n")
        write(os.path.join(root, "libs", "tokenizer", "pyproject.toml"), TOKENIZER)
        write(os.path.join(root, "libs", "tokenizer", "tokenizer.py"), "VOCAB = 1\n")

    def tearDown(self):
        self.server.close()
        keep_or_remove(self.tmp)

    def write_pyproject(self, deps):
        write(os.path.join(self.project.root, "pyproject.toml"), PYPROJECT.format(deps=deps))

    def write_manifest(self, requirements=("mylab[train]", "tokenizer"), sources=None):
        sources = sources or ('mylab = { path = "..", editable = true }\n'
                              'tokenizer = { path = "../libs/tokenizer" }\n')
        self.project.write("train", envboxtest.manifest_text(
            list(requirements), indexes=[("loopback", self.server.url + "/simple", "")],
            sources=sources))

    def run_py(self, code):
        return self.project.run("run", "train", "--", "python", "-c", code).stdout.strip()

    def builds(self):
        return len(glob.glob(os.path.join(self.project.home, "store-v1", "builds", "*")))

    def test_the_project_is_locked_as_a_directory_and_installed_editable(self):
        self.write_manifest()
        self.project.run("lock", "train")
        lock = self.project.lock_text("train")
        self.assertIn('[packages.directory]\npath = ".."\neditable = true\n', lock)
        self.assertIn('[packages.directory]\npath = "../libs/tokenizer"\n', lock)
        for name in ("helper", "trainlib", "setuptools"):  # setuptools: the build lock's
            self.assertIn(f'name = "{name}"', lock + self.read_build_lock("mylab"))
        self.project.run("create", "train")
        self.assertEqual(self.run_py("import mylab.train, helper, trainlib, tokenizer; "
                                     "mylab.train.main()"), "train v1")
        script = self.project.run("run", "train", "--", "mylab-train").stdout.strip()
        self.assertEqual(script, "train v1")
        # An edit of src/ is seen by the next run: no create, no build.
        builds = self.builds()
        write(os.path.join(self.project.root, "src", "mylab", "train.py"),
              "def main():\n    print('train v2')\n")
        self.assertEqual(self.project.run("run", "train", "--", "mylab-train").stdout.strip(),
                         "train v2")
        self.assertEqual(self.builds(), builds)
        # The store holds no file of the project's tree.
        objects = subprocess.run(["grep", "-rl", "train v", os.path.join(self.project.home, "store-v1")],
                                 capture_output=True, text=True).stdout
        self.assertEqual(objects, "")
        direct = self.run_py("import importlib.metadata as m; "
                             "print(m.distribution('mylab').read_text('direct_url.json'))")
        self.assertEqual(json.loads(direct),
                         {"dir_info": {"editable": True}, "url": "file://" + os.path.realpath(self.project.root)})

    def read_build_lock(self, name):
        with open(os.path.join(self.project.root, "manifests", f"pylock.train.build.{name}.toml")) as f:
            return f.read()

    def test_a_path_dependency_is_built_once_until_its_content_changes(self):
        self.write_manifest(requirements=("tokenizer",), sources='tokenizer = { path = "../libs/tokenizer" }\n')
        self.project.run("create", "train")
        self.assertEqual(self.builds(), 1)
        self.project.run("create", "train", "--force")
        self.project.run("delete", "train")
        self.project.run("create", "train")
        self.assertEqual(self.builds(), 1)
        write(os.path.join(self.project.root, "libs", "tokenizer", "tokenizer.py"), "VOCAB = 2\n")
        self.project.run("create", "train")
        self.assertEqual(self.builds(), 2)
        self.assertEqual(self.run_py("import tokenizer; print(tokenizer.VOCAB)"), "2")
        # A cache folder beside the sources is not part of what a build reads.
        write(os.path.join(self.project.root, "libs", "tokenizer", "__pycache__", "x.pyc"), "x")
        out = self.project.run("create", "train").stdout
        self.assertEqual(self.builds(), 2, out)
        # Exported for pip, a folder is pinned only as the wheel built from it (--wheels), and
        # pip installs that wheel in hash-checking mode.
        r = self.project.run("export", "train", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("tokenizer is locked as a local folder", r.stderr)
        self.assertIn("--wheels DIR", r.stderr)
        wheels = os.path.join(self.tmp, "exported")
        req = os.path.join(self.tmp, "requirements.txt")
        self.project.run("export", "train", "--wheels", wheels, "-o", req)
        with open(req) as f:
            text = f.read()
        self.assertIn("\ntokenizer==", text)
        self.assertIn("--find-links " + wheels, text)
        venv = os.path.join(self.tmp, "venv-export")
        subprocess.run([PYTHON, "-m", "venv", "--without-pip", venv], check=True)
        pip = next(w for w in DEBIAN_WHEELS if os.path.basename(w).startswith("pip-"))
        subprocess.run([os.path.join(venv, "bin", "python"), f"{pip}/pip", "install", "-q",
                        "--no-index", "--require-hashes", "-r", req], check=True,
                       capture_output=True)
        out = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                              "import tokenizer; print(tokenizer.VOCAB)"],
                             capture_output=True, text=True, check=True).stdout.strip()
        self.assertEqual(out, "2")

    def test_a_folder_named_in_a_requirement_is_a_local_source(self):
        # pip's forms: a relative path (from the manifest's folder) and a file:// URL.
        tokenizer = os.path.join(self.project.root, "libs", "tokenizer")
        self.write_manifest(requirements=("tokenizer @ ../libs/tokenizer",
                                          f"mylab @ file://{self.project.root}"), sources="\n")
        self.project.run("create", "train")
        self.assertEqual(self.run_py("import tokenizer, mylab.train; print(tokenizer.VOCAB)"), "1")
        lock = self.project.lock_text("train")
        self.assertIn('[packages.directory]\npath = "../libs/tokenizer"\n', lock)
        self.assertIn('[packages.directory]\npath = ".."\n', lock)
        self.assertTrue(os.path.isdir(tokenizer))

    def test_add_e_names_the_project_editable_as_pip_install_e_would(self):
        self.project.write("train", envboxtest.manifest_text(
            ["helper"], indexes=[("loopback", self.server.url + "/simple", "")]))
        # Inside the environment, pip's `install -e .` says what to run instead.
        self.project.run("create", "train")
        r = envboxtest.envbox("run", "train", "--", "pip", "install", "-e", ".[train]",
                              home=self.project.home, check=False, cwd=self.project.root)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("envbox add train -e '.[train]'", r.stderr)
        envboxtest.envbox("add", "train", "-e", ".[train]", home=self.project.home,
                          cwd=self.project.root)
        with open(os.path.join(self.project.root, "manifests", "train.toml")) as f:
            manifest = f.read()
        self.assertIn('"mylab[train]"', manifest)
        self.assertIn('[sources]\nmylab = { path = "..", editable = true }\n', manifest)
        self.assertEqual(self.project.run("run", "train", "--", "mylab-train").stdout.strip(), "train v1")
        self.assertEqual(self.run_py("import trainlib; print(trainlib.T)"), "1")

    def test_init_from_a_requirements_file_and_a_pyproject(self):
        root = self.project.root
        index = self.server.url + "/simple"
        write(os.path.join(root, "requirements.txt"),
              f"--index-url {index}\n-r more.txt\nhelper==1.0 \\\n    --hash=sha256:{'0' * 64}\n"
              "-e ./libs/tokenizer\n--prefer-binary\n# a comment\n")
        write(os.path.join(root, "more.txt"), "trainlib; python_version >= '3'\n")
        r = envboxtest.envbox("init", "req", "--from", "requirements.txt", home=self.project.home,
                              cwd=root)
        self.assertIn("requirements.txt:3: --hash", r.stderr)
        self.assertIn("requirements.txt:6: --prefer-binary", r.stderr)
        self.project.run("create", "req")
        out = self.project.run("run", "req", "--", "python", "-c",
                               "import helper, trainlib, tokenizer; print(tokenizer.VOCAB)")
        self.assertEqual(out.stdout.strip(), "1")
        with open(os.path.join(root, "manifests", "req.toml")) as f:
            manifest = f.read()
        self.assertIn('tokenizer = { path = "../libs/tokenizer", editable = true }', manifest)
        self.assertIn(f'url = "{index}"', manifest)
        # A pyproject: the project itself, editable, with its dependencies at lock.
        with open(os.path.join(root, "pyproject.toml"), "a") as f:
            f.write("\n[tool.uv]\ndev-dependencies = []\n")
        r = envboxtest.envbox("init", "proj", "--from", "pyproject.toml",
                              "--default-index", index, home=self.project.home, cwd=root)
        self.assertIn("tool.uv", r.stderr)
        self.project.run("create", "proj")
        self.assertEqual(self.project.run("run", "proj", "--", "mylab-train").stdout.strip(),
                         "train v1")
        # add -r: a file's requirements into an existing manifest.
        write(os.path.join(root, "extra.txt"), "trainlib\n")
        envboxtest.envbox("add", "proj", "-r", "extra.txt", home=self.project.home, cwd=root)
        self.assertEqual(self.project.run("run", "proj", "--", "python", "-c",
                                          "import trainlib; print(trainlib.T)").stdout.strip(), "1")

    def test_dependency_groups_are_shared_sets_of_the_project(self):
        with open(os.path.join(self.project.root, "pyproject.toml"), "a") as f:
            f.write('\n[dependency-groups]\ncommon = ["helper"]\n'
                    'Test = [{include-group = "common"}, "trainlib"]\n')
        index = [("loopback", self.server.url + "/simple", "")]
        for env, groups in (("train", '["common"]'), ("dev", '["test"]')):
            self.project.write(env, envboxtest.manifest_text(
                [], indexes=index).replace("requirements = []",
                                           f"requirements = []\ndependency-groups = {groups}"))
            self.project.run("create", env)
        lock = self.project.lock_text("dev")
        self.assertIn('name = "trainlib"', lock)
        self.assertIn('name = "helper"', lock)
        self.assertNotIn('name = "trainlib"', self.project.lock_text("train"))
        # A change to a group makes the locks that name it stale.
        with open(os.path.join(self.project.root, "pyproject.toml")) as f:
            text = f.read()
        write(os.path.join(self.project.root, "pyproject.toml"),
              text.replace('common = ["helper"]', 'common = ["helper", "trainlib"]'))
        r = self.project.run("lock", "train", "--check", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("trainlib", r.stdout + r.stderr)
        write(os.path.join(self.project.root, "pyproject.toml"),
              text.replace('common = ["helper"]', 'common = [{include-group = "test"}]'))
        r = self.project.run("lock", "train", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("includes itself", r.stderr)

    def test_a_change_to_the_projects_dependencies_makes_the_lock_stale(self):
        self.write_manifest()
        self.project.run("lock", "train")
        self.project.run("lock", "train", "--check")
        self.write_pyproject('"helper", "trainlib"')
        check = self.project.run("lock", "train", "--check", check=False)
        self.assertEqual(check.returncode, 3, check.stderr)
        self.assertIn("mylab's pyproject.toml changed its dependencies", check.stdout + check.stderr)
        self.assertIn(os.path.join(self.project.root, "pyproject.toml"), check.stdout + check.stderr)

    def test_refusals_name_the_culprit(self):
        outside = os.path.join(self.tmp, "elsewhere")
        write(os.path.join(outside, "pyproject.toml"), TOKENIZER)
        cases = [
            (f'tokenizer = {{ path = "{outside}" }}\n', "is outside the project"),
            ('tokenizer = { path = "../src" }\n', "has no pyproject.toml"),
            ('tokenizer = { path = ".." }\n', "is the project 'mylab', not tokenizer"),
            ('tokenizer = { path = "../nowhere" }\n', "is not a folder"),
            ('tokenizer = { path = "../libs/tokenizer", editabel = true }\n', "editable"),
        ]
        for sources, expected in cases:
            self.write_manifest(requirements=("tokenizer",), sources=sources)
            r = self.project.run("lock", "train", check=False)
            self.assertEqual(r.returncode, 3, (sources, r.stderr))
            self.assertIn(expected, r.stderr, sources)
            self.assertIn("train.toml", r.stderr, sources)
        # A chain of links inside the tree that lands outside it is refused, never followed.
        tok = os.path.join(self.project.root, "libs", "tokenizer")
        os.symlink(".", os.path.join(tok, "s"))
        os.symlink("s/..", os.path.join(tok, "t"))
        self.write_manifest(requirements=("tokenizer",), sources='tokenizer = { path = "../libs/tokenizer" }\n')
        r = self.project.run("create", "train", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("links out of", r.stderr)
        os.unlink(os.path.join(tok, "t"))
        os.unlink(os.path.join(tok, "s"))
        # A requirement's folder and a [sources] entry for the same package: said, not guessed.
        self.write_manifest(requirements=("tokenizer @ ../libs/tokenizer",),
                            sources='tokenizer = "loopback"\n')
        r = self.project.run("lock", "train", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("give it in one place", r.stderr)
        write(os.path.join(self.project.root, "libs", "tokenizer", "pyproject.toml"),
              TOKENIZER + 'dynamic = ["dependencies"]\n')
        self.write_manifest(requirements=("tokenizer",), sources='tokenizer = { path = "../libs/tokenizer" }\n')
        r = self.project.run("lock", "train", check=False)
        self.assertIn("[build.tokenizer] requires-dist", r.stderr)

    def test_pack_and_push_ship_built_wheels_of_the_commit_and_a_node_needs_no_checkout(self):
        git_env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                   "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
                   "HOME": self.tmp, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}

        def git(*args):
            return subprocess.run(["git", *args], cwd=self.project.root, env=git_env, check=True,
                                  capture_output=True, text=True).stdout.strip()
        git("init", "-q", "-b", "main")
        with open(os.path.join(self.project.root, ".gitignore"), "w") as f:
            f.write("wheels/\n.envbox/\n")
        git("add", "-A")
        git("commit", "-q", "-m", "start")
        import tarfile
        from urllib.parse import unquote  # the key's text, percent-encoded in the builds list
        # An editable project is the checkout itself: it ships as a regular wheel of the
        # commit's tree, built at pack, never as the editable link.
        self.write_manifest()
        self.project.run("create", "train")
        packed = os.path.join(self.tmp, "train.tar")
        self.project.run("pack", "train", "--output", packed)
        with tarfile.open(packed) as t:
            builds = unquote(unquote(t.extractfile("builds").read().decode()))
            shipped = [n for n in t.getnames() if n.startswith("wheels/mylab-")]
        self.assertIn(f"\nsource directory .. commit {git('rev-parse', 'HEAD')} clean\n", builds)
        self.assertEqual(len(shipped), 1, shipped)
        with tarfile.open(packed) as t:
            with zipfile.ZipFile(t.extractfile(shipped[0])) as z:
                names = z.namelist()
        self.assertIn("mylab/train.py", names)  # the code itself, no .pth to a checkout
        self.assertFalse([n for n in names if n.endswith(".pth")], names)
        first = envboxtest.Project(self.tmp, root=os.path.join(self.tmp, "node1", "proj"),
                                   home=os.path.join(self.tmp, "node1", "home"))
        first.run("unpack", packed, "train")
        out = first.run("run", "train", "--", "python", "-c",
                        "import mylab.train; mylab.train.main(); print(mylab.__file__)")
        said, where = out.stdout.splitlines()
        self.assertEqual(said, "train v1")
        self.assertTrue(os.path.realpath(where).startswith(os.path.realpath(first.home)), where)
        # Built (not editable), the project and the library ship as wheels of the commit.
        self.write_manifest(sources='mylab = { path = ".." }\ntokenizer = { path = "../libs/tokenizer" }\n')
        git("add", "-A")
        git("commit", "-q", "-m", "locked")
        self.project.run("create", "train")
        self.project.run("pack", "train", "--output", packed)
        with tarfile.open(packed) as t:
            builds = t.extractfile("builds").read().decode()
        head = git("rev-parse", "HEAD")
        self.assertIn(f"\nsource directory .. commit {head} clean\n", unquote(unquote(builds)))
        # A node: another home, no checkout of the project at all.
        node = envboxtest.Project(self.tmp, root=os.path.join(self.tmp, "node", "proj"),
                                  home=os.path.join(self.tmp, "node", "home"))
        node.run("unpack", packed, "train")
        out = node.run("run", "train", "--", "python", "-c",
                       "import mylab.train, tokenizer; mylab.train.main(); print(tokenizer.VOCAB)")
        self.assertEqual(out.stdout.split(), ["train", "v1", "1"])
        self.assertEqual(glob.glob(os.path.join(node.home, "cache", "build-envs", "*")), [])
        # A change not committed is refused, naming the package and the folder.
        write(os.path.join(self.project.root, "src", "mylab", "train.py"),
              "def main():\n    print('uncommitted')\n")
        self.project.run("create", "train")
        r = self.project.run("pack", "train", "--output", packed, check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("mylab (" + os.path.realpath(self.project.root) + ") has changes that are "
                      "not committed", r.stderr)

    def test_pip_installs_the_same_distributions(self):
        self.write_manifest()
        self.project.run("create", "train")
        ours = self.run_py("import importlib.metadata as m; "
                           "print(sorted(d.metadata['Name'] for d in m.distributions()))")
        venv = os.path.join(self.tmp, "venv")
        subprocess.run([PYTHON, "-m", "venv", "--without-pip", venv], check=True)
        pip = next(w for w in DEBIAN_WHEELS if os.path.basename(w).startswith("pip-"))
        files = os.path.join(self.tmp, "index", "files")
        subprocess.run([os.path.join(venv, "bin", "python"), f"{pip}/pip", "install", "-q",
                        "--no-index", "--find-links", files, "--no-build-isolation",
                        "setuptools", "wheel"], check=True, capture_output=True)
        subprocess.run([os.path.join(venv, "bin", "python"), f"{pip}/pip", "install", "-q",
                        "--no-index", "--find-links", files, "-e", self.project.root + "[train]",
                        os.path.join(self.project.root, "libs", "tokenizer")],
                       check=True, capture_output=True)
        theirs = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                                 # set: pip's build leaves src/mylab.egg-info, which the
                                 # editable path then shows a second time
                                 "import importlib.metadata as m; print(sorted({d.metadata['Name'] "
                                 "for d in m.distributions() if d.metadata['Name'] not in "
                                 "('pip', 'setuptools', 'wheel')}))"],
                                capture_output=True, text=True, check=True).stdout.strip()
        self.assertEqual(ours, theirs)


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main()
