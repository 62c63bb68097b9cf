#!/usr/bin/env python3
"""Black-box tests of git-pinned libraries (`[sources] NAME = { git = "URL", rev = "…" }`):
real repositories made by the test with the system's git, served as `file://` and by the real
`git http-backend` over HTTP on 127.0.0.1 (one of them private, behind Basic credentials), with
a loopback simple index of a dependency and Debian's setuptools and wheel wheels.

`lock` pins the full commit a branch names (PEP 751 `[packages.vcs]`); a moved branch keeps
the locked commit until `lock --upgrade-package`, which names the move in its change list;
`create` builds exactly that commit (a subdirectory too), keyed by URL, commit and
subdirectory, so a second environment builds nothing; a deleted branch still builds from the
locked commit; credentials come from ENVBOX_GIT_<NAME>_USERNAME / _PASSWORD, never the lock;
a commit that no longer exists, and a lock whose vcs URL is not a git transport, are refused
naming them. pip (`pip install git+URL@rev`) is the oracle for what gets installed.

    test_git_sources.py ENVBOX_BINARY
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
from envboxtest import keep_or_remove  # noqa: E402
from githttp import GitHttpServer  # noqa: E402
from wheelgen import Wheel  # noqa: E402

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61", "wheel"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "1.0"
dependencies = ["helper"]

[tool.setuptools]
packages = ["{name}"]
"""

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "HOME": "/nonexistent", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True,
                          capture_output=True, text=True).stdout.strip()


