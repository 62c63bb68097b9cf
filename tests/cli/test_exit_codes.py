#!/usr/bin/env python3
"""The exit-code table is true: the table is parsed from docs/exit-codes.md and every row is
provoked with the real binary (a real project, wheels built by the test, indexes on
127.0.0.1), the exit status checked. A code the table lists that no case here provokes, or a
case whose code the table lacks, fails too, so table and binary cannot drift apart.

    test_exit_codes.py ENVBOX_BINARY
"""
import glob
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
from envboxtest import Project, envbox_cmd, envbox_env, keep_or_remove, manifest_text, sha256_file  # noqa: E402
from httpserver import StaticServer, free_port  # noqa: E402
from wheelgen import Wheel, normalize  # noqa: E402

TABLE = os.path.join(HERE, "..", "..", "docs", "exit-codes.md")
OLD_DRIVER = {"ENVBOX_CUDA_DRIVER": "550.54.15"}  # runs CUDA 12, not CUDA 13


def table_codes():
    """{code: description} of docs/exit-codes.md's table (rows `| N | text |`)."""
    with open(TABLE, encoding="utf-8") as f:
        text = f.read()
    rows = re.findall(r"^\| (\d+) \| (.+) \|$", text, re.M)
    return {int(code): what for code, what in rows}


def simple_index(root, wheels):
    """PEP 503 pages under root/simple/, the wheels under root/files/."""
    pages = {}
    for w in wheels:
        path = w.build(os.path.join(root, "files"))
        fn = os.path.basename(path)
        pages.setdefault(normalize(w.name), []).append(f'<a href="/files/{fn}#sha256={sha256_file(path)}">{fn}</a>')
    for project, anchors in pages.items():
        os.makedirs(os.path.join(root, "simple", project))
        with open(os.path.join(root, "simple", project, "index.html"), "w") as f:
            f.write("<html><body>\n" + "\n".join(anchors) + "\n</body></html>\n")


