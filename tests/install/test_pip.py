#!/usr/bin/env python3
"""Black-box tests of envbox's pip: in every environment `pip`, `pip3`, `pip3.X` and `python -m
pip` answer list, freeze, show and check for exactly the environment's distributions, line for
line as pip does (Debian's pip 23 run on a venv of the same wheels beside it), and refuse
install, uninstall and the rest with the envbox command that does it, inside `envbox run` and
outside it; verify stays clean and sees a tampered shim; a lock with a real pip gets no shim;
and `run`'s sandbox keeps the base interpreter's installation read-only.

    test_pip.py ENVBOX_BINARY
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
from envboxtest import PIP_WHEEL, PYTHON, Project, keep_or_remove, pip_install, site_packages  # noqa: E402
from wheelgen import Wheel  # noqa: E402


class MetaWheel(Wheel):
    """A wheel whose METADATA carries more fields (`meta`: "Key: value" lines)."""

    def __init__(self, *args, meta=(), **kw):
        super().__init__(*args, **kw)
        self.meta = list(meta)

    def _dist_info_files(self):
        out = super()._dist_info_files()
        key = f"{self.dist_info}/METADATA"
        out[key] = out[key].rstrip("\n") + "\n" + "".join(m + "\n" for m in self.meta) + "\n"
        return out


def stack():
    """alpha-pkg needs beta>=2 (beta 1.0 is there: a conflict) and gamma (missing); delta only
    on Python 2 and eps only with an extra, so neither counts."""
    return [
        MetaWheel("Alpha_Pkg", "1.0", {"alpha_pkg/__init__.py": "def main():\n    print('alpha')\n"},
                  requires=["beta>=2", "gamma", "delta; python_version < '3'", "eps; extra == 'x'"],
                  entry_points={"console_scripts": {"alpha": "alpha_pkg:main"}},
                  meta=["Summary: the first package", "Home-page: https://alpha.example",
                        "Author: A. Author", "Author-email: a@example.org", "License: MIT",
                        "Classifier: Programming Language :: Python :: 3",
                        "Project-URL: Documentation, https://alpha.example/docs"]),
        Wheel("beta", "1.0", {"beta.py": "B = 1\n"}),
        Wheel("zeta", "2.0rc1", {"zeta.py": ""}, requires=["Alpha-Pkg", "beta"]),
    ]


def vendored_packaging():
    """Wheels of packaging (and the pyparsing it imports) made from the copies Debian's pip
    vendors, imports rewritten: the environment's own packaging, without a network."""
    files = {}
    with zipfile.ZipFile(PIP_WHEEL) as z:
        for n in z.namelist():
            for pkg in ("packaging", "pyparsing"):
                prefix = f"pip/_vendor/{pkg}/"
                if n.startswith(prefix) and n.endswith(".py"):
                    text = z.read(n).decode().replace("pip._vendor.pyparsing", "pyparsing")
                    text = text.replace("from pip._vendor import pyparsing", "import pyparsing")
                    files.setdefault(pkg, {})[pkg + "/" + n[len(prefix):]] = text
    about = files["packaging"].get("packaging/__about__.py", "") + files["packaging"]["packaging/__init__.py"]
    version = re.search(r'__version__ = "([^"]+)"', about).group(1)
    if "pyparsing" not in files:
        return [Wheel("packaging", version, files["packaging"])]
    return [Wheel("packaging", version, files["packaging"], requires=["pyparsing"]),
            Wheel("pyparsing", "3.0.9", files["pyparsing"])]


class World(Project):
    def envbox(self, *args, check=True, **kw):
        return self.run(*args, check=check, drop=("ENVBOX_SANDBOX",), **kw)

    def pip(self, env, *args, tool="pip", check=False):
        """`envbox run ENV TOOL ARGS…`: TOOL is pip, pip3, pip3.X or `python -m pip`."""
        return self.envbox("run", env, "--", *tool.split(), *args, check=check)

    def bin(self, env, name):
        return os.path.join(self.current(env), "bin", name)

    def verify_clean(self, test, env):
        r = self.envbox("verify", env, "--deep", "--json", check=False)
        test.assertEqual(r.returncode, 0, r.stdout + r.stderr)


