#!/usr/bin/env python3
"""pip as a differential oracle for `envbox lock`: many small seeded worlds of real wheels, each
resolved by Debian's pip (`pip install --dry-run --report -`) and locked by envbox; envbox's
{name: version} must be pip's install set, and where pip finds no solution envbox must fail
(exit 3). The worlds where the two differ, rightly or through a known envbox bug, are listed by
id in pip_differences.md beside this file with the reason; only those are skipped, and a listed
world that agrees again fails until its entry is removed. Small hand-made worlds pin each kind
of difference: their pip and envbox answers are asserted exactly.

A random world has 3-6 packages in layers (a package depends on later ones, now and then on an
earlier one: a cycle) and asks for 1-3 of the first. Its versions cover what envbox must agree
with pip on: pre-releases newer than the releases and packages with nothing else,
requirements naming a pre-release (`==1.1rc1`, `>=2.0b1`), local versions (`1.0+cu128` beside
`1.0`), post-releases, extras (Provides-Extra, `; extra == "x"`, `pkg[x]`, an extra asking for
its own package's other extra, an extra no version provides), environment markers
(python_version compared as a version, sys_platform, platform_machine, platform_system),
Requires-Python in METADATA (and on the page, as `data-requires-python`), wheels for another
Python or platform only, compressed and legacy tags, yanked files (`data-yanked`), exclusive
ordering (`>1.0` against `1.0.post1`, `<2.0` against `2.0a1`), `==1.*`, `~=`, zero padding
(`==1.0.0`), cycles and name spellings (`Gamma.Core` for gamma-core). Even worlds are flat
directories (pip's --find-links), odd ones simple-API trees (`<root>/<project>/index.html`,
pip's --index-url file://): envbox's file:// index reads both.

The generator leaves out what differs by design (pip_differences.md, "By design"): `<`, `>` and
`!=` naming a pre-release, a pre-release-only package under a specifier naming none, and a
dependency's `==` pin of a yanked version; the hand-made worlds show each.

The target is the interpreter pip runs on (/usr/bin/python3 on Linux): the manifest names its
X.Y and manylinux_<its glibc>_<its machine>, so both resolve for the same Python and tags. pip
evaluates markers with the real patch version (3.11.2), envbox with X.Y.0, so no world compares
python_full_version past X.Y.0 or has a Requires-Python finer than X.Y.

    test_pip_differential.py ENVBOX_BINARY

ENVBOX_PIP_DIFF_SEED and ENVBOX_PIP_DIFF_WORLDS explore other worlds (the differences file then
does not apply: every difference is reported); ENVBOX_TEST_KEEP=1 keeps the worlds.
"""
import html
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import unittest
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
from envboxtest import envbox, keep_or_remove, manifest_text, packages, sha256_file  # noqa: E402
from wheelgen import Wheel, normalize  # noqa: E402

DEBIAN_PYTHON = "/usr/bin/python3"
SEED = 3305  # issue 33, item 5
WORLDS = 80
DIFFERENCES = os.path.join(HERE, "pip_differences.md")
NAMES = ["alpha", "beta-tools", "gamma_core", "delta.io", "epsilon", "Zeta-Py", "eta", "theta"]
PRE = re.compile(r"(a|b|rc|\.dev)\d+")


