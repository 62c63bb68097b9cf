#!/usr/bin/env python3
"""Black-box tests of the everyday commands around an environment: init, export, delete,
shell, completion and run's exit statuses, with the real envbox binary, real wheels, a real
interpreter and pip as the consumer of exported requirements.

    test_workflow.py ENVBOX_BINARY
"""
import os
import platform
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
sys.path.insert(0, HERE)
from test_install import PYTHON, keep_or_remove  # noqa: E402

ENVBOX = None


def envbox(*args, home, cwd=None, project=None, check=True, env=None, stdin=None):
    cmd = [ENVBOX, "--home", home] + (["--project", project] if project else []) + list(args)
    e = dict(os.environ, ENVBOX_PYTHON=PYTHON)
    e.update(env or {})
    r = subprocess.run(cmd, capture_output=True, text=True, env=e, cwd=cwd, input=stdin)
    if check and r.returncode != 0:
        raise AssertionError(f"{cmd} exited {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}")
    return r


def host_target():
    """(X.Y, platform tag) of PYTHON, as envbox should detect them."""
    out = subprocess.run([PYTHON, "-c", "import platform, sys; print('%d.%d' % sys.version_info[:2]); "
                          "print(platform.libc_ver()[1]); print(platform.machine())"],
                         capture_output=True, text=True, check=True).stdout.split()
    return out[0], "manylinux_" + out[1].replace(".", "_") + "_" + out[2]


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
        xy, plat = host_target()
        self.assertIn("Detected CPython " + xy, r.stderr)
        self.assertIn(plat, r.stderr)
        text = self.manifest("cpu")
        self.assertIn(f'python = "{xy}"\n', text)
        self.assertIn(f'platform = "{plat}"\n', text)
        self.assertIn('url = "https://pypi.org/simple"', text)
        self.assertNotIn("cuda", text.replace("# ", "").split("\n", 1)[1])
        # The manifest parses: a lock of its (empty) requirements is written without a request.
        r = envbox("lock", "cpu", "--offline", home=self.home, cwd=self.proj)
        self.assertIn("0 requests", r.stderr)
        envbox("lock", "--check", "cpu", home=self.home, cwd=self.proj)

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


if __name__ == "__main__":
    ENVBOX = os.path.abspath(sys.argv.pop(1))
    unittest.main()
