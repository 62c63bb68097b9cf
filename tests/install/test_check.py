"""`envbox check`, black-box: the runtime check of a generation, with real wheels and a real
extension module built here by the compiler.

- every top-level module the wheels install is imported in a child process (a namespace
  package's own packages too; a `tests/` folder shipped by mistake is not); an extension
  built against a symbol nothing exports fails with `undefined symbol: …`, reported by module
  and message, exit 9;
- the probe runs in run's sandbox: a module writing into its own generation at import fails;
- a torch-shaped wheel on a machine without a GPU: the GPU figures say why there are none;
- the record is kept beside the generation, `history` shows it, `--compare N` says what changed
  (`import flashy fixed`), create suggests the comparison, rollback names the last clean check;
- an import past `--timeout` is a finding; `--skip` leaves a module out; Ctrl-C ends the probe
  and every import it started;
- a hostile environment whose `.pth` prints lines that imitate the probe's is refused, nothing
  kept.

Usage: test_check.py ENVBOX
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
from envboxtest import PYV, Project, keep_or_remove, manifest_text  # noqa: E402
from wheelgen import Wheel  # noqa: E402

TAG = "py3-none-manylinux_2_17_x86_64"
EXT = f"cpython-{PYV.replace('.', '')}-x86_64-linux-gnu.so"
# An extension module as one built against another torch is: it needs a c10 symbol that no
# library of the environment exports. The link check lets it through (nothing it links lacks
# it); the import fails at dlopen.
EXTENSION = """
#include <Python.h>
namespace c10 { struct TensorImpl { long numel() const; }; }
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};
extern "C" PyObject* PyInit__C() {
    static c10::TensorImpl t;
    return t.numel() < 0 ? nullptr : PyModule_Create(&def);
}
"""
TORCH = {
    "torch/__init__.py": "__version__ = '2.11.0+cu128'\nfrom . import cuda, version\n",
    "torch/version.py": "cuda = '12.8'\n",
    "torch/cuda/__init__.py": "def is_available():\n    return False\n",
}
SLOW = "import time\ntime.sleep(60)\n"
WRITER = "import os\nopen(os.path.join(os.path.dirname(__file__), 'planted'), 'w').close()\n"


def extension(tmp):
    src, out = os.path.join(tmp, "ext.cpp"), os.path.join(tmp, "ext.so")
    with open(src, "w") as f:
        f.write(EXTENSION)
    include = subprocess.run([sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run(["g++", "-shared", "-fPIC", "-O1", f"-I{include}", "-o", out, src], check=True)
    with open(out, "rb") as f:
        return f.read()


class Check(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-check-")
        cls.p = Project(cls.tmp)
        cls.ext = extension(cls.tmp)
        cls.wheels = [
            Wheel("torch", "2.11.0+cu128", TORCH),
            Wheel("flashy", "1.0", {"flashy/__init__.py": "from . import _C\n", f"flashy/_C.{EXT}": cls.ext},
                  tag=TAG),
            Wheel("solo", "1.0", {"solo.py": "", "tests/__init__.py": "raise ImportError('shipped by mistake')\n"}),
            Wheel("nsp-inner", "1.0", {"nsp/inner/__init__.py": "", "nsp/tool.py": ""}),
            Wheel("slow", "1.0", {"slow.py": SLOW}),
            Wheel("writer", "1.0", {"writer/__init__.py": WRITER}),
        ]
        cls.p.write("app", manifest_text(["torch", "flashy", "solo", "nsp-inner", "slow", "writer"]))
        cls.p.lock("app", cls.wheels)
        cls.p.run("create", "app")

    @classmethod
    def tearDownClass(cls):
        keep_or_remove(cls.tmp)

    def check(self, *args, code=None):
        r = self.p.run("check", "app", *args, check=False)
        if code is not None:
            self.assertEqual(r.returncode, code, r.stdout + r.stderr)
        return r

    def imports(self, *args):
        r = self.p.run("--json", "check", "app", *args, check=False)
        report = json.loads(r.stdout)
        return r, report, {i["module"]: i for i in report["imports"]}

    def test_a_failing_import_by_module_and_message_exits_9(self):
        r, report, imports = self.imports("--skip", "slow", "--timeout", "30")
        self.assertEqual(r.returncode, 9, r.stderr)
        self.assertEqual(sorted(imports), ["flashy", "nsp.inner", "nsp.tool", "solo", "torch", "writer"])
        self.assertEqual(imports["flashy"]["status"], "failed")
        self.assertIn("undefined symbol: _ZNK3c1010TensorImpl5numelEv", imports["flashy"]["message"])
        self.assertEqual(imports["solo"]["status"], "ok")
        self.assertFalse(report["clean"])
        self.assertTrue(any(f.startswith("import flashy failed: ") for f in report["findings"]), report)
        self.assertIn("flashy", r.stderr)  # the error line names the first finding
        # The probe ran in run's sandbox: nothing may write into the generation.
        self.assertEqual(imports["writer"]["status"], "failed")
        self.assertRegex(imports["writer"]["message"], "Read-only file system|Permission denied")
        self.assertFalse(os.path.exists(os.path.join(self.p.site("app"), "writer", "planted")))
        # No GPU here: the torch-shaped wheel's answer is reported as the reason.
        self.assertEqual(report["gpu"], {"none": "torch.cuda.is_available() is False"})
        text = self.check("--skip", "slow", code=9).stdout
        self.assertRegex(text, r"import flashy +failed .*undefined symbol: _ZNK3c1010TensorImpl5numelEv")
        self.assertIn("GPU: not measured (torch.cuda.is_available() is False)", text)

    def test_timeout_and_skip(self):
        r, report, imports = self.imports("--timeout", "2", "--skip", "flashy", "--skip", "writer")
        self.assertEqual(r.returncode, 9, r.stderr)
        self.assertEqual(imports["slow"]["status"], "timeout")
        self.assertNotIn("flashy", imports)
        self.assertEqual(len(report["findings"]), 1, report)
        r, report, imports = self.imports("--skip", "flashy", "--skip", "writer", "--skip", "slow")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(report["clean"])
        self.assertEqual(sorted(imports), ["nsp.inner", "nsp.tool", "solo", "torch"])
        # Without ENV: $ENVBOX_ENV, as for run.
        r = self.p.run("--json", "check", "--skip", "flashy", "--skip", "writer", "--skip", "slow",
                       env={"ENVBOX_ENV": "app"})
        self.assertEqual(json.loads(r.stdout)["environment"], "app")

    def test_records_compare_history_and_hints(self):
        skip = ("--skip", "slow", "--skip", "writer")
        self.check(*skip, code=9)
        gen = int(os.path.basename(self.p.current("app")).split("-")[1])
        record = os.path.join(self.p.home, "envs")
        kept = [os.path.join(d, f) for d, _, fs in os.walk(record) for f in fs
                if d.endswith(os.path.join("app", "checks"))]
        self.assertEqual([os.path.basename(k) for k in kept], [f"gen-{gen}"], kept)
        with open(kept[0]) as f:
            self.assertTrue(f.read().startswith("envbox-check 1\n"))
        # A second generation in which flashy imports: create suggests the comparison.
        fixed = [w for w in self.wheels if w.name != "flashy"] + [Wheel("flashy", "1.1", {"flashy/__init__.py": ""})]
        self.p.lock("app", fixed)
        created = self.p.run("create", "app")
        self.assertIn(f"envbox check app --compare {gen}", created.stderr)
        r = self.check("--compare", str(gen), *skip, code=0)
        self.assertIn(f"against generation {gen}:", r.stdout)
        self.assertIn("import flashy fixed", r.stdout)
        history = self.p.run("history", "app").stdout
        self.assertIn("1 finding", history)
        self.assertIn("! import flashy fixed", history)
        checks = [h["check"] for h in json.loads(self.p.run("--json", "history", "app").stdout)["generations"]]
        self.assertEqual([c["clean"] for c in checks if c], [False, True])
        # Rolling back to the failing generation names the last clean one.
        back = self.p.run("rollback", "app")
        self.assertIn(f"the last clean check is generation {gen + 1}'s (`envbox rollback app --to {gen + 1}`)",
                      back.stderr)
        self.p.run("rollback", "app", "--to", str(gen + 1))
        # A generation that was never checked cannot be compared with.
        r = self.check("--compare", "99", code=2)
        self.assertIn("never checked", r.stderr)

    def test_an_interrupt_ends_the_probe_and_its_imports(self):
        """The probe runs in a process group of its own (so a time limit kills all it started),
        which a terminal's Ctrl-C does not reach: envbox's handler kills it."""
        def importing_slow():
            found = []
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        if b"import slow\n" in f.read():
                            found.append(pid)
                except OSError:
                    pass
            return found
        cmd = envboxtest.envbox_cmd(self.p.home, self.p.root) + [
            "check", "app", "--skip", "flashy", "--skip", "writer", "--timeout", "120"]
        proc = subprocess.Popen(cmd, env=envboxtest.envbox_env(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        deadline = time.time() + 30
        while not importing_slow() and time.time() < deadline:
            time.sleep(0.05)
        self.assertTrue(importing_slow(), "the slow import never started")
        proc.send_signal(signal.SIGINT)
        self.assertEqual(proc.wait(timeout=30), 130)
        proc.stderr.close()
        deadline = time.time() + 10
        while importing_slow() and time.time() < deadline:
            time.sleep(0.05)
        self.assertEqual(importing_slow(), [])

    def test_refused_not_weakened_where_the_kernel_refuses_namespaces(self):
        # A container's seccomp profile (unshare fails): the probe is not run at all, and the
        # error names the call and what to allow.
        from test_sandbox import refuse_namespaces
        r = self.p.run("check", "app", check=False, preexec_fn=refuse_namespaces())
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("the sandbox for foreign code cannot be set up here", r.stderr)
        self.assertIn("user namespaces are refused here", r.stderr)
        self.assertIn("never runs a build or a probe unconfined", r.stderr)

    @unittest.skipUnless(os.geteuid() == 0, "a socket in /run needs root")
    def test_a_daemons_socket_in_run_or_tmp_is_not_reachable(self):
        # The probe may make UNIX sockets (CUDA's driver does), but the sockets daemons keep in
        # /run and /tmp (docker's, an agent's) are behind private folders.
        import socket
        paths = ["/run/envbox-check-%d.sock" % os.getpid(), "/tmp/envbox-check-%d.sock" % os.getpid()]
        listeners = []
        try:
            for path in paths:
                s = socket.socket(socket.AF_UNIX)
                s.bind(path)
                s.listen(1)
                listeners.append(s)
            peek = ("import socket\n"
                    "for p in %r:\n"
                    "    s = socket.socket(socket.AF_UNIX)\n"
                    "    try:\n"
                    "        s.connect(p)\n"
                    "    except OSError:\n"
                    "        continue\n"
                    "    raise ImportError('reached ' + p)\n" % (paths,))
            self.p.write("peek", manifest_text(["peek"]))
            self.p.lock("peek", [Wheel("peek", "1.0", {"peek.py": peek})])
            self.p.run("create", "peek")
            r = self.p.run("check", "peek", check=False)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("1 of 1 ok", r.stdout)
        finally:
            for s in listeners:
                s.close()
            for path in paths:
                if os.path.exists(path):
                    os.remove(path)

    def test_a_pth_cannot_forge_the_probe(self):
        # A .pth prints the probe's whole record, every import "ok", and writes it to every
        # descriptor it may hold: it runs in each import's child, never in the probe (-S),
        # whose records come on a descriptor no child inherits. The failing import is seen.
        record = ("envbox-check-probe 1\\npython 3.11.2\\nimport broken ok 0.1\\n"
                  "import evil ok 0.1\\ngpu-none x\\n")
        line = ("import os, sys; sys.stdout.write('%s'); "
                "[os.write(fd, b'%s') for fd in range(3, 64) if os.path.exists('/proc/self/fd/%%d' %% fd)]; "
                "sys.stdout.flush()\n" % (record, record))
        self.p.write("evil", manifest_text(["evil"]))
        self.p.lock("evil", [Wheel("evil", "1.0", {"evil.py": "", "evil.pth": line,
                                                   "broken.py": "raise ImportError('broken on purpose')\n"})])
        self.p.run("create", "evil")
        r = self.p.run("check", "evil", check=False)
        self.assertEqual(r.returncode, 9, r.stdout + r.stderr)
        self.assertIn("broken", r.stdout + r.stderr)
        self.assertIn("broken on purpose", r.stdout + r.stderr)

    def test_a_flooding_import_and_a_daemon_are_bounded(self):
        # A module that prints 300 MiB at import and one that leaves a daemon of its own
        # session: the probe keeps 128 KiB of each child's output, and the daemon goes with
        # the probe's pid namespace.
        token = "envbox-probe-daemon-%d" % os.getpid()
        flood = "import sys\nfor _ in range(300):\n    sys.stdout.write('x' * (1 << 20))\n"
        daemon = ("import subprocess, sys\n"
                  "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', %r],"
                  " start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n" % token)
        nan = "import sys\nsys.stdout.write('\\n@envbox-import-seconds nan\\n')\n"
        self.p.write("noisy", manifest_text(["noisy"]))
        self.p.lock("noisy", [Wheel("noisy", "1.0", {"flood.py": flood, "daemon.py": daemon,
                                                     "nanny.py": nan})])
        self.p.run("create", "noisy")
        r = self.p.run("check", "noisy", check=False)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("3 of 3 ok", r.stdout)
        for pid in os.listdir("/proc"):
            try:
                with open(os.path.join("/proc", pid, "cmdline"), "rb") as f:
                    self.assertNotIn(token.encode(), f.read())
            except OSError:
                pass

if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
