#!/usr/bin/env python3
"""Black-box tests of bytecode in the store: every module an environment installs gets its
.pyc, compiled once per store by the environment's interpreter and hard-linked, with the real
envbox binary, real wheels and real interpreters.

    test_bytecode.py ENVBOX_BINARY
"""
import glob
import importlib.util
import json
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
from envboxtest import PYTHON, Fixture, envbox, keep_or_remove, manifest_text, site_packages, \
    write_manifest  # noqa: E402
from wheelgen import Wheel  # noqa: E402

MODULES = {
    "pkg/__init__.py": "from .core import answer\n",
    "pkg/core.py": "def answer():\n    return 42\n\ndef boom():\n    raise ValueError('from pkg.core')\n",
    "pkg/sub/__init__.py": "",
    "pkg/sub/deep.py": "X = [i * i for i in range(10)]\n",
    "pkg/py2_only.py": "print 'this is Python 2'\n",  # does not compile: no .pyc, as pip leaves it
    "pkg/data.txt": "not a module\n",
}
# A second wheel: its own modules plus a .data/purelib module and a script that is not a module.
OTHER = {
    "other/__init__.py": "NAME = 'other'\n",
    "other-1.0.data/purelib/other_extra.py": "EXTRA = True\n",
    "other-1.0.data/scripts/tool.py": "#!python\nprint('tool')\n",
}


def cache_tag(python):
    return subprocess.run([python, "-I", "-c", "import sys; print(sys.implementation.cache_tag)"],
                          capture_output=True, text=True, check=True).stdout.strip()


def pycs(root):
    """Every .pyc under root, relative to it (symbolic links, like lib64, not followed)."""
    out = []
    for dirpath, _, files in os.walk(root):
        out += [os.path.relpath(os.path.join(dirpath, f), root) for f in files if f.endswith(".pyc")]
    return sorted(out)


def objects(home):
    """Every object file of the store (shard/name)."""
    base = os.path.join(home, "store-v1", "objects", "sha256")
    return {os.path.relpath(p, base) for p in glob.glob(os.path.join(base, "*", "*"))}


def bytecode_lists(home):
    return sorted(glob.glob(os.path.join(home, "store-v1", "wheels", "*", "bytecode", "*")))


