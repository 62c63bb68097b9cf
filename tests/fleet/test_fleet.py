#!/usr/bin/env python3
"""Black-box tests of moving environments between machines: `push` / `pull` through a real OCI
registry (Debian's docker-registry, CNCF distribution 2.8, started here on 127.0.0.1: plain
http, and htpasswd auth behind TLS with a CA made by the test) and `pack` / `unpack` through
one tar file. Wheels are built by the test and served by a loopback index that is stopped
before anything is received, so the receiving home reaches no index: pull and unpack build
from the registry's blobs or the file alone, `verify --deep` is clean and `run` imports the
packages. A second environment sharing wheels uploads only its new blobs (the rest are mounted
from the first repository, counted in the registry's storage). Refused, naming the reference
or the member, with nothing stored: a blob corrupted in the registry's storage (exit 5), a
manifest of another artifact type or with a layer of an unknown media type, a layer the lock
does not list or of another size, a missing tag (exit 4), a wrong password (exit 4), TLS
without the registry's CA (exit 4); a pack with an absolute or `..` member, a link, a member
the lock does not name, one larger than the lock says, a wheel whose bytes are not the lock's.

    test_fleet.py ENVBOX_BINARY
"""
import glob
import hashlib
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
from envboxtest import envbox, keep_or_remove, manifest_text, sha256_file, write_manifest  # noqa: E402
from httpserver import StaticServer, free_port, make_test_ca  # noqa: E402
import registry  # noqa: E402
from wheelgen import Wheel, write_lock  # noqa: E402

WHEELS = [Wheel("alpha", "1.0", {"alpha/__init__.py": "VALUE = 'alpha 1.0'\n"}),
          Wheel("beta", "2.0", {"beta.py": "VALUE = 'beta 2.0'\n"}),
          Wheel("gamma", "3.0", {"gamma.py": "VALUE = 'gamma 3.0'\n"}),
          # Incompressible, so its blob takes hundreds of small chunks (the killed push below).
          Wheel("delta", "4.0", {"delta/__init__.py": "VALUE = 'delta 4.0'\n",
                                 "delta/blob.bin": random.Random(4).randbytes(400_000)})]


def need_registry(cls):
    if not registry.available():
        raise unittest.SkipTest(f"{registry.BINARY} is absent (apt-get install docker-registry; "
                                "scripts/install-deps installs it)")


class World(unittest.TestCase):
    """A loopback index holding WHEELS, and per test a build home (one: alpha, beta; two: alpha,
    beta, gamma) and a receiving home."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix=f"envbox-fleet-{cls.__name__}-")
        cls.www = os.path.join(cls.tmp, "www")
        for w in WHEELS:
            path = w.build(os.path.join(cls.www, "files"))
            fn = os.path.basename(path)
            os.makedirs(os.path.join(cls.www, "simple", w.name))
            with open(os.path.join(cls.www, "simple", w.name, "index.html"), "w") as f:
                f.write(f'<html><body><a href="/files/{fn}#sha256={sha256_file(path)}">{fn}</a></body></html>\n')

    @classmethod
    def tearDownClass(cls):
        keep_or_remove(cls.tmp)

    def setUp(self):
        self.case = tempfile.mkdtemp(dir=self.tmp, prefix=self._testMethodName[:40] + "-")
        self.index = StaticServer(self.www)
        self.project = os.path.join(self.case, "build")
        self.home = os.path.join(self.case, "home")
        for env, names in (("one", ["alpha", "beta"]), ("two", ["alpha", "beta", "gamma"]), ("big", ["delta"])):
            write_manifest(self.project, env, manifest_text(names, indexes=[("loop", f"{self.index.url}/simple", "")]))
        self.node = os.path.join(self.case, "node")
        self.node_home = os.path.join(self.case, "node-home")
        os.makedirs(self.node)

    def tearDown(self):
        self.index.close()

    def build(self, env):
        envbox("create", env, home=self.home, project=self.project)

    def at_node(self, *args, check=True, env=None):
        """envbox in the receiving node's home, from its (initially empty) working directory."""
        return envbox(*args, home=self.node_home, check=check, env=env, cwd=self.node)

    def node_wheels(self):
        d = os.path.join(self.node_home, "store-v1", "wheels")
        return sorted(os.listdir(d)) if os.path.isdir(d) else []

    def assert_works(self, env, names):
        self.at_node("verify", env, "--deep")
        code = "; ".join(f"import {n}; print({n}.VALUE)" for n in names)
        r = self.at_node("run", env, "--", "python", "-c", code)
        self.assertEqual(r.stdout.split("\n")[:-1], [f"{w.name} {w.version}" for w in WHEELS if w.name in names])

    def lock_text(self, env):
        with open(os.path.join(self.project, "manifests", f"pylock.{env}.toml")) as f:
            return f.read()

    def gamma(self):
        """gamma's wheel as the index serves it: (path on this disk, file name, size, sha256)."""
        fn = next(f for f in os.listdir(os.path.join(self.www, "files")) if f.startswith("gamma"))
        path = os.path.join(self.www, "files", fn)
        return path, fn, os.path.getsize(path), sha256_file(path)

    def extra_package_locations(self, node):
        """Where a hostile lock may name gamma, a wheel an artifact of `one` does not carry but
        that exists on the receiving machine: (case, TOML key and value). `../` is read from
        the lock's folder, NODE/manifests, so a copy is put at NODE/gamma…whl."""
        path, fn, _, _ = self.gamma()
        os.makedirs(node, exist_ok=True)
        shutil.copy(path, os.path.join(node, fn))
        return [("absolute", f'path = "{path}"'), ("dotdot", f'path = "../{fn}"'),
                ("file-url", f'url = "file://{path}"'), ("http-url", f'url = "{self.index.url}/files/{fn}"')]

    def with_extra_package(self, lock, location):
        """`lock` (bytes) with gamma added, its wheel named by `location` (a TOML line)."""
        _, fn, size, digest = self.gamma()
        entry = (f'\n[[packages]]\nname = "gamma"\nversion = "3.0"\n\n[[packages.wheels]]\nname = "{fn}"\n'
                 f'{location}\nsize = {size}\nhashes = {{ sha256 = "{digest}" }}\n')
        text = lock.decode()
        at = text.find("\n[tool.")  # before the tool table, which must come last
        return (text[:at] + "\n" + entry + text[at:] if at >= 0 else text + entry).encode()

    def assert_refused_extra(self, r, env):
        """Exit 5 naming the package, nothing stored, no environment, no lock left."""
        self.assertEqual(r.returncode, 5, r.stdout + r.stderr)
        self.assertIn("gamma", r.stderr)
        self.assertIn("artifact", r.stderr)
        self.assertEqual(self.node_wheels(), [])
        self.assertIsNone(envboxtest.current_generation(self.node_home, env))
        self.assertFalse(os.path.exists(os.path.join(self.node, "manifests", f"pylock.{env}.toml")))