class GitSources(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-git-")
        self.project = envboxtest.Project(self.tmp)
        files = os.path.join(self.tmp, "index", "files")
        os.makedirs(files)
        Wheel("helper", "1.0", {"helper.py": "NAME = 'helper'\n"}).build(files)
        self.server = envboxtest.build_tools_index(os.path.join(self.tmp, "index"))
        self.repos = os.path.join(self.tmp, "repos")
        self.work = os.path.join(self.tmp, "work")
        os.makedirs(self.work)
        git("init", "-q", "-b", "main", cwd=self.work)
        self.commit("mylib", "1")
        os.makedirs(self.repos)
        git("clone", "-q", "--bare", self.work, os.path.join(self.repos, "mylib.git"), cwd=self.tmp)
        git("remote", "add", "origin", os.path.join(self.repos, "mylib.git"), cwd=self.work)
        self.url = "file://" + os.path.join(self.repos, "mylib.git")
        self.http = None

    def tearDown(self):
        self.server.close()
        if self.http:
            self.http.close()
        keep_or_remove(self.tmp)

    def commit(self, name, value, sub=""):
        root = os.path.join(self.work, sub)
        os.makedirs(os.path.join(root, name), exist_ok=True)
        with open(os.path.join(root, "pyproject.toml"), "w") as f:
            f.write(PYPROJECT.format(name=name))
        with open(os.path.join(root, name, "__init__.py"), "w") as f:
            f.write(f"VALUE = {value!r}\n")
        git("add", "-A", cwd=self.work)
        git("commit", "-q", "-m", f"{name} {value}", cwd=self.work)
        return git("rev-parse", "HEAD", cwd=self.work)

    def push(self, *refs):
        git("push", "-q", "--force", "origin", *refs, cwd=self.work)

    def write_manifest(self, source, requirements=("mylib",)):
        self.project.write("e", envboxtest.manifest_text(
            list(requirements), indexes=[("loopback", self.server.url + "/simple", "")],
            sources=source))

    def value(self, module="mylib"):
        return self.project.run("run", "e", "--", "python", "-c",
                                f"import {module}; print({module}.VALUE)").stdout.strip()

    def builds(self):
        return len(glob.glob(os.path.join(self.project.home, "store-v1", "builds", "*")))

    def test_a_branch_is_locked_to_its_commit_and_moves_only_on_upgrade(self):
        first = git("rev-parse", "HEAD", cwd=self.work)
        self.write_manifest(f'mylib = {{ git = "{self.url}", rev = "main" }}\n')
        self.project.run("lock", "e")
        lock = self.project.lock_text("e")
        self.assertIn(f'[packages.vcs]\ntype = "git"\nurl = "{self.url}"\n'
                      f'requested-revision = "main"\ncommit-id = "{first}"\n', lock)
        self.project.run("create", "e")
        self.assertEqual(self.value(), "1")
        direct = self.project.run("run", "e", "--", "python", "-c",
                                  "import importlib.metadata as m; "
                                  "print(m.distribution('mylib').read_text('direct_url.json'))").stdout
        self.assertEqual(json.loads(direct)["vcs_info"],
                         {"commit_id": first, "requested_revision": "main", "vcs": "git"})
        # The branch moves: the lock keeps its commit, even when something else is relocked.
        second = self.commit("mylib", "2")
        self.push("main")
        self.project.run("lock", "e", "--upgrade-package", "helper")
        self.assertIn(first, self.project.lock_text("e"))
        out = self.project.run("lock", "e", "--upgrade-package", "mylib")
        self.assertIn(second, self.project.lock_text("e"))
        self.assertIn(f"mylib 1.0 @{first[:12]} → 1.0 @{second[:12]}", out.stdout + out.stderr)
        self.project.run("create", "e")
        self.assertEqual(self.value(), "2")
        # A second environment of the same lock builds nothing: the store has that commit's wheel.
        builds = self.builds()
        with open(os.path.join(self.project.root, "manifests", "e.toml")) as f:
            self.project.write("f", f.read())
        self.project.run("create", "f")
        self.assertEqual(self.builds(), builds)

    def test_a_git_requirement_is_pinned_as_a_source_is(self):
        self.commit("tokenizer", "sub", sub="libs/tokenizer")
        self.push("main")
        head = git("rev-parse", "HEAD", cwd=self.work)
        self.write_manifest("", requirements=(f"mylib @ git+{self.url}@main",
                                              f"tokenizer @ git+{self.url}#subdirectory=libs/tokenizer"))
        self.project.run("create", "e")
        self.assertEqual(self.value(), "1")
        self.assertEqual(self.value("tokenizer"), "sub")
        lock = self.project.lock_text("e")
        self.assertEqual(lock.count(f'commit-id = "{head}"'), 2)
        self.assertIn('requested-revision = "main"', lock)

    def test_a_branch_with_a_slash_in_a_git_requirement(self):
        git("checkout", "-q", "-b", "feature/x", cwd=self.work)
        self.commit("mylib", "slash")
        self.push("feature/x")
        self.write_manifest("", requirements=(f"mylib @ git+{self.url}@feature/x",))
        self.project.run("create", "e")
        self.assertEqual(self.value(), "slash")
        self.assertIn('requested-revision = "feature/x"', self.project.lock_text("e"))

    def test_a_deleted_branch_still_builds_from_the_locked_commit(self):
        git("checkout", "-q", "-b", "feature", cwd=self.work)
        feature = self.commit("mylib", "feature")
        self.push("feature")
        self.write_manifest(f'mylib = {{ git = "{self.url}", rev = "feature" }}\n')
        self.project.run("lock", "e")
        git("push", "-q", "origin", "--delete", "feature", cwd=self.work)
        self.project.run("create", "e")
        self.assertEqual(self.value(), "feature")
        self.assertIn(feature, self.project.lock_text("e"))

    def test_a_subdirectory_of_a_monorepo(self):
        self.commit("tokenizer", "sub", sub="libs/tokenizer")
        self.push("main")
        self.write_manifest(f'tokenizer = {{ git = "{self.url}", subdirectory = "libs/tokenizer" }}\n',
                            requirements=("tokenizer",))
        self.project.run("create", "e")
        self.assertEqual(self.value("tokenizer"), "sub")
        self.assertIn('subdirectory = "libs/tokenizer"', self.project.lock_text("e"))

    def test_a_private_repository_over_http_takes_credentials_from_the_environment(self):
        git("update-server-info", cwd=os.path.join(self.repos, "mylib.git"))
        self.http = GitHttpServer(self.repos, auth=("builder", "s3cret"))
        url = self.http.url + "/mylib.git"
        self.write_manifest(f'mylib = {{ git = "{url}", rev = "main" }}\n')
        denied = self.project.run("lock", "e", check=False)
        self.assertEqual(denied.returncode, 4, denied.stderr)
        self.assertIn(url, denied.stderr)
        env = {"ENVBOX_GIT_MYLIB_USERNAME": "builder", "ENVBOX_GIT_MYLIB_PASSWORD": "s3cret"}
        self.project.run("create", "e", env=env)
        self.assertEqual(self.value(), "1")
        self.assertNotIn("s3cret", self.project.lock_text("e"))
        self.assertTrue(any(auth for _, _, auth in self.http.requests))
        # The credentials go to the manifest's URL only: a lock that names another host (a
        # tampered or foreign lock) gets none, even where that host asks for them.
        other = GitHttpServer(self.repos, auth=("builder", "s3cret"))
        try:
            lock = self.project.lock_text("e").replace(url, other.url + "/mylib.git")
            with open(self.project.lock_path("e"), "w") as f:
                f.write(lock)
            self.project.run("delete", "e")
            for p in glob.glob(os.path.join(self.project.home, "store-v1", "builds", "*")):
                os.unlink(p)
            import shutil
            shutil.rmtree(os.path.join(self.project.home, "cache", "git"))
            r = self.project.run("create", "e", "--frozen", env=env, check=False)
            self.assertNotEqual(r.returncode, 0)
            self.assertTrue(other.requests)
            self.assertFalse(any(auth for _, _, auth in other.requests))
        finally:
            other.close()

    def test_a_node_unpacks_the_built_commit_without_the_repository(self):
        self.write_manifest(f'mylib = {{ git = "{self.url}", rev = "main" }}\n')
        self.project.run("create", "e")
        packed = os.path.join(self.tmp, "e.tar")
        self.project.run("pack", "e", "--output", packed)
        os.rename(os.path.join(self.repos, "mylib.git"), os.path.join(self.repos, "gone.git"))
        node = envboxtest.Project(self.tmp, root=os.path.join(self.tmp, "node", "proj"),
                                  home=os.path.join(self.tmp, "node", "home"))
        node.run("unpack", packed, "e")
        out = node.run("run", "e", "--", "python", "-c", "import mylib; print(mylib.VALUE)")
        self.assertEqual(out.stdout.strip(), "1")
        self.assertFalse(os.path.exists(os.path.join(node.home, "cache", "git")))

    def test_pip_installs_the_same_commit(self):
        self.commit("mylib", "2")
        self.push("main")
        self.write_manifest(f'mylib = {{ git = "{self.url}", rev = "main" }}\n')
        self.project.run("create", "e")
        venv = os.path.join(self.tmp, "venv")
        subprocess.run([envboxtest.PYTHON, "-m", "venv", "--without-pip", venv], check=True)
        python = os.path.join(venv, "bin", "python")
        pip = [python, envboxtest.PIP_WHEEL + "/pip", "install", "-q", "--no-index",
               "--find-links", os.path.join(self.tmp, "index", "files")]
        subprocess.run(pip + ["setuptools", "wheel"], check=True, capture_output=True)
        subprocess.run(pip + ["--no-build-isolation", f"git+{self.url}@main"], check=True,
                       capture_output=True, env={**os.environ, **GIT_ENV})
        code = ("import importlib.metadata as m, mylib; print(mylib.VALUE, sorted("
                "d.metadata['Name'] for d in m.distributions() if d.metadata['Name'] not in "
                "('pip', 'setuptools', 'wheel')), "
                "__import__('json').loads(m.distribution('mylib').read_text('direct_url.json'))"
                "['vcs_info']['commit_id'])")
        theirs = subprocess.run([python, "-c", code], capture_output=True, text=True,
                                check=True).stdout.strip()
        ours = self.project.run("run", "e", "--", "python", "-c", code).stdout.strip()
        self.assertEqual(ours, theirs)

    def test_refusals_name_the_culprit(self):
        self.write_manifest(f'mylib = {{ git = "{self.url}", rev = "{"0" * 40}" }}\n')
        r = self.project.run("lock", "e", check=False)
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn("0" * 40, r.stderr)
        for source, says in [
            ('mylib = { git = "ext::sh -c touch% /tmp/x" }\n', "https://, http://, ssh:// or file://"),
            ('mylib = { git = "https://u:p@host/r.git" }\n', "without credentials"),
            ('mylib = { git = "https://host/r.git", editable = true }\n', "never editable"),
            (f'mylib = {{ git = "{self.url}", subdirectory = "../x" }}\n', "inside the repository"),
            (f'mylib = {{ git = "{self.url}", rev = "main:refs/envbox/x" }}\n', "branch, tag or commit"),
            ('mylib = { git = "https://host/r.git", rev = "--upload-pack=x" }\n', "branch, tag or commit"),
        ]:
            self.write_manifest(source)
            r = self.project.run("lock", "e", check=False)
            self.assertEqual(r.returncode, 3, (source, r.stderr))
            self.assertIn(says, r.stderr, source)
        # A lock is hostile input too: a vcs entry that is not a git transport is never fetched.
        self.write_manifest(f'mylib = {{ git = "{self.url}", rev = "main" }}\n')
        self.project.run("lock", "e")
        lock = self.project.lock_text("e").replace(f'url = "{self.url}"', 'url = "ext::sh -c id"')
        with open(self.project.lock_path("e"), "w") as f:
            f.write(lock)
        r = self.project.run("create", "e", "--frozen", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("not an https, http, ssh or file URL", r.stderr)


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main()