class Bytecode(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-bytecode-")
        self.home = os.path.join(self.tmp, "home")
        self.fx = Fixture(self.tmp, "proj", [Wheel("pkg", "1.0", MODULES), Wheel("other", "1.0", OTHER)])
        self.tag = cache_tag(PYTHON)

    def tearDown(self):
        keep_or_remove(self.tmp)

    def run_envbox(self, *args, check=True, home=None, **kw):
        return envbox(*args, home=home or self.home, project=self.fx.project, check=check, **kw)

    def create(self, env_name, *extra, home=None, **kw):
        """create ENV from the fixture's lock; returns its --json report."""
        r = self.run_envbox("--json", "create", env_name, "--lock", self.fx.lock, *extra, home=home, **kw)
        return json.loads(r.stdout)

    def site(self, env, home=None):
        return site_packages(envboxtest.current_generation(home or self.home, env))

    def test_every_module_gets_its_pyc_and_python_uses_it_in_the_sandbox(self):
        report = self.create("a")
        site = self.site("a")
        t = self.tag
        self.assertEqual(pycs(site), sorted([
            f"other/__pycache__/__init__.{t}.pyc", f"__pycache__/other_extra.{t}.pyc",
            f"pkg/__pycache__/__init__.{t}.pyc", f"pkg/__pycache__/core.{t}.pyc",
            f"pkg/sub/__pycache__/__init__.{t}.pyc", f"pkg/sub/__pycache__/deep.{t}.pyc"]))
        self.assertEqual(report["compiled"], 6)
        self.assertEqual(report["bytecode"], 6)
        # Nothing else got one: the script, the data file, the module that does not compile.
        env_root = envboxtest.current_generation(self.home, "a")
        self.assertEqual(len(pycs(env_root)), 6)
        # Each .pyc is a PEP 552 unchecked-hash pyc (flags 0b01) of this interpreter's magic.
        magic = importlib.util.MAGIC_NUMBER if sys.executable == PYTHON else subprocess.run(
            [PYTHON, "-c", "import importlib.util, sys; sys.stdout.write(importlib.util.MAGIC_NUMBER.hex())"],
            capture_output=True, text=True, check=True).stdout
        magic = magic.hex() if isinstance(magic, bytes) else magic
        with open(os.path.join(site, f"pkg/__pycache__/core.{t}.pyc"), "rb") as f:
            head = f.read(16)
        self.assertEqual(head[:4].hex(), magic)
        self.assertEqual(int.from_bytes(head[4:8], "little"), 0b01)
        # Read-only, hard-linked from the store, with the store's fixed mtime.
        st = os.stat(os.path.join(site, f"pkg/__pycache__/core.{t}.pyc"))
        self.assertEqual(st.st_mode & 0o777, 0o444)
        self.assertGreaterEqual(st.st_nlink, 2)
        # In the read-only sandbox, the import takes the .pyc ("matches", "code object from").
        r = self.run_envbox("run", "a", "--", "python", "-v", "-c", "import pkg; print(pkg.answer())")
        self.assertEqual(r.stdout, "42\n")
        self.assertIn(f"code object from '{site}/pkg/__pycache__/core.{t}.pyc'", r.stderr)
        self.assertNotIn("could not create", r.stderr)  # Python never tried to write a cache
        self.run_envbox("verify", "a", "--deep")

    def test_vv_names_the_wheels_compiled_last_with_when_each_was_stored(self):
        r = self.run_envbox("-vv", "create", "a", "--lock", self.fx.lock)
        line = [l for l in r.stderr.splitlines() if l.strip().startswith("compiled last:")]
        self.assertEqual(len(line), 1, r.stderr)
        m = re.fullmatch(r"\s*compiled last: (\S+) stored ([\d.]+) s, compiled ([\d.]+) s; "
                         r"(\S+) stored ([\d.]+) s, compiled ([\d.]+) s \(seconds into the fetch\)",
                         line[0])
        self.assertTrue(m, line[0])
        self.assertEqual({m.group(1), m.group(4)}, {"pkg", "other"})
        for stored, compiled in ((m.group(2), m.group(3)), (m.group(5), m.group(6))):
            self.assertLessEqual(float(stored), float(compiled))
        self.assertGreaterEqual(float(m.group(3)), float(m.group(6)), "the last first")
        # A warm create compiles nothing and prints no such line.
        r = self.run_envbox("-vv", "create", "b", "--lock", self.fx.lock)
        self.assertNotIn("compiled last:", r.stderr)

    def test_envbox_jobs_sets_how_many_interpreters_compile(self):
        for jobs in ("1", "2"):
            with self.subTest(jobs=jobs):
                home = os.path.join(self.tmp, "jobs-" + jobs)
                r = self.run_envbox("-v", "create", "a", "--lock", self.fx.lock, home=home,
                                    env={"ENVBOX_JOBS": jobs})
                self.assertRegex(r.stderr, r"compiled now \((\d+) workers,")
                started = int(re.search(r"compiled now \((\d+) workers,", r.stderr).group(1))
                self.assertGreaterEqual(started, 1)
                self.assertLessEqual(started, int(jobs))

    def show_bytecode(self, env):
        """`show ENV`'s bytecode: the --json object and the text line."""
        shown = json.loads(self.run_envbox("show", env, "--json").stdout)["bytecode"]
        line = [l for l in self.run_envbox("show", env).stdout.splitlines() if l.startswith("bytecode:")]
        self.assertEqual(len(line), 1)
        return shown, line[0]

    def test_a_second_environment_links_the_same_pyc_and_compiles_nothing(self):
        self.create("a")
        # Alone in the store, every byte of its bytecode is its own.
        shown, line = self.show_bytecode("a")
        self.assertEqual(shown["files"], 6)
        self.assertGreater(shown["bytes"], 0)
        self.assertEqual((shown["unique_bytes"], shown["shared_bytes"]), (shown["bytes"], 0))
        self.assertRegex(line, r"^bytecode: 6 \.pyc files, \S+ \S+; \S+ \S+ unique to this generation, "
                               r"0 B shared with other generations or environments$")
        before = objects(self.home)
        lists = bytecode_lists(self.home)
        report = self.create("b")
        self.assertEqual(report["compiled"], 0)
        self.assertEqual(report["bytecode"], 6)
        self.assertEqual(objects(self.home), before, "no object was added")
        self.assertEqual(bytecode_lists(self.home), lists)
        a, b = self.site("a"), self.site("b")
        for rel in pycs(a):
            self.assertEqual(os.stat(os.path.join(a, rel)).st_ino, os.stat(os.path.join(b, rel)).st_ino, rel)
        # Now every .pyc of either is shared with the other: none would be freed with one alone.
        for env in ("a", "b"):
            shown, line = self.show_bytecode(env)
            self.assertEqual(shown["files"], 6)
            self.assertEqual((shown["unique_bytes"], shown["shared_bytes"]), (0, shown["bytes"]))
            self.assertIn("; 0 B unique to this generation,", line)
        self.run_envbox("delete", "b")
        shown, _ = self.show_bytecode("a")
        self.assertEqual(shown["shared_bytes"], 0)
        # A second generation of the same environment links the same objects: shared too.
        self.create("a", "--force")
        shown, _ = self.show_bytecode("a")
        self.assertEqual((shown["unique_bytes"], shown["shared_bytes"]), (0, shown["bytes"]))

    def test_the_bytes_do_not_depend_on_where_the_environment_lives(self):
        self.create("a")
        other_home = os.path.join(self.tmp, "elsewhere", "deeper", "home2")
        self.create("a", home=other_home)
        here, there = self.site("a"), self.site("a", home=other_home)
        self.assertNotEqual(here, there)
        self.assertEqual(pycs(here), pycs(there))
        for rel in pycs(here):
            with open(os.path.join(here, rel), "rb") as f1, open(os.path.join(there, rel), "rb") as f2:
                data = f1.read()
                self.assertEqual(data, f2.read(), rel)
            self.assertNotIn(self.tmp.encode(), data, rel)
        # The relative dfile is in the bytes; the import system puts the real path in its place.
        with open(os.path.join(here, f"pkg/__pycache__/core.{self.tag}.pyc"), "rb") as f:
            self.assertIn(b"pkg/core.py", f.read())

    def test_a_traceback_names_the_file_under_the_environment(self):
        self.create("a")
        site = self.site("a")
        r = self.run_envbox("run", "a", "--", "python", "-c", "import pkg.core; pkg.core.boom()", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(f'File "{site}/pkg/core.py", line 5, in boom', r.stderr)
        self.assertIn("raise ValueError('from pkg.core')", r.stderr)  # the source line, read by linecache
        r = self.run_envbox("run", "a", "--", "python", "-c", "import pkg.core; print(pkg.core.answer.__code__.co_filename)")
        self.assertEqual(r.stdout, f"{site}/pkg/core.py\n")

    def test_verify_finds_a_tampered_pyc_and_a_planted_one(self):
        self.create("a")
        site = self.site("a")
        core = os.path.join(site, f"pkg/__pycache__/core.{self.tag}.pyc")
        # A planted cache beside the linked ones (what Python would write with -O) is extra.
        planted = os.path.join(site, f"pkg/__pycache__/core.{self.tag}.opt-1.pyc")
        with open(planted, "wb") as f:
            f.write(b"planted")
        r = self.run_envbox("verify", "a", "--json", check=False)
        self.assertEqual(r.returncode, 5, r.stdout + r.stderr)
        drift = json.loads(r.stdout)["drift"]
        self.assertEqual([(d["kind"], d["path"]) for d in drift],
                         [("extra", f"lib/python{envboxtest.PYV}/site-packages/pkg/__pycache__/core.{self.tag}.opt-1.pyc")])
        os.unlink(planted)
        self.run_envbox("verify", "a")
        # An edited .pyc (through its hard link, as root or without the sandbox could) is drift
        # of the store object, named with its source.
        with open(core, "rb") as f:
            data = bytearray(f.read())
        data[-1] ^= 0xff
        os.chmod(core, 0o644)
        with open(core, "r+b") as f:
            f.write(data)
        os.chmod(core, 0o444)
        for deep in ([], ["--deep"]):
            r = self.run_envbox("verify", "a", "--json", *deep, check=False)
            self.assertEqual(r.returncode, 5, r.stdout + r.stderr)
            drift = json.loads(r.stdout)["drift"]
            self.assertTrue(any(f"pkg/__pycache__/core.{self.tag}.pyc" in d["path"] + d["detail"]
                                for d in drift), drift)
        # create --force repairs it: the .pyc is compiled again and linked fresh.
        r = self.run_envbox("create", "a", "--lock", self.fx.lock, "--force")
        self.assertIn("compiling", r.stderr)
        self.run_envbox("verify", "a", "--deep")
        site = self.site("a")
        r = self.run_envbox("run", "a", "--", "python", "-c", "import pkg; print(pkg.answer())")
        self.assertEqual(r.stdout, "42\n")

    def test_no_compile_and_the_manifest_setting(self):
        report = self.create("a", "--no-compile")
        self.assertEqual(report["bytecode"], 0)
        self.assertEqual(pycs(envboxtest.current_generation(self.home, "a")), [])
        self.assertEqual(bytecode_lists(self.home), [])
        # Python writes its own caches into an environment without them: through `run
        # --no-sandbox`, and when the environment's python runs directly (an activated venv, an
        # IDE). verify reports each as extra.
        gen = envboxtest.current_generation(self.home, "a")
        self.run_envbox("run", "a", "--no-sandbox", "--", "python", "-c", "import pkg",
                        drop=("PYTHONDONTWRITEBYTECODE",))
        subprocess.run([os.path.join(gen, "bin", "python"), "-c", "import other"], check=True,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
        r = self.run_envbox("verify", "a", "--json", check=False)
        self.assertEqual(r.returncode, 5)
        extra = [d["path"] for d in json.loads(r.stdout)["drift"] if d["kind"] == "extra"]
        site_rel = f"lib/python{envboxtest.PYV}/site-packages"
        self.assertEqual(sorted(extra), [f"{site_rel}/other/__pycache__/", f"{site_rel}/pkg/__pycache__/"])  # the folders, whole
        # Compiling is part of what a generation is: the same lock with bytecode is a new one.
        report = self.create("a")
        self.assertTrue(report["changed"])
        self.assertEqual(report["bytecode"], 6)
        # [install] compile = false in the manifest does what --no-compile does.
        write_manifest(self.fx.project, "m", manifest_text(["pkg"], extra="[install]\ncompile = false\n"))
        shutil.copy(self.fx.lock, os.path.join(self.fx.project, "manifests", "pylock.m.toml"))
        r = json.loads(self.run_envbox("--json", "create", "m").stdout)
        self.assertEqual(r["bytecode"], 0)

    def test_pythonoptimize_in_run_env_adds_that_level(self):
        write_manifest(self.fx.project, "opt", manifest_text(["pkg"], extra='[run.env]\nPYTHONOPTIMIZE = "2"\n'))
        shutil.copy(self.fx.lock, os.path.join(self.fx.project, "manifests", "pylock.opt.toml"))
        r = json.loads(self.run_envbox("--json", "create", "opt").stdout)
        self.assertEqual(r["bytecode"], 12)  # level 0 and level 2
        site = self.site("opt")
        self.assertIn(f"pkg/__pycache__/core.{self.tag}.opt-2.pyc", pycs(site))
        r = self.run_envbox("run", "opt", "--", "python", "-v", "-c", "import pkg")
        self.assertIn(f"code object from '{site}/pkg/__pycache__/core.{self.tag}.opt-2.pyc'", r.stderr)
        self.run_envbox("verify", "opt")

    def test_gc_removes_pyc_objects_nothing_links(self):
        self.create("a")
        with_bytecode = objects(self.home)
        self.create("a", "--no-compile")  # generation 2, no bytecode; generation 1 still has it
        r = self.run_envbox("--json", "gc", "--keep", "2")
        self.assertEqual(json.loads(r.stdout)["bytecode_removed"], 0)
        self.assertEqual(objects(self.home), with_bytecode)
        r = json.loads(self.run_envbox("--json", "gc", "--keep", "1").stdout)
        self.assertEqual(r["bytecode_removed"], 2)  # one list per wheel
        self.assertEqual(r["objects_removed"], 6)   # the six .pyc objects
        self.assertEqual(bytecode_lists(self.home), [])
        self.assertEqual(len(objects(self.home)), len(with_bytecode) - 6)
        self.run_envbox("verify", "a")
        self.run_envbox("verify", "--store", "--deep")

    def test_a_pyc_comes_with_its_own_source_only(self):
        # Two wheels ship shared/mod.py; [install] prefer makes winner's the one installed. The
        # winner's module does not compile (no .pyc), the loser's does: the loser's .pyc must
        # not be placed beside the winner's source, or Python would run the loser's code.
        fx = Fixture(self.tmp, "overlap", [
            Wheel("winner", "1.0", {"shared/__init__.py": "", "shared/mod.py": "print 'winner'\n"}),
            Wheel("loser", "1.0", {"shared/__init__.py": "", "shared/mod.py": "WHO = 'loser'\n"})])
        write_manifest(fx.project, "env", manifest_text(["winner", "loser"],
                                                        extra='[install]\nprefer = ["winner"]\n'))
        envbox("create", "env", "--lock", fx.lock, home=self.home, project=fx.project)
        site = self.site("env")
        with open(os.path.join(site, "shared", "mod.py")) as f:
            self.assertIn("winner", f.read())
        self.assertEqual(pycs(os.path.join(site, "shared")), [f"__pycache__/__init__.{self.tag}.pyc"])
        r = envbox("run", "env", "--", "python", "-c", "import shared.mod", home=self.home,
                   project=fx.project, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("SyntaxError", r.stderr)
        envbox("verify", "env", home=self.home, project=fx.project)

    def test_one_module_shipped_by_several_wheels_is_one_pyc_object(self):
        # The real CUDA 12 layout: every nvidia-*-cu12 wheel ships the same empty
        # nvidia/__init__.py, and empty __init__.py files in its own include/ and lib/.
        def cuda(name):
            return Wheel(f"nvidia-{name}-cu12", "12.8.0", {
                "nvidia/__init__.py": "",
                f"nvidia/{name}/__init__.py": "",
                f"nvidia/{name}/include/__init__.py": "",
                f"nvidia/{name}/lib/__init__.py": "",
                f"nvidia/{name}/lib/lib{name}.so.12": f"ELF {name}\n" * 32,
            }, tag="py3-none-manylinux_2_27_x86_64")
        fx = Fixture(self.tmp, "cuda", [cuda("cublas"), cuda("cudnn"), cuda("nccl")])
        report = json.loads(envbox("--json", "create", "cuda", "--lock", fx.lock, home=self.home,
                                   project=fx.project).stdout)
        self.assertEqual(report["bytecode"], 10)  # nvidia/__init__.py once, three more per wheel
        # Each wheel's list names the namespace module's .pyc: one object, the same digest.
        lists = bytecode_lists(self.home)
        self.assertEqual(len(lists), 3)
        namespace = set()
        for path in lists:
            with open(path) as f:
                rows = [l.split(" ", 3) for l in f.read().splitlines() if re.match(r"[0-9a-f]{64} ", l)]
            self.assertEqual(len(rows), 4, path)
            namespace |= {r[0] for r in rows if r[3] == "nvidia/__init__.py"}
        self.assertEqual(len(namespace), 1, namespace)
        (digest,) = namespace
        self.assertIn(f"{digest[:2]}/{digest[2:]}", objects(self.home))
        site = self.site("cuda")
        pyc = os.path.join(site, f"nvidia/__pycache__/__init__.{self.tag}.pyc")
        self.assertEqual(os.stat(pyc).st_nlink, 2)  # the store's object and this one link
        r = envbox("run", "cuda", "--", "python", "-v", "-c", "import nvidia.cudnn.lib", home=self.home,
                   project=fx.project)
        self.assertIn(f"code object from '{pyc}'", r.stderr)
        self.assertIn(f"code object from '{site}/nvidia/cudnn/lib/__pycache__/__init__.{self.tag}.pyc'",
                      r.stderr)
        envbox("verify", "cuda", "--deep", home=self.home, project=fx.project)

    def test_modules_compile_while_their_wheel_is_still_being_stored(self):
        # A wheel whose modules are stored in one ingest task and whose 64 MiB library in
        # another: the modules compile while the library is still being stored, in the pool the
        # ingest runs in (-v counts those "by early tasks").
        modules = {f"big/m{i}.py": f"def f{i}(x):\n    return x + {i}\n" for i in range(12)}
        modules["big/__init__.py"] = ""
        modules["big/lib/libbig.so"] = os.urandom(64 << 20)
        fx = Fixture(self.tmp, "early", [Wheel("big", "1.0", modules)])
        r = envbox("-v", "create", "early", "--lock", fx.lock, home=self.home, project=fx.project,
                   env={"ENVBOX_JOBS": "2"})
        m = re.search(r"bytecode: 13 \.pyc files linked, 13 compiled now \(\d+ workers, [\d.]+ "
                      r"thread-seconds; (\d+) by early tasks\)", r.stderr)
        self.assertTrue(m, r.stderr)
        self.assertGreater(int(m.group(1)), 0, r.stderr)
        envbox("verify", "early", "--deep", home=self.home, project=fx.project)

    def test_the_offline_examples_environments_have_bytecode(self):
        # The demo's example, generated from the wheels Debian ships, as scripts/demo makes it.
        root = os.path.join(HERE, "..", "..")
        copy = os.path.join(self.tmp, "repo")
        shutil.copytree(os.path.join(root, "examples", "offline"), os.path.join(copy, "examples", "offline"),
                        ignore=shutil.ignore_patterns("wheels", "pylock.*", "envbox.toml"))
        shutil.copytree(os.path.join(root, "tools"), os.path.join(copy, "tools"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        example = os.path.join(copy, "examples", "offline")
        subprocess.run([sys.executable, os.path.join(example, "generate.py")], check=True,
                       capture_output=True)
        for env in ("train", "infer"):
            envbox("create", env, home=self.home, project=example)
        train = site_packages(envboxtest.current_generation(self.home, "train"))
        infer = site_packages(envboxtest.current_generation(self.home, "infer"))
        # Every module of Debian's pip, setuptools and wheel that compiles has its .pyc; envbox's
        # own pip, in an environment that locks none, has none (env/venv.hpp).
        for site in (train, infer):
            shim = os.path.isfile(os.path.join(site, "pip", "__pycache__"))
            sources = [os.path.relpath(os.path.join(d, f), site) for d, _, fs in os.walk(site)
                       for f in fs if f.endswith(".py") and ".dist-info" not in d and
                       not (shim and os.path.relpath(d, site).split(os.sep)[0] == "pip")]
            expected = sorted(os.path.join(os.path.dirname(p), "__pycache__",
                                           os.path.basename(p)[:-3] + f".{self.tag}.pyc") for p in sources)
            self.assertGreater(len(expected), 10)
            self.assertEqual(pycs(site), expected, site)
        self.assertIn("pip/__pycache__/__init__", " ".join(pycs(train)))
        # `wheel` is in both: its .pyc files are the same objects.
        wheel_pyc = f"wheel/__pycache__/__init__.{self.tag}.pyc"
        self.assertEqual(os.stat(os.path.join(train, wheel_pyc)).st_ino,
                         os.stat(os.path.join(infer, wheel_pyc)).st_ino)
        shown = json.loads(envbox("show", "infer", "--json", home=self.home, project=example).stdout)
        self.assertGreater(shown["bytecode"]["files"], 0)
        self.assertGreater(shown["bytecode"]["shared_bytes"], 0)
        r = envbox("run", "train", "--", "python", "-v", "-c", "import pip", home=self.home, project=example)
        self.assertIn(f"code object from '{train}/pip/__pycache__/__init__.{self.tag}.pyc'", r.stderr)
        for env in ("train", "infer"):
            envbox("verify", env, "--deep", home=self.home, project=example)

    def test_two_interpreters_never_share_a_pyc(self):
        other = None
        for v in ("3.12", "3.13", "3.10"):
            for cand in sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{v}*/bin/python{v}"))) + \
                    [shutil.which(f"python{v}") or ""]:
                if cand and os.path.exists(cand) and "shims" not in cand:
                    other = cand
                    break
            if other:
                break
        if not other:
            self.skipTest("no second CPython (3.10, 3.12 or 3.13) on this machine")
        self.create("a")
        report = self.create("b", env={"ENVBOX_PYTHON": other})
        other_tag = cache_tag(other)
        self.assertNotEqual(other_tag, self.tag)
        self.assertEqual(report["compiled"], 6, "nothing of the 3.11 bytecode serves another interpreter")
        a, b = self.site("a"), self.site("b")
        self.assertTrue(all(other_tag in p for p in pycs(b)), pycs(b))
        inodes_a = {os.stat(os.path.join(a, p)).st_ino for p in pycs(a)}
        inodes_b = {os.stat(os.path.join(b, p)).st_ino for p in pycs(b)}
        self.assertFalse(inodes_a & inodes_b)
        self.assertEqual(len(bytecode_lists(self.home)), 4)
        r = self.run_envbox("run", "b", "--", "python", "-v", "-c", "import pkg", env={"ENVBOX_PYTHON": other})
        self.assertIn(f"pkg/__pycache__/core.{other_tag}.pyc matches", r.stderr)
        self.run_envbox("verify", "b", env={"ENVBOX_PYTHON": other})
        self.run_envbox("verify", "a")


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main()