class ExitCodes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-codes-")
        cls.www = os.path.join(cls.tmp, "www")
        simple_index(cls.www, [Wheel("torch", "2.11.0+cu128", {"torch/__init__.py": ""}),
                               Wheel("nvidia-cublas", "13.0.0.19", {"nvidia/cublas/__init__.py": ""}),
                               Wheel("alpha", "1.0", {"alpha/__init__.py": ""})])
        cls.server = StaticServer(cls.www)
        cls.p = Project(cls.tmp)
        p = cls.p
        p.write("env", manifest_text(["alpha"]))
        p.lock("env", [Wheel("alpha", "1.0", {"alpha/__init__.py": "X = 1\n"})])
        p.run("create", "env")
        with open(os.path.join(cls.tmp, "not-executable"), "w") as f:
            f.write("#!/bin/sh\necho hi\n")

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        keep_or_remove(cls.tmp)

    def code(self, *args, env=None):
        r = self.p.run(*args, check=False, env=env)
        return r.returncode, r.stderr

    def index_manifest(self, env, requirements, url, cuda=None):
        self.p.write(env, manifest_text(requirements, cuda=cuda, indexes=[("main", url, "")]))

    # One method per code of the table; test_every_row_is_provoked checks the set.

    def case_0(self):
        yield ("list",), None
        yield ("run", "--frozen", "env", "--", "python", "-c", "import alpha"), None

    def case_1(self):
        # A never-created environment: the same code from every command that needs it.
        self.p.write("never", manifest_text(["alpha"]))
        self.p.lock("never", [Wheel("alpha", "1.0", {"alpha/__init__.py": "X = 1\n"})])
        for args in (("verify", "never"), ("show", "never"), ("history", "never"), ("rollback", "never"),
                     ("run", "--frozen", "never", "--", "true"), ("shell", "--frozen", "never"),
                     ("delete", "never"), ("diff", "never"), ("pin", "never"), ("unpin", "never", "1")):
            yield args, None

    def case_2(self):
        yield ("frobnicate",), "unknown command 'frobnicate'; the commands are"
        # A likely typo of a command or option: the one meant.
        yield ("lokc", "env"), "unknown command 'lokc' (did you mean 'lock'?); the commands are"
        yield ("lock", "env", "--chekc"), "envbox lock: unknown option '--chekc' (did you mean '--check'?)"
        yield ("create", "env", "--no-compil"), "(did you mean '--no-compile'?)"
        yield ("cache", "prune", "--jsno"), "envbox cache prune: unknown option '--jsno' (did you mean '--json'?)"
        yield ("create", "env", "--locked", "--frozen"), "--frozen"
        yield ("create", "env", "--link-mode", "teleport"), "teleport"
        yield ("list",), "ENVBOX_CUDA_DRIVER", {"ENVBOX_CUDA_DRIVER": "abc"}

    def case_3(self):
        self.p.write("typo", manifest_text(["alpha"], indexes=[("main", self.server.url + "/simple", "explict = true\n")]))
        yield ("lock", "typo"), "did you mean 'explicit'?"
        # A lock mixing CUDA lines is a lock refused, whatever the driver.
        self.index_manifest("mixed", ["torch==2.11.0+cu128", "nvidia-cublas"], self.server.url + "/simple")
        yield ("lock", "mixed"), "nvidia-cublas"
        yield ("lock", "env", "--check"), None  # a lock written by hand: no manifest digest
        # A mistyped ENV is a missing manifest, named with the environments there are.
        missing = "no manifest " + os.path.join(self.p.root, "manifests", "nope.toml") + " (the environments here are "
        for cmd in ("create", "lock", "tree", "export", "verify", "show", "history", "rollback", "diff",
                    "delete"):
            yield (cmd, "nope"), missing
        yield ("pin", "nope"), missing
        yield ("unpin", "nope", "1"), missing
        yield ("run", "nope", "--", "true"), missing
        yield ("shell", "--frozen", "nope"), missing
        yield ("create", "evn"), "manifests/evn.toml (did you mean env? the environments here are "
        self.p.write("pinned", manifest_text(["alpha"], indexes=[("main", self.server.url + "/simple", "")],
                                             sources='alpha = "mian"\n'))
        yield ("lock", "pinned"), "No [[index]] is named 'mian' (did you mean 'main'?)"
        # Requirements no version satisfies: the explained `no solution`.
        self.index_manifest("unsolvable", ["alpha>=2"], self.server.url + "/simple")
        yield ("lock", "unsolvable"), "no solution"

    def case_4(self):
        self.index_manifest("closed", ["alpha"], f"http://127.0.0.1:{free_port()}/simple")
        yield ("lock", "closed"), "127.0.0.1"

    def case_5(self):
        self.p.write("tamper", manifest_text(["beta"]))
        self.p.lock("tamper", [Wheel("beta", "1.0", {"beta/__init__.py": "B = 1\n"})])
        self.p.run("create", "tamper")
        target = os.path.join(self.p.site("tamper"), "beta", "__init__.py")
        os.chmod(target, 0o644)  # the store object's mode: the same inode
        with open(target, "w") as f:
            f.write("B = 2\n")
        yield ("verify", "tamper"), "has drifted from its lock"

    def case_6(self):
        self.p.write("cu13", manifest_text(["torch"]))
        self.p.lock("cu13", [Wheel("torch", "2.11.0+cu130", {"torch/__init__.py": ""})])
        yield ("create", "cu13"), "cannot run CUDA 13", OLD_DRIVER

    def case_7(self):
        self.p.write("clash", manifest_text(["one", "two"]))
        self.p.lock("clash", [Wheel("one", "1.0", {"shared/x.py": "ONE\n"}),
                              Wheel("two", "1.0", {"shared/x.py": "TWO\n"})])
        yield ("create", "clash"), "shared/x.py"

    def case_8(self):
        # An extension needing a c10 symbol the environment's libc10.so does not export.
        build = os.path.join(self.tmp, "abi-build")
        os.makedirs(build, exist_ok=True)
        for name, text, extra in (
                ("libc10.so", "namespace c10 { int kept() { return 1; } }\n", ["-Wl,-soname,libc10.so"]),
                ("ext.so", "namespace c10 { int gone(); }\nint f() { return c10::gone(); }\n",
                 ["-L" + build, "-Wl,--no-as-needed", "-l:libc10.so", "-Wl,-rpath,$ORIGIN/../torch/lib"])):
            src = os.path.join(build, name + ".cpp")
            with open(src, "w") as f:
                f.write(text)
            subprocess.run(["g++", "-shared", "-fPIC", "-o", os.path.join(build, name), src] + extra, check=True)
        tag = "py3-none-manylinux_2_17_x86_64"
        read = lambda name: open(os.path.join(build, name), "rb").read()  # noqa: E731
        self.p.write("abi", manifest_text(["torch", "ext"]))
        self.p.lock("abi", [Wheel("torch", "2.11.0", {"torch/lib/libc10.so": read("libc10.so")}, tag=tag),
                            Wheel("ext", "1.0", {"ext/_C.so": read("ext.so")}, tag=tag)])
        yield ("create", "abi"), "needs c10::gone() from"

    def case_9(self):
        # `check`: a module of the environment does not import.
        self.p.write("imports", manifest_text(["broken"]))
        self.p.lock("imports", [Wheel("broken", "1.0", {"broken/__init__.py": "import no_such_module_here\n"})])
        self.p.run("create", "imports")
        yield ("check", "imports"), "No module named 'no_such_module_here'"

    def case_126(self):
        yield ("run", "--frozen", "env", "--", os.path.join(self.tmp, "not-executable")), "cannot run"

    def case_127(self):
        yield ("run", "--frozen", "env", "--", "no-such-command-here"), "command not found: no-such-command-here"

    def test_counts_are_pluralised(self):
        self.p.write("one", manifest_text(["solo"]))
        self.p.lock("one", [Wheel("solo", "1.0", {"solo.py": ""})])
        r = self.p.run("create", "one")
        self.assertRegex(r.stderr, r"Installed 1 package \(\d+ files\)")
        self.assertIn("Stored 1 wheel (", r.stderr)
        self.assertIn("(generation 1, 1 package); nothing to do", self.p.run("create", "one").stderr)
        self.assertIn("  1 package  python", self.p.run("list").stdout)

    def test_every_row_is_provoked(self):
        table = table_codes()
        self.assertIn(0, table)
        cases = {int(n[len("case_"):]) for n in dir(self) if n.startswith("case_")} | {130}
        self.assertEqual(sorted(table), sorted(cases), "docs/exit-codes.md's table and the cases here differ")

    def test_each_row_gives_its_code(self):
        for name in sorted((n for n in dir(self) if n.startswith("case_")), key=lambda n: int(n[5:])):
            want = int(name[5:])
            for case in getattr(self, name)():
                args, says, env = (case + (None,))[:3]
                with self.subTest(code=want, args=args):
                    got, err = self.code(*args, env=env)
                    self.assertEqual(got, want, f"{args}: {err}")
                    if says:
                        self.assertIn(says, err, args)

    def test_130_when_interrupted(self):
        """SIGINT (and SIGTERM) to a lock waiting on an index that never answers."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen(16)  # connections are taken by the kernel and never answered
            self.index_manifest("hang", ["alpha"], f"http://127.0.0.1:{s.getsockname()[1]}/simple")
            for sig in (signal.SIGINT, signal.SIGTERM):
                with self.subTest(signal=sig):
                    proc = subprocess.Popen(envbox_cmd(self.p.home, self.p.root) + ["lock", "hang"],
                                            env=envbox_env({"ENVBOX_HTTP_TIMEOUT": "60"}),
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    time.sleep(1.0)
                    self.assertIsNone(proc.poll(), proc.stderr.read() if proc.poll() is not None else "")
                    proc.send_signal(sig)
                    _, err = proc.communicate(timeout=30)
                    self.assertEqual(proc.returncode, 130, err)
                    self.assertIn("interrupted", err)
            self.assertFalse(os.path.exists(self.p.lock_path("hang")), "an interrupted lock wrote a lock")

    def test_an_ignored_sigint_stays_ignored(self):
        """`nohup`, or `cmd &` in a script: envbox does not make itself interruptible."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen(16)
            self.index_manifest("hang2", ["alpha"], f"http://127.0.0.1:{s.getsockname()[1]}/simple")
            proc = subprocess.Popen(envbox_cmd(self.p.home, self.p.root) + ["lock", "hang2"],
                                    env=envbox_env({"ENVBOX_HTTP_TIMEOUT": "60"}),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
            time.sleep(1.0)
            proc.send_signal(signal.SIGINT)
            time.sleep(0.5)
            self.assertIsNone(proc.poll(), "an ignored SIGINT ended envbox")
            proc.kill()
            proc.communicate(timeout=30)


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