class Push(World):
    reg_args = {}

    @classmethod
    def setUpClass(cls):
        need_registry(cls)
        super().setUpClass()
        cls.certs = os.path.join(cls.tmp, "certs")
        os.makedirs(cls.certs)
        if cls.reg_args:
            make_test_ca(cls.certs)

    def setUp(self):
        super().setUp()
        # A registry of its own per test: what one test stores (or corrupts) no other sees.
        self.registry = registry.Registry(os.path.join(self.case, "registry"), certs=self.certs, **self.reg_args)

    def tearDown(self):
        self.registry.close()
        super().tearDown()

    def ref(self, repo, tag="v1"):
        return f"{self.registry.host}/{repo}:{tag}"

    def push(self, env, ref, check=True, env_vars=None, flags=None):
        r = envbox("--json", "push", env, ref, *(self.registry.flags() if flags is None else flags),
                   home=self.home, project=self.project, check=check,
                   env=self.registry.credentials_env() if env_vars is None else env_vars)
        return json.loads(r.stdout) if check else r

    def pull(self, ref, *rest, check=True, env=None, flags=None):
        return self.at_node("pull", ref, *rest, *(self.registry.flags() if flags is None else flags),
                            check=check, env=self.registry.credentials_env() if env is None else env)

    def repo(self):
        return "team/" + self._testMethodName.replace("_", "-")[:40].strip("-")


