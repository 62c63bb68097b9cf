#!/usr/bin/env python3
"""Black-box tests of the everyday commands around an environment: init, export, delete,
shell, completion and run's exit statuses, with the real envbox binary, real wheels, a real
interpreter and pip as the consumer of exported requirements.

    test_workflow.py ENVBOX_BINARY
"""
import fcntl
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
from envboxtest import PYTHON, envbox, envbox_cmd, envbox_env, keep_or_remove  # noqa: E402
from httpserver import StaticServer  # noqa: E402
from wheelgen import Wheel, write_lock  # noqa: E402

ENVBOX = None


def host_target():
    """(X.Y, platform tag) of PYTHON, as envbox should detect them."""
    out = subprocess.run([PYTHON, "-c", "import platform, sys; print('%d.%d' % sys.version_info[:2]); "
                          "print(platform.libc_ver()[1]); print(platform.machine())"],
                         capture_output=True, text=True, check=True).stdout.split()
    return out[0], "manylinux_" + out[1].replace(".", "_") + "_" + out[2]


def host_glibc():
    """(glibc version of PYTHON's machine as "2.36", its machine), as envbox's probe reads them."""
    out = subprocess.run([PYTHON, "-c", "import os, platform; print(os.confstr('CS_GNU_LIBC_VERSION').split()[1]); "
                          "print(platform.machine())"], capture_output=True, text=True, check=True).stdout.split()
    return out[0], out[1]


def glibc_wrapper(folder, glibc):
    """An interpreter for ENVBOX_PYTHON: PYTHON itself, reporting `glibc` to envbox's probe (an
    older or newer machine; "" for a machine without glibc)."""
    path = os.path.join(folder, f"python-glibc-{glibc or 'none'}")
    with open(path, "w") as f:
        f.write(f"#!/bin/sh\n{PYTHON} \"$@\" | sed 's/^glibc=.*/glibc={glibc}/'\n")
    os.chmod(path, 0o755)
    return path


