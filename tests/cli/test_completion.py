#!/usr/bin/env python3
"""The zsh and fish completion scripts parse and load in the real shells: `zsh -n` and
`fish -n` on `envbox completion zsh|fish`, zsh registering `_envbox` for envbox through
compinit, fish completing commands, nested commands (`cache clean|prune`) and option values.
A shell that is not installed skips its tests, saying which package to install (scripts/
install-deps installs both); bash is tested in tests/install/test_workflow.py.

    test_completion.py ENVBOX_BINARY
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
from envboxtest import envbox, keep_or_remove  # noqa: E402


def need(test, shell):
    path = shutil.which(shell)
    if not path:
        test.skipTest(f"{shell} is not installed (apt-get install {shell}); its completion script is unchecked")
    return path


class Completion(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-completion-")
        self.home = os.path.join(self.tmp, "home")
        os.makedirs(os.path.join(self.tmp, "manifests"))
        for name in ("train-cu128.toml", "pylock.train-cu128.toml", "infer.toml"):
            open(os.path.join(self.tmp, "manifests", name), "w").close()

    def tearDown(self):
        keep_or_remove(self.tmp)

    def script(self, shell):
        path = os.path.join(self.tmp, "envbox." + shell)
        with open(path, "w") as f:
            f.write(envbox("completion", shell, home=self.home).stdout)
        return path

    def shell(self, *argv):
        return subprocess.run(argv, capture_output=True, text=True, cwd=self.tmp,
                              env=dict(os.environ, HOME=self.tmp), timeout=60)

    def test_the_checks_can_fail(self):
        """A broken script is refused by the same check, so a pass means something."""
        for shell, broken in (("zsh", "f() {\n  case $x in\n"), ("fish", "function f\n  if true\n")):
            with self.subTest(shell=shell):
                need(self, shell)
                path = os.path.join(self.tmp, "broken." + shell)
                with open(path, "w") as f:
                    f.write(broken)
                self.assertNotEqual(self.shell(shell, "-n", path).returncode, 0)

    def test_zsh_script_parses_and_registers(self):
        zsh = need(self, "zsh")
        path = self.script("zsh")
        r = self.shell(zsh, "-n", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.shell(zsh, "-f", "-c", f"autoload -U compinit && compinit -u -D && source {path} && "
                       "print -r -- $_comps[envbox] && whence -w _envbox_envs")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["_envbox", "_envbox_envs:", "function"])

    def test_fish_script_parses_and_completes(self):
        fish = need(self, "fish")
        path = self.script("fish")
        r = self.shell(fish, "-n", path)
        self.assertEqual(r.returncode, 0, r.stderr)

        def complete(line):
            r = self.shell(fish, "--no-config", "-c", f"source {path}; complete -C '{line}'")
            self.assertEqual(r.returncode, 0, r.stderr)
            return sorted(x.split("\t")[0] for x in r.stdout.splitlines())

        self.assertEqual(complete("envbox de"), ["delete"])
        self.assertEqual(complete("envbox cache "), ["clean", "prune"])
        self.assertIn("--all", complete("envbox cache clean --"))
        self.assertEqual(complete("envbox export x --format "), ["pylock", "requirements-txt"])
        self.assertEqual([w for w in complete("envbox delete ") if not w.startswith("-")], ["infer", "train-cu128"])


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
