"""One reviewed lock, every site and checkout.

Mirrors: the manifest names an index by its canonical URL, and each site
reaches it through its own mirror (`ENVBOX_INDEX_<NAME>_URL`), two real HTTP servers on
127.0.0.1 serving the same simple index. The lock names the canonical index and its files as it
would serve them, never a mirror, so its bytes are the same at either site; a lock made at site
A creates at site B with A stopped; `doctor` checks the URL each index really uses and names the
variable that set it; an error names the mirror in effect.

Moved checkouts: a project has an identity (`manifests/.envbox-project`, written by init), so a
checkout moved with `mv` keeps its environments, pins and history, and a second clone on the same
machine gets environments of its own, told why."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "lock"),
                os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
import indexworld  # noqa: E402
from envboxtest import envbox, keep_or_remove, manifest_text  # noqa: E402
from indexworld import pkg  # noqa: E402

CANONICAL = "https://pypi.example.invalid/simple"
VARIABLE = "ENVBOX_INDEX_PYPI_URL"


def write_index(tmp):
    """tmp/www: one simple index, `pypi`, of demo-lib 1.0 (needing idna) and idna 3.10."""
    www = os.path.join(tmp, "www")
    indexworld.write_indexes(www, {"pypi": [pkg("demo-lib", "1.0", ["idna>=3"]), pkg("idna", "3.10")]})
    return www


class Mirrors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-mirrors-")
        www = write_index(cls.tmp)
        cls.site_a = indexworld.Server(www)
        cls.site_b = indexworld.Server(www)
        # A port nothing answers on: a server started and stopped.
        gone = indexworld.Server(www)
        cls.dead = gone.url
        gone.close()

    @classmethod
    def tearDownClass(cls):
        for s in (cls.site_a, cls.site_b):
            s.close()
        keep_or_remove(cls.tmp)

    def project(self, name):
        root = os.path.join(self.tmp, name)
        os.makedirs(os.path.join(root, "manifests"), exist_ok=True)
        with open(os.path.join(root, "manifests", "app.toml"), "w") as f:
            f.write(manifest_text(["demo-lib"], indexes=[("pypi", CANONICAL + "/", "")]))
        return root

    def lock_text(self, root):
        with open(os.path.join(root, "manifests", "pylock.app.toml")) as f:
            return f.read()

    def test_a_lock_made_at_one_site_creates_at_another_with_the_first_down(self):
        a = self.project("site-a")
        envbox("lock", "app", home=os.path.join(self.tmp, "home-a"), project=a,
               env={VARIABLE: self.site_a.url + "/pypi"})
        locked = self.lock_text(a)
        self.assertNotIn("127.0.0.1", locked)
        self.assertIn(f'index = "{CANONICAL}"', locked)
        self.assertIn('url = "https://pypi.example.invalid/files/pypi/demo_lib-1.0-py3-none-any.whl"',
                      locked)
        # The same lock through the other mirror: the same bytes.
        b = self.project("site-b")
        envbox("lock", "app", home=os.path.join(self.tmp, "home-b"), project=b,
               env={VARIABLE: self.site_b.url + "/pypi/"})
        self.assertEqual(self.lock_text(b), locked)

        # Site B creates the lock site A wrote, with A's mirror down: only B's own is asked.
        shutil.copy(os.path.join(a, "manifests", "pylock.app.toml"), os.path.join(b, "manifests"))
        asked = self.site_b.requests
        home_b = os.path.join(self.tmp, "home-b2")
        envbox("create", "app", home=home_b, project=b, env={VARIABLE: self.site_b.url + "/pypi"})
        self.assertGreater(self.site_b.requests, asked)
        out = envbox("run", "app", "--", "python", "-c", "import demo_lib, idna; print(demo_lib.__version__)",
                     home=home_b, project=b)
        self.assertEqual(out.stdout.strip(), "1.0")
        # With a mirror that is down and a canonical index that cannot be reached: exit 4, naming
        # the mirror's variable and both URLs tried.
        r = envbox("create", "app", home=os.path.join(self.tmp, "home-c"), project=b, check=False,
                   env={VARIABLE: self.dead + "/pypi"})
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn(VARIABLE, r.stderr)
        self.assertIn("pypi.example.invalid", r.stderr)

    def test_doctor_checks_the_url_each_index_really_uses(self):
        root = self.project("doctor")
        home = os.path.join(self.tmp, "home-doctor")
        r = envbox("doctor", home=home, project=root, check=False,
                   env={VARIABLE: self.site_b.url + "/pypi"})
        self.assertIn(f"pypi  {self.site_b.url}/pypi (mirror: {VARIABLE})  reachable", r.stdout)
        self.assertNotIn("NOT reachable", r.stdout + r.stderr)
        r = envbox("doctor", home=home, project=root, check=False, env={VARIABLE: self.dead + "/pypi"})
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f"{self.dead}/pypi (mirror: {VARIABLE})  NOT reachable", r.stdout)
        # An index page a mirror cannot serve names the mirror at `lock` too.
        r = envbox("lock", "app", home=home, project=root, check=False,
                   env={VARIABLE: self.dead + "/pypi"})
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn(f"index pypi (through the mirror {VARIABLE} sets)", r.stderr)


def git(cwd, *args):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
                          cwd=cwd, check=True, capture_output=True, text=True).stdout


class MovedCheckouts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-moved-")
        www = write_index(cls.tmp)
        cls.server = indexworld.Server(www)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        keep_or_remove(cls.tmp)

    def test_a_moved_checkout_keeps_its_environments_and_a_second_clone_gets_its_own(self):
        home = os.path.join(self.tmp, "home")
        first = os.path.join(self.tmp, "lab")
        os.makedirs(first)
        git(first, "init", "-q")
        envbox("init", "app", "--default-index", self.server.url + "/pypi", home=home, cwd=first)
        identity = os.path.join(first, "manifests", ".envbox-project")
        with open(identity) as f:
            self.assertRegex(f.read(), r"^envbox-project 1\nid [0-9a-f]{32}\nname lab\n$")
        envbox("add", "app", "demo-lib", home=home, cwd=first)
        envbox("pin", "app", "1", home=home, cwd=first)
        git(first, "add", "-A")
        git(first, "commit", "-qm", "app")

        def listed(cwd):
            import json
            return json.loads(envbox("list", "--json", home=home, cwd=cwd).stdout)

        before = listed(first)
        self.assertEqual([e["name"] for e in before], ["app"], before)
        # Moved: the same environments, pins and history; nothing is built again.
        moved = os.path.join(self.tmp, "lab-moved")
        os.rename(first, moved)
        after = listed(moved)
        self.assertEqual([(e["name"], e["current"], e["pinned"]) for e in after],
                         [("app", 1, [1])], after)
        r = envbox("create", "app", home=home, cwd=moved)
        self.assertIn("up to date", r.stdout + r.stderr)
        self.assertEqual(os.path.basename(envboxtest.current_generation(home, "app")), "gen-1")
        out = envbox("run", "app", "--", "python", "-c", "import demo_lib; print(demo_lib.__version__)",
                     home=home, cwd=moved)
        self.assertEqual(out.stdout.strip(), "1.0")
        # A second clone, while the moved checkout is still here: environments of its own, and
        # it is told whose the others are.
        clone = os.path.join(self.tmp, "lab-clone")
        git(self.tmp, "clone", "-q", moved, clone)
        r = envbox("create", "app", home=home, cwd=clone)
        self.assertIn(f"another checkout of this project, {moved}, has its environments", r.stderr)
        self.assertEqual([e["pinned"] for e in listed(clone)], [[]])
        self.assertEqual([e["pinned"] for e in listed(moved)], [[1]])


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main()