class Init(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-wf-")
        self.home = os.path.join(self.tmp, "home")
        self.proj = os.path.join(self.tmp, "proj")
        os.makedirs(self.proj)

    def tearDown(self):
        keep_or_remove(self.tmp)

    def manifest(self, env):
        with open(os.path.join(self.proj, "manifests", env + ".toml")) as f:
            return f.read()

    def test_writes_the_detected_target_and_pypi(self):
        r = envbox("init", "cpu", home=self.home, cwd=self.proj)
        xy, mine = host_target()
        self.assertIn("Detected CPython " + xy, r.stderr)
        # PyTorch's floor, manylinux_2_28, unless this machine's glibc is older (then its own).
        glibc, machine = host_glibc()
        if tuple(map(int, glibc.split("."))) > (2, 28):
            plat = "manylinux_2_28_" + machine
            self.assertIn(f"platform {plat} (PyTorch's floor; this machine has glibc {glibc}: "
                          f"--platform {mine} for this machine only)\n", r.stderr)
        else:
            plat = mine
            self.assertIn(f"platform {plat} (this machine's: glibc {glibc}", r.stderr)
        text = self.manifest("cpu")
        self.assertIn(f'python = "{xy}"\n', text)
        self.assertIn(f'platform = "{plat}"\n', text)
        self.assertIn('url = "https://pypi.org/simple"', text)
        self.assertNotIn("cuda", text.replace("# ", "").split("\n", 1)[1])
        # The manifest parses: a lock of its (empty) requirements is written without a request.
        r = envbox("lock", "cpu", "--offline", home=self.home, cwd=self.proj)
        self.assertIn("0 requests", r.stderr)
        envbox("lock", "--check", "cpu", home=self.home, cwd=self.proj)
        # ... and the lock of nothing is a valid one: create builds an empty environment from it.
        envbox("create", "cpu", "--offline", home=self.home, cwd=self.proj)
        r = envbox("run", "cpu", "--", "python", "-c", "import sys; print(sys.prefix != sys.base_prefix)",
                   home=self.home, cwd=self.proj)
        self.assertEqual(r.stdout, "True\n")

    def test_cuda_pins_the_torch_family_to_the_pytorch_index(self):
        for line, cu in (("12.8", "cu128"), ("13.0", "cu130")):
            env = "gpu-" + cu
            envbox("init", env, "--cuda", line, home=self.home, project=self.proj)
            text = self.manifest(env)
            self.assertIn(f'cuda = "{line}"\n', text)
            self.assertIn(f'name = "pytorch-{cu}"\nurl = "https://download.pytorch.org/whl/{cu}"\nexplicit = true',
                          text)
            for pkg in ("torch", "torchvision", "torchaudio", "triton"):
                self.assertIn(f'{pkg} = "pytorch-{cu}"\n', text)
            envbox("lock", env, "--offline", home=self.home, project=self.proj)

    def test_the_default_platform_is_pytorchs_floor_unless_this_machine_is_older(self):
        """A manifest the team shares asks for no newer glibc than PyTorch's own wheels do
        (manylinux_2_28); a machine older than that gets its own tag. The machine's glibc is
        what its interpreter reports (ENVBOX_PYTHON here: PYTHON, reporting another glibc)."""
        _, machine = host_glibc()
        for glibc, plat, note in (
                ("2.36", "manylinux_2_28", f"(PyTorch's floor; this machine has glibc 2.36: "
                                           f"--platform manylinux_2_36_{machine} for this machine only)"),
                ("2.39", "manylinux_2_28", f"(PyTorch's floor; this machine has glibc 2.39: "
                                           f"--platform manylinux_2_39_{machine} for this machine only)"),
                ("2.28", "manylinux_2_28", "(this machine's: glibc 2.28, PyTorch's floor)"),
                ("2.17", "manylinux_2_17", "(this machine's: glibc 2.17, older than PyTorch's floor 2.28)")):
            with self.subTest(glibc=glibc):
                env = "g" + glibc.replace(".", "")
                python = glibc_wrapper(self.tmp, glibc)
                r = envbox("init", env, home=self.home, cwd=self.proj, env={"ENVBOX_PYTHON": python})
                self.assertIn(f"platform {plat}_{machine} {note}\n", r.stderr)
                self.assertIn(f'platform = "{plat}_{machine}"\n', self.manifest(env))
                envbox("lock", env, "--offline", home=self.home, cwd=self.proj)
        # A machine without glibc (musl) names no platform: init asks for one, and takes it.
        python = glibc_wrapper(self.tmp, "")
        r = envbox("init", "musl", home=self.home, cwd=self.proj, env={"ENVBOX_PYTHON": python}, check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("--platform", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.proj, "manifests", "musl.toml")))
        envbox("init", "musl", "--platform", f"musllinux_1_2_{machine}", home=self.home, cwd=self.proj,
               env={"ENVBOX_PYTHON": python})
        self.assertIn(f'platform = "musllinux_1_2_{machine}"\n', self.manifest("musl"))

    def test_platform_flag(self):
        _, machine = host_glibc()
        python = glibc_wrapper(self.tmp, "2.35")  # Ubuntu 22.04's
        r = envbox("init", "old", "--platform", f"manylinux_2_17_{machine}", home=self.home, cwd=self.proj,
                   env={"ENVBOX_PYTHON": python})
        self.assertIn(f"platform manylinux_2_17_{machine} (--platform)\n", r.stderr)
        self.assertIn(f'platform = "manylinux_2_17_{machine}"\n', self.manifest("old"))
        # A tag newer than this machine: written, with a warning that what the lock picks may
        # not run here.
        r = envbox("init", "new", "--platform", f"manylinux_2_36_{machine}", "--cuda", "12.8", home=self.home,
                   cwd=self.proj, env={"ENVBOX_PYTHON": python})
        self.assertIn(f"platform manylinux_2_36_{machine} (--platform; this machine has glibc 2.35: "
                      "what the lock picks for it may not run here)", r.stderr)
        self.assertIn(f'platform = "manylinux_2_36_{machine}"\n', self.manifest("new"))
        for plat in ("manylinux2014_aarch64", "linux_x86_64", "musllinux_1_1_aarch64"):
            envbox("init", "e-" + plat, "--platform", plat, home=self.home, cwd=self.proj)
            envbox("lock", "e-" + plat, "--offline", home=self.home, cwd=self.proj)
        # What the manifest reader refuses is exit 2, before anything is written.
        os.unlink(os.path.join(self.proj, ".gitattributes"))
        for bad in ("", "macosx_11_0_arm64", "manylinux_2_28", "manylinux_2_1726484_x86_64", "win_amd64",
                    'manylinux_2_28_x86_64"\n[sources]', "linux_x86-64", "manylinux_2_28_x86_64 "):
            with self.subTest(platform=bad):
                r = envbox("init", "bad", "--platform", bad, home=self.home, cwd=self.proj, check=False)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn("--platform", r.stderr)
                self.assertFalse(os.path.exists(os.path.join(self.proj, "manifests", "bad.toml")))
                self.assertFalse(os.path.exists(os.path.join(self.proj, ".gitattributes")))

    def test_gitattributes_gets_the_lock_diff_line_once(self):
        """git diffs locks through `envbox diff --textconv` with the README's two lines: init
        writes the .gitattributes one (appended, once) and prints the git config one."""
        subprocess.run(["git", "init", "-q", self.proj], check=True)
        attributes = os.path.join(self.proj, ".gitattributes")
        with open(attributes, "w") as f:
            f.write("*.whl binary")  # the user's own, without a final newline
        r = envbox("init", "a", home=self.home, cwd=self.proj)
        self.assertIn(f"Added `manifests/pylock.*.toml diff=pylock` to {attributes}", r.stderr)
        self.assertIn('\n  git config diff.pylock.textconv "envbox diff --textconv"\n', r.stderr)
        envbox("init", "b", home=self.home, cwd=self.proj)
        with open(attributes) as f:
            self.assertEqual(f.read(), "*.whl binary\nmanifests/pylock.*.toml diff=pylock\n")
        envbox("lock", "a", "--offline", home=self.home, cwd=self.proj)
        out = subprocess.run(["git", "check-attr", "diff", "manifests/pylock.a.toml"], cwd=self.proj,
                             capture_output=True, text=True, check=True).stdout
        self.assertEqual(out, "manifests/pylock.a.toml: diff: pylock\n")
        # The line printed is the one each clone needs: git then shows a lock through envbox.
        line = [l.strip() for l in r.stderr.splitlines() if l.strip().startswith("git config ")][0]
        self.assertEqual(line, 'git config diff.pylock.textconv "envbox diff --textconv"')
        bindir = os.path.join(self.tmp, "bin")
        os.makedirs(bindir)
        os.symlink(ENVBOX, os.path.join(bindir, "envbox"))
        subprocess.run(["sh", "-c", line], cwd=self.proj, check=True)
        write_lock(os.path.join(self.proj, "manifests", "pylock.a.toml"),
                   [Wheel("alpha", "1.0", {"alpha.py": ""}).build(os.path.join(self.tmp, "wheels"))])
        subprocess.run(["git", "add", "manifests/pylock.a.toml"], cwd=self.proj, check=True)
        shown = subprocess.run(["git", "diff", "--cached", "--", "manifests/pylock.a.toml"], cwd=self.proj,
                               capture_output=True, text=True, check=True,
                               env=dict(os.environ, PATH=bindir + ":" + os.environ["PATH"])).stdout
        self.assertRegex(shown, r"\n\+alpha==1\.0  py3-none-any  \d+ bytes  sha256=[0-9a-f]{64}\n")
        self.assertNotIn("[[packages]]", shown)  # envbox's rendering, not the TOML
        # A line giving the locks the same driver, spaced otherwise, counts as there.
        with open(attributes, "w") as f:
            f.write("manifests/pylock.*.toml\t-text  diff=pylock\n")
        r = envbox("init", "c", home=self.home, cwd=self.proj)
        self.assertIn(f"{attributes} has `manifests/pylock.*.toml diff=pylock`", r.stderr)
        with open(attributes) as f:
            self.assertEqual(f.read(), "manifests/pylock.*.toml\t-text  diff=pylock\n")

    def test_a_link_planted_at_gitattributes_is_never_written_through(self):
        victim = os.path.join(self.tmp, "bashrc")
        with open(victim, "w") as f:
            f.write("alias ls='ls -F'\n")
        attributes = os.path.join(self.proj, ".gitattributes")
        for target in (victim, os.path.join(self.tmp, "absent")):
            with self.subTest(target=target):
                os.symlink(target, attributes)
                try:
                    env = "e" + str(len(os.listdir(self.tmp)))
                    r = envbox("init", env, home=self.home, cwd=self.proj)
                    self.assertIn(f"warning: {attributes} left alone (it is a symbolic link)", r.stderr)
                    self.assertIn('git config diff.pylock.textconv "envbox diff --textconv"', r.stderr)
                    self.assertTrue(os.path.exists(os.path.join(self.proj, "manifests", env + ".toml")))
                    self.assertEqual(os.readlink(attributes), target)
                finally:
                    os.unlink(attributes)
        with open(victim) as f:
            self.assertEqual(f.read(), "alias ls='ls -F'\n")
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "absent")))
        # Nor a FIFO or a folder: init finishes, without blocking on it.
        os.mkfifo(attributes)
        r = envbox("init", "fifo", home=self.home, cwd=self.proj, timeout=60)
        self.assertIn("left alone (it is not a regular file)", r.stderr)
        os.unlink(attributes)
        os.mkdir(attributes)
        r = envbox("init", "folder", home=self.home, cwd=self.proj)
        self.assertIn(f"warning: {attributes} left alone (", r.stderr)
        self.assertEqual(os.listdir(attributes), [])
        os.rmdir(attributes)
        with open(attributes, "w") as f:  # read with a bound: a real one is a few lines
            f.write("# padding\n" * 110_000)
        r = envbox("init", "big", home=self.home, cwd=self.proj)
        self.assertIn(f"warning: {attributes} left alone (it is larger than 1 MiB)", r.stderr)
        self.assertEqual(os.path.getsize(attributes), 1_100_000)

    def test_refuses_to_overwrite(self):
        envbox("init", "env", home=self.home, cwd=self.proj)
        path = os.path.join(self.proj, "manifests", "env.toml")
        with open(path, "a") as f:
            f.write("# mine\n")
        before = self.manifest("env")
        r = envbox("init", "env", "--cuda", "13.0", home=self.home, cwd=self.proj, check=False)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(path, r.stderr)
        self.assertEqual(self.manifest("env"), before)

    def test_bad_arguments(self):
        r = envbox("init", "env", "--cuda", "11.8", home=self.home, cwd=self.proj, check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        r = envbox("init", "env", "--python", "three", home=self.home, cwd=self.proj, check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        r = envbox("init", "env", "--python", "3.1", home=self.home, cwd=self.proj, check=False,
                   env={"ENVBOX_PYTHON": ""})
        self.assertEqual(r.returncode, 3, r.stderr)
        r = envbox("init", "../x", home=self.home, cwd=self.proj, check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.proj, "manifests", "env.toml")))

    def test_an_index_url_later_commands_refuse_is_refused_and_nothing_written(self):
        """init wrote any URL with the right scheme into the manifest, and every later command
        refused it: a quote, a line break, a password, no host, a blank, a bidi override."""
        bad = ['https://x.example/"simple', "https://x.example/simple\n[sources]",
               "https://user:s3cret@x.example/simple", "https://", "http:///simple",
               "https://exa mple.org/simple", "https://x.example/\u202esimple", "https://x.example/\x1b[2Ksimple"]
        for flag, extra in (("--default-index", ()), ("--cuda-index", ("--cuda", "12.8"))):
            for url in bad:
                with self.subTest(flag=flag, url=url):
                    r = envbox("init", "env", *extra, flag, url, home=self.home, cwd=self.proj, check=False)
                    self.assertEqual(r.returncode, 2, r.stderr)
                    self.assertIn(flag, r.stderr)
                    self.assertNotIn("s3cret", r.stderr)
                    self.assertNotIn("\x1b", r.stderr)
                    self.assertNotIn("\u202e", r.stderr)
                    self.assertFalse(os.path.exists(os.path.join(self.proj, "manifests", "env.toml")))
        # What init accepts, lock reads.
        envbox("init", "env", "--cuda", "12.8", "--default-index", "http://127.0.0.1:3141/root/pypi/+simple/",
               "--cuda-index", "file:///srv/wheel mirror/cu128", home=self.home, cwd=self.proj)
        r = envbox("lock", "env", "--offline", home=self.home, cwd=self.proj)
        self.assertIn("0 requests", r.stderr)


