#!/usr/bin/env python3
"""Black-box tests of generations: history, rollback, verify, gc, per-environment locks and
crash safety (SIGKILL at random moments), with the real envbox binary and real processes.

    test_generations.py ENVBOX_BINARY
"""
import glob
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
from envboxtest import (DEBIAN_WHEELS, PYTHON, Project, envbox_cmd, envbox_env, keep_or_remove,  # noqa: E402
                        many_files, small_tmpfs)
from wheelgen import Wheel, write_lock  # noqa: E402


class HistoryAndRollback(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-gen-")
        self.p = Project(self.tmp)

    def tearDown(self):
        keep_or_remove(self.tmp)

    def test_generations_history_rollback(self):
        p = self.p
        p.lock("env", [Wheel("alpha", "1.0", {"alpha.py": "A = 1\n"}), Wheel("beta", "1.0", {"beta.py": ""})])
        p.run("create", "env")
        p.lock("env", [Wheel("alpha", "2.0", {"alpha.py": "A = 2\n"}), Wheel("gamma", "1.0", {"gamma.py": ""})])
        r = p.run("create", "env")
        self.assertIn("generation 2", r.stderr)
        self.assertTrue(p.current("env").endswith("gen-2"))
        # A create whose lock matches the current generation does nothing and says so.
        self.assertIn("up to date", p.run("create", "env").stderr)

        h = json.loads(p.run("history", "env", "--json").stdout)["generations"]
        self.assertEqual([g["generation"] for g in h], [1, 2])
        self.assertTrue(h[1]["current"])
        self.assertEqual(h[1]["added"], ["gamma 1.0"])
        self.assertEqual(h[1]["removed"], ["beta 1.0"])
        self.assertEqual(h[1]["changed"], ["alpha 1.0 → 2.0"])
        self.assertNotEqual(h[0]["lock_digest"], h[1]["lock_digest"])

        r = p.run("rollback", "env")
        self.assertIn("2 → 1", r.stderr)
        self.assertTrue(p.current("env").endswith("gen-1"))
        out = p.run("run", "env", "--", "python", "-c", "import alpha; print(alpha.A)").stdout
        self.assertEqual(out, "1\n")
        self.assertTrue(os.path.exists(os.path.join(p.root, ".envbox", "env", "lib")))
        self.assertTrue(os.path.realpath(os.path.join(p.root, ".envbox", "env")).endswith("gen-1"))
        p.run("rollback", "env", "--to", "2")
        self.assertTrue(p.current("env").endswith("gen-2"))
        self.assertEqual(p.run("rollback", "env", "--to", "9", check=False).returncode, 2)
        # An incomplete generation (a build that never finished) is refused.
        os.makedirs(os.path.join(os.path.dirname(p.current("env")), "gen-3", ".envbox"))
        r = p.run("rollback", "env", "--to", "3", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("incomplete", r.stderr)
        self.assertTrue(p.current("env").endswith("gen-2"))
        # The next create cleans the unstamped leftover and builds gen-4 after it.
        p.lock("env", [Wheel("alpha", "3.0", {"alpha.py": "A = 3\n"})])
        p.run("create", "env")
        self.assertTrue(p.current("env").endswith("gen-4"))
        self.assertFalse(os.path.exists(os.path.join(os.path.dirname(p.current("env")), "gen-3")))

    def test_verify_reports_pollution_and_create_restores(self):
        p = self.p
        p.lock("env", [many_files("stack", "1.0", 30)])
        p.run("create", "env")
        p.lock("env", [many_files("stack", "1.1", 30)])
        p.run("create", "env")
        self.assertEqual(p.run("verify", "env").returncode, 0)
        self.assertEqual(p.run("verify", "env", "--deep").returncode, 0)
        site = p.site("env")
        # A stray pip install (sandbox off) and an editor that rewrites a file (new inode).
        extra = Wheel("intruder", "0.1", {"intruder.py": "X = 1\n"}).build(os.path.join(self.tmp, "w"))
        pip = next(w for w in DEBIAN_WHEELS if os.path.basename(w).startswith("pip-"))
        subprocess.run([PYTHON, os.path.join(pip, "pip"), "--python", os.path.join(p.current("env"), "bin", "python"),
                        "install", "-q", "--no-deps", "--no-index", "--disable-pip-version-check", extra], check=True)
        target = os.path.join(site, "stack", "sub3", "m3.py")
        with open(target + ".new", "w") as f:
            f.write("V = 'edited'\n")
        os.replace(target + ".new", target)
        r = p.run("verify", "env", "--json", check=False)
        self.assertEqual(r.returncode, 5)
        report = json.loads(r.stdout)
        kinds = {(d["kind"], os.path.basename(d["path"].rstrip("/"))) for d in report["drift"]}
        self.assertIn(("modified", "m3.py"), kinds)
        self.assertIn(("extra", "intruder.py"), kinds)
        self.assertIn(("foreign", "intruder-0.1.dist-info"), kinds)
        foreign = next(d for d in report["drift"] if d["kind"] == "foreign")
        self.assertIn("pip", foreign["detail"])
        # Roll back to the clean generation, then build the lock again: a clean generation.
        p.run("rollback", "env")
        self.assertEqual(p.run("verify", "env", "--deep").returncode, 0)
        r = p.run("create", "env")
        self.assertIn("generation 3", r.stderr)
        self.assertEqual(p.run("verify", "env", "--deep").returncode, 0)
        r = p.run("run", "env", "--", "python", "-c", "import stack; print(stack.VERSION)")
        self.assertEqual(r.stdout, "1.1\n")

    def test_verify_without_env_checks_every_environment_of_the_project(self):
        """Each environment of the project: a lock in manifests/, a manifest, or one created
        from `--lock FILE`; one never created here is said and passed over (a node builds the
        environments it runs); exit 5 when any has drifted, naming it."""
        p = self.p
        for env in ("a", "b", "c"):
            p.lock(env, [Wheel(env + "lib", "1.0", {env + "lib.py": ""})])
        p.run("create", "a")
        p.run("create", "b")
        p.run("create", "d", "--lock", p.lock_path("a"))  # no file in manifests/
        envboxtest.write_manifest(p.root, "m", envboxtest.manifest_text([]))  # never created
        with open(os.path.join(p.root, "manifests", "notes.txt"), "w") as f:
            f.write("not an environment\n")
        r = p.run("verify")
        for env in ("a", "b", "d"):
            self.assertRegex(r.stderr, rf"(?m)^{env} generation 1: clean \(")
        self.assertIn("c: never created here (`envbox create c`)", r.stderr)
        self.assertIn("5 environments: 3 clean, 0 drifted, 0 not checked, 2 never created", r.stderr)
        lines = [json.loads(line) for line in p.run("verify", "--json").stdout.splitlines()]
        self.assertEqual([(x["environment"], x["clean"]) for x in lines],
                         [("a", True), ("b", True), ("c", None), ("d", True), ("m", None)])
        self.assertEqual(lines[2]["skipped"], "never created")
        # A file planted in b: exit 5 naming b, the others still checked and clean.
        with open(os.path.join(p.site("b"), "planted.py"), "w") as f:
            f.write("X = 1\n")
        r = p.run("verify", check=False)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertRegex(r.stdout, r"(?m)^b  extra .*planted\.py$")  # each drift line names its environment
        self.assertIn("b generation 1: 1 difference from the lock", r.stderr)
        self.assertIn("error: b has drifted from its lock", r.stderr)
        self.assertRegex(r.stderr, r"(?m)^d generation 1: clean \(")
        r = p.run("verify", "--json", "--deep", check=False)
        self.assertEqual(r.returncode, 5, r.stderr)
        lines = {x["environment"]: x for x in map(json.loads, r.stdout.splitlines())}
        self.assertEqual((lines["a"]["clean"], lines["b"]["clean"], lines["d"]["clean"]), (True, False, True))
        self.assertTrue(lines["b"]["deep"])
        self.assertEqual([d["kind"] for d in lines["b"]["drift"]], ["extra"])
        # Without a project there is nothing to check: give ENV (or --store).
        empty = os.path.join(self.tmp, "empty")
        os.makedirs(empty)
        r = envboxtest.envbox("verify", home=p.home, project=empty, check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("give ENV", r.stderr)

    def test_gc_keeps_current_and_newest(self):
        p = self.p
        for v in ("1.0", "2.0", "3.0", "4.0"):
            p.lock("env", [many_files("churn", v, 20, big=200_000)])
            p.run("create", "env")
        p.run("rollback", "env", "--to", "1")  # the current one is never removed
        dry = json.loads(p.run("gc", "--keep", "1", "--dry-run", "--json").stdout)
        self.assertEqual(dry["generations_removed"], 2)
        gens = sorted(os.path.basename(g) for g in glob.glob(os.path.join(os.path.dirname(p.current("env")), "gen-*")))
        self.assertEqual(gens, ["gen-1", "gen-2", "gen-3", "gen-4"], "dry run deleted something")
        r = json.loads(p.run("gc", "--keep", "1", "--json").stdout)
        self.assertEqual(r, dry | {"dry_run": False})
        self.assertGreater(r["bytes_freed"], 400_000)  # two 200 kB blobs and their files
        gens = sorted(os.path.basename(g) for g in glob.glob(os.path.join(os.path.dirname(p.current("env")), "gen-*")))
        self.assertEqual(gens, ["gen-1", "gen-4"])
        self.assertEqual(p.run("verify", "env", "--deep").returncode, 0)
        p.run("rollback", "env", "--to", "4")
        self.assertEqual(p.run("verify", "env", "--deep").returncode, 0)
        # Nothing left to collect.
        again = json.loads(p.run("gc", "--keep", "2", "--json").stdout)
        self.assertEqual((again["objects_removed"], again["wheels_removed"]), (0, 0))


class KnownGood(unittest.TestCase):
    """`envbox pin ENV [N]` / `unpin ENV N`: gc keeps a pinned generation (and the current one)
    whatever --keep says, and says why; history records rollbacks and pins as events and marks
    a generation built from an earlier one's lock; list and show show pins. The pins and the
    event log live in the environment's folder and are read with bounds."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="envbox-pin-")
        self.p = Project(self.tmp)

    def tearDown(self):
        keep_or_remove(self.tmp)

    def version(self, v):
        return [Wheel("alpha", v, {"alpha.py": f"A = {v!r}\n"}), Wheel("beta", "1.0", {"beta.py": ""})]

    def build(self, *versions):
        for v in versions:
            self.p.lock("env", self.version(v))
            self.p.run("create", "env")

    def edir(self):
        return os.path.dirname(self.p.current("env"))

    def gens(self):
        return sorted(os.path.basename(g) for g in glob.glob(os.path.join(self.edir(), "gen-*")))

    def test_a_pinned_generation_survives_gc_keep_1_and_rollback_to_it_works(self):
        p = self.p
        self.build("1.0")
        r = p.run("pin", "env")  # the current generation: 1
        self.assertIn("env generation 1 pinned", r.stderr)
        self.build("2.0", "3.0", "4.0")
        dry = json.loads(p.run("gc", "--keep", "1", "--dry-run", "--json").stdout)
        self.assertEqual(self.gens(), ["gen-1", "gen-2", "gen-3", "gen-4"], "dry run deleted something")
        r = p.run("gc", "--keep", "1")
        self.assertRegex(r.stderr, r"note: kept \S+ env gen-1: pinned")
        self.assertEqual(sorted(g.rsplit(" ", 1)[1] for g in dry["removed"]), ["gen-2", "gen-3"])
        self.assertEqual(len(dry["kept"]), 1)
        self.assertTrue(dry["kept"][0].endswith(" env gen-1: pinned"), dry["kept"])
        self.assertEqual(self.gens(), ["gen-1", "gen-4"])
        # The known-good generation is one rollback away, and whole.
        p.run("rollback", "env", "--to", "1")
        self.assertTrue(p.current("env").endswith("gen-1"))
        self.assertEqual(p.run("verify", "env", "--deep").returncode, 0)
        out = p.run("run", "env", "--", "python", "-c", "import alpha; print(alpha.A)").stdout
        self.assertEqual(out, "1.0\n")
        # --keep counts unpinned generations: the current one is kept, and says why when --keep
        # alone would not have kept it.
        self.build("5.0")
        p.run("rollback", "env", "--to", "1")
        r = json.loads(p.run("gc", "--keep", "1", "--json").stdout)
        self.assertEqual([g.rsplit(" ", 1)[1] for g in r["removed"]], ["gen-4"])
        self.assertTrue(r["kept"][0].endswith(" env gen-1: current, pinned"), r["kept"])
        self.assertEqual(self.gens(), ["gen-1", "gen-5"])
        # Unpinned, it goes like any other once it is no longer current.
        r = p.run("unpin", "env", "1")
        self.assertIn("env generation 1 unpinned", r.stderr)
        self.assertIn("was not pinned", p.run("unpin", "env", "1").stderr)
        p.run("rollback", "env", "--to", "5")
        r = json.loads(p.run("gc", "--keep", "1", "--json").stdout)
        self.assertEqual([g.rsplit(" ", 1)[1] for g in r["removed"]], ["gen-1"])
        self.assertEqual(r["kept"], [])
        self.assertEqual(self.gens(), ["gen-5"])
        self.assertEqual(p.run("rollback", "env", "--to", "1", check=False).returncode, 2)

    def test_history_records_rollbacks_and_pins_and_a_rebuilt_lock(self):
        p = self.p
        self.build("1.0", "2.0")
        p.run("rollback", "env")
        p.run("pin", "env", "1")
        p.run("pin", "env", "1")  # pinned already: no second event
        p.run("rollback", "env", "--to", "2")
        p.run("rollback", "env", "--to", "2")  # already there: no event
        p.run("pin", "env", "2")
        p.run("unpin", "env", "2")
        # Generation 1's lock built again (a `git revert` of the lock): the same lock, not changes.
        self.build("1.0")
        p.run("create", "env", "--force")
        h = json.loads(p.run("history", "env", "--json").stdout)
        self.assertEqual(h["environment"], "env")
        gens = {g["generation"]: g for g in h["generations"]}
        self.assertEqual(sorted(gens), [1, 2, 3, 4])
        self.assertEqual([gens[n]["same_lock_as"] for n in (1, 2, 3, 4)], [None, None, 1, 1])
        self.assertEqual([gens[n]["pinned"] for n in (1, 2, 3, 4)], [True, False, False, False])
        self.assertTrue(gens[4]["current"])
        self.assertEqual([e["text"] for e in h["events"]],
                         ["rollback 2 → 1", "pin 1", "rollback 1 → 2", "pin 2", "unpin 2"])
        self.assertEqual(h["events"][0] | {"when": None},
                         {"when": None, "event": "rollback", "from": 2, "generation": 1, "text": "rollback 2 → 1"})
        self.assertRegex(h["events"][1]["when"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertEqual([pin["generation"] for pin in h["pins"]], [1])
        text = p.run("history", "env").stdout
        self.assertIn("same lock as generation 1", text)
        gen3 = text[text.index("gen 3"):text.index("gen 4")]
        self.assertNotIn("~ alpha", gen3)  # the same lock, not listed as changes against gen 2
        self.assertRegex(text, r"gen 1 .*  pinned")
        for line in ("rollback 2 → 1", "pin 1", "rollback 1 → 2", "pin 2", "unpin 2"):
            self.assertRegex(text, r"\n  \S+Z  " + line + r"\n")
        # list and show show the pins where they show generations.
        listed = json.loads(p.run("list", "--json").stdout)
        self.assertEqual(listed[0]["pinned"], [1])
        self.assertIn("pinned 1", p.run("list").stdout)
        shown = json.loads(p.run("show", "env", "--json").stdout)
        self.assertEqual(shown["pinned"], [1])
        self.assertEqual([g["pinned"] for g in shown["generations"]], [True, False, False, False])
        self.assertRegex(p.run("show", "env").stdout, r"gen 1 .* pinned")
        # delete removes pinned generations too, and says how many.
        r = p.run("delete", "env")
        self.assertIn("4 generations, 1 of them pinned", r.stderr)

    def test_pinning_a_missing_or_incomplete_generation_is_refused(self):
        p = self.p
        self.build("1.0")
        r = p.run("pin", "env", "7", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("generation 7 of env does not exist", r.stderr)
        os.makedirs(os.path.join(self.edir(), "gen-3", ".envbox"))
        r = p.run("pin", "env", "3", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("generation 3 of env is incomplete", r.stderr)
        self.assertEqual(p.run("pin", "env", "x1", check=False).returncode, 2)
        self.assertFalse(os.path.exists(os.path.join(self.edir(), "pins")))

    def test_a_hostile_pins_or_event_file_is_an_error_naming_it(self):
        p = self.p
        self.build("1.0", "2.0", "3.0")
        p.run("pin", "env", "1")
        pins = os.path.join(self.edir(), "pins")
        events = os.path.join(self.edir(), "events")
        with open(pins) as f:
            self.assertTrue(f.read().startswith("envbox-pins 1\n"))
        for content in (b"envbox-pins 1\npin 1 $(reboot)\n", b"envbox-pins 1\npin -1 2025-01-01T00:00:00Z\n",
                        b"\x00\xff garbage\n", b"envbox-pins 1\n" + b"pin " + b"9" * 100_000 + b"\n",
                        b"envbox-pins 1\n" + b"pin 1 2025-01-01T00:00:00Z\n" * 80_000):
            with self.subTest(content=content[:40]):
                with open(pins, "wb") as f:
                    f.write(content)
                for args in (("history", "env"), ("pin", "env", "2"), ("list",)):
                    r = p.run(*args, check=False)
                    self.assertEqual(r.returncode, 5, (args, r.stderr))
                    self.assertIn(pins, r.stderr)
                # gc keeps every generation of this environment, goes on, and fails at the end.
                r = p.run("gc", "--keep", "1", check=False)
                self.assertEqual(r.returncode, 5, r.stderr)
                self.assertIn("every generation", r.stderr)
                self.assertIn(pins, r.stderr)
                self.assertEqual(self.gens(), ["gen-1", "gen-2", "gen-3"], "gc removed something on a bad pins file")
        os.unlink(pins)
        os.mkfifo(pins)  # never blocks a reader
        r = p.run("gc", "--keep", "1", check=False, timeout=60)
        self.assertEqual(r.returncode, 5)
        self.assertIn(pins, r.stderr)
        self.assertEqual(self.gens(), ["gen-1", "gen-2", "gen-3"])
        os.unlink(pins)
        with open(events, "wb") as f:
            f.write(b"envbox-events 1\nrollback 2025-01-01T00:00:00Z 3\n")
        r = p.run("history", "env", check=False)
        self.assertEqual(r.returncode, 5)
        self.assertIn(events + ": line 2", r.stderr)
        # delete still removes everything, a bad pins file included.
        with open(pins, "wb") as f:
            f.write(b"garbage")
        p.run("delete", "env")
        self.assertFalse(os.path.exists(pins))

    def test_the_event_log_is_bounded(self):
        p = self.p
        self.build("1.0", "2.0")
        for _ in range(20):
            p.run("pin", "env", "1")
            p.run("unpin", "env", "1")
        events = os.path.join(self.edir(), "events")
        size = os.path.getsize(events)
        with open(events, "ab") as f:  # as if thousands of events had been recorded
            f.write(b"pin 2025-01-01T00:00:00Z 1\nunpin 2025-01-01T00:00:00Z 1\n" * 1500)
        p.run("rollback", "env")
        self.assertLess(os.path.getsize(events), 64 << 10)
        self.assertGreater(os.path.getsize(events), size)
        h = json.loads(p.run("history", "env", "--json").stdout)
        self.assertEqual(h["events"][-1]["text"], "rollback 2 → 1")
        self.assertGreater(len(h["events"]), 500)


NOBODY = 65534
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


class ReadOnlyOnDisk(unittest.TestCase):
    """A complete generation's directories are 0555 (as Nix's store): its owner, not root,
    cannot add a file outside `run` (a `pip install --prefix`, an IDE), while gc, delete and
    create --force still remove and rebuild it."""

    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("acting as another user needs root")
        self.tmp = tempfile.mkdtemp(prefix="envbox-ro-")
        os.chmod(self.tmp, 0o755)
        self.p = Project(self.tmp)
        self.p.lock("env", [Wheel("alpha", "1.0", {"alpha/__init__.py": "A = 1\n", "alpha/sub/x.py": ""})])
        for d, dirs, files in os.walk(self.tmp):
            for n in [d] + [os.path.join(d, f) for f in files]:
                os.chown(n, NOBODY, NOBODY)

    def tearDown(self):
        keep_or_remove(self.tmp)

    def as_nobody(self, *args, check=True):
        return self.p.run(*args, check=check, prefix=AS_NOBODY, env={"HOME": self.tmp})

    def write_as_nobody(self, path):
        return subprocess.run(AS_NOBODY + ["sh", "-c", 'echo x > "$1"', "-", path], capture_output=True,
                              text=True)

    def test_the_owner_cannot_add_a_file_but_gc_delete_and_force_work(self):
        self.as_nobody("create", "env")
        gen = self.p.current("env")
        site = envboxtest.site_packages(gen)
        for d in (gen, os.path.join(gen, "bin"), site, os.path.join(site, "alpha"), os.path.join(site, "alpha", "sub")):
            with self.subTest(folder=d):
                self.assertEqual(os.stat(d).st_mode & 0o777, 0o555)
                r = self.write_as_nobody(os.path.join(d, "planted.py"))
                self.assertNotEqual(r.returncode, 0)
                self.assertIn("Permission denied", r.stderr)
        self.assertEqual(self.as_nobody("verify", "env", "--deep").returncode, 0)
        # A second generation, then gc and delete, all as the owner.
        self.as_nobody("create", "env", "--force")
        self.as_nobody("gc", "--keep", "1")
        self.assertFalse(os.path.exists(gen))
        self.assertTrue(self.p.current("env"))
        self.as_nobody("delete", "env")
        self.assertIsNone(self.p.current("env"))


class Concurrency(unittest.TestCase):
    def test_four_creates_and_a_gc_at_once(self):
        tmp = tempfile.mkdtemp(prefix="envbox-conc-")
        try:
            p = Project(tmp)
            p.lock("one", [many_files("one_pkg", "1.0", 400), many_files("shared_pkg", "1.0", 400)])
            p.lock("two", [many_files("two_pkg", "1.0", 400), many_files("shared_pkg", "1.0", 400)])
            e = envbox_env()
            base = envbox_cmd(p.home, p.root)
            procs = [subprocess.Popen(base + ["create", env], env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True) for env in ("one", "two", "one", "two")]
            procs.append(subprocess.Popen(base + ["gc", "--keep", "1"], env=e, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
            for proc in procs:
                out, err = proc.communicate(timeout=300)
                self.assertEqual(proc.returncode, 0, err)
            for env in ("one", "two"):
                self.assertEqual(p.run("verify", env, "--deep").returncode, 0)
                gens = glob.glob(os.path.join(os.path.dirname(p.current(env)), "gen-*"))
                self.assertEqual(len(gens), 1, "the second create of an environment must be a no-op")
        finally:
            keep_or_remove(tmp)

    def test_no_wait_fails_fast_while_another_create_holds_the_environment(self):
        tmp = tempfile.mkdtemp(prefix="envbox-nowait-")
        try:
            p = Project(tmp)
            p.lock("env", [many_files("slow", "1.0", 10)])
            key_lock = None
            p.run("create", "env")
            locks = glob.glob(os.path.join(p.home, "locks", "*.env.lock"))
            self.assertEqual(len(locks), 1)
            key_lock = locks[0]
            holder = subprocess.Popen(["flock", key_lock, "sleep", "5"])
            try:
                time.sleep(0.3)
                p.lock("env", [many_files("slow", "2.0", 10)])
                start = time.time()
                r = p.run("create", "env", "--no-wait", check=False)
                self.assertEqual(r.returncode, 1)
                self.assertIn("another envbox", r.stderr)
                self.assertLess(time.time() - start, 3)
            finally:
                holder.kill()
                holder.wait()
            p.run("create", "env")
        finally:
            keep_or_remove(tmp)


class CrashSafety(unittest.TestCase):
    """SIGKILL `envbox create` at random moments: afterwards `current` is always a complete
    generation that passes `verify --deep`, and the next create succeeds."""

    KILLS = int(os.environ.get("ENVBOX_TEST_KILLS", "50"))

    def test_sigkill_at_random_moments(self):
        tmp = tempfile.mkdtemp(prefix="envbox-kill-")
        try:
            p = Project(tmp)
            variants = []
            for v in range(4):
                paths = [many_files(f"k{k}", f"{v}.0", 150).build(p.wheels) for k in range(6)]
                paths.append(many_files("kbig", f"{v}.0", 5, big=3_000_000).build(p.wheels))
                variants.append(paths)
            # How long each kind of create takes here: one with wheels the store has never seen
            # (ingest, link, switch) and one with known wheels (link, switch). Kills are timed
            # within those durations so they land mid-way, under sanitizers too.
            def timed_create(lock):
                write_lock(os.path.join(p.root, "manifests", "pylock.env.toml"), lock)
                start = time.perf_counter()
                p.run("create", "env")
                return time.perf_counter() - start
            full_new = timed_create(variants[0])
            timed_create(variants[1])
            full_known = timed_create(variants[2])
            full = full_new
            estimate = {"new": full_new, "known": full_known}
            e = envbox_env()
            rng = random.Random(7)
            killed = 0
            for i in range(self.KILLS):
                if i % 4 == 3:  # a wheel set the store has never seen, so kills land in ingest too
                    variants.append([many_files(f"k{k}", f"{100 + i}.0", 150).build(p.wheels) for k in range(6)] +
                                    [many_files("kbig", f"{100 + i}.0", 5, big=3_000_000).build(p.wheels)])
                    lock = variants[-1]
                else:
                    lock = variants[(i + 1) % 4]
                write_lock(os.path.join(p.root, "manifests", "pylock.env.toml"), lock)
                kind = "new" if i % 4 == 3 else "known"
                started = time.perf_counter()
                proc = subprocess.Popen(envbox_cmd(p.home, p.root) + ["create", "env", "-q"], env=e,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(rng.uniform(0.0, 0.9 * estimate[kind]))
                if proc.poll() is None:
                    proc.send_signal(signal.SIGKILL)
                    killed += 1
                else:  # finished first: this machine is faster right now; aim earlier next time
                    estimate[kind] = min(estimate[kind], time.perf_counter() - started)
                proc.wait()
                cur = p.current("env")
                self.assertIsNotNone(cur)
                self.assertTrue(os.path.exists(os.path.join(cur, ".envbox", "complete")), cur)
                r = p.run("verify", "env", "--deep", check=False)
                self.assertEqual(r.returncode, 0, f"after kill {i}: {r.stdout}{r.stderr}")
            print(f"\n  {killed} of {self.KILLS} creates killed mid-way (a full create takes {full:.2f} s)",
                  file=sys.stderr)
            self.assertGreaterEqual(killed, self.KILLS * 2 // 5, "too few runs were actually killed mid-way")
            r = p.run("create", "env")
            self.assertEqual(p.run("verify", "env", "--deep").returncode, 0)
            gc = json.loads(p.run("gc", "--keep", "1", "--json").stdout)
            self.assertEqual(os.listdir(os.path.join(p.home, "tmp")), [], "gc leaves no temporary files")
            self.assertGreaterEqual(gc["generations_removed"], 0)
            self.assertEqual(p.run("verify", "env", "--deep").returncode, 0)
        finally:
            keep_or_remove(tmp)


class DiskFull(unittest.TestCase):
    def test_enospc_leaves_previous_generation_current(self):
        tmp, mnt = small_tmpfs(self, "envbox-full-", "6m")
        try:
            p = Project(tmp)
            p.home = os.path.join(mnt, "home")
            p.lock("env", [many_files("fits", "1.0", 20)])
            p.run("create", "env")
            before = p.current("env")
            p.lock("env", [many_files("toolarge", "1.0", 20, big=8_000_000)])
            r = p.run("create", "env", check=False)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("No space left on device", r.stderr)
            self.assertEqual(p.current("env"), before)
            self.assertEqual(p.run("verify", "env", "--deep").returncode, 0)
            self.assertEqual(os.listdir(os.path.join(p.home, "tmp")), [])
        finally:
            subprocess.run(["umount", mnt])
            keep_or_remove(tmp)


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