def minor_script(gen):
    """The `pip3.X` of the environment at `gen`, X its interpreter's minor version."""
    version = os.path.basename(glob.glob(os.path.join(gen, "bin", "python3.*"))[0])[len("python"):]
    return "pip" + version


class ReadOnlyCommands(unittest.TestCase):
    """`demo` is the stack alone; `full` has packaging too. `ref` is a venv pip installed the
    same wheels into, for pip's own answers."""

    @classmethod
    def setUpClass(cls):
        if not PIP_WHEEL:
            raise unittest.SkipTest("Debian's pip wheel (python3-pip-whl) is needed as the reference")
        cls.tmp = tempfile.mkdtemp(prefix="envbox-pip-")
        cls.w = World(cls.tmp)
        cls.w.lock("demo", stack())
        cls.w.lock("full", stack() + vendored_packaging())
        for env in ("demo", "full"):
            cls.w.envbox("create", env)
        wheels = os.path.join(cls.tmp, "ref-wheels")
        for w in stack() + vendored_packaging():
            w.build(wheels)
        cls.refs = {}
        for env, extra in (("demo", []), ("full", [w.name for w in vendored_packaging()])):
            cls.refs[env] = os.path.join(cls.tmp, "ref-" + env)
            pip_install(cls.refs[env], wheels, ["Alpha_Pkg", "beta", "zeta"] + extra)

    @classmethod
    def tearDownClass(cls):
        keep_or_remove(cls.tmp)

    @staticmethod
    def comparable(r, site, installer):
        """(exit status, stdout) with the site-packages path and the installer's name made alike."""
        out = r.stdout.replace(site, "<SITE>").replace(f"Installer: {installer}", "Installer: <I>")
        return r.returncode, out.replace(f'"installer": "{installer}"', '"installer": "<I>"')

    def real_pip(self, env, *args):
        venv = self.refs[env]
        r = subprocess.run([PYTHON, os.path.join(PIP_WHEEL, "pip"), "--python", os.path.join(venv, "bin", "python"),
                            "--disable-pip-version-check", *args], capture_output=True, text=True)
        return self.comparable(r, site_packages(venv), "pip")

    def envbox_pip(self, env, *args):
        return self.comparable(self.w.pip(env, *args), self.w.site(env), "envbox")

    def test_every_pip_lists_exactly_the_locked_distributions(self):
        gen = self.w.current("demo")
        expected = {"Alpha_Pkg": "1.0", "beta": "1.0", "zeta": "2.0rc1"}
        got = json.loads(self.w.pip("demo", "list", "--format=json", tool="python -m pip", check=True).stdout)
        self.assertEqual({d["name"]: d["version"] for d in got}, expected)
        self.assertEqual(self.w.pip("demo", "freeze", tool=minor_script(gen), check=True).stdout,
                         "Alpha_Pkg==1.0\nbeta==1.0\nzeta==2.0rc1\n")
        for tool in ("pip", "pip3", minor_script(gen), "python -m pip", "python3 -m pip"):
            r = self.w.pip("demo", "list", tool=tool, check=True)
            self.assertEqual(r.stdout, "Package   Version\n--------- -------\nAlpha_Pkg 1.0\nbeta      1.0\n"
                                       "zeta      2.0rc1\n", tool)
            self.assertTrue(os.path.exists(os.path.join(gen, "bin", tool.split()[0])), tool)
        # The shim itself is no distribution.
        code = "import importlib.metadata as m; print(sorted(d.metadata['Name'] for d in m.distributions()))"
        out = self.w.envbox("run", "demo", "--", "python", "-c", code).stdout
        self.assertEqual(out, "['Alpha_Pkg', 'beta', 'zeta']\n")

    def test_output_is_pips_line_for_line(self):
        for env, args in [("demo", ["list"]), ("demo", ["list", "--format=freeze"]),
                          ("demo", ["list", "--format=json"]), ("demo", ["list", "--format=freeze", "-v"]),
                          ("demo", ["freeze"]), ("demo", ["freeze", "--all", "--exclude", "beta"]),
                          ("demo", ["show", "zeta", "beta"]),
                          ("full", ["list", "--format=json", "-v"]), ("full", ["list", "--not-required"]),
                          ("full", ["show", "alpha-pkg", "zeta", "packaging", "nope"]),
                          ("full", ["show", "-v", "Alpha_Pkg"]), ("full", ["check"]), ("full", ["freeze"])]:
            with self.subTest(env=env, args=args):
                self.assertEqual(self.envbox_pip(env, *args), self.real_pip(env, *args))

    def test_show_fields(self):
        r = self.w.pip("full", "show", "alpha-pkg", check=True)
        self.assertEqual(r.stdout, "Name: Alpha_Pkg\nVersion: 1.0\nSummary: the first package\n"
                                   "Home-page: https://alpha.example\nAuthor: A. Author\n"
                                   "Author-email: a@example.org\nLicense: MIT\n"
                                   f"Location: {self.w.site('full')}\nRequires: beta, gamma\nRequired-by: zeta\n")
        files = self.w.pip("full", "show", "-f", "beta", check=True).stdout
        self.assertIn("\nFiles:\n  beta-1.0.dist-info/INSTALLER\n", files)
        self.assertIn("\n  beta.py\n", files)
        r = self.w.pip("full", "show", "nope")
        self.assertEqual((r.returncode, r.stdout, r.stderr), (1, "", "WARNING: Package(s) not found: nope\n"))

    def test_check_reports_a_missing_requirement_and_a_conflict(self):
        r = self.w.pip("full", "check")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, "alpha-pkg 1.0 requires gamma, which is not installed.\n"
                                   "alpha-pkg 1.0 has requirement beta>=2, but you have beta 1.0.\n")
        self.assertEqual(r.stderr, "")
        # Without packaging in the environment: presence only, and it says so.
        r = self.w.pip("demo", "check", tool="python -m pip")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, "alpha-pkg 1.0 requires gamma, which is not installed.\n")
        self.assertIn("packaging is not installed in demo", r.stderr)
        self.assertIn("versions and markers were not checked", r.stderr)

    def test_check_refuses_an_option_it_does_not_take(self):
        r = self.w.pip("full", "check", "--exclude", "x")
        self.assertEqual(r.returncode, 2)
        self.assertIn("envbox add full", r.stderr)

    def test_version_says_what_it_is(self):
        r = self.w.pip("demo", "--version", check=True)
        self.assertEqual(r.stdout, f"pip (envbox shim) for demo from {self.w.site('demo')}/pip "
                                   f"(python {envboxtest.PYV})\n")