def add_index(lock_path, url):
    """Gives every package of a wheelgen lock the `index` URL `url`."""
    with open(lock_path) as f:
        text = f.read()
    text = text.replace("\n\n[[packages.wheels]]", f"\nindex = \"{url}\"\n\n[[packages.wheels]]")
    with open(lock_path, "w") as f:
        f.write(text)


class Export(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-wf-")
        self.home = os.path.join(self.tmp, "home")
        self.proj = os.path.join(self.tmp, "proj")
        self.wheels = os.path.join(self.tmp, "wheels")
        os.makedirs(os.path.join(self.proj, "manifests"))
        self.paths = [Wheel("alpha", "1.0", {"alpha/__init__.py": "A = 1\n"}).build(self.wheels),
                      Wheel("Beta_Pkg", "2.0.1", {"beta_pkg.py": "B = 2\n"}).build(self.wheels)]
        self.lock = os.path.join(self.proj, "manifests", "pylock.env.toml")
        write_lock(self.lock, self.paths)

    def tearDown(self):
        keep_or_remove(self.tmp)

    def pip_install(self, req):
        target = os.path.join(self.tmp, "target")
        return subprocess.run(["/usr/bin/python3", "-m", "pip", "install", "--disable-pip-version-check",
                               "--no-deps", "--require-hashes", "--no-index", "--find-links", self.wheels,
                               "-r", req, "--target", target], capture_output=True, text=True)

    def test_pip_installs_the_exported_requirements_with_hashes(self):
        add_index(self.lock, "https://user:secret@mirror.example/simple")
        req = os.path.join(self.tmp, "requirements.txt")
        r = envbox("export", "env", "-o", req, home=self.home, project=self.proj)
        self.assertIn("Exported 2 packages", r.stderr)
        with open(req) as f:
            text = f.read()
        self.assertIn("--index-url https://mirror.example/simple\n", text)
        self.assertNotIn("secret", text)
        self.assertNotIn("user", text)
        self.assertIn("alpha==1.0 \\\n    --hash=sha256:", text)
        self.assertIn("beta-pkg==2.0.1 \\\n", text)
        r = self.pip_install(req)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        target = os.path.join(self.tmp, "target")
        self.assertTrue(os.path.exists(os.path.join(target, "alpha", "__init__.py")))
        self.assertTrue(os.path.exists(os.path.join(target, "beta_pkg.py")))
        # stdout is the default and gives the same text.
        self.assertEqual(envbox("export", "env", home=self.home, project=self.proj).stdout, text)

    def test_a_flat_directory_index_is_find_links(self):
        url = "file://" + self.wheels
        add_index(self.lock, url)
        text = envbox("export", "env", home=self.home, project=self.proj).stdout
        self.assertIn(f"--no-index\n--find-links {url}\n", text)
        self.assertNotIn("--index-url", text)
        req = os.path.join(self.tmp, "requirements.txt")
        with open(req, "w") as f:
            f.write(text)
        target = os.path.join(self.tmp, "target")
        r = subprocess.run(["/usr/bin/python3", "-m", "pip", "install", "--disable-pip-version-check",
                            "--no-deps", "--require-hashes", "-r", req, "--target", target],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(os.path.exists(os.path.join(target, "beta_pkg.py")))

    def test_a_tampered_hash_fails_in_pip(self):
        req = os.path.join(self.tmp, "requirements.txt")
        envbox("export", "env", "-o", req, home=self.home, project=self.proj)
        with open(req) as f:
            text = f.read()
        i = text.index("--hash=sha256:") + len("--hash=sha256:")
        text = text[:i] + ("0" if text[i] != "0" else "1") + text[i + 1:]
        with open(req, "w") as f:
            f.write(text)
        r = self.pip_install(req)
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("HASHES", r.stdout + r.stderr)

    def test_pylock_is_the_lock_as_it_is(self):
        with open(self.lock) as f:
            text = f.read()
        out = os.path.join(self.tmp, "pylock.toml")
        envbox("export", "env", "--format", "pylock", "-o", out, home=self.home, project=self.proj)
        with open(out) as f:
            self.assertEqual(f.read(), text)

    def test_refusals(self):
        r = envbox("export", "nothere", home=self.home, project=self.proj, check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("no manifest " + os.path.join(self.proj, "manifests", "nothere.toml"), r.stderr)
        self.assertIn("`envbox init nothere` writes one", r.stderr)
        r = envbox("export", "env", "--format", "conda", home=self.home, project=self.proj, check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        # A value that would start a line of its own (an option pip obeys) is refused.
        add_index(self.lock, "https://x.example/simple\\n--index-url https://evil.example")
        r = envbox("export", "env", home=self.home, project=self.proj, check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertNotIn("evil", r.stdout)


def set_key(lock_path, key, value, after="[[packages]]"):
    """Sets `key = "value"` (TOML text, escapes kept) in the first table `after` of the lock;
    returns the line it is on."""
    with open(lock_path) as f:
        lines = f.read().split("\n")
    at = lines.index(after) + 1
    lines = [l for i, l in enumerate(lines) if not (i >= at and l.startswith(key + " = ") and i < at + 4)]
    lines.insert(at, f'{key} = "{value}"')
    with open(lock_path, "w") as f:
        f.write("\n".join(lines))
    return at + 1


class ExportLines(unittest.TestCase):
    """pip reads a requirements file with Python's str.splitlines, joins a line ending in a
    backslash to the next and splits an option line as a shell would: no lock value may add, join or
    bend a line of the export."""

    # Every line boundary str.splitlines honours (Python's docs, "str.splitlines"), as TOML
    # escapes.
    SEPARATORS = ["\\n", "\\r", "\\u000b", "\\u000c", "\\u001c", "\\u001d", "\\u001e", "\\u0085",
                  "\\u2028", "\\u2029"]

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-wf-")
        self.home = os.path.join(self.tmp, "home")
        self.proj = os.path.join(self.tmp, "proj")
        wheels = os.path.join(self.tmp, "wheels")
        os.makedirs(os.path.join(self.proj, "manifests"))
        self.lock = os.path.join(self.proj, "manifests", "pylock.env.toml")
        write_lock(self.lock, [Wheel("alpha", "1.0", {"alpha.py": ""}).build(wheels),
                               Wheel("beta", "2.0", {"beta.py": ""}).build(wheels)])
        with open(self.lock) as f:
            self.clean = f.read()

    def tearDown(self):
        keep_or_remove(self.tmp)

    def restore(self):
        with open(self.lock, "w") as f:
            f.write(self.clean)

    def export(self):
        return envbox("export", "env", home=self.home, project=self.proj, check=False)

    def test_every_line_separator_in_a_lock_value_is_refused_naming_the_file_and_key(self):
        for sep in self.SEPARATORS:
            self.assertEqual(len(("a" + json.loads('"' + sep + '"') + "b").splitlines()), 2, sep)
            for key, after, value in (
                    ("index", "[[packages]]", f"https://x.example/simple{sep}--extra-index-url=https://evil.example/s"),
                    ("marker", "[[packages]]", f"platform_release != '{sep}-e evil'"),
                    ("url", "[[packages.wheels]]", f"https://x.example/alpha-1.0-py3-none-any.whl{sep}-e evil")):
                with self.subTest(sep=sep, key=key):
                    self.restore()
                    line = set_key(self.lock, key, value, after)
                    r = self.export()
                    self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
                    self.assertNotIn("evil", r.stdout)
                    self.assertIn(f"{self.lock}:{line}: Invalid character ", r.stderr)
                    where = "packages[0]." + ("wheels[0]." if "wheels" in after else "") + key
                    self.assertIn(f"'{where}'", r.stderr)
        # create reads the lock the same way, before it fetches anything.
        self.restore()
        line = set_key(self.lock, "url", "https://x.example/alpha-1.0-py3-none-any.whl\\u2028", "[[packages.wheels]]")
        r = envbox("create", "env", home=self.home, project=self.proj, check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn(f"{self.lock}:{line}: Invalid character \\u2028", r.stderr)

    def test_a_trailing_backslash_or_a_quote_is_refused(self):
        # `--index-url URL` ending in a backslash would join alpha's line to the option: alpha
        # would vanish from what pip installs. A quote would be dropped by pip's shell-like split
        # of an option line.
        for value in ("https://x.example/simple\\\\", 'https://x.example/\\"simple\\"'):
            with self.subTest(value=value):
                self.restore()
                set_key(self.lock, "index", value)
                r = self.export()
                self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
                self.assertEqual(r.stdout, "")
                self.assertIn("alpha's index URL", r.stderr)


class Built(unittest.TestCase):
    """A project with environment `env` created from two generated wheels."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-wf-")
        self.home = os.path.join(self.tmp, "home")
        self.proj = os.path.join(self.tmp, "proj")
        os.makedirs(os.path.join(self.proj, "manifests"))
        wheels = os.path.join(self.proj, "wheels")
        paths = [Wheel("alpha", "1.0", {"alpha/__init__.py": "A = 1\n"}).build(wheels),
                 Wheel("beta", "2.0", {"beta.py": "B = 2\n"}).build(wheels)]
        write_lock(os.path.join(self.proj, "manifests", "pylock.env.toml"), paths)
        self.run_envbox("create", "env")
        self.env_dir = glob.glob(os.path.join(self.home, "envs", "*", "env"))[0]
        self.key = os.path.basename(os.path.dirname(self.env_dir))
        self.jobs = []

    def tearDown(self):
        for j in self.jobs:
            j.kill()
            j.wait()
            j.stdout.close()
        keep_or_remove(self.tmp)

    def run_envbox(self, *args, check=True, env=None, stdin=None):
        return envbox(*args, home=self.home, project=self.proj, check=check, env=env, stdin=stdin)

    def start_job(self):
        """An `envbox run` job that holds the current generation until killed."""
        cmd = envbox_cmd(self.home, self.proj) + ["run", "env", "--", "sh", "-c", "echo ready; exec sleep 60"]
        j = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=envbox_env())
        self.jobs.append(j)
        self.assertEqual(j.stdout.readline(), "ready\n")
        return j


class Delete(Built):
    def leftovers(self):
        # The environment's lock file stays: removing it could let two creates run at once.
        paths = [self.env_dir, os.path.join(self.proj, ".envbox", "env"),
                 os.path.join(self.home, "cache", "compile", self.key + ".env")]
        return [p for p in paths if os.path.lexists(p)]

    def test_removes_every_generation_and_folder_not_the_store(self):
        self.run_envbox("create", "env", "--force")  # a second generation
        os.makedirs(os.path.join(self.home, "cache", "compile", self.key + ".env", "torch-x"))
        self.assertEqual(len(self.leftovers()), 3)
        r = self.run_envbox("delete", "env")
        self.assertIn("Deleted env (2 generations)", r.stderr)
        self.assertIn("envbox gc", r.stderr)
        self.assertEqual(self.leftovers(), [])
        self.assertTrue(os.path.exists(os.path.join(self.proj, "manifests", "pylock.env.toml")))
        wheels = os.path.join(self.home, "store-v1", "wheels")
        self.assertEqual(len(os.listdir(wheels)), 2)  # the store keeps it until gc
        r = self.run_envbox("run", "env", "--", "true", check=False)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("has not been created", r.stderr)
        r = self.run_envbox("delete", "env", check=False)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("nothing to delete", r.stderr)
        self.run_envbox("gc")
        self.assertEqual(os.listdir(wheels), [])
        self.run_envbox("create", "env")  # and it can be built again

    def test_refuses_while_a_job_runs_unless_forced(self):
        job = self.start_job()
        r = self.run_envbox("delete", "env", check=False)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("gen-1: in use by a running `envbox run` job", r.stderr)
        self.assertEqual(len(self.leftovers()), 2)
        r = self.run_envbox("delete", "env", "--force")
        self.assertIn("(--force)", r.stderr)
        self.assertEqual(self.leftovers(), [])
        self.assertIsNone(job.poll())  # the job goes on, in its removed tree

    def test_refuses_a_bad_name(self):
        r = self.run_envbox("delete", "../env", check=False)
        self.assertEqual(r.returncode, 2, r.stderr)


class RunStatus(Built):
    """`run` of a command that cannot run exits as a shell does: 127 not found, 126 not executable."""

    def test_command_not_found_is_127(self):
        r = self.run_envbox("run", "env", "--", "no-such-command-here", check=False)
        self.assertEqual(r.returncode, 127, r.stderr)
        self.assertIn("command not found: no-such-command-here", r.stderr)
        r = self.run_envbox("run", "env", "--", os.path.join(self.tmp, "missing"), check=False)
        self.assertEqual(r.returncode, 127, r.stderr)

    def test_not_executable_is_126(self):
        bindir = os.path.join(self.tmp, "bin")
        os.makedirs(bindir)
        plain = os.path.join(bindir, "plain-file")
        with open(plain, "w") as f:
            f.write("#!/bin/sh\necho hi\n")
        os.chmod(plain, 0o644)
        for cmd in (plain, bindir):
            r = self.run_envbox("run", "env", "--", cmd, check=False)
            self.assertEqual(r.returncode, 126, (cmd, r.stderr))
            self.assertIn("cannot run " + cmd, r.stderr)
        r = self.run_envbox("run", "env", "--", "plain-file", check=False,
                            env={"PATH": bindir + ":" + os.environ.get("PATH", "/usr/bin:/bin")})
        self.assertEqual(r.returncode, 126, r.stderr)

    def test_the_command_s_own_status_passes_through(self):
        r = self.run_envbox("run", "env", "--", "sh", "-c", "exit 42", check=False)
        self.assertEqual(r.returncode, 42, r.stderr)


class Shell(Built):
    """`envbox shell ENV` is `run ENV -- $SHELL -i` with the venv's activate after the user's files."""

    SCRIPT = 'echo "venv=$VIRTUAL_ENV"; python -c "import alpha; print(alpha.A)"; echo "ps1=$PS1"\n'

    def shell(self, shell, script=SCRIPT, check=True, extra=None):
        e = dict(extra or {})
        if shell is None:
            e["SHELL"] = ""
        else:
            e["SHELL"] = shell
        return self.run_envbox("shell", "env", env=e, stdin=script, check=check)

    def current(self):
        return os.path.realpath(os.path.join(self.env_dir, "current"))

    def test_sh_runs_in_the_environment_with_its_prompt(self):
        for sh in ("/bin/sh", None):  # None: no $SHELL, so /bin/sh
            r = self.shell(sh)
            self.assertIn(f"venv={self.current()}\n", r.stdout, r.stderr)
            self.assertIn("\n1\n", r.stdout)
            self.assertIn("ps1=(env) ", r.stdout)

    def test_bash_reads_bashrc_then_activates(self):
        # A ~/.bashrc that puts another python first on PATH (as pyenv's init does) and sets a
        # prompt: the environment's python still wins, and the prompt gets "(env) ".
        user_home = os.path.join(self.tmp, "user")
        fake = os.path.join(self.tmp, "fakebin")
        os.makedirs(user_home)
        os.makedirs(fake)
        with open(os.path.join(fake, "python"), "w") as f:
            f.write("#!/bin/sh\necho fake-python\n")
        os.chmod(os.path.join(fake, "python"), 0o755)
        with open(os.path.join(user_home, ".bashrc"), "w") as f:
            f.write(f"export PATH={fake}:$PATH\nPS1='mine$ '\necho bashrc-read\n")
        r = self.shell("/bin/bash", extra={"HOME": user_home})
        self.assertIn("bashrc-read", r.stdout, r.stderr)
        self.assertIn(f"venv={self.current()}\n", r.stdout)
        self.assertIn("\n1\n", r.stdout)
        self.assertNotIn("fake-python", r.stdout)
        self.assertIn("ps1=(env) mine$ ", r.stdout)

    def test_exit_status_and_refusals(self):
        r = self.shell("/bin/sh", script="exit 3\n", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        r = self.run_envbox("shell", "nothere", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("no manifest " + os.path.join(self.proj, "manifests", "nothere.toml"), r.stderr)

    def test_the_shell_holds_its_generation(self):
        cmd = envbox_cmd(self.home, self.proj) + ["shell", "env"]
        j = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, env=dict(os.environ, ENVBOX_PYTHON=PYTHON, SHELL="/bin/sh"))
        self.jobs.append(j)
        j.stdin.write("echo ready\n")
        j.stdin.flush()
        self.assertEqual(j.stdout.readline(), "ready\n")
        r = self.run_envbox("delete", "env", check=False)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("in use", r.stderr)
        j.stdin.close()
        self.assertEqual(j.wait(), 0)
        self.run_envbox("delete", "env")


class Completion(unittest.TestCase):
    """Completion scripts are generated from the registered commands and their options."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-wf-")
        self.home = os.path.join(self.tmp, "home")
        os.makedirs(os.path.join(self.tmp, "manifests"))
        for name in ("train-cu128.toml", "pylock.train-cu128.toml", "infer.toml"):
            open(os.path.join(self.tmp, "manifests", name), "w").close()

    def tearDown(self):
        keep_or_remove(self.tmp)

    def script(self, shell):
        return envbox("completion", shell, home=self.home).stdout

    def commands(self):
        """The commands `envbox --help` lists."""
        out = envbox("--help", home=self.home).stdout
        section = out.split("SUBCOMMANDS:", 1)[1] if "SUBCOMMANDS:" in out else out.split("Subcommands:", 1)[1]
        return [line.split()[0] for line in section.splitlines() if line.startswith("  ") and line.split()]

    def complete_bash(self, *words):
        """What the bash function offers for `envbox WORDS…` (the last word being completed)."""
        script = os.path.join(self.tmp, "envbox.bash")
        with open(script, "w") as f:
            f.write(self.script("bash"))
        quoted = " ".join("'" + w + "'" for w in ("envbox",) + words)
        r = subprocess.run(["bash", "-c", f'source {script}; COMP_WORDS=({quoted}); COMP_CWORD={len(words)}; '
                            '_envbox; printf "%s\\n" "${COMPREPLY[@]}"'],
                           capture_output=True, text=True, cwd=self.tmp, check=True)
        return sorted(r.stdout.split())

    def test_bash_registers_and_completes(self):
        r = subprocess.run(["bash", "-c", f"source <({ENVBOX} completion bash); complete -p envbox"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("complete -F _envbox envbox", r.stdout)
        commands = self.commands()
        for c in ("init", "export", "delete", "shell", "completion", "run", "gc", "pin", "unpin"):
            self.assertIn(c, commands)
        self.assertEqual(sorted(c for c in self.complete_bash("") if not c.startswith("-")), sorted(commands))
        self.assertEqual(self.complete_bash("de"), ["delete"])
        self.assertEqual(self.complete_bash("export", "env", "--f"), ["--format"])
        self.assertEqual(self.complete_bash("export", "env", "--format", ""), ["pylock", "requirements-txt"])
        self.assertEqual(self.complete_bash("--home", "/x", "init", "e", "--cuda", "1"), ["12.8", "13.0"])
        for command in ("delete", "pin", "unpin"):
            envs = [w for w in self.complete_bash(command, "") if not w.startswith("-")]
            self.assertEqual(envs, ["infer", "train-cu128"], command)
        self.assertIn("--upgrade-package", self.complete_bash("lock", "--"))

    def test_zsh_and_fish_name_every_command_and_option(self):
        zsh, fish = self.script("zsh"), self.script("fish")
        self.assertTrue(zsh.startswith("#compdef envbox\n"))
        for c in self.commands():
            self.assertIn(f"\n        '{c}:", zsh)
            self.assertIn(f"__fish_use_subcommand -a {c} ", fish)
        self.assertIn("'--format[requirements-txt (for pip install --require-hashes -r) or pylock]"
                      ":value:(requirements-txt pylock)'", zsh)
        self.assertIn("-n '__fish_seen_subcommand_from export' -l format -x -a 'requirements-txt pylock'", fish)
        for shell, check in (("zsh", ["zsh", "-n"]), ("fish", ["fish", "--no-execute"])):
            if shutil.which(check[0]):
                path = os.path.join(self.tmp, "envbox." + shell)
                with open(path, "w") as f:
                    f.write(self.script(shell))
                r = subprocess.run(check + [path], capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, r.stderr)

    def test_unknown_shell_is_a_usage_error(self):
        r = envbox("completion", "tcsh", home=self.home, check=False)
        self.assertEqual(r.returncode, 2, r.stderr)


class RunSyncs(unittest.TestCase):
    """`run` locks and creates first when the manifest or the lock changed, as `uv run` syncs;
    --locked refuses a stale lock, --frozen runs the current generation as it is."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-wf-")
        self.home = os.path.join(self.tmp, "home")
        self.proj = os.path.join(self.tmp, "proj")
        os.makedirs(self.proj)
        self.run_envbox("init", "e")
        self.manifest = os.path.join(self.proj, "manifests", "e.toml")
        self.lock = os.path.join(self.proj, "manifests", "pylock.e.toml")

    def tearDown(self):
        keep_or_remove(self.tmp)

    def run_envbox(self, *args, check=True):
        return envbox(*args, home=self.home, cwd=self.proj, check=check)

    def generations(self):
        return sorted(os.path.basename(p) for p in glob.glob(os.path.join(self.home, "envs", "*", "e", "gen-*")))

    def edit(self, path, old, new):
        with open(path) as f:
            text = f.read()
        self.assertIn(old, text)
        with open(path, "w") as f:
            f.write(text.replace(old, new))

    def test_first_run_locks_and_creates(self):
        r = self.run_envbox("run", "e", "--", "echo", "hi")
        self.assertEqual(r.stdout, "hi\n")  # what envbox says goes to stderr
        self.assertIn("envbox: e has no generation yet; creating…", r.stderr)
        self.assertTrue(os.path.exists(self.lock))
        self.assertEqual(self.generations(), ["gen-1"])
        r = self.run_envbox("run", "e", "--", "true")
        self.assertNotIn("creating", r.stderr)
        self.assertEqual(self.generations(), ["gen-1"])

    def test_a_changed_lock_is_created_unless_frozen(self):
        self.run_envbox("run", "e", "--", "true")
        with open(self.lock, "a") as f:
            f.write("# edited\n")
        r = self.run_envbox("run", "--frozen", "e", "--", "true")
        self.assertNotIn("creating", r.stderr)
        self.assertEqual(self.generations(), ["gen-1"])
        r = self.run_envbox("run", "--locked", "e", "--", "true")  # the lock is not stale, only new
        self.assertIn("e changed since generation 1 (pylock.e.toml changed since generation 1); creating…",
                      r.stderr)
        self.assertEqual(self.generations(), ["gen-1", "gen-2"])
        # A rollback is on purpose: run keeps the older generation while the lock is gen-2's.
        self.run_envbox("rollback", "e")
        r = self.run_envbox("run", "e", "--", "true")
        self.assertNotIn("creating", r.stderr)
        self.assertEqual(self.generations(), ["gen-1", "gen-2"])

    def test_a_changed_manifest_is_locked_first_and_locked_refuses(self):
        self.run_envbox("run", "e", "--", "true")
        self.edit(self.manifest, "https://pypi.org/simple", "http://127.0.0.1:9/simple")
        with open(self.lock) as f:
            before = f.read()
        r = self.run_envbox("run", "--locked", "e", "--", "true", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("--locked: the lock of e needs updating", r.stderr)
        self.assertIn("http://127.0.0.1:9/simple", r.stderr)
        with open(self.lock) as f:
            self.assertEqual(f.read(), before)
        r = self.run_envbox("run", "--frozen", "e", "--", "true")
        self.assertEqual(self.generations(), ["gen-1"])
        r = self.run_envbox("run", "e", "--", "true")
        self.assertIn("e changed since generation 1; creating…", r.stderr)
        self.assertIn("locking first", r.stderr)
        with open(self.lock) as f:
            self.assertIn("http://127.0.0.1:9/simple", f.read())
        self.assertEqual(self.generations(), ["gen-1", "gen-2"])
        r = self.run_envbox("run", "--locked", "e", "--", "true")
        self.assertNotIn("creating", r.stderr)

    def test_locked_and_frozen_exclude_each_other(self):
        r = self.run_envbox("run", "--locked", "--frozen", "e", "--", "true", check=False)
        self.assertEqual(r.returncode, 2, r.stderr)


class RollbackAndTheRepository(unittest.TestCase):
    """After a rollback the current generation is not the project's lock: every status command
    says so and how to make them agree; `rollback --write-lock` writes the generation's lock into
    manifests/; once the lock file is the current generation's again (a `git revert`), run runs
    it directly; a lock of another generation is said to be that generation's."""

    NOTE = "generation 1 is current (rolled back); manifests/pylock.e.toml is generation 2's lock"

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-wf-")
        self.home = os.path.join(self.tmp, "home")
        self.proj = os.path.join(self.tmp, "proj")
        os.makedirs(self.proj)
        self.run_envbox("init", "e")
        self.lock = os.path.join(self.proj, "manifests", "pylock.e.toml")
        # Generation 1, then generation 2 from a lock one commit later (a comment is enough).
        self.run_envbox("run", "e", "--", "true")
        self.lock1 = self.read(self.lock)
        with open(self.lock, "a") as f:
            f.write("# the commit a rollback undoes\n")
        self.lock2 = self.read(self.lock)
        self.run_envbox("run", "e", "--", "true")
        self.assertEqual(self.generations(), ["gen-1", "gen-2"])

    def tearDown(self):
        keep_or_remove(self.tmp)

    def run_envbox(self, *args, check=True, **kw):
        return envbox(*args, home=self.home, cwd=self.proj, check=check, **kw)

    def read(self, path):
        with open(path) as f:
            return f.read()

    def generations(self):
        return sorted(os.path.basename(p) for p in glob.glob(os.path.join(self.home, "envs", "*", "e", "gen-*")))

    def gen_lock(self, n):
        return self.read(glob.glob(os.path.join(self.home, "envs", "*", "e", f"gen-{n}", ".envbox", "pylock.toml"))[0])

    def prefix(self, r):
        return os.path.basename(r.stdout.strip())

    def test_every_status_command_says_a_rollback_is_not_the_lock(self):
        r = self.run_envbox("rollback", "e")
        self.assertIn("2 → 1", r.stderr)
        self.assertIn(self.NOTE, r.stderr)  # and how to make them agree
        self.assertIn("`git revert`", r.stderr)
        self.assertIn("`envbox rollback e --to 1 --write-lock`", r.stderr)
        self.assertIn("`envbox rollback e --to 2` switches to generation 2, built from the file's lock", r.stderr)
        # verify: the files are intact, so exit 0; the note is beside "clean", and in --json.
        r = self.run_envbox("verify", "e")
        self.assertIn("clean", r.stderr)
        self.assertIn(self.NOTE, r.stderr)
        self.assertIn("--write-lock", r.stderr)
        report = json.loads(self.run_envbox("verify", "e", "--json").stdout)
        self.assertTrue(report["clean"])
        lock = report["manifests_lock"]
        self.assertEqual((lock["agrees"], lock["current"], lock["lock_generation"], lock["rolled_back"]),
                         (False, 1, 2, True))
        self.assertEqual(lock["note"], self.NOTE)
        # list and show: a marker and a field.
        r = self.run_envbox("list")
        self.assertIn("! " + self.NOTE, r.stdout)
        [entry] = json.loads(self.run_envbox("list", "--json").stdout)
        self.assertEqual(entry["manifests_lock"]["note"], self.NOTE)
        self.assertIn("lock: " + self.NOTE, self.run_envbox("show", "e").stdout)
        self.assertEqual(json.loads(self.run_envbox("show", "e", "--json").stdout)["manifests_lock"]["lock_generation"], 2)
        # doctor: a warning line (it may exit 1 for what this machine lacks: pypi unreachable).
        r = self.run_envbox("doctor", check=False)
        self.assertIn("warning: " + self.NOTE, r.stdout)
        r = self.run_envbox("doctor", "--json", check=False)
        self.assertEqual(json.loads(r.stdout)["environments"][0]["manifests_lock"]["note"], self.NOTE)
        # lock --check: the lock still fits the manifest (exit 0, as CI without generations needs);
        # the note is on stderr.
        r = self.run_envbox("lock", "--check", "e")
        self.assertIn("the lock is up to date", r.stderr)
        self.assertIn(self.NOTE, r.stderr)
        # run keeps the rolled-back generation, says so, and creates nothing.
        r = self.run_envbox("run", "e", "--", "python", "-c", "import sys; print(sys.prefix)")
        self.assertEqual(self.prefix(r), "gen-1")
        self.assertIn(self.NOTE + ": run keeps generation 1", r.stderr)
        self.assertNotIn("creating", r.stderr)
        self.assertEqual(self.generations(), ["gen-1", "gen-2"])
        # -q: no note.
        self.assertEqual(self.run_envbox("-q", "verify", "e").stderr, "")

    def test_write_lock_makes_the_repository_agree(self):
        r = self.run_envbox("rollback", "e", "--write-lock")
        self.assertIn("wrote generation 1's lock into manifests/pylock.e.toml: commit it", r.stderr)
        self.assertNotIn("note:", r.stderr)
        self.assertEqual(self.read(self.lock), self.gen_lock(1))
        self.assertEqual(self.read(self.lock), self.lock1)
        for args in (("verify", "e"), ("lock", "--check", "e"), ("show", "e"), ("list",)):
            r = self.run_envbox(*args)
            self.assertNotIn("rolled back", r.stdout + r.stderr, args)
        self.assertTrue(json.loads(self.run_envbox("verify", "e", "--json").stdout)["manifests_lock"]["agrees"])
        self.assertIn("lock: manifests/pylock.e.toml is generation 1's, the current one",
                      self.run_envbox("show", "e").stdout)
        r = self.run_envbox("run", "e", "--", "python", "-c", "import sys; print(sys.prefix)")
        self.assertEqual((self.prefix(r), r.stderr), ("gen-1", ""))
        # On the current generation (no switch) it writes that generation's lock, and says when
        # the file held it already.
        r = self.run_envbox("rollback", "e", "--to", "1", "--write-lock")
        self.assertIn("already on generation 1", r.stderr)
        self.assertIn("holds generation 1's lock already", r.stderr)
        r = json.loads(self.run_envbox("rollback", "e", "--to", "2", "--write-lock", "--json").stdout)
        self.assertEqual((r["to"], r["lock_written"], r["manifests_lock"]["agrees"]), (2, self.lock, True))
        self.assertEqual(self.read(self.lock), self.lock2)

    def test_after_reverting_the_lock_run_runs_the_current_generation_directly(self):
        self.run_envbox("rollback", "e")
        with open(self.lock, "w") as f:  # what `git revert` of the lock's commit leaves
            f.write(self.lock1)
        for args in (("verify", "e"), ("lock", "--check", "e"), ("show", "e")):
            r = self.run_envbox(*args)
            self.assertNotIn("rolled back", r.stdout + r.stderr, args)
        # The fast path: no create, so not even the environment's lock is taken.
        [env_lock] = glob.glob(os.path.join(self.home, "locks", "*.e.lock"))
        with open(env_lock) as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            for _ in range(2):
                r = self.run_envbox("run", "e", "--", "python", "-c", "import sys; print(sys.prefix)", timeout=30)
                self.assertEqual((self.prefix(r), r.stderr), ("gen-1", ""))
        self.assertEqual(self.generations(), ["gen-1", "gen-2"])

    def test_a_lock_of_an_older_generation_is_said_so_and_created_as_create_does(self):
        # Generation 2 is current and the lock file goes back to generation 1's (a `git revert`
        # before any rollback): run says whose lock it is and builds it, as `create` does;
        # `rollback --to 1` would have switched without building.
        with open(self.lock, "w") as f:
            f.write(self.lock1)
        r = self.run_envbox("verify", "e")
        self.assertIn("generation 2 is current; manifests/pylock.e.toml is generation 1's lock", r.stderr)
        r = self.run_envbox("run", "e", "--", "python", "-c", "import sys; print(sys.prefix)")
        self.assertIn("envbox: e: manifests/pylock.e.toml is generation 1's lock; generation 2 is current "
                      "(`envbox rollback e --to 1` would switch to it); creating…", r.stderr)
        self.assertEqual(self.prefix(r), "gen-3")
        self.assertEqual(self.gen_lock(3), self.lock1)
        r = self.run_envbox("run", "e", "--", "true")
        self.assertEqual(r.stderr, "")
        # A lock no generation was built from: "has not been created yet", then created.
        with open(self.lock, "a") as f:
            f.write("# a third lock\n")
        self.assertIn("generation 3 is current; manifests/pylock.e.toml has not been created yet",
                      self.run_envbox("verify", "e").stderr)
        r = self.run_envbox("run", "e", "--", "true")
        self.assertIn("e changed since generation 3 (pylock.e.toml changed since generation 3); creating…", r.stderr)
        self.assertEqual(self.generations(), ["gen-1", "gen-2", "gen-3", "gen-4"])


class DefaultEnvironment(unittest.TestCase):
    """With `--` first, `run` and `shell` use $ENVBOX_ENV, else the project's only manifest;
    without `--` the first word is always ENV."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-wf-")
        self.home = os.path.join(self.tmp, "home")
        self.proj = os.path.join(self.tmp, "proj")
        os.makedirs(self.proj)
        self.run_envbox("init", "e")

    def tearDown(self):
        keep_or_remove(self.tmp)

    def run_envbox(self, *args, check=True, env=None, stdin=None):
        return envbox(*args, home=self.home, cwd=self.proj, check=check, env=dict({"ENVBOX_ENV": ""}, **(env or {})),
                      stdin=stdin)

    def test_the_only_manifest_is_the_default(self):
        r = self.run_envbox("run", "--", "python", "-c", "import sys; print(sys.prefix)")
        self.assertIn(os.sep + "e" + os.sep, r.stdout)
        r = self.run_envbox("run", "--sandbox", "off", "--", "echo", "hi")
        self.assertEqual(r.stdout, "hi\n")
        r = self.run_envbox("shell", env={"SHELL": "/bin/sh"}, stdin='echo "prompt=$VIRTUAL_ENV_PROMPT"\n')
        self.assertRegex(r.stdout, r"prompt=\(?e")

    def test_without_dashes_the_first_word_is_env(self):
        r = self.run_envbox("run", "echo", "hi", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertEqual(r.stdout, "")
        self.assertIn("no manifest " + os.path.join(self.proj, "manifests", "echo.toml"), r.stderr)
        self.assertIn("if echo is the command, put -- before it: `envbox run -- echo …`", r.stderr)
        r = self.run_envbox("run", "e", "echo", "hi")
        self.assertEqual(r.stdout, "hi\n")

    def test_several_manifests_need_a_name_or_envbox_env(self):
        self.run_envbox("init", "f")
        r = self.run_envbox("run", "--", "true", check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("several environments (e, f)", r.stderr)
        r = self.run_envbox("shell", check=False, stdin="exit\n")
        self.assertEqual(r.returncode, 2, r.stderr)
        r = self.run_envbox("run", "--", "python", "-c", "import sys; print(sys.prefix)", env={"ENVBOX_ENV": "f"})
        self.assertIn(os.sep + "f" + os.sep, r.stdout)
        r = self.run_envbox("run", "--", "true", check=False, env={"ENVBOX_ENV": "../f"})
        self.assertEqual(r.returncode, 2, r.stderr)


class DoctorJson(unittest.TestCase):
    """`doctor --json`, and exit 1 when something a manifest needs is broken: an unreachable or
    unreadable index, an environment the driver cannot run (a manifest with a password in an
    index URL: tests/lock/test_hostile_index.py)."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-wf-")
        self.home = os.path.join(self.tmp, "home")
        self.proj = os.path.join(self.tmp, "proj")
        os.makedirs(self.proj)
        self.local = os.path.join(self.tmp, "local-index")
        os.makedirs(os.path.join(self.local, "simple"))
        self.server = StaticServer(self.local)
        base = f"http://127.0.0.1:{self.server.port}"
        self.run_envbox("init", "cpu")
        self.run_envbox("init", "gpu", "--cuda", "13.0")
        self.edit("cpu", "https://pypi.org/simple", "file://" + self.local + "/simple")
        self.edit("gpu", "https://pypi.org/simple", base + "/simple")
        self.edit("gpu", "https://download.pytorch.org/whl/cu130", base + "/simple")

    def tearDown(self):
        self.server.close()
        keep_or_remove(self.tmp)

    def edit(self, env, old, new):
        path = os.path.join(self.proj, "manifests", env + ".toml")
        with open(path) as f:
            text = f.read()
        self.assertIn(old, text)
        with open(path, "w") as f:
            f.write(text.replace(old, new))

    def run_envbox(self, *args, check=True, driver="580.82"):
        return envbox(*args, home=self.home, cwd=self.proj, check=check, env={"ENVBOX_CUDA_DRIVER": driver})

    def doctor(self, driver="580.82"):
        import json
        r = self.run_envbox("doctor", "--json", check=False, driver=driver)
        return r, json.loads(r.stdout)

    def test_all_good_is_exit_0(self):
        r, report = self.doctor()
        if not report["sandbox"]["ok"]:
            self.assertEqual(r.returncode, 1, r.stderr)
            self.skipTest("no sandbox possible here: " + report["sandbox"]["description"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(report["ok"])
        self.assertEqual(report["problems"], [])
        self.assertEqual(report["driver"], "580.82")
        self.assertEqual(report["driver_source"], "ENVBOX_CUDA_DRIVER")  # assumed, not read
        envs = {e["name"]: e for e in report["environments"]}
        self.assertEqual(envs["gpu"]["cuda_lines"], ["13.x"])
        self.assertTrue(envs["gpu"]["ok"])
        self.assertEqual(envs["cpu"]["cuda_lines"], [])
        urls = {i["url"]: i for i in report["indexes"]}
        local = urls["file://" + self.local + "/simple"]
        self.assertTrue(local["ok"])
        self.assertEqual(local["status"], "readable (directory)")
        self.assertEqual(local["environments"], ["cpu"])
        remote = urls[f"http://127.0.0.1:{self.server.port}/simple"]
        self.assertTrue(remote["ok"], remote)
        self.assertEqual(remote["environments"], ["gpu"])  # named once, though two of its indexes use it

    def test_an_old_driver_and_a_missing_index_are_exit_1(self):
        shutil.rmtree(self.local)
        r, report = self.doctor(driver="550.54.15")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertFalse(report["ok"])
        envs = {e["name"]: e for e in report["environments"]}
        self.assertFalse(envs["gpu"]["ok"])
        self.assertIn("580", envs["gpu"]["problem"])
        self.assertTrue(envs["cpu"]["ok"])
        self.assertTrue(any(p.startswith("the NVIDIA driver cannot run gpu") for p in report["problems"]))
        self.assertTrue(any("does not exist" in p for p in report["problems"]), report["problems"])
        r = self.run_envbox("doctor", check=False, driver="550.54.15")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("gpu (CUDA 13.x)  CANNOT RUN", r.stdout)
        self.assertIn("NVIDIA driver: 550.54.15 (from ENVBOX_CUDA_DRIVER), runs CUDA 12.x\n", r.stdout)
        self.assertIn(f"http://127.0.0.1:{self.server.port}/simple  reachable (HTTP", r.stdout)
        self.assertIn("2 problems", r.stderr)


class Help(unittest.TestCase):
    """Every command's --help is complete: its own options, the global ones (--json among
    them, accepted after the command), the exit statuses; numbers typed as numbers."""

    def test_every_command_lists_the_global_options(self):
        top = envbox("--help", home=tempfile.gettempdir()).stdout
        commands = [line.split()[0] for line in top.split("Subcommands:\n", 1)[1].splitlines()
                    if line.startswith("  ") and not line.startswith("   ")]
        self.assertIn("verify", commands)
        self.assertGreater(len(commands), 20)
        for cmd in commands + ["cache clean", "cache prune"]:
            text = envbox(*cmd.split(), "--help", home=tempfile.gettempdir()).stdout
            for option in ("--json", "--home", "--project", "-v,--verbose", "Exit status: 0 ok"):
                self.assertIn(option, text, f"envbox {cmd} --help")
        self.assertIn("--to N ", envbox("rollback", "--help", home=tempfile.gettempdir()).stdout)
        self.assertIn("--keep INT ", envbox("gc", "--help", home=tempfile.gettempdir()).stdout)


class DayOne(unittest.TestCase):
    """From an empty folder to train-cu128 and infer-cu130 over the PyTorch-shaped loopback
    world (tests/lock/indexworld.py) with init, add, run, tree, why, export, remove and delete:
    every file under manifests/ is one envbox wrote."""

    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, os.path.join(HERE, "..", "lock"))
        import indexworld
        cls.tmp = tempfile.mkdtemp(prefix="envbox-day1-")
        indexworld.build(os.path.join(cls.tmp, "www"))
        cls.server = indexworld.Server(os.path.join(cls.tmp, "www"))

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        keep_or_remove(cls.tmp)

    def test_two_environments_without_writing_toml(self):
        proj = os.path.join(self.tmp, "empty")
        home = os.path.join(self.tmp, "home")
        os.makedirs(proj)
        url = self.server.url

        def e(*args, check=True):
            return envbox(*args, home=home, cwd=proj, check=check)

        def lines(r):
            return r.stderr.splitlines()

        for env, line, cu in (("train-cu128", "12.8", "cu128"), ("infer-cu130", "13.0", "cu130")):
            r = e("init", env, "--cuda", line, "--default-index", url + "/pypi",
                  "--cuda-index", f"{url}/pytorch-{cu}")
            self.assertIn(f"come from {url}/pytorch-{cu} only", r.stderr)
        r = e("add", "train-cu128", "torch==2.11.0+cu128", "transformers")
        for change in ("+ torch 2.11.0+cu128", "+ nvidia-cublas-cu12 12.8.4.1", "+ transformers 4.57.0"):
            self.assertIn(change, lines(r))
        r = e("add", "infer-cu130", "torch==2.11.0+cu130", "sglang")
        for change in ("+ torch 2.11.0+cu130", "+ nvidia-cublas 13.0.0.19", "+ sglang 0.5.3"):
            self.assertIn(change, lines(r))
        self.assertFalse(any("cu12" in l for l in lines(r) if l.startswith("+ ")), r.stderr)

        probe = ("import torch, importlib.metadata as m; print(torch.__version__, ' '.join(sorted("
                 "d.metadata['Name'] for d in m.distributions() if d.metadata['Name'].startswith('nvidia'))))")
        self.assertEqual(e("run", "train-cu128", "--", "python", "-c", probe).stdout,
                         "2.11.0+cu128 nvidia-cublas-cu12 nvidia-cudnn-cu12 nvidia-nccl-cu12\n")
        self.assertEqual(e("run", "infer-cu130", "--", "python", "-c", probe).stdout,
                         "2.11.0+cu130 nvidia-cublas nvidia-cudnn-cu13 nvidia-nccl-cu13\n")

        tree = e("tree", "infer-cu130").stdout
        self.assertIn("torch 2.11.0+cu130\n", tree)
        why = e("why", "infer-cu130", "nvidia-cublas").stdout
        self.assertIn("torch 2.11.0+cu130 → nvidia-cublas 13.0.0.19", why)
        exported = e("export", "train-cu128").stdout
        self.assertIn("torch==2.11.0+cu128 \\\n    --hash=sha256:", exported)
        self.assertIn(f"{url}/pytorch-cu128\n", exported)
        self.assertIn(f"{url}/pypi\n", exported)

        r = e("remove", "train-cu128", "transformers")
        self.assertIn("- transformers 4.57.0", lines(r))
        self.assertEqual(e("run", "train-cu128", "--", "python", "-c",
                           "import importlib.util as u; print(u.find_spec('transformers'))").stdout, "None\n")
        e("delete", "infer-cu130")
        self.assertNotIn("infer-cu130", e("list").stdout)
        self.assertEqual(sorted(os.listdir(os.path.join(proj, "manifests"))),
                         [".envbox-project", "infer-cu130.toml", "pylock.infer-cu130.toml",
                          "pylock.train-cu128.toml", "train-cu128.toml"])
        # Mirrors given by flags are refused when they are not URLs, before anything is written.
        r = e("init", "x", "--default-index", "pypi.example/simple", check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        r = e("init", "x", "--cuda-index", url + "/pytorch-cu128", check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(proj, "manifests", "x.toml")))


if __name__ == "__main__":
    ENVBOX = envboxtest.take_binary()
    unittest.main()