class PlainRegistry(Push):
    def test_push_then_pull_with_the_index_stopped(self):
        self.build("one")
        ref = self.ref(self.repo())
        before = self.registry.blobs()
        report = self.push("one", ref)
        # Two wheels, their two bytecode layers, the lock and the empty config: six new blobs.
        self.assertEqual((report["wheels"], report["uploaded"], report["present"]), (2, 6, 0))
        self.assertEqual(len(self.registry.blobs() - before - {report["digest"]}), 6)  # the manifest aside
        manifest = self.registry.get_manifest(self.repo(), "v1")
        self.assertEqual(manifest["artifactType"], "application/vnd.envbox.environment.v1")
        self.assertEqual(manifest["config"]["mediaType"], "application/vnd.oci.empty.v1+json")
        titles = {l["annotations"]["org.opencontainers.image.title"]: l["digest"] for l in manifest["layers"]}
        for fn in os.listdir(os.path.join(self.www, "files")):
            if fn.startswith(("alpha", "beta")):
                self.assertEqual(titles[fn], "sha256:" + sha256_file(os.path.join(self.www, "files", fn)))
        self.assertEqual(manifest["annotations"]["dev.envbox.python"].rsplit(".", 1)[0], envboxtest.PYV)
        self.assertEqual(manifest["annotations"]["dev.envbox.cuda"], "none")
        self.index.close()
        r = self.pull(ref)
        self.assertIn("2 wheels (2 fetched, 0 already stored", r.stderr)
        self.assert_works(self.repo().split("/")[-1], ["alpha", "beta"])
        with open(os.path.join(self.node, "manifests", f"pylock.{self.repo().split('/')[-1]}.toml")) as f:
            self.assertEqual(f.read(), self.lock_text("one"))

    def test_pull_names_the_environment_and_diff_sees_the_lock(self):
        self.build("one")
        self.build("two")
        self.push("one", self.ref(self.repo(), "one"))
        self.push("two", self.ref(self.repo(), "two"))
        self.index.close()
        self.pull(self.ref(self.repo(), "one"), "e")
        self.assertEqual(len(self.node_wheels()), 2)
        r = self.at_node("create", "e", "--from", self.ref(self.repo(), "two"), "--plain-http",
                         "--update-lock")
        # The store had alpha and beta: only gamma's blob was fetched.
        self.assertIn("3 wheels (1 fetched, 2 already stored", r.stderr)
        self.assert_works("e", ["alpha", "beta", "gamma"])
        d = self.at_node("diff", "e#1", "e#2")
        self.assertIn("gamma", d.stdout)
        self.at_node("rollback", "e")
        self.at_node("verify", "e")

    def test_second_environment_uploads_only_its_new_blobs(self):
        self.build("one")
        self.build("two")
        first = self.push("one", self.ref(self.repo() + "-a"))
        self.assertEqual(first["uploaded"], 6)
        again = self.push("one", self.ref(self.repo() + "-a"))
        self.assertEqual((again["uploaded"], again["present"], again["mounted"]), (0, 6, 0))
        before = self.registry.blobs()
        second = self.push("two", self.ref(self.repo() + "-b"))
        # alpha, beta, their bytecode layers (the same bytes in every environment) and the
        # config are mounted from -a; gamma, its bytecode and the lock are uploaded.
        self.assertEqual((second["wheels"], second["uploaded"], second["mounted"]), (3, 3, 5))
        self.assertEqual(len(self.registry.blobs() - before - {second["digest"]}), 3)

    def test_push_refetches_a_wheel_the_store_keeps_no_archive_of_then_keeps_it(self):
        self.build("one")
        first = self.push("one", self.ref(self.repo()))
        self.assertEqual(first["refetched"], 2)
        archives = [os.path.join(self.home, "store-v1", "wheels", d, "archive")
                    for d in os.listdir(os.path.join(self.home, "store-v1", "wheels"))]
        self.assertTrue(all(os.path.exists(a) for a in archives))
        self.index.close()
        second = self.push("one", self.ref(self.repo(), "v2"))
        self.assertEqual(second["refetched"], 0)
        # gc sweeps a kept archive with its wheel.
        envbox("delete", "one", home=self.home, project=self.project)
        envbox("gc", home=self.home, project=self.project)
        self.assertFalse(any(os.path.exists(a) for a in archives))

    def test_a_blob_corrupted_in_storage_is_refused_and_nothing_is_stored(self):
        self.build("one")
        self.push("one", self.ref(self.repo()))
        manifest = self.registry.get_manifest(self.repo(), "v1")
        wheel = next(l for l in manifest["layers"] if l["mediaType"].endswith("wheel.v1+zip"))
        path = self.registry.blob_data(wheel["digest"])
        with open(path, "rb") as f:
            data = bytearray(f.read())
        data[len(data) // 2] ^= 0xFF
        with open(path, "wb") as f:
            f.write(data)
        r = self.pull(self.ref(self.repo()), check=False)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn(self.ref(self.repo()), r.stderr)
        self.assertIn(wheel["digest"], r.stderr)
        self.assertEqual(self.node_wheels(), [])
        self.assertFalse(os.path.exists(os.path.join(self.node, "manifests")))

    def test_a_pull_that_fails_while_downloading_leaves_the_projects_lock_as_it_was(self):
        """The received lock is written to the project only once its environment is built: a
        pull that fails (or is interrupted) while its blobs download leaves the lock alone."""
        self.build("one")
        self.build("two")
        self.push("one", self.ref(self.repo(), "one"))
        self.push("two", self.ref(self.repo(), "two"))
        self.pull(self.ref(self.repo(), "one"), "e")
        lock = os.path.join(self.node, "manifests", "pylock.e.toml")
        with open(lock) as f:
            before = f.read()
        _, _, _, sha = self.gamma()  # only `two` carries gamma
        path = self.registry.blob_data("sha256:" + sha)
        with open(path, "r+b") as f:
            f.seek(100)
            f.write(b"\xff\xfe")
        r = self.at_node("create", "e", "--from", self.ref(self.repo(), "two"), "--plain-http",
                         "--update-lock", check=False)
        self.assertEqual(r.returncode, 5, r.stderr)
        with open(lock) as f:
            self.assertEqual(f.read(), before)
        self.assert_works("e", ["alpha", "beta"])

    def hostile(self, edit):
        """Pushes `one`, writes its manifest edited by `edit` under tag `bad`, pulls that."""
        self.build("one")
        self.push("one", self.ref(self.repo()))
        m = self.registry.get_manifest(self.repo(), "v1")
        edit(m)
        self.registry.put_manifest(self.repo(), "bad", m)
        r = self.pull(self.ref(self.repo(), "bad"), check=False)
        self.assertIn(self.ref(self.repo(), "bad"), r.stderr)
        self.assertEqual(self.node_wheels(), [])
        return r

    def test_a_lock_naming_a_wheel_the_artifact_does_not_carry_is_refused(self):
        """The lock blob of a pushed `one` with gamma added, its wheel named by an absolute
        path, a `../` path, a file:// URL (each a real wheel on this disk) or an http URL: pull
        installed the local file. Only the artifact's wheels (or the store's) are installed."""
        self.build("one")
        self.push("one", self.ref(self.repo()))
        m = self.registry.get_manifest(self.repo(), "v1")
        lock_layer = next(l for l in m["layers"] if l["mediaType"].endswith("pylock.v1+toml"))
        status, _, lock = self.registry.api("GET", f"/v2/{self.repo()}/blobs/{lock_layer['digest']}")
        self.assertEqual(status, 200)
        for case, location in self.extra_package_locations(self.node):
            with self.subTest(case):
                self.node_home = os.path.join(self.case, case + "-home")  # a store without gamma
                hostile = self.with_extra_package(lock, location)
                lock_layer.update(digest=self.registry.put_blob(self.repo(), hostile), size=len(hostile))
                self.registry.put_manifest(self.repo(), case, m)
                r = self.pull(self.ref(self.repo(), case), "bad", check=False)
                self.assert_refused_extra(r, "bad")
                self.assertIn(self.ref(self.repo(), case), r.stderr)
        # The lock as pushed still pulls (the index is still up, and not asked).
        self.pull(self.ref(self.repo()), "good")
        self.assert_works("good", ["alpha", "beta"])

    def test_a_manifest_of_another_artifact_type_is_refused(self):
        r = self.hostile(lambda m: m.update(artifactType="application/vnd.example.other"))
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn("not an envbox environment", r.stderr)

    def test_a_layer_of_an_unknown_media_type_is_refused(self):
        def edit(m):
            m["layers"][1]["mediaType"] = "application/vnd.oci.image.layer.v1.tar+gzip"
        r = self.hostile(edit)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn("which envbox does not write", r.stderr)

    def test_a_layer_the_lock_does_not_list_is_refused(self):
        other = self.registry.put_blob(self.repo(), b"not a wheel of the lock")

        def edit(m):
            m["layers"][1]["digest"] = other
            m["layers"][1]["size"] = len(b"not a wheel of the lock")
        r = self.hostile(edit)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn("is not a file of its lock", r.stderr)

    def test_a_layer_of_another_size_than_the_lock_is_refused(self):
        def edit(m):
            m["layers"][1]["size"] += 1000
        r = self.hostile(edit)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn("in its lock", r.stderr)

    def test_a_blob_longer_than_its_size_is_stopped_there(self):
        self.build("one")
        self.push("one", self.ref(self.repo()))
        manifest = self.registry.get_manifest(self.repo(), "v1")
        wheel = next(l for l in manifest["layers"] if l["mediaType"].endswith("wheel.v1+zip"))
        with open(self.registry.blob_data(wheel["digest"]), "ab") as f:
            f.write(b"\0" * 4096)
        r = self.pull(self.ref(self.repo()), check=False)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn("larger than the size the manifest gives", r.stderr)
        self.assertIn(self.ref(self.repo()), r.stderr)
        self.assertEqual(self.node_wheels(), [])

    def pycs(self, home, env):
        """{path under site-packages: bytes} of every .pyc in ENV's current generation."""
        root = envboxtest.site_packages(envboxtest.current_generation(home, env))
        out = {}
        for d, _, files in os.walk(root):
            for f in files:
                if f.endswith(".pyc"):
                    with open(os.path.join(d, f), "rb") as fh:
                        out[os.path.relpath(os.path.join(d, f), root)] = fh.read()
        return out

    def test_a_pulled_environment_links_the_builders_bytecode_and_compiles_nothing(self):
        self.build("one")
        ref = self.ref(self.repo())
        report = self.push("one", ref)
        self.assertEqual((report["bytecode_layers"], report["pyc_files"]), (2, 2))
        layers = [l for l in self.registry.get_manifest(self.repo(), "v1")["layers"]
                  if l["mediaType"] == "application/vnd.envbox.bytecode.v1"]
        wheels = {sha256_file(os.path.join(self.www, "files", f))
                  for f in os.listdir(os.path.join(self.www, "files")) if f.startswith(("alpha", "beta"))}
        self.assertEqual({l["annotations"]["dev.envbox.wheel"] for l in layers}, wheels)
        self.index.close()
        r = self.pull(ref, "one", "--json")
        got = json.loads(r.stdout)
        self.assertEqual((got["bytecode_layers"], got["pyc_received"], got["compiled"]), (2, 2, 0), got)
        # -vv into a fresh store: the wheels stored last and when their bytecode was adopted
        # (a pull's tail).
        fresh = os.path.join(self.node, "fresh-home")
        r = envbox("pull", ref, "one", "-vv", *self.registry.flags(), home=fresh, cwd=self.node,
                   env=self.registry.credentials_env())
        self.assertRegex(r.stderr, r"  stored last: (alpha|beta) [0-9.]+ s \(its bytecode [0-9.]+ s\); "
                                   r"(alpha|beta) [0-9.]+ s \(its bytecode [0-9.]+ s\) \(seconds into")
        self.assert_works("one", ["alpha", "beta"])  # verify --deep: every .pyc is its list's
        builder = self.pycs(self.home, "one")
        self.assertEqual(len(builder), 2)
        self.assertEqual(self.pycs(self.node_home, "one"), builder)
        # In words, with -v; and a second pull into this store takes nothing (it has the lists).
        r = self.pull(ref, "again", "-vv")
        self.assertIn("Bytecode: 0 .pyc files taken from 2 layers the artifact carried; 0 modules compiled here",
                      r.stderr)
        # -vv: where the time went, each step of the create (a pull's downloads are in its
        # fetch+ingest).
        self.assertRegex(r.stderr, r"  seconds: create: select [0-9.]+, fetch\+ingest [0-9.]+, publish")
        # --ignore-bytecode in this home compiles the lists it took from the artifact again.
        got = json.loads(self.pull(ref, "strict", "--json", "--ignore-bytecode").stdout)
        self.assertEqual((got["pyc_received"], got["compiled"]), (0, 2), got)
        self.assertEqual(self.pycs(self.node_home, "strict"), builder)
        lists = glob.glob(os.path.join(self.node_home, "store-v1", "wheels", "*", "bytecode", "*"))
        self.assertEqual(len(lists), 2)
        for path in lists:
            with open(path) as f:
                self.assertNotIn("received yes", f.read())
        # A node that runs nothing the lock does not pin compiles its own: the same bytes.
        self.node_home = os.path.join(self.case, "strict-home")
        got = json.loads(self.pull(ref, "one", "--json", "--ignore-bytecode").stdout)
        self.assertEqual((got["pyc_received"], got["compiled"]), (0, 2), got)
        self.assertEqual(self.pycs(self.node_home, "one"), builder)
        # --no-bytecode on push sends none: the node compiles.
        self.index = StaticServer(self.www)
        plain = self.ref(self.repo(), "plain")
        self.assertEqual(self.push("one", plain, flags=self.registry.flags() + ["--no-bytecode"])["bytecode_layers"], 0)
        self.node_home = os.path.join(self.case, "plain-home")
        got = json.loads(self.pull(plain, "one", "--json").stdout)
        self.assertEqual((got["bytecode_layers"], got["pyc_received"], got["compiled"]), (0, 0, 2), got)

    def test_a_bytecode_layer_for_a_wheel_not_carried_is_refused(self):
        def edit(m):
            layer = next(l for l in m["layers"] if l["mediaType"] == "application/vnd.envbox.bytecode.v1")
            layer["annotations"]["dev.envbox.wheel"] = "e" * 64
        r = self.hostile(edit)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn("which the artifact does not carry", r.stderr)

    def test_one_bytecode_blob_named_for_two_wheels_is_refused(self):
        def edit(m):
            layers = [l for l in m["layers"] if l["mediaType"] == "application/vnd.envbox.bytecode.v1"]
            layers[1]["digest"], layers[1]["size"] = layers[0]["digest"], layers[0]["size"]
        r = self.hostile(edit)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn("is named twice", r.stderr)

    def test_a_bytecode_layer_that_lies_about_its_modules_is_refused(self):
        """A registry serving a layer whose list names a module the wheel does not have (its
        digests all consistent): exit 5, no generation, no bytecode list in the node's store."""
        self.build("one")
        self.push("one", self.ref(self.repo()))
        m = self.registry.get_manifest(self.repo(), "v1")
        layer = next(l for l in m["layers"] if l["mediaType"] == "application/vnd.envbox.bytecode.v1")
        with open(self.registry.blob_data(layer["digest"]), "rb") as f:
            data = f.read()
        head, rest = data.split(b"\nlist ", 1)
        size, rest = rest.split(b"\n", 1)
        text, pycs = rest[:int(size)], rest[int(size):]
        lines = text.split(b"\n")
        lines[-2] = lines[-2][:-len(lines[-2].split(b" ")[-1])] + b"evil/__init__.py"
        text = b"\n".join(lines)
        bad = head + b"\nlist " + str(len(text)).encode() + b"\n" + text + pycs
        layer["digest"] = self.registry.put_blob(self.repo(), bad)
        layer["size"] = len(bad)
        self.registry.put_manifest(self.repo(), "bad", m)
        r = self.pull(self.ref(self.repo(), "bad"), "bad", check=False)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn("evil/__init__.py, not a module of the wheel", r.stderr)
        self.assertIsNone(envboxtest.current_generation(self.node_home, "bad"))
        self.assertEqual(glob.glob(os.path.join(self.node_home, "store-v1", "wheels", "*", "bytecode", "*")), [])

    def test_pull_by_digest(self):
        self.build("one")
        report = self.push("one", self.ref(self.repo()))
        self.index.close()
        r = self.pull(f"{self.registry.host}/{self.repo()}@{report['digest']}", "d")
        self.assertIn("2 wheels (2 fetched", r.stderr)
        self.assert_works("d", ["alpha", "beta"])

    def test_the_reviewed_lock_refuses_another_artifact_before_anything_is_fetched(self):
        """The project's committed lock is the root of trust: an artifact of another lock is
        refused (exit 5, both digests named), nothing stored, the lock untouched; the artifact of
        that very lock is pulled; --update-lock takes the artifact's; --lock FILE names the
        reviewed lock explicitly."""
        self.build("one")
        self.build("two")
        self.push("one", self.ref(self.repo(), "one"))
        self.push("two", self.ref(self.repo(), "two"))
        self.index.close()
        reviewed = os.path.join(self.node, "manifests", "pylock.e.toml")
        os.makedirs(os.path.dirname(reviewed))
        with open(reviewed, "w") as f:
            f.write(self.lock_text("one"))
        digest = lambda text: "sha256:" + hashlib.sha256(text.encode()).hexdigest()  # noqa: E731
        r = self.pull(self.ref(self.repo(), "two"), "e", check=False)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn(digest(self.lock_text("two")), r.stderr)
        self.assertIn(digest(self.lock_text("one")), r.stderr)
        self.assertIn("--update-lock", r.stderr)
        self.assertEqual(self.node_wheels(), [])
        with open(reviewed) as f:
            self.assertEqual(f.read(), self.lock_text("one"))
        # The artifact of the reviewed lock is pulled as before.
        self.pull(self.ref(self.repo(), "one"), "e")
        self.assert_works("e", ["alpha", "beta"])
        # --lock FILE: the same rule against a file of the user's choosing.
        elsewhere = os.path.join(self.case, "reviewed.toml")
        with open(elsewhere, "w") as f:
            f.write(self.lock_text("one"))
        r = self.pull(self.ref(self.repo(), "two"), "f", "--lock", elsewhere, check=False)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn(elsewhere, r.stderr)
        # --update-lock moves the node to the other artifact's lock.
        self.at_node("create", "e", "--from", self.ref(self.repo(), "two"), "--plain-http", "--update-lock")
        self.assert_works("e", ["alpha", "beta", "gamma"])
        with open(reviewed) as f:
            self.assertEqual(f.read(), self.lock_text("two"))

    def test_a_missing_tag_is_a_clear_network_error(self):
        r = self.pull(self.ref(self.repo(), "nope"), check=False)
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn("not found in the registry", r.stderr)

    def test_a_plain_http_registry_without_the_flag_says_which_flag(self):
        self.build("one")
        r = self.push("one", self.ref(self.repo()), check=False, flags=[])
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn("--plain-http", r.stderr)

    def test_a_bad_reference_is_a_usage_error(self):
        r = self.pull("no-registry-here", check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("is not a registry reference", r.stderr)

    def test_a_standard_client_reads_what_envbox_pushed(self):
        if not shutil.which("skopeo"):
            self.skipTest("skopeo is absent (scripts/install-deps installs it)")
        self.build("one")
        ref = self.ref(self.repo())
        self.push("one", ref)
        raw = subprocess.run(["skopeo", "inspect", "--raw", "--tls-verify=false", "docker://" + ref],
                             check=True, capture_output=True, text=True).stdout
        manifest = json.loads(raw)
        self.assertEqual(manifest["artifactType"], "application/vnd.envbox.environment.v1")
        out = os.path.join(self.case, "copied")
        subprocess.run(["skopeo", "copy", "--src-tls-verify=false", "docker://" + ref, "dir:" + out],
                       check=True, capture_output=True)
        wheels = [l for l in manifest["layers"] if l["mediaType"].endswith("wheel.v1+zip")]
        self.assertEqual(len(wheels), 2)
        for layer in wheels:
            title = layer["annotations"]["org.opencontainers.image.title"]
            with open(os.path.join(out, layer["digest"].split(":")[1]), "rb") as got, \
                    open(os.path.join(self.www, "files", title), "rb") as want:
                self.assertEqual(got.read(), want.read(), title)

    def test_a_pull_cut_short_resumes_its_part(self):
        self.build("one")
        ref = self.ref(self.repo())
        self.push("one", ref)
        manifest = self.registry.get_manifest(self.repo(), "v1")
        layer = next(l for l in manifest["layers"] if l["mediaType"].endswith("wheel.v1+zip"))
        with open(self.registry.blob_data(layer["digest"]), "rb") as f:
            data = f.read()
        # What a pull killed mid-download leaves: the first half of the blob in its part.
        downloads = os.path.join(self.node_home, "cache", "downloads")
        os.makedirs(downloads)
        with open(os.path.join(downloads, layer["digest"].split(":")[1] + ".whl.part"), "wb") as f:
            f.write(data[:len(data) // 2])
        self.index.close()
        self.pull(ref, "r")
        self.assert_works("r", ["alpha", "beta"])
        self.assertEqual([f for f in os.listdir(downloads) if f.endswith(".part")], [])

    def test_a_push_killed_mid_blob_is_pushed_again(self):
        self.build("big")
        ref = self.ref(self.repo())
        uploads = os.path.join(self.home, "cache", "oci", "uploads")
        cmd = envboxtest.envbox_cmd(self.home, self.project) + ["push", "big", ref, "--plain-http"]
        p = subprocess.Popen(cmd, env=envboxtest.envbox_env({"ENVBOX_REGISTRY_CHUNK_BYTES": "4096"}),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while time.time() < deadline and not (os.path.isdir(uploads) and os.listdir(uploads)):
            time.sleep(0.01)
        time.sleep(0.05)
        p.send_signal(signal.SIGKILL)
        p.wait()
        self.assertTrue(os.listdir(uploads), "the push ended before a chunk was recorded")
        # Killed mid-chunk, distribution has part of a chunk past the recorded offset and
        # refuses that upload: envbox starts the blob over. Either way the push completes.
        report = self.push("big", ref, env_vars={"ENVBOX_REGISTRY_CHUNK_BYTES": "65536"},
                           flags=self.registry.flags() + ["--no-bytecode"])
        self.assertIn(report["resumed"], (0, 1), report)
        self.assertEqual(os.listdir(uploads), [])
        self.index.close()
        self.pull(ref, "k")
        self.assert_works("k", ["delta"])

    def test_an_upload_recorded_between_chunks_is_continued(self):
        """What a push killed between two chunks leaves: an upload the registry holds 100 KB
        of, and its session (offset, location) in cache/oci/uploads/."""
        self.build("big")
        ref = self.ref(self.repo())
        wheel = next(f for f in os.listdir(os.path.join(self.www, "files")) if f.startswith("delta"))
        with open(os.path.join(self.www, "files", wheel), "rb") as f:
            data = f.read()
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        status, h, _ = self.registry.api("POST", f"/v2/{self.repo()}/blobs/uploads/")
        self.assertEqual(status, 202)
        status, h, _ = self.registry.api("PATCH", h["Location"].split(self.registry.host, 1)[-1], data[:100_000],
                                         {"Content-Type": "application/octet-stream", "Content-Range": "0-99999"})
        self.assertEqual(status, 202)
        location = h["Location"]
        if not location.startswith("http"):
            location = self.registry.url + location
        uploads = os.path.join(self.home, "cache", "oci", "uploads")
        os.makedirs(uploads)
        name = "127.0.0.1_%d-%s-%s" % (self.registry.port, hashlib.sha256(self.repo().encode()).hexdigest()[:16],
                                       digest.split(":")[1])
        with open(os.path.join(uploads, name), "w") as f:
            f.write(f"100000\n{location}")
        report = self.push("big", ref, env_vars={"ENVBOX_REGISTRY_CHUNK_BYTES": "65536"},
                           flags=self.registry.flags() + ["--no-bytecode"])
        self.assertEqual(report["resumed"], 1, report)
        self.assertLess(report["bytes"], len(data) - 99_000)
        self.assertEqual(os.listdir(uploads), [])
        self.index.close()
        self.pull(ref, "k")
        self.assert_works("k", ["delta"])

    def test_chunked_upload(self):
        self.build("one")
        report = self.push("one", self.ref(self.repo()), env_vars={"ENVBOX_REGISTRY_CHUNK_BYTES": "100"})
        self.assertEqual(report["uploaded"], 6)
        self.index.close()
        self.pull(self.ref(self.repo()), "c")
        self.assert_works("c", ["alpha", "beta"])


class TlsRegistry(Push):
    reg_args = {"user": "builder", "password": "s3cret pass"}

    def test_push_and_pull_with_basic_auth_over_tls(self):
        self.build("one")
        self.push("one", self.ref(self.repo()))
        self.index.close()
        self.pull(self.ref(self.repo()), "t")
        self.assert_works("t", ["alpha", "beta"])

    def test_credentials_from_the_docker_config(self):
        self.build("one")
        self.push("one", self.ref(self.repo()))
        cfg = os.path.join(self.case, "docker")
        os.makedirs(cfg)
        token = __import__("base64").b64encode(b"builder:s3cret pass").decode()
        with open(os.path.join(cfg, "config.json"), "w") as f:
            json.dump({"auths": {self.registry.host: {"auth": token}}}, f)
        self.index.close()
        self.pull(self.ref(self.repo()), "d", env={"DOCKER_CONFIG": cfg})
        self.assert_works("d", ["alpha", "beta"])

    def test_a_wrong_password_is_refused_clearly(self):
        self.build("one")
        r = self.push("one", self.ref(self.repo()), check=False,
                      env_vars={"ENVBOX_REGISTRY_USERNAME": "builder", "ENVBOX_REGISTRY_PASSWORD": "Xq9-not-it"})
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn("authentication failed", r.stderr)
        self.assertNotIn("Xq9-not-it", r.stderr)

    def test_no_credentials_is_refused_clearly(self):
        r = self.pull(self.ref(self.repo()), check=False, env={"HOME": self.case})
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn("none is configured", r.stderr)

    def test_tls_is_verified(self):
        self.build("one")
        r = self.push("one", self.ref(self.repo()), check=False, flags=[])
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn(self.registry.host, r.stderr)


class TokenRegistry(Push):
    """distribution's token auth: the registry answers 401 with a Bearer challenge naming a
    token service on another origin (https, the test's CA), which envbox asks with the
    credentials and then sends the token to the registry."""
    reg_args = {"user": "builder", "password": "t0ken pass"}

    def setUp(self):
        World.setUp(self)
        self.tokens = registry.TokenService(self.case, self.certs, **self.reg_args)
        self.registry = registry.Registry(os.path.join(self.case, "registry"), certs=self.certs,
                                          token=self.tokens, **self.reg_args)

    def tearDown(self):
        super().tearDown()
        self.tokens.close()

    def test_push_and_pull_through_the_token_flow(self):
        self.build("one")
        report = self.push("one", self.ref(self.repo()))
        self.assertEqual(report["uploaded"], 6)
        self.assertTrue(self.tokens.requests and all(auth for _, auth in self.tokens.requests))
        self.assertTrue(any("scope=repository%3A" + self.repo().replace("/", "%2F") in p
                            for p, _ in self.tokens.requests), self.tokens.requests)
        self.index.close()
        self.pull(self.ref(self.repo()), "b")
        self.assert_works("b", ["alpha", "beta"])

    def test_a_token_refused_is_a_clear_error(self):
        r = self.pull(self.ref(self.repo()), check=False,
                      env={"ENVBOX_REGISTRY_USERNAME": "builder", "ENVBOX_REGISTRY_PASSWORD": "nope-Zz1"})
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn("authentication failed (the token service", r.stderr)
        self.assertNotIn("nope-Zz1", r.stderr)


class PullThroughCache(Push):
    """A cluster's own cache in front of the central registry: a second real registry configured
    as its pull-through cache (`proxy.remoteurl`), named by ENVBOX_REGISTRY_MIRROR."""

    def test_a_pull_through_the_cache_works_with_the_central_registry_down(self):
        self.build("one")
        ref = self.ref(self.repo())
        self.push("one", ref)
        self.index.close()
        cache = registry.Registry(os.path.join(self.case, "cache"), proxy=self.registry.url)
        try:
            mirror = {"ENVBOX_REGISTRY_MIRROR": f"{self.registry.host}=http://{cache.host}"}
            r = self.pull(ref, "--json", env=mirror)
            self.assertEqual(json.loads(r.stdout)["mirror"], cache.host)
            self.assertTrue(cache.blobs(), "the cache stored nothing")
            self.assert_works(self.repo().split("/")[-1], ["alpha", "beta"])
            # The central registry goes down: a new node pulls the same tag through the warm cache.
            self.registry.close()
            self.node_home = os.path.join(self.case, "node-home-2")
            self.node = os.path.join(self.case, "node-2")
            os.makedirs(self.node)
            r = self.pull(ref, env=mirror)
            self.assertIn("through the mirror " + cache.host, r.stderr)
            self.assert_works(self.repo().split("/")[-1], ["alpha", "beta"])
        finally:
            cache.close()

    def test_a_mirror_that_cannot_answer_is_passed_over_for_the_registry(self):
        self.build("one")
        ref = self.ref(self.repo())
        self.push("one", ref)
        self.index.close()
        down = f"127.0.0.1:{free_port()}"
        r = self.pull(ref, env={"ENVBOX_REGISTRY_MIRROR": f"{self.registry.host}=http://{down}"})
        self.assertIn(f"the mirror {down} did not answer", r.stderr)
        self.assert_works(self.repo().split("/")[-1], ["alpha", "beta"])
        bad = self.pull(ref, check=False, env={"ENVBOX_REGISTRY_MIRROR": f"{self.registry.host}=ftp://x"})
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertIn("ENVBOX_REGISTRY_MIRROR", bad.stderr)


class OciLayout(Push):
    """`pack --format oci` writes an OCI image layout that skopeo loads into a registry, from
    where `envbox pull` builds; skopeo's copy of a pushed environment back into an
    oci-archive (its members in its own order) unpacks with envbox; so does the layout as a
    folder. A layout's blob that is not its digest, or a member outside the layout, is refused."""

    def skopeo(self, *args):
        if not shutil.which("skopeo"):
            self.skipTest("skopeo is absent (scripts/install-deps installs it)")
        return subprocess.run(["skopeo", "copy", *args], check=True, capture_output=True, text=True)

    def received(self, *args, home):
        self.node_home = home
        return json.loads(self.at_node("--json", *args).stdout)

    def test_an_oci_layout_round_trips_through_skopeo_and_a_registry(self):
        self.build("one")
        out = os.path.join(self.case, "one.oci.tar")
        packed = json.loads(envbox("--json", "pack", "one", "--format", "oci", "-o", out,
                                   home=self.home, project=self.project).stdout)
        self.assertEqual((packed["format"], packed["wheels"], packed["bytecode_layers"]), ("oci", 2, 2))
        with tarfile.open(out) as t:
            names = t.getnames()
            self.assertEqual(names[:2], ["oci-layout", "index.json"])
            self.assertEqual(json.load(t.extractfile("oci-layout")), {"imageLayoutVersion": "1.0.0"})
            index = json.load(t.extractfile("index.json"))
            for n in names[2:]:
                self.assertTrue(n.startswith("blobs/sha256/"), n)
                self.assertEqual(hashlib.sha256(t.extractfile(n).read()).hexdigest(), n.rsplit("/", 1)[1])
        (manifest,) = index["manifests"]
        self.assertEqual(manifest["artifactType"], "application/vnd.envbox.environment.v1")
        # The same manifest push sends: the same digest.
        pushed = self.push("one", self.ref(self.repo(), "pushed"))
        self.assertEqual(manifest["digest"], pushed["digest"])
        self.index.close()

        # Into a registry with skopeo, then envbox pull from it.
        ref = self.ref(self.repo() + "-loaded")
        self.skopeo("--dest-tls-verify=false", "oci-archive:" + out, "docker://" + ref)
        got = self.received("pull", ref, "one", *self.registry.flags(), home=os.path.join(self.case, "h1"))
        self.assertEqual((got["wheels"], got["pyc_received"], got["compiled"]), (2, 2, 0), got)
        self.assert_works("one", ["alpha", "beta"])

        # A pushed environment copied out by skopeo unpacks with envbox.
        copy = os.path.join(self.case, "copy.oci.tar")
        self.skopeo("--src-tls-verify=false", "docker://" + self.ref(self.repo(), "pushed"), "oci-archive:" + copy)
        got = self.received("unpack", copy, "back", home=os.path.join(self.case, "h2"))
        self.assertEqual((got["wheels"], got["fetched"], got["pyc_received"], got["compiled"]), (2, 2, 2, 0), got)
        self.assertEqual(got["digest"], pushed["digest"])
        self.assert_works("back", ["alpha", "beta"])

        # The layout as a folder, read in place.
        folder = os.path.join(self.case, "one.oci")
        envbox("pack", "one", "--format", "oci-dir", "-o", folder, home=self.home, project=self.project)
        self.assertEqual(sorted(os.listdir(folder)), ["blobs", "index.json", "oci-layout"])
        got = self.received("unpack", folder, "dir", home=os.path.join(self.case, "h3"))
        self.assertEqual((got["wheels"], got["compiled"]), (2, 0), got)
        self.assert_works("dir", ["alpha", "beta"])
        self.assertEqual(len(os.listdir(os.path.join(folder, "blobs", "sha256"))), 7)  # left as it was

    def test_a_layout_blob_that_is_not_its_digest_is_refused_with_nothing_stored(self):
        self.build("one")
        folder = os.path.join(self.case, "one.oci")
        envbox("pack", "one", "--format", "oci-dir", "-o", folder, home=self.home, project=self.project)
        alpha = next(f for f in os.listdir(os.path.join(self.www, "files")) if f.startswith("alpha"))
        blob = os.path.join(folder, "blobs", "sha256", sha256_file(os.path.join(self.www, "files", alpha)))
        os.chmod(blob, 0o644)
        with open(blob, "ab") as f:
            f.write(b"x")
        r = self.at_node("unpack", folder, "bad", check=False)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn(blob, r.stderr)  # one byte longer than its descriptor: not read past it
        self.assertEqual(self.node_wheels(), [])
        self.assertIsNone(envboxtest.current_generation(self.node_home, "bad"))

    def test_an_archive_member_outside_the_layout_is_refused(self):
        self.build("one")
        out = os.path.join(self.case, "one.oci.tar")
        envbox("pack", "one", "--format", "oci", "-o", out, home=self.home, project=self.project)
        cases = {"a link": lambda: (tarfile.TarInfo("blobs/sha256/" + "a" * 64), None),
                 "another name": lambda: Pack.file("blobs/sha256/../../evil", b"x"),
                 "a blob not its name": lambda: Pack.file("blobs/sha256/" + "b" * 64, b"x")}
        for case, member in cases.items():
            with self.subTest(case):
                bad = os.path.join(self.case, case.replace(" ", "-") + ".tar")
                with tarfile.open(out) as src, tarfile.open(bad, "w") as t:
                    info, data = member()
                    if data is None:
                        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
                    t.addfile(info, io.BytesIO(data) if data is not None else None)
                    for m in src.getmembers():
                        t.addfile(m, src.extractfile(m))
                self.node_home = os.path.join(self.case, case.replace(" ", "-") + "-home")
                r = self.at_node("unpack", bad, "bad", check=False)
                self.assertEqual(r.returncode, 5, r.stderr)
                self.assertIn(bad, r.stderr)
                self.assertEqual(self.node_wheels(), [])


class Pack(World):
    def members(self, path):
        with tarfile.open(path) as t:
            return [(m.name, m.size) for m in t.getmembers()]

    def test_pack_and_unpack_round_trip_zstd(self):
        self.build("one")
        out = os.path.join(self.case, "one.tar.zst")
        envbox("pack", "one", "-o", out, home=self.home, project=self.project)
        with open(out, "rb") as f:
            self.assertEqual(f.read(4), b"\x28\xb5\x2f\xfd")  # zstd's magic number
        self.index.close()
        r = self.at_node("unpack", out)
        self.assertIn("2 wheels (2 fetched, 0 already stored", r.stderr)
        self.assert_works("one", ["alpha", "beta"])

    def test_an_unpack_against_another_reviewed_lock_is_refused_with_nothing_stored(self):
        self.build("one")
        self.build("two")
        out = os.path.join(self.case, "two.tar")
        envbox("pack", "two", "-o", out, home=self.home, project=self.project)
        os.makedirs(os.path.join(self.node, "manifests"))
        with open(os.path.join(self.node, "manifests", "pylock.two.toml"), "w") as f:
            f.write(self.lock_text("one"))
        r = self.at_node("unpack", out, check=False)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn("is not the reviewed", r.stderr)
        self.assertEqual(self.node_wheels(), [])
        downloads = os.path.join(self.node_home, "cache", "downloads")
        self.assertEqual(os.listdir(downloads) if os.path.isdir(downloads) else [], [])
        self.at_node("unpack", out, "--update-lock")
        self.assert_works("two", ["alpha", "beta", "gamma"])

    def test_zstd_by_flag_and_never_by_flag(self):
        self.build("one")
        forced = os.path.join(self.case, "forced.tar")
        envbox("pack", "one", "-o", forced, "--zstd", home=self.home, project=self.project)
        plain = os.path.join(self.case, "plain.tar.zst")
        envbox("pack", "one", "-o", plain, "--no-zstd", home=self.home, project=self.project)
        with open(forced, "rb") as f:
            self.assertEqual(f.read(4), b"\x28\xb5\x2f\xfd")
        self.assertEqual(self.members(plain)[0][0], "pylock.toml")

    def test_pack_is_a_plain_tar_of_the_lock_then_the_wheels_then_their_bytecode(self):
        self.build("two")
        out = os.path.join(self.case, "two.tar")
        envbox("pack", "two", "-o", out, home=self.home, project=self.project)
        members = self.members(out)
        self.assertEqual(members[0][0], "pylock.toml")
        with tarfile.open(out) as t:
            self.assertEqual(t.extractfile("pylock.toml").read().decode(), self.lock_text("two"))
            wheels = {}
            for m in t.getmembers()[1:4]:
                self.assertTrue(m.name.startswith("wheels/") and m.isfile())
                data = t.extractfile(m).read()
                wheels[hashlib.sha256(data).hexdigest()] = m.name
                self.assertEqual(hashlib.sha256(data).hexdigest(),
                                 sha256_file(os.path.join(self.www, "files", m.name[len("wheels/"):])))
            # One bytecode member per wheel: bytecode/<its sha256>.<interpreter's key>.
            for m in t.getmembers()[4:]:
                self.assertTrue(m.name.startswith("bytecode/") and m.isfile(), m.name)
                sha, key = m.name[len("bytecode/"):].split(".", 1)
                self.assertIn(sha, wheels)
                self.assertTrue(key.startswith("cpython-"), key)
                self.assertTrue(t.extractfile(m).read().startswith(b"envbox-bytecode-layer 1\nwheel " + sha.encode()))
        self.assertEqual(len(members), 7)
        self.index.close()
        self.at_node("unpack", out, "renamed")
        self.assert_works("renamed", ["alpha", "beta", "gamma"])

    def test_a_lock_of_local_paths_unpacks_where_those_paths_are_not(self):
        """A lock naming its wheels by `path` (a wheel folder beside the project, as
        examples/offline has): on the node those paths do not exist, and the wheels come from
        the pack."""
        project = os.path.join(self.case, "local")
        os.makedirs(os.path.join(project, "manifests"))
        files = [os.path.join(self.www, "files", f) for f in sorted(os.listdir(os.path.join(self.www, "files")))
                 if f.startswith(("alpha", "beta"))]
        write_lock(os.path.join(project, "manifests", "pylock.paths.toml"), files)
        envbox("create", "paths", home=self.home, project=project)
        out = os.path.join(self.case, "paths.tar")
        envbox("pack", "paths", "-o", out, home=self.home, project=project)
        self.node = os.path.join(self.case, "far", "away", "node")  # the lock's relative paths miss
        os.makedirs(self.node)
        self.at_node("unpack", out)
        self.assert_works("paths", ["alpha", "beta"])

    def tampered(self, name, lock, wheels, rewrite):
        """Writes the members `rewrite(lock, wheels) -> [(TarInfo, bytes)]` as NAME.tar and
        unpacks it into a fresh node: exit 5, naming the file, nothing stored."""
        bad = os.path.join(self.case, name + ".tar")
        with tarfile.open(bad, "w") as t:
            for info, data in rewrite(lock, wheels):
                t.addfile(info, io.BytesIO(data) if data is not None else None)
        self.node_home = os.path.join(self.case, name + "-home")
        self.node = os.path.join(self.case, name + "-node")
        os.makedirs(self.node)
        r = self.at_node("unpack", bad, "bad", check=False)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn(bad, r.stderr)
        self.assertEqual(self.node_wheels(), [])
        self.assertFalse(os.path.exists(os.path.join(self.node, "manifests")))
        return r

    def test_a_lock_naming_a_wheel_the_pack_does_not_carry_is_refused(self):
        """A pack of `one` whose lock adds gamma, named by an absolute path, a `../` path, a
        file:// URL (each a real wheel on this disk) or an http URL: unpack installed the
        local file. Only the pack's wheels (or the store's) are installed."""
        self.build("one")
        out = os.path.join(self.case, "one.tar")
        envbox("pack", "one", "-o", out, home=self.home, project=self.project)
        with tarfile.open(out) as t:
            lock = t.extractfile("pylock.toml").read()
            wheels = [(m.name, t.extractfile(m).read()) for m in t.getmembers()[1:]]
        for case, location in self.extra_package_locations(self.node):
            with self.subTest(case):
                self.node_home = os.path.join(self.case, case + "-home")  # a store without gamma
                bad = os.path.join(self.case, case + ".tar")
                with tarfile.open(bad, "w") as t:
                    for name, data in [("pylock.toml", self.with_extra_package(lock, location))] + wheels:
                        info, data = self.file(name, data)
                        t.addfile(info, io.BytesIO(data))
                r = self.at_node("unpack", bad, "bad", check=False)
                self.assertIn(bad, r.stderr)
                self.assert_refused_extra(r, "bad")
        # The pack as written still unpacks; and a wheel the store holds already is installed
        # from there, by digest, whatever the lock names (here gamma, stored by a pack of two).
        self.node_home = os.path.join(self.case, "good-home")
        self.at_node("unpack", out, "good")
        self.assert_works("good", ["alpha", "beta"])
        self.build("two")
        envbox("pack", "two", "-o", os.path.join(self.case, "two.tar"), home=self.home, project=self.project)
        self.at_node("unpack", os.path.join(self.case, "two.tar"), "two")
        os.remove(os.path.join(self.node, self.gamma()[1]))  # what `../` named: not read
        self.at_node("unpack", os.path.join(self.case, "dotdot.tar"), "extra")
        self.assert_works("extra", ["alpha", "beta", "gamma"])

    @staticmethod
    def file(name, data):
        info = tarfile.TarInfo(name)
        info.size = len(data)
        return info, data

    def test_hostile_members_are_refused(self):
        def link(kind, name, target):
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, target
            return info, None
        cases = {
            "absolute": lambda lock, w: [self.file("pylock.toml", lock), self.file("/" + w[0][0], w[0][1])],
            "dotdot": lambda lock, w: [self.file("pylock.toml", lock), self.file("wheels/../" + w[0][0], w[0][1])],
            "symlink": lambda lock, w: [self.file("pylock.toml", lock), link(tarfile.SYMTYPE, w[0][0], "/etc/passwd")],
            "hardlink": lambda lock, w: [self.file("pylock.toml", lock), link(tarfile.LNKTYPE, w[0][0], "pylock.toml")],
            "unnamed": lambda lock, w: [self.file("pylock.toml", lock), self.file("wheels/evil-1.0-py3-none-any.whl", b"x")],
            "oversize": lambda lock, w: [self.file("pylock.toml", lock), self.file(w[0][0], w[0][1] + b"\0" * 100)],
            "tampered": lambda lock, w: [self.file("pylock.toml", lock),
                                         self.file(w[0][0], w[0][1][:-1] + bytes([w[0][1][-1] ^ 1]))],
            "lock-not-first": lambda lock, w: [self.file(w[0][0], w[0][1]), self.file("pylock.toml", lock)],
            "duplicate": lambda lock, w: [self.file("pylock.toml", lock), self.file(*w[0]), self.file(*w[0])],
        }
        expect = {"absolute": "absolute name", "dotdot": "`..`", "symlink": "not a regular file",
                  "hardlink": "not a regular file", "unnamed": "not a file the lock names",
                  "oversize": "the lock says", "tampered": "hash mismatch", "lock-not-first": "pylock.toml must",
                  "duplicate": "appears twice"}
        self.build("one")
        out = os.path.join(self.case, "one.tar")
        envbox("pack", "one", "-o", out, home=self.home, project=self.project)
        with tarfile.open(out) as t:
            lock = t.extractfile("pylock.toml").read()
            wheels = [(m.name, t.extractfile(m).read()) for m in t.getmembers()[1:]]
        self.index.close()
        for name, rewrite in cases.items():
            with self.subTest(name):
                r = self.tampered(name, lock, wheels, rewrite)
                self.assertIn(expect[name], r.stderr)


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main()
