#!/usr/bin/env python3
"""The zsh and fish completion scripts parse and load in the real shells: `zsh -n` and
`fish -n` on `envbox completion zsh|fish`, zsh registering `_envbox` for envbox through
compinit, fish completing commands, nested commands (`cache clean|prune`) and option values.

Names read at completion time (manifests' environment names, locks' package names) are
completed for real in bash, zsh and fish in a repository holding hostile ones: none may run a
command (marker files), only valid names are offered (check_env_name's rule, PEP 508's).
bash: `_envbox` called with COMP_WORDS/COMP_CWORD/COMP_LINE/COMP_POINT set; zsh: an
interactive `zsh -f -i` on a pseudo-terminal, compinit loaded, TAB typed, each match caught by
a `compadd` wrapper (`builtin compadd -O`); fish: `complete -C LINE`.
A shell that is not installed skips its tests, saying which package to install (scripts/
install-deps installs both zsh and fish); bash's commands and options are tested in
tests/install/test_workflow.py.

    test_completion.py ENVBOX_BINARY
"""
import glob
import os
import pty
import select
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
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


# Each hostile name would create a file PWNED… in the repository if a shell ran it; ${IFS} alone
# runs nothing but would split into the words `touch` and `PWNED…` (which must not be offered).
HOSTILE_ENVS = ("$(touch PWNED1)", "`touch PWNED2`", "a;touch PWNED3", "$(touch${IFS}PWNED4)",
                "x${IFS}touch${IFS}PWNED5", "a'$(touch PWNED6)'", '"$(touch PWNED7)"', "a b",
                "new\nline", ".hidden", "x" * 101, "caf\u00e9", "a*", "pylock.train-cu128")
VALID_ENVS = ("train-cu128", "infer", "_a.b", "Py3.12", "x" * 100)
HOSTILE_PACKAGES = ("a`touch PWNED11`b", "$(touch PWNED12)", "$(touch${IFS}PWNED13)",
                    "x${IFS}touch${IFS}PWNED14", "a;touch PWNED15", "a|touch PWNED16", "-bad",
                    "bad.", "a b", "caf\u00e9", "a\\\"$(touch PWNED17)")
VALID_PACKAGES = ("torch", "a", "zope.interface", "typing_extensions", "nvidia-cublas-cu12")
# An ENV positional and a PKG positional or option value, in each shell's own terms.
ENV_LINE = "envbox delete "
PACKAGE_LINES = ("envbox why infer ", "envbox tree infer --invert ")


def hostile_repository(root):
    """Writes manifests/ holding VALID_ENVS, HOSTILE_ENVS and two locks naming the packages
    (one of them with a hostile file name of its own)."""
    manifests = os.path.join(root, "manifests")
    os.makedirs(manifests, exist_ok=True)
    for name in VALID_ENVS + HOSTILE_ENVS:
        open(os.path.join(manifests, name + ".toml"), "w").close()
    packages = VALID_PACKAGES + HOSTILE_PACKAGES
    for lock, names in (("pylock.x.toml", packages[::2]), ("pylock.$(touch PWNED20).toml", packages[1::2])):
        with open(os.path.join(manifests, lock), "w") as f:
            f.write('lock-version = "1.0"\n')
            for n in names:
                f.write(f'\n[[packages]]\nname = "{n}"\nversion = "1.0"\n')


class Repository(unittest.TestCase):
    """A temporary repository (`fill` makes its manifests/) and the completion scripts for it."""

    def fill(self):
        raise NotImplementedError

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-completion-")
        self.home = os.path.join(self.tmp, "home")
        self.fill()

    def tearDown(self):
        keep_or_remove(self.tmp)

    def script(self, shell):
        path = os.path.join(self.tmp, "envbox." + shell)
        with open(path, "w") as f:
            f.write(envbox("completion", shell, home=self.home).stdout)
        return path


class Completion(Repository):
    def fill(self):
        os.makedirs(os.path.join(self.tmp, "manifests"))
        for name in ("train-cu128.toml", "pylock.train-cu128.toml", "infer.toml"):
            open(os.path.join(self.tmp, "manifests", name), "w").close()

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