class Refusals(unittest.TestCase):
    """Whatever would change the environment is refused with the envbox command that does it,
    inside `run` and outside it, and nothing changes: not the environment, not the base."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-pip-refuse-")
        cls.w = World(cls.tmp)
        cls.w.lock("demo", stack())
        cls.w.envbox("create", "demo")
        cls.intruder = Wheel("intruder", "0.1", {"intruder.py": ""}).build(os.path.join(cls.tmp, "w"))

    @classmethod
    def tearDownClass(cls):
        keep_or_remove(cls.tmp)

    def base_site(self):
        """What the base interpreter's site-packages hold, by name."""
        code = "import site, os, json; print(json.dumps({d: sorted(os.listdir(d)) if os.path.isdir(d) else None " \
               "for d in site.getsitepackages()}))"
        return subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, check=True).stdout

    def assert_refused(self, r, command):
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(command, r.stderr)
        self.assertEqual(r.stdout, "")

    def test_install_and_uninstall_name_the_envbox_command(self):
        before = self.base_site()
        gen = self.w.current("demo")
        cases = [
            (("run", "demo", "--", "pip", "install", "x"), "envbox add demo x"),
            (("run", "demo", "--", "pip3", "install", "-U", "x", "y>=2"),
             "envbox lock demo --upgrade-package x --upgrade-package y && envbox create demo"),
            (("run", "demo", "--", "pip", "install", "--upgrade", "torch"),
             "envbox lock demo --upgrade-package torch && envbox create demo"),
            (("run", "demo", "--", "python", "-m", "pip", "install", self.intruder), "envbox add demo " + self.intruder),
            (("run", "demo", "--", minor_script(gen), "install", "-r", "requirements.txt"),
             "envbox add demo PACKAGE...   (the requirements in requirements.txt)"),
            (("run", "demo", "--", "pip", "uninstall", "-y", "beta"), "envbox remove demo beta"),
            (("run", "demo", "--", "python", "-m", "pip", "uninstall", "y"), "envbox remove demo y"),
            (("run", "demo", "--", "pip", "download", "beta"), "envbox create demo"),
            (("run", "demo", "--", "pip", "wheel", "."), "envbox add demo PACKAGE"),
            (("run", "demo", "--", "pip", "cache", "purge"), "envbox add demo PACKAGE"),
        ]
        for args, command in cases:
            with self.subTest(args=args):
                self.assert_refused(self.w.envbox(*args, check=False), command)
        # Outside run: the generation's own scripts and python, as an IDE runs them.
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        for argv, command in [([self.w.bin("demo", "pip"), "install", "x"], "envbox add demo x"),
                              ([self.w.bin("demo", "pip3"), "uninstall", "beta"], "envbox remove demo beta"),
                              ([self.w.bin("demo", "python"), "-m", "pip", "install", "--user", "x"], "envbox add demo x")]:
            with self.subTest(argv=argv):
                self.assert_refused(subprocess.run(argv, capture_output=True, text=True, env=env), command)
        r = subprocess.run([self.w.bin("demo", "pip"), "list", "--format=freeze"], capture_output=True, text=True,
                           env=env, check=True)
        self.assertEqual(r.stdout, "Alpha_Pkg==1.0\nbeta==1.0\nzeta==2.0rc1\n")
        # Nothing changed: no file in the environment (no bytecode Python would have written for
        # the shim outside run either), none in the base interpreter's site-packages.
        self.w.verify_clean(self, "demo")
        self.assertEqual(self.base_site(), before)

    def test_unknown_options_and_commands_are_refused(self):
        for args in (["list", "--path", "/usr/lib"], ["list", "--bogus"], ["--python", PYTHON, "list"],
                     ["list", "--format", "xml"]):
            with self.subTest(args=args):
                r = self.w.pip("demo", *args)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn("ERROR:", r.stderr)
        r = self.w.pip("demo", "list", "--outdated")
        self.assert_refused(r, "envbox lock demo --upgrade")
        r = self.w.pip("demo", "help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("envbox add demo PACKAGE", r.stdout)


class VerifyAndTamper(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-pip-verify-")
        self.w = World(self.tmp)
        self.w.lock("demo", stack())
        self.w.envbox("create", "demo")

    def tearDown(self):
        keep_or_remove(self.tmp)

    def drift(self):
        r = self.w.envbox("verify", "demo", "--deep", "--json", check=False)
        self.assertEqual(r.returncode, 5, r.stdout)
        gen = self.w.current("demo") + "/"
        return sorted((d["kind"], d["path"].replace(gen, "")) for d in json.loads(r.stdout)["drift"])

    def writable(self, path):
        os.chmod(os.path.dirname(path), 0o755)  # a generation's folders are 0555

    def test_fresh_environment_verifies_clean_and_a_tampered_shim_is_reported(self):
        self.w.verify_clean(self, "demo")
        gen, site = self.w.current("demo"), self.w.site("demo")
        rel_site = os.path.relpath(site, gen)
        with open(os.path.join(site, "pip", "__init__.py"), "a") as f:
            f.write("\n# edited\n")
        os.chmod(self.w.bin("demo", "pip3"), 0o644)
        # Python's own cache where envbox's stand-in file was.
        cache = os.path.join(site, "pip", "__pycache__")
        self.writable(cache)
        os.unlink(cache)
        subprocess.run([self.w.bin("demo", "python"), "-c", "import pip"], check=True,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
        self.assertTrue(os.path.isdir(cache))
        got = self.drift()
        self.assertIn(("modified", f"{rel_site}/pip/__init__.py"), got)
        self.assertIn(("modified", f"{rel_site}/pip/__pycache__"), got)
        self.assertIn(("modified", "bin/pip3"), got)
        self.assertTrue(any(k == "extra" and p.startswith(f"{rel_site}/pip/__pycache__/") for k, p in got), got)
        # A missing launcher.
        self.writable(self.w.bin("demo", "pip"))
        os.unlink(self.w.bin("demo", "pip"))
        self.assertIn(("missing", "bin/pip"), self.drift())


    def test_a_generation_built_before_the_shim_verifies_clean_without_it(self):
        """A generation an older envbox built has no shim and no `pip-shim` record line: verify
        expects none there (upgrading envbox never turns an environment red)."""
        gen, site = self.w.current("demo"), self.w.site("demo")
        info = os.path.join(gen, ".envbox", "info")
        with open(info) as f:
            lines = f.read().splitlines(keepends=True)
        self.assertIn("pip-shim yes\n", lines)
        os.chmod(info, 0o644)
        with open(info, "w") as f:
            f.writelines(l for l in lines if not l.startswith("pip-shim "))
        os.chmod(gen, 0o755)
        os.chmod(os.path.join(gen, "bin"), 0o755)
        os.chmod(site, 0o755)
        shutil.rmtree(os.path.join(site, "pip"))
        for name in os.listdir(os.path.join(gen, "bin")):
            if name.startswith("pip"):
                os.unlink(os.path.join(gen, "bin", name))
        self.w.verify_clean(self, "demo")


class RealPipInTheLock(unittest.TestCase):
    def test_a_locked_pip_is_the_pip_and_no_shim_is_written(self):
        if not PIP_WHEEL:
            self.skipTest("Debian's pip wheel (python3-pip-whl) is needed")
        tmp = tempfile.mkdtemp(prefix="envbox-pip-real-")
        try:
            w = World(tmp)
            w.lock("tools", [Wheel("beta", "1.0", {"beta.py": ""}), PIP_WHEEL])
            w.envbox("create", "tools")
            version = os.path.basename(PIP_WHEEL).split("-")[1]
            r = w.envbox("run", "tools", "--", "python", "-m", "pip", "--version")
            self.assertTrue(r.stdout.startswith(f"pip {version} from {w.site('tools')}/pip "), r.stdout)
            with open(os.path.join(w.site("tools"), "pip", "__init__.py")) as f:
                self.assertNotIn("envbox", f.read())
            with open(w.bin("tools", "pip")) as f:
                self.assertIn("from pip._internal.cli.main import main", f.read())
            self.assertTrue(os.path.isdir(os.path.join(w.site("tools"), "pip", "__pycache__")))
            names = {d["name"] for d in json.loads(w.envbox("run", "tools", "--", "pip", "list", "--format=json",
                                                            "--disable-pip-version-check").stdout)}
            self.assertEqual(names, {"beta", "pip"})
            w.verify_clean(self, "tools")
        finally:
            keep_or_remove(tmp)


# Run inside the sandbox: try each write, print one JSON object path → "ok" or the error.
WRITER = """
import json, sys
out = {}
for p in sys.argv[1:]:
    try:
        with open(p, "a") as f:
            f.write("x")
        out[p] = "ok"
    except OSError as e:
        out[p] = e.strerror
print(json.dumps(out))
"""


def copied_interpreter(tmp):
    """The base interpreter installed under tmp/base: its binary copied (so that tmp/base is its
    prefix), its standard library linked entry by entry. Returns its path, or None where the
    copy does not find itself there (a shared libpython, another layout)."""
    real = os.path.realpath(PYTHON)
    stdlib = subprocess.run([PYTHON, "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])"],
                            capture_output=True, text=True, check=True).stdout.strip()
    base = os.path.join(tmp, "base")
    lib = os.path.join(base, "lib", os.path.basename(stdlib))
    os.makedirs(os.path.join(base, "bin"))
    os.makedirs(lib)
    copy = os.path.join(base, "bin", os.path.basename(real))
    shutil.copy2(real, copy)
    for e in os.listdir(stdlib):
        os.symlink(os.path.join(stdlib, e), os.path.join(lib, e))
    r = subprocess.run([copy, "-c", "import sys; print(sys.base_prefix)"], capture_output=True, text=True)
    return copy if r.returncode == 0 and r.stdout.strip() == base else None


class BaseInterpreterReadOnly(unittest.TestCase):
    """Every environment runs on the base interpreter: inside `run`, its installation is as
    read-only as the home, through a mount namespace or Landlock."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-pip-base-")
        self.python = copied_interpreter(self.tmp)
        if not self.python:
            self.skipTest("this interpreter does not run from a copy of itself")
        self.base = os.path.join(self.tmp, "base")
        stdlib = os.path.join(self.base, "lib", os.listdir(os.path.join(self.base, "lib"))[0])
        self.w = World(self.tmp)
        self.w.lock("demo", stack())
        self.env = {"ENVBOX_PYTHON": self.python}
        self.w.envbox("create", "demo", env=self.env)
        os.makedirs(os.path.join(self.tmp, "beside"))
        self.targets = [os.path.join(self.base, "stray"), os.path.join(self.base, "bin", "stray"),
                        os.path.join(stdlib, "stray")]
        self.control = os.path.join(self.tmp, "beside", "ok")

    def tearDown(self):
        keep_or_remove(self.tmp)

    def sandbox(self, **kw):
        r = self.w.envbox("doctor", check=False, env=self.env, **kw)
        return next((ln for ln in r.stdout.splitlines() if ln.startswith("run sandbox:")), "")

    def writes(self, *options, cwd=None, **kw):
        r = self.w.envbox("run", *options, "demo", "--", "python", "-c", WRITER, *self.targets, self.control,
                          env=self.env, cwd=cwd, **kw)
        return json.loads(r.stdout)

    def test_a_write_into_the_base_interpreter_fails_in_the_namespace(self):
        if "mount namespace" not in self.sandbox() or "Landlock" in self.sandbox():
            self.skipTest("no mount namespace here")
        got = self.writes()
        self.assertEqual(got.pop(self.control), "ok")
        self.assertEqual(set(got.values()), {"Read-only file system"}, got)
        # Unsandboxed, the same writes go through: what the sandbox keeps out.
        got = self.writes("--no-sandbox")
        self.assertEqual(set(got.values()), {"ok"}, got)
        # A base pip run from the environment cannot install into the base either.
        if not PIP_WHEEL:
            return
        before = sorted(os.listdir(self.base))
        intruder = Wheel("intruder", "0.1", {"intruder.py": ""}).build(os.path.join(self.tmp, "w"))
        r = self.w.envbox("run", "demo", "--", self.python, os.path.join(PIP_WHEEL, "pip"), "install", "-q",
                          "--no-deps", "--no-index", "--break-system-packages", "--disable-pip-version-check",
                          intruder, env=self.env, check=False)
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("Read-only file system", r.stdout + r.stderr)
        self.assertEqual(sorted(os.listdir(self.base)), before)

    def test_a_prefix_holding_the_working_directory_stays_writable_but_its_library_does_not(self):
        if "mount namespace" not in self.sandbox() or "Landlock" in self.sandbox():
            self.skipTest("no mount namespace here")
        work = os.path.join(self.base, "work")
        os.makedirs(work)
        got = self.writes(cwd=work)
        self.assertEqual(got[self.targets[0]], "ok")
        self.assertEqual(got[self.targets[2]], "Read-only file system")

    def test_landlock_keeps_the_base_interpreter_too(self):
        from test_sandbox import refuse_namespaces
        kw = {"preexec_fn": refuse_namespaces()}
        if "Landlock" not in self.sandbox(**kw):
            self.skipTest("no Landlock here: " + self.sandbox(**kw))
        got = self.writes(**kw)
        self.assertEqual(got.pop(self.control), "ok")
        self.assertEqual(set(got.values()), {"Permission denied"}, got)


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