def oracle_target():
    """(major, minor, machine, glibc as '2_36') of the interpreter pip runs on, or None."""
    probe = ("import json, platform, sys; print(json.dumps([sys.version_info[0], sys.version_info[1], "
             "platform.machine(), platform.libc_ver()[1], sys.platform]))")
    r = subprocess.run([DEBIAN_PYTHON, "-c", probe], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    major, minor, machine, glibc, plat = json.loads(r.stdout)
    if plat != "linux" or machine not in ("x86_64", "aarch64") or not glibc:
        return None
    return major, minor, machine, glibc.replace(".", "_")


class Version:
    """A package version of a world: its wheel, what its METADATA says and what its page says."""

    def __init__(self, name, version, requires=(), *, tag="py3-none-any", requires_python=None,
                 page_requires_python=False, extras=(), yanked=False):
        self.name, self.version = name, version
        self.tag = tag
        self.requires = list(requires)           # Requires-Dist
        self.extras = list(extras)               # Provides-Extra
        self.requires_python = requires_python   # METADATA's Requires-Python
        self.page_requires_python = page_requires_python  # on the page too (index worlds)
        self.yanked = yanked                     # data-yanked on the page (index worlds)

    def wheel(self):
        mod = normalize(self.name).replace("-", "_")
        return Wheel(self.name, self.version, {f"{mod}/__init__.py": f"__version__ = {self.version!r}\n"},
                     tag=self.tag, requires=self.requires, requires_python=self.requires_python,
                     provides_extras=self.extras)

    def describe(self):
        bits = [f"{self.name} {self.version}"]
        if self.tag != "py3-none-any":
            bits.append(f"[{self.tag}]")
        if self.requires_python:
            bits.append(f"Requires-Python {self.requires_python}" + (" (page too)" * self.page_requires_python))
        if self.yanked:
            bits.append("YANKED")
        if self.extras:
            bits.append("extras " + ",".join(self.extras))
        return " ".join(bits) + "".join(f"\n      {r}" for r in self.requires)


class World:
    """The versions of a world, the requirements asked for, and its layout on disk."""

    def __init__(self, world_id, layout, versions, requirements):
        self.id, self.layout, self.versions, self.requirements = world_id, layout, versions, requirements

    def write(self, root):
        """Builds the wheels under root: a flat directory, or a simple-API tree whose pages
        carry data-requires-python and data-yanked. Returns (envbox's index URL, pip's options)."""
        if self.layout == "flat":
            for ver in self.versions:
                ver.wheel().build(root)
            return f"file://{root}", ["--no-index", "--find-links", root]
        pages = {}
        for ver in self.versions:
            path = ver.wheel().build(os.path.join(root, "files"))
            fn = os.path.basename(path)
            attrs = ""
            if ver.requires_python and ver.page_requires_python:
                attrs += f' data-requires-python="{html.escape(ver.requires_python)}"'
            if ver.yanked:
                attrs += ' data-yanked=""'
            href = f"../files/{fn}".replace("+", "%2B")
            pages.setdefault(normalize(ver.name), []).append(
                f'<a href="{href}#sha256={sha256_file(path)}"{attrs}>{fn}</a><br/>')
        for project, anchors in pages.items():
            os.makedirs(os.path.join(root, project), exist_ok=True)
            with open(os.path.join(root, project, "index.html"), "w") as f:
                f.write("<!DOCTYPE html>\n<html><body>\n" + "\n".join(anchors) + "\n</body></html>\n")
        return f"file://{root}", ["--index-url", f"file://{root}"]

    def describe(self):
        return (f"world {self.id} ({self.layout}): requirements {self.requirements}\n" +
                "\n".join("  " + v.describe() for v in self.versions))


class RandomWorld(World):
    """World `index` of `seed`: the same world on every run and machine of the same target."""

    def __init__(self, seed, index, target):
        super().__init__(f"{seed}-{index:03d}", "index" if index % 2 else "flat", [], [])
        self.rng = random.Random(f"{seed}/{index}")
        self.major, self.minor, self.machine, _ = target
        self.generate()

    def version_list(self):
        """The versions of one package, ascending, in one of the shapes."""
        rng = self.rng
        finals = sorted(rng.sample(["0.9", "1.0", "1.1", "1.2", "2.0", "2.1", "3.0"], rng.randint(1, 3)),
                        key=sort_key)
        shape = rng.choices(["plain", "pre-newer", "pre-only", "local", "post"], [4, 3, 1, 2, 1])[0]
        if shape == "pre-newer":
            top = finals[-1].split(".")
            nxt = f"{top[0]}.{int(top[1]) + 1}"
            finals += rng.sample([f"{nxt}rc1", f"{nxt}b2", f"{nxt}.dev1", f"{int(top[0]) + 1}.0a1"], rng.randint(1, 2))
        elif shape == "pre-only":
            finals = rng.sample(["1.0a1", "1.0b2", "1.0rc1", "2.0b1", "2.0.dev3"], rng.randint(1, 3))
        elif shape == "local":
            base = rng.choice(finals)
            finals += rng.sample([f"{base}+{self.cuda}", f"{base}+cpu"], rng.randint(1, 2))
            if rng.random() < 0.3:
                finals.remove(base)  # only local versions of it
        elif shape == "post":
            finals.append(rng.choice(finals) + ".post1")
        return sorted(set(finals), key=sort_key)

    def specifier(self, versions, yanked=()):
        """A specifier over `versions`, the empty one often, now and then an impossible one; no
        `==` pin of a version in `yanked` (a dependency's: by design, pip_differences.md)."""
        rng = self.rng
        v = rng.choice(versions)
        pub = v.split("+")[0]
        lo, hi = sorted(rng.sample(versions, 2), key=sort_key) if len(versions) > 1 else (v, v)
        rel = re.match(r"\d+(\.\d+)?", pub).group(0)
        # `<`, `>` and `!=` name no pre-release (`<2.0` where 2.0a1 exists, never `<2.0a1`).
        final = rel if PRE.search(pub) else pub
        top = hi.split("+")[0]
        top = re.match(r"\d+(\.\d+)?", top).group(0) if PRE.search(top) else top
        low = lo.split("+")[0]
        span = f">={low},<{top}" if sort_key(low) < sort_key(top) else f">={low}"
        pin = f">={pub}" if pub in yanked else f"=={v}"
        if all(PRE.search(x) for x in versions):
            # Only pre-releases: a specifier names one, or is empty.
            forms = [("", 10), (f">={pub}", 5), (pin, 2), (f"<={pub}", 1), (span, 2)]
        else:
            forms = [("", 10), (f">={pub}", 5), (f"<{final}", 1), (pin, 2), (f"!={final}", 1), (f">{final}", 1),
                     (f"<={pub}", 1), (f"~={rel}", 1), (f"=={rel.split('.')[0]}.*", 1),
                     (span, 2), (f"=={rel}.0" if rel == pub and pub not in yanked else "", 1),
                     (">=9", 0.2)]
        return rng.choices([f for f, _ in forms], [w for _, w in forms])[0]

    def marker(self):
        """An environment marker; about two in three hold on the target."""
        M, m, machine = self.major, self.minor, self.machine
        return self.rng.choice([
            f'python_version >= "{M}.{m}"', f'python_version < "{M}.{m}"', f'python_version > "{M}.{m - 2}"',
            'sys_platform == "linux"', 'sys_platform == "win32"', f"platform_machine == '{machine}'",
            'platform_machine == "riscv64"', 'platform_system != "Darwin"',
            f'os_name == "nt" or python_version >= "{M}.{m}"', 'implementation_name == "cpython"',
            f'python_full_version >= "{M}.{m}.0"'])

    def requirement(self, target, root=False):
        """A requirement on package number `target`: its name spelled some way, maybe an extra,
        a specifier, maybe a marker."""
        rng = self.rng
        name = self.names[target]
        if rng.random() < 0.15:
            name = respell(name, rng)
        text = name
        if self.extras_of[target] and rng.random() < 0.4:
            text += "[" + rng.choice(sorted(self.extras_of[target]) + ["nope"]) + "]"
        text += self.specifier(self.lists[target], () if root else self.yanked_of[target])
        if rng.random() < 0.2:
            text += "; " + self.marker()
        return text

    def generate(self):
        rng = self.rng
        M, m = self.major, self.minor
        count = rng.randint(3, 6)
        self.cuda = rng.choice(["cu128", "cu130"])  # one CUDA line a world: envbox refuses a mix
        self.names = rng.sample(NAMES, count)
        self.lists = [self.version_list() for _ in range(count)]
        self.extras_of = [set() for _ in range(count)]
        self.yanked_of = [set() for _ in range(count)]  # public versions
        made = []
        for k in range(count):
            for v in self.lists[k]:
                ver = Version(self.names[k], v)
                roll = rng.random()
                if roll < 0.06:
                    ver.tag = rng.choice(["py3-none-win_amd64",
                                          f"cp{M}{m + 1}-cp{M}{m + 1}-manylinux_2_17_{self.machine}",
                                          "py3-none-macosx_11_0_arm64", f"py3-none-manylinux_2_99_{self.machine}"])
                elif roll < 0.16:
                    ver.tag = rng.choice([f"cp{M}{m}-cp{M}{m}-manylinux_2_17_{self.machine}",
                                          f"cp{M}{m}-abi3-manylinux2014_{self.machine}", "py2.py3-none-any",
                                          f"py{M}{m}-none-any"])
                if rng.random() < 0.12:
                    ver.requires_python = rng.choice([">=3.8", f">={M}.{m}", f">={M}.{m + 1}", f"<{M}.{m}",
                                                      f"!={M}.{m}.*", f"~={M}.{m - 1}", f">=3.8,<{M}.{m}"])
                    ver.page_requires_python = rng.random() < 0.5
                ver.yanked = self.layout == "index" and rng.random() < 0.1
                if ver.yanked:
                    self.yanked_of[k].add(v.split("+")[0])
                if rng.random() < 0.25:
                    ver.extras = rng.sample(["x", "gpu"], rng.randint(1, 2))
                    self.extras_of[k].update(ver.extras)
                made.append((k, ver))
        for k, ver in made:
            later = list(range(k + 1, count))
            for t in rng.sample(later, min(len(later), rng.choice([0, 0, 1, 1, 2, 3]))):
                ver.requires.append(self.requirement(t))
            if k > 0 and rng.random() < 0.05:  # a cycle back to an earlier package
                ver.requires.append(self.names[rng.randrange(k)])
            for extra in ver.extras if later else ():
                dep = self.requirement(rng.choice(later)).split(";")[0]
                form = rng.choice([f'extra == "{extra}"', f"extra == '{extra}'",
                                   f'python_version >= "3.8" and extra == "{extra}"',
                                   f'(extra == "{extra}" or extra == "all")'])
                ver.requires.append(f"{dep}; {form}")
            if len(ver.extras) > 1 and rng.random() < 0.5:  # an extra asking for its package's other
                ver.requires.append(f'{ver.name}[{ver.extras[1]}]; extra == "{ver.extras[0]}"')
            self.versions.append(ver)
        for t in rng.sample(range(min(3, count)), rng.randint(1, min(3, count))):
            self.requirements.append(self.requirement(t, root=True))


def known_worlds(target):
    """The hand-made worlds: (world, pip's answer, envbox's answer), None for "no solution".
    Each one where the two differ is listed in pip_differences.md with its reason."""
    M, m, _, _ = target
    V = Version
    other_tag = "py3-none-win_amd64"
    return [(World(*w[:4]), w[4], w[5]) for w in [
        # By design: uv's reading of "names a pre-release" takes every operator.
        ("known-exclusive", "flat", [V("lib", "1.0"), V("lib", "2.0b1")], ["lib<2.0b2"],
         {"lib": "1.0"}, {"lib": "2.0b1"}),
        ("known-not-equal", "flat", [V("lib", "1.0"), V("lib", "2.0b1")], ["lib!=2.0b2"],
         {"lib": "1.0"}, {"lib": "2.0b1"}),
        # By design: PEP 440 takes a pre-release when nothing else matches; pip 23's packaging
        # does so only for an empty specifier.
        ("known-pre-only", "flat", [V("lib", "1.0b1"), V("lib", "2.0b1")], ["lib>=1.0"],
         None, {"lib": "2.0b1"}),
        ("known-pre-only-empty", "flat", [V("lib", "1.0b1"), V("lib", "2.0b1")], ["lib"],
         {"lib": "2.0b1"}, {"lib": "2.0b1"}),
        # By design: only the user's `==` admits a yanked version (uv's rule).
        ("known-yanked-dependency-pin", "index", [V("app", "1.0", ["lib==1.0"]), V("lib", "1.0", yanked=True),
                                                 V("lib", "2.0")], ["app"],
         {"app": "1.0", "lib": "1.0"}, None),
        ("known-yanked-user-pin", "index", [V("lib", "1.0", yanked=True), V("lib", "2.0")], ["lib==1.0"],
         {"lib": "1.0"}, {"lib": "1.0"}),
        # pip's order: `lib>1.0.dev1` names no pre-release for pip, and pip gives app up before
        # pinning other, whose `lib>=1.0.dev1` would name one.
        ("known-pip-order", "flat", [V("app", "1.0", ["lib>1.0.dev1"]), V("lib", "0.9"), V("lib", "1.0.dev1"),
                                     V("lib", "1.0rc1"), V("other", "1.0", ["lib>=1.0.dev1"])], ["app", "other"],
         None, {"app": "1.0", "lib": "1.0rc1", "other": "1.0"}),
        # Once envbox bugs, now agreeing (decisions.cpp): kept as regression tests.
        # A pre-release refused for want of a naming requirement is not a lasting fact.
        ("known-prerelease-learned", "flat", [V("app", "1.0", ["lib>=1.1rc1"]), V("app", "2.0", ["lib"]),
                                              V("lib", "1.0", ["dep==9"]), V("lib", "1.1rc1"), V("dep", "1.0")],
         ["app"], {"app": "1.0", "lib": "1.1rc1"}, {"app": "1.0", "lib": "1.1rc1"}),
        # "Nothing but pre-releases" counts only versions the target can install.
        ("known-unusable-final-tag", "flat", [V("lib", "1.0", tag=other_tag), V("lib", "2.0b1")], ["lib"],
         {"lib": "2.0b1"}, {"lib": "2.0b1"}),
        ("known-unusable-final-python", "index", [V("lib", "1.0", requires_python=f">={M}.{m + 1}",
                                                    page_requires_python=True), V("lib", "2.0b1")], ["lib"],
         {"lib": "2.0b1"}, {"lib": "2.0b1"}),
        # The permission is the package's, whichever extra asks.
        ("known-extra-prerelease", "flat", [V("app", "1.0", ["lib[gpu]>=2.0b1"]), V("lib", "1.0", extras=["x", "gpu"]),
                                            V("lib", "2.0b1", ['lib[x]; extra == "gpu"'], extras=["x", "gpu"])],
         ["app"], {"app": "1.0", "lib": "2.0b1"}, {"app": "1.0", "lib": "2.0b1"}),
        # PEP 592: only an exact pin (no `.*`) takes a yanked version, and only where every match is yanked.
        ("known-yanked-wildcard", "index", [V("lib", "1.0"), V("lib", "1.1", yanked=True)], ["lib==1.*"],
         {"lib": "1.0"}, {"lib": "1.0"}),
        ("known-yanked-local", "index", [V("lib", "1.0"), V("lib", "1.0+cpu", yanked=True)], ["lib==1.0"],
         {"lib": "1.0"}, {"lib": "1.0"}),
        ("known-yanked-pin-and-bound", "index", [V("lib", "1.0", yanked=True)], ["lib==1.0,>=0.5"],
         {"lib": "1.0"}, {"lib": "1.0"}),
    ]]


def sort_key(v):
    """Enough of PEP 440's order for the versions generated here (a sort key, not a parser)."""
    m = re.fullmatch(r"(\d+)\.(\d+)(?:(a|b|rc)(\d+))?(?:\.post(\d+))?(?:\.dev(\d+))?(?:\+(\w+))?", v)
    major, minor, pre, pre_n, post, dev, local = m.groups()
    pre_rank = {"a": 0, "b": 1, "rc": 2}.get(pre, 3 if not dev or post else -1)
    return (int(major), int(minor), pre_rank, int(pre_n or 0), int(post or -1), int(dev or 1 << 30), local or "")


def respell(name, rng):
    """The same project under another spelling PEP 503 folds to it (`Gamma.Core`)."""
    parts = re.split(r"[-_.]+", name)
    return rng.choice(["-", "_", "."]).join(p.capitalize() if rng.random() < 0.5 else p.upper() for p in parts)


def pip_answer(pip_options, requirements):
    """({canonical name: version} pip would install, or None where it finds no solution; its
    stderr)."""
    cmd = [DEBIAN_PYTHON, "-m", "pip", "--isolated", "--disable-pip-version-check", "install", "--dry-run",
           "--ignore-installed", "--break-system-packages", "--quiet", "--report", "-"] + pip_options + requirements
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr
    installs = json.loads(r.stdout)["install"]
    return {normalize(i["metadata"]["name"]): i["metadata"]["version"] for i in installs}, r.stderr


def listed_differences():
    """{world id: reason} from pip_differences.md: a line `- \\`ID\\`: reason` per listed world."""
    with open(DIFFERENCES) as f:
        return dict(re.findall(r"^- `([\w-]+)`:? *(.*)$", f.read(), re.M))


class PipDifferential(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-pipdiff-")
        cls.home = os.path.join(cls.tmp, "home")
        cls.proj = os.path.join(cls.tmp, "proj")
        cls.target = oracle_target()
        cls.has_pip = subprocess.run([DEBIAN_PYTHON, "-m", "pip", "--version"], capture_output=True).returncode == 0
        cls.listed = listed_differences()

    @classmethod
    def tearDownClass(cls):
        keep_or_remove(cls.tmp)

    def setUp(self):
        self.assertTrue(self.has_pip, "Debian's pip (python3-pip) is the oracle here")
        if not self.target:
            self.skipTest("pip's interpreter is not CPython on Linux x86_64/aarch64 with glibc")

    def envbox_answer(self, world, url):
        """(exit code, {name: version} or None, stderr) of `envbox lock` on the world."""
        major, minor, machine, glibc = self.target
        env = "w" + world.id.replace("-", "_")
        quoted = [r.replace("\\", "\\\\").replace('"', '\\"') for r in world.requirements]  # TOML strings
        text = manifest_text(quoted, python=f"{major}.{minor}", platform=f"manylinux_{glibc}_{machine}",
                             indexes=[("world", url, "")])
        envboxtest.write_manifest(self.proj, env, text)
        r = envbox("lock", env, home=self.home, project=self.proj, check=False)
        if r.returncode != 0:
            return r.returncode, None, r.stderr
        with open(os.path.join(self.proj, "manifests", f"pylock.{env}.toml")) as f:
            return 0, {n: v for n, (v, _) in packages(f.read()).items()}, r.stderr

    def both(self, worlds):
        """[(pip's (answer, stderr), envbox's (exit code, answer, stderr))] for each world: pip's
        dry runs (most of the time) two at a time while envbox locks one world after another."""
        where = [w.write(os.path.join(self.tmp, "worlds", w.id)) for w in worlds]
        with ThreadPoolExecutor(2) as pool:
            pip_runs = [pool.submit(pip_answer, options, w.requirements) for w, (_, options) in zip(worlds, where)]
            envbox_runs = [self.envbox_answer(w, url) for w, (url, _) in zip(worlds, where)]
            return list(zip([f.result() for f in pip_runs], envbox_runs))

    def test_envbox_locks_what_pip_installs(self):
        seed = int(os.environ.get("ENVBOX_PIP_DIFF_SEED", SEED))
        count = int(os.environ.get("ENVBOX_PIP_DIFF_WORLDS", WORLDS))
        listed = self.listed if seed == SEED else {}
        worlds = [RandomWorld(seed, i, self.target) for i in range(count)]
        agreed, solved = 0, 0
        for world, ((want, pip_err), (rc, got, err)) in zip(worlds, self.both(worlds)):
            with self.subTest(world=world.id):
                solved += want is not None
                same = (rc == 3) if want is None else (got == want)
                if world.id in listed:
                    self.assertFalse(same, f"{world.id} is listed in pip_differences.md ({listed[world.id]}) but "
                                           f"envbox now agrees with pip: remove its entry")
                    continue
                agreed += same
                self.assertTrue(same, f"\n{world.describe()}\npip: {want or 'no solution'}\n"
                                      f"envbox (exit {rc}): {got}\n{err}{pip_err if want is None else ''}")
        print(f"{agreed} of {count} worlds agree with pip ({solved} solvable by pip, "
              f"{len([w for w in worlds if w.id in listed])} listed)", file=sys.stderr)

    def test_each_known_difference(self):
        known = known_worlds(self.target)
        for (world, pip_wants, envbox_wants), ((pip_got, pip_err), (rc, got, err)) in zip(
                known, self.both([w for w, _, _ in known])):
            with self.subTest(world=world.id):
                self.assertEqual(pip_got, pip_wants, f"pip's answer changed:\n{world.describe()}\n{pip_err}")
                self.assertEqual(got, envbox_wants, f"\n{world.describe()}\nenvbox (exit {rc}):\n{err}")
                if envbox_wants is None:
                    self.assertEqual(rc, 3, err)
                self.assertEqual(world.id in self.listed, pip_wants != envbox_wants,
                                 "pip_differences.md lists the hand-made worlds where pip and envbox differ, "
                                 "and only those")


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main()