class HostileNames(Repository):
    """Every shell completes environment and package names from a repository holding hostile
    ones: no command runs, every valid name is offered and nothing else."""

    def fill(self):
        hostile_repository(self.tmp)

    def complete_bash(self, line):
        """COMPREPLY of `_envbox` for LINE (its last word being completed), one per line, the
        function called as bash's programmable completion calls it."""
        words = line.split(" ")
        r = subprocess.run(
            ["bash", "--norc", "--noprofile", "-c",
             'src=$1; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; '
             'COMP_POINT=${#COMP_LINE}; source "$src" || exit; '
             '_envbox; if ((${#COMPREPLY[@]})); then printf "%s\\n" "${COMPREPLY[@]}"; fi',
             "bash", self.script("bash")] + words,
            capture_output=True, text=True, cwd=self.tmp, env=dict(os.environ, HOME=self.tmp), timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.splitlines()

    def complete_zsh(self, line):
        """The matches zsh's completion system adds for LINE, TAB typed in an interactive zsh."""
        zsh = need(self, "zsh")
        hits, tabbed = os.path.join(self.tmp, "zsh-hits"), os.path.join(self.tmp, "zsh-tabbed")
        for f in (hits, tabbed):
            if os.path.exists(f):
                os.remove(f)
        # compadd records each match it adds (the calls that ask compadd for matches themselves,
        # -O, -A or -D, are left alone); TAB runs complete-word, then says it has returned.
        setup = ("autoload -U compinit && compinit -u -D && source " + shlex.quote(self.script("zsh")) +
                 " && compadd() { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\\ * ]]; then builtin compadd \"$@\"; "
                 "return; fi; local -a __hits; builtin compadd -O __hits \"$@\"; "
                 "print -rl -- $__hits >> " + shlex.quote(hits) + "; builtin compadd \"$@\"; } && "
                 "_tab() { zle complete-word; : > " + shlex.quote(tabbed) + "; } && zle -N _tab && "
                 "bindkey '^I' _tab\n")
        pid, fd = pty.fork()
        if pid == 0:
            os.chdir(self.tmp)
            os.execve(zsh, [zsh, "-f", "-i"], dict(os.environ, HOME=self.tmp, TERM="dumb"))
        try:
            os.write(fd, (setup + line + "\t").encode())
            deadline = time.monotonic() + 30
            while not os.path.exists(tabbed) and time.monotonic() < deadline:
                if select.select([fd], [], [], 0.1)[0]:
                    os.read(fd, 65536)  # the terminal's output, drained so zsh never blocks
            self.assertTrue(os.path.exists(tabbed), "zsh did not complete " + repr(line))
            os.write(fd, b"\x15exit\n")  # Ctrl-U: what TAB left on the line goes
        finally:
            deadline = time.monotonic() + 10
            while os.waitpid(pid, os.WNOHANG) == (0, 0):
                if time.monotonic() > deadline:
                    os.kill(pid, 9)
                    os.waitpid(pid, 0)
                    break
                if select.select([fd], [], [], 0.1)[0]:
                    try:
                        os.read(fd, 65536)
                    except OSError:  # EIO: zsh has closed the terminal
                        time.sleep(0.05)
            os.close(fd)
        if not os.path.exists(hits):
            return []
        with open(hits) as f:
            return [w for w in f.read().splitlines() if w]

    def complete_fish(self, line):
        """The candidates of `complete -C LINE`, without their descriptions."""
        fish = need(self, "fish")
        r = subprocess.run([fish, "--no-config", "-c", "source $argv[1]; complete -C $argv[2]",
                            self.script("fish"), line],
                           capture_output=True, text=True, cwd=self.tmp, env=dict(os.environ, HOME=self.tmp),
                           timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return [x.split("\t")[0] for x in r.stdout.splitlines()]

    def markers(self):
        """The marker files a hostile name created, removed (each check sees its own)."""
        found = sorted(glob.glob(os.path.join(self.tmp, "PWNED*")))
        for f in found:
            os.remove(f)
        return [os.path.basename(f) for f in found]

    def check(self, shell, line, valid, allowed):
        offered = [w for w in getattr(self, "complete_" + shell)(line) if not w.startswith("-")]  # no options
        self.assertEqual(self.markers(), [], "a name ran a command")
        self.assertEqual([w for w in offered if w not in allowed], [], "an invalid name is offered")
        self.assertEqual(sorted(set(valid) - set(offered)), [], "a valid name is not offered")

    def test_environment_names(self):
        for shell in ("bash", "zsh", "fish"):
            for line in (ENV_LINE, "envbox pin ", "envbox unpin "):
                with self.subTest(shell=shell, line=line):
                    self.check(shell, line, VALID_ENVS, VALID_ENVS)

    def test_package_names(self):
        for shell in ("bash", "zsh", "fish"):
            for line in PACKAGE_LINES:
                with self.subTest(shell=shell, line=line):
                    # `why ENV PKG`: bash and fish offer environment names beside the packages.
                    self.check(shell, line, VALID_PACKAGES, VALID_PACKAGES + VALID_ENVS)

    def test_a_prefix_filters_literally(self):
        """The word being completed is a prefix, not a pattern or an expansion."""
        for shell in ("bash", "zsh", "fish"):
            with self.subTest(shell=shell):
                self.check(shell, ENV_LINE + "tr", ["train-cu128"], ["train-cu128"])
                self.assertEqual([w for w in getattr(self, "complete_" + shell)(ENV_LINE + "$(touch${IFS}PWNED30)")
                                  if not w.startswith("-")], [])
                self.assertEqual(self.markers(), [])
                getattr(self, "complete_" + shell)("envbox --home `touch${IFS}PWNED31`")  # a file name
                self.assertEqual(self.markers(), [])


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
