#!/usr/bin/env python3
"""`envbox lock` and `envbox diff` over indexes shaped like the real ones where they differ from
PyPI's JSON API: pages without `data-requires-python` whose wheels' METADATA still carries
`Requires-Python` (private mirrors, flat directories, PyTorch-index pages), an index that answers
403 for projects it does not have (download.pytorch.org), HTML pages without sizes, and wheels
re-uploaded under the same version (new sha256) or with other tags.

    test_lock_shapes.py ENVBOX_BINARY        (ENVBOX_ACCEPT_GOLDEN=1 rewrites the golden files)
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
import indexworld  # noqa: E402
from envboxtest import golden, keep_or_remove, manifest_text, packages, sha256_file  # noqa: E402
from httpserver import HttpServer, Nginx, QuietFiles, free_port  # noqa: E402
from indexworld import TAG, Wheel, normalize  # noqa: E402

MAJOR, MINOR = sys.version_info[:2]
PYV = f"{MAJOR}.{MINOR}"
NEXT = f"{MAJOR}.{MINOR + 1}"  # a Python newer than the target


class MetaWheel(Wheel):
    """A wheel whose METADATA carries Requires-Python (as every real one built by a modern
    backend does), whatever the index page says."""

    def __init__(self, name, version, requires_python=None, **kw):
        mod = normalize(name).replace("-", "_")
        kw.setdefault("files", {f"{mod}/__init__.py": f"__version__ = {version!r}\n"})
        super().__init__(name, version, **kw)
        self.meta_requires_python = requires_python

    def _dist_info_files(self):
        out = super()._dist_info_files()
        if self.meta_requires_python:
            key = f"{self.dist_info}/METADATA"
            out[key] = out[key].rstrip("\n") + f"\nRequires-Python: {self.meta_requires_python}\n\n"
        return out


def html_index(root, index, wheels, metadata_files=False, sizes_nowhere=True):
    """A PEP 503 HTML index (no JSON, no sizes, no data-requires-python) of `wheels` under
    root/<index>/; files under root/files/<index>/. `metadata_files`: PEP 658 files beside them."""
    import zipfile
    by_project = {}
    for w in wheels:
        path = w.build(os.path.join(root, "files", index))
        by_project.setdefault(normalize(w.name), []).append((w, path))
    for project, entries in by_project.items():
        os.makedirs(os.path.join(root, index, project), exist_ok=True)
        anchors = []
        for w, path in sorted(entries, key=lambda e: e[1]):
            fn = os.path.basename(path)
            attrs = ""
            if metadata_files:
                with zipfile.ZipFile(path) as z:
                    meta = z.read(f"{w.dist_info}/METADATA")
                with open(path + ".metadata", "wb") as f:
                    f.write(meta)
                import hashlib
                attrs = f' data-core-metadata="sha256={hashlib.sha256(meta).hexdigest()}"'
            url = f"/files/{index}/{fn}".replace("+", "%2B")
            anchors.append(f'<a href="{url}#sha256={sha256_file(path)}"{attrs}>{fn}</a><br/>')
        with open(os.path.join(root, index, project, "index.html"), "w") as f:
            f.write("<!DOCTYPE html>\n<html><body>\n" + "\n".join(anchors) + "\n</body></html>\n")


def env_manifest(indexes, requirements, python=PYV, sources=""):
    """A manifest; `indexes` is a list of (name, url, extra TOML lines)."""
    return manifest_text(requirements, python=python, indexes=indexes, sources=sources)


class Project(envboxtest.Project):
    """A project folder `root` with its home inside (root/home); envbox() runs unchecked,
    ok() checked."""

    def __init__(self, root):
        super().__init__(root, root=root, home=os.path.join(root, "home"))

    @staticmethod
    def read(path):
        with open(path) as f:
            return f.read()

    def envbox(self, *args, env=None):
        return self.run(*args, check=False, env=env)

    def ok(self, *args, env=None):
        return self.run(*args, env=env)


def wheel_sizes(lock_text):
    """name -> size (None when the lock has none) from a lock's text."""
    out = {}
    for block in lock_text.split("[[packages]]")[1:]:
        name = re.search(r'^name = "([^"]+)"', block, re.M).group(1)
        size = re.search(r"^size = (\d+)", block, re.M)
        out[name] = int(size.group(1)) if size else None
    return out


class Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-shapes-")
        os.chmod(cls.tmp, 0o755)

    @classmethod
    def tearDownClass(cls):
        keep_or_remove(cls.tmp)

    def project(self, name):
        return Project(os.path.join(self.tmp, name))


class RequiresPythonFromMetadata(Base):
    """numpy 2.3.0's METADATA says Requires-Python >= the next Python, and no page says so: on
    every index shape the target gets numpy 2.2.6, and pinning 2.3.0 is explained."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.www = os.path.join(cls.tmp, "www")
        wheels = lambda: [MetaWheel("numpy", "2.2.6", f">={PYV}", tag=TAG),  # noqa: E731
                          MetaWheel("numpy", "2.3.0", f">={NEXT}", tag=TAG),
                          # the newest app needs the newest numpy: backtracking must reach app 1.0
                          MetaWheel("app", "1.0", f">={PYV}", requires=["numpy>=2.2"]),
                          MetaWheel("app", "2.0", f">={PYV}", requires=["numpy>=2.3"])]
        html_index(cls.www, "mirror", wheels())
        html_index(cls.www, "mirror658", wheels(), metadata_files=True)
        cls.flat = os.path.join(cls.tmp, "flat")
        for w in wheels():
            w.build(cls.flat)
        cls.server = indexworld.Server(cls.www)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        super().tearDownClass()

    def shapes(self):
        return {"html page, METADATA by range or whole file": f"{self.server.url}/mirror",
                "html page with PEP 658 metadata files": f"{self.server.url}/mirror658",
                "flat find-links directory": f"file://{self.flat}"}

    def test_a_version_whose_metadata_excludes_the_target_is_never_chosen(self):
        for shape, url in self.shapes().items():
            with self.subTest(shape):
                p = self.project("rp-" + re.sub(r"\W+", "-", shape))
                p.write("env", env_manifest([("mirror", url, "")], ["app"]))
                p.ok("lock", "env")
                got = packages(p.lock_text("env"))
                self.assertEqual(got["numpy"][0], "2.2.6", shape)
                self.assertEqual(got["app"][0], "1.0", shape)
                # Again from the metadata cache: still excluded.
                p.ok("lock", "env", "--upgrade")
                self.assertEqual(packages(p.lock_text("env"))["numpy"][0], "2.2.6", shape)

    def test_pinning_it_explains_why_there_is_no_solution(self):
        for shape, url in self.shapes().items():
            with self.subTest(shape):
                p = self.project("rp-pin-" + re.sub(r"\W+", "-", shape))
                p.write("env", env_manifest([("mirror", url, "")], ["numpy==2.3.0"]))
                r = p.envbox("lock", "env")
                self.assertEqual(r.returncode, 3, r.stderr)
                self.assertIn(f"numpy==2.3.0 requires Python >={NEXT} (the target is {PYV}.0)", r.stderr)
                self.assertFalse(os.path.exists(p.lock_path("env")))


def pytorch_nginx(tmp, www):
    """nginx from Debian on 127.0.0.1 serving `www`: simple pages (JSON when asked and present),
    ranges, HEAD; under /pytorch-*/ and, for Host download.pytorch.org, /whl/*/, a project the
    index does not have is HTTP 403, as download.pytorch.org answers."""
    port = free_port()
    simple = "try_files $uri$simple_page $uri/index.html"
    return Nginx(tmp, port, '$host "$request" $status', f"""    server {{
        listen 127.0.0.1:{port};
        root {www};
        location ~ ^/pytorch-[^/]+/.+/$ {{ {simple} =403; }}
        location ~ /$ {{ {simple} =404; }}
    }}
    server {{
        listen 127.0.0.1:{port};
        server_name download.pytorch.org;
        root {www};
        location ~ ^/whl/[^/]+/.+/$ {{ {simple} =403; }}
    }}
""")


class NginxWorld(Base):
    """The mission's PyTorch-shaped world (tests/lock/indexworld.py) behind nginx."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        Nginx.require()
        cls.www = os.path.join(cls.tmp, "www")
        indexworld.build(cls.www)
        # download.pytorch.org/whl/cu128/ is the pytorch-cu128 tree (its file URLs are absolute
        # paths, /files/…, served for that host too).
        os.makedirs(os.path.join(cls.www, "whl"))
        os.symlink("../pytorch-cu128", os.path.join(cls.www, "whl", "cu128"))
        # An HTML-only mirror of PyPI, with PEP 658 metadata files and no sizes: a HEAD is the
        # only way to a size there.
        shutil.copytree(os.path.join(cls.www, "pypi"), os.path.join(cls.www, "mirror"))
        for j in glob.glob(os.path.join(cls.www, "mirror", "*", "index.json")):
            os.unlink(j)
        cls.nginx = pytorch_nginx(cls.tmp, cls.www)
        cls.url = cls.nginx.url

    @classmethod
    def tearDownClass(cls):
        cls.nginx.close()
        super().tearDownClass()

    def pytorch_first(self, url, extra):
        """The `--extra-index-url` habit: the PyTorch index first and not explicit, then PyPI."""
        return env_manifest([("pytorch-cu128", url, extra), ("pypi", f"{self.url}/pypi", "")],
                            ["triton", "transformers"])

    def test_a_403_from_an_index_configured_so_means_not_here(self):
        p = self.project("ignore-403")
        p.write("env", self.pytorch_first(f"{self.url}/pytorch-cu128", "ignore-error-codes = [403]\n"))
        p.ok("lock", "env")
        got = packages(p.lock_text("env"))
        self.assertEqual(got["triton"], ("3.5.0", "pytorch-cu128"))
        self.assertEqual(got["transformers"], ("4.57.0", "pypi"))
        self.assertEqual(got["numpy"][1], "pypi")
        self.assertIn('/pytorch-cu128/numpy/ HTTP/1.1" 403', self.nginx.log())

    def test_a_403_from_download_pytorch_org_means_not_here_by_default(self):
        # The real host name, reached through a proxy on 127.0.0.1 (this nginx): nothing
        # leaves the machine.
        p = self.project("pytorch-host")
        p.write("env", self.pytorch_first("http://download.pytorch.org/whl/cu128", ""))
        proxy = {"http_proxy": self.url, "no_proxy": "", "NO_PROXY": ""}
        p.ok("lock", "env", env=proxy)
        got = packages(p.lock_text("env"))
        self.assertEqual(got["triton"], ("3.5.0", "cu128"))
        self.assertEqual(got["transformers"], ("4.57.0", "pypi"))
        self.assertIn('download.pytorch.org "GET http://download.pytorch.org/whl/cu128/numpy/ HTTP/1.1" 403',
                      self.nginx.log())

    def test_any_other_403_is_an_error_naming_the_index(self):
        p = self.project("plain-403")
        p.write("env", self.pytorch_first(f"{self.url}/pytorch-cu128", ""))
        r = p.envbox("lock", "env")
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn("index pytorch-cu128 answered HTTP 403", r.stderr)
        self.assertIn("ignore-error-codes = [403]", r.stderr)
        # A 401 stays an error even where 403 is ignored.
        p.write("env", self.pytorch_first(f"{self.url}/pytorch-cu128", "ignore-error-codes = [401]\n"))
        r = p.envbox("lock", "env")
        self.assertEqual(r.returncode, 4, r.stderr)

    def test_every_wheel_has_its_size_on_pages_without_sizes(self):
        # pytorch-cu128: HTML without sizes or metadata files (sizes from the range answers);
        # mirror: HTML with metadata files and no sizes (sizes from a HEAD).
        p = self.project("sizes")
        p.write("env", env_manifest([("pytorch-cu128", f"{self.url}/pytorch-cu128", "explicit = true\n"),
                                     ("mirror", f"{self.url}/mirror", "")],
                                    ["torch==2.11.0+cu128", "transformers"],
                                    sources='torch = "pytorch-cu128"\ntriton = "pytorch-cu128"\n'))
        for attempt in ("cold", "warm"):  # the warm lock reads every METADATA from the cache
            with self.subTest(attempt):
                p.ok("lock", "env", "--upgrade")
                text = p.lock_text("env")
                sizes = wheel_sizes(text)
                self.assertEqual(packages(text)["torch"][1], "pytorch-cu128")
                for block in text.split("[[packages]]")[1:]:
                    name = re.search(r'^name = "([^"]+)"', block, re.M).group(1)
                    url = re.search(r'^url = "http://127\.0\.0\.1:\d+(/files/[^"]+)"', block, re.M).group(1)
                    real = os.path.getsize(os.path.join(self.www, url.lstrip("/").replace("%2B", "+")))
                    self.assertEqual(sizes[name], real, name)
        log = self.nginx.log()
        self.assertIn('"HEAD /files/pypi/', log, "the mirror's sizes come from HEADs")
        self.assertRegex(log, r'"GET /files/pytorch-cu128/torch-[^"]+" 206', "torch's from its range answers")
        # git's textconv counts torch.
        self.assertIn(" bytes", [l for l in p.ok("diff", "--textconv", p.lock_path("env")).stdout.splitlines()
                                 if l.startswith("torch==")][0])


class PlainHttpInParallel(Base):
    """A plain-http index (HTTP/1.1, as most private mirrors and find-links servers are) gets its
    requests side by side, not one after another waiting for a multiplexed stream that HTTP/1.1
    cannot give."""

    def test_requests_overlap_on_the_server(self):
        import threading
        www = os.path.join(self.tmp, "www-plain")
        indexworld.build(www)
        state = {"now": 0, "peak": 0}
        lock = threading.Lock()

        class Handler(QuietFiles):
            def __init__(self, *a, **k):
                super().__init__(*a, directory=www, **k)

            def do_GET(self):  # noqa: N802
                with lock:
                    state["now"] += 1
                    state["peak"] = max(state["peak"], state["now"])
                try:
                    time.sleep(0.05)
                    super().do_GET()
                finally:
                    with lock:
                        state["now"] -= 1

        server = HttpServer(Handler)
        try:
            p = self.project("plain-http")
            p.write("env", env_manifest([("pypi", f"{server.url}/pypi", "")], ["transformers", "datasets", "wandb"]))
            p.ok("lock", "env")
        finally:
            server.close()
        self.assertGreaterEqual(state["peak"], 3, "requests to one plain-http host in flight at once")


class UpgradePackage(Base):
    def test_an_unknown_upgrade_package_is_a_usage_error(self):
        flat = os.path.join(self.tmp, "flat-up")
        MetaWheel("numpy", "2.2.6", tag=TAG).build(flat)
        MetaWheel("app", "1.0", requires=["numpy"]).build(flat)
        p = self.project("upgrade-package")
        p.write("env", env_manifest([("flat", f"file://{flat}", "")], ["app"]))
        p.ok("lock", "env")
        r = p.envbox("lock", "env", "--upgrade-package", "nmupy")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("nmupy", r.stderr)
        self.assertIn("pylock.env.toml", r.stderr)
        p.ok("lock", "env", "--upgrade-package", "numpy")  # locked, not required: fine
        p.ok("lock", "env", "--upgrade-package", "App")    # required, any spelling


class DiffShapes(Base):
    """What `diff` and the textconv show when the version stays and the wheel does not."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.www = os.path.join(cls.tmp, "www")
        cls.server = indexworld.Server(cls.www)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        super().tearDownClass()

    published = 0

    def publish(self, wheels):
        shutil.rmtree(self.www, ignore_errors=True)
        html_index(self.www, "idx", wheels)
        # Newer each time, by more than Last-Modified's one-second resolution: a revalidation
        # (If-Modified-Since) must see the new page.
        DiffShapes.published += 1
        stamp = time.time() + 10 * DiffShapes.published
        for page in glob.glob(os.path.join(self.www, "idx", "*", "index.html")):
            os.utime(page, (stamp, stamp))

    def normalise(self, text):
        text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", text)
        text = re.sub(r"[0-9a-f]{64}", "SHA256", text)
        text = re.sub(r"[0-9a-f]{12}…", "SHA…", text)
        text = re.sub(r"cp3\d+", "cpXY", text)
        text = text.replace(self.tmp, "TMP")
        # Compressed sizes depend on the zlib that built the wheels.
        text = re.sub(r'("download_delta": )-?\d+', r"\1N", text)
        text = re.sub(r"[-+]\d+(\.\d+)? k?B\b", "±N B", text)
        return text

    def test_a_reupload_and_a_tag_change_are_reported(self):
        p = self.project("diff")
        p.write("env", env_manifest([("idx", f"{self.server.url}/idx", "")], ["numpy", "app"]))
        p.write("py-next", env_manifest([("idx", f"{self.server.url}/idx", "")], ["numpy", "app"], python=NEXT))
        next_tag = f"cp{MAJOR}{MINOR + 1}-cp{MAJOR}{MINOR + 1}-manylinux_2_28_x86_64"
        first = [MetaWheel("numpy", "2.2.6", tag=TAG), MetaWheel("numpy", "2.2.6", tag=next_tag),
                 MetaWheel("app", "1.0")]
        self.publish(first)
        p.ok("lock", "env")
        p.ok("lock", "py-next")
        before = os.path.join(self.tmp, "before.toml")
        shutil.copy(p.lock_path("env"), before)
        # numpy 2.2.6 re-uploaded: same file name, other bytes.
        changed = "".join(f"x{i} = {i * 7919}\n" for i in range(200))  # other bytes, surely another size
        rebuilt = MetaWheel("numpy", "2.2.6", tag=TAG, files={"numpy/__init__.py": changed})
        self.publish([rebuilt, MetaWheel("numpy", "2.2.6", tag=next_tag), MetaWheel("app", "1.0")])
        p.ok("lock", "env", "--upgrade")
        after = p.lock_path("env")
        self.assertNotEqual(Project.read(before), Project.read(after))

        d = json.loads(p.ok("diff", before, after, "--format", "json").stdout)
        numpy = next(c for c in d["changes"] if c["name"] == "numpy")
        self.assertEqual(numpy["kind"], "rebuilt")
        self.assertEqual(numpy["detail"], "same version, new sha256 and size")
        self.assertNotEqual(numpy["sha256_before"], numpy["sha256_after"])
        self.assertEqual(d["unchanged"], 1)
        text = p.ok("diff", before, after).stdout
        self.assertIn("rebuilt: same version, new sha256 and size", text)
        self.assertNotIn("no changes", text)
        md = p.ok("diff", before, after, "--format", "markdown").stdout
        self.assertIn("| rebuilt: same version, new sha256 and size (`", md)
        for fmt, out in (("text", text), ("markdown", md), ("json", json.dumps(d, indent=1, sort_keys=True) + "\n")):
            out = self.normalise(out)
            self.assertEqual(out, golden(f"diff.rebuilt.{fmt}", out), fmt)
        # git's textconv shows the change as a changed line.
        conv = lambda path: [l for l in p.ok("diff", "--textconv", path).stdout.splitlines()  # noqa: E731
                             if l.startswith("numpy==")]
        self.assertNotEqual(conv(before), conv(after))
        self.assertIn("sha256=", conv(after)[0])

        # The same version for another Python: the wheel's tags changed, not a local label.
        d = json.loads(p.ok("diff", after, p.lock_path("py-next"), "--format", "json").stdout)
        numpy = next(c for c in d["changes"] if c["name"] == "numpy")
        self.assertEqual(numpy["kind"], "wheel changed")
        self.assertEqual(numpy["detail"], f"tags {TAG} → {next_tag}")
        text = p.ok("diff", after, p.lock_path("py-next")).stdout
        self.assertIn(f"(wheel changed: tags {TAG} → {next_tag})", text)
        self.assertNotIn("local label", text)
        out = self.normalise(text)
        self.assertEqual(out, golden("diff.tags.text", out))

    def test_one_operand_compares_like_git_diff(self):
        p = self.project("diff-one")
        self.publish([MetaWheel("app", "1.0"), MetaWheel("app", "1.1"), MetaWheel("app", "1.2")])
        git = lambda *a: subprocess.run(["git", "-C", p.root, "-c", "user.email=t@e", "-c", "user.name=t", *a],  # noqa: E731
                                        check=True, capture_output=True)
        p.write("env", env_manifest([("idx", f"{self.server.url}/idx", "")], ["app==1.0"]))
        p.ok("lock", "env")
        p.ok("create", "env")                      # generation 1: app 1.0
        git("init", "-q")
        git("add", "manifests")
        git("commit", "-qm", "app 1.0")
        p.write("env", env_manifest([("idx", f"{self.server.url}/idx", "")], ["app==1.1"]))
        p.ok("lock", "env")
        p.ok("create", "env")                      # generation 2: app 1.1
        p.write("env", env_manifest([("idx", f"{self.server.url}/idx", "")], ["app==1.2"]))
        p.ok("lock", "env")                        # the working lock: app 1.2

        def change(*args):
            d = json.loads(p.ok("diff", *args, "--format", "json").stdout)
            self.assertEqual(len(d["changes"]), 1, d)
            c = d["changes"][0]
            return c["before"], c["after"]

        self.assertEqual(change("env@HEAD"), ("1.0", "1.2"), "ENV@REV alone: REV → the working lock")
        self.assertEqual(change("env#1"), ("1.0", "1.1"), "ENV#N alone: N → the current generation")
        self.assertEqual(change("env"), ("1.1", "1.2"), "ENV alone: the current generation → its lock")
        self.assertEqual(change("env@HEAD", "env#2"), ("1.0", "1.1"))
        r = p.envbox("diff", p.lock_path("env"))
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("needs a second lock", r.stderr)



def hand_lock(index, name="alpha"):
    """A lock of one package `name` 1.0 from `index` (TOML text, escapes kept)."""
    return (f'lock-version = "1.0"\ncreated-by = "hand"\n\n[[packages]]\nname = "{name}"\nversion = "1.0"\n'
            f'index = "{index}"\n\n[[packages.wheels]]\nurl = "https://files.example/{name}-1.0-py3-none-any.whl"\n'
            f'size = 100\nhashes = {{ sha256 = "{"0" * 64}" }}\n')


class DiffEscapes(Base):
    """What `diff` and git's textconv print comes from locks: no escape sequence, control or
    bidi character in one may reach the reviewer's terminal as itself (a line redrawn to show
    pypi.org where the lock says another host)."""

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def test_a_lock_value_holding_an_escape_sequence_is_refused_not_shown(self):
        p = self.project("diff-escape")
        before = self.write("before.toml", hand_lock("https://pypi.org/simple"))
        # ESC [2K erases the line, CR returns: the terminal would show only what follows.
        after = self.write("after.toml", hand_lock(
            "https://evil.example/simple\\u001b[2K\\r  no changes (1 packages)\\u001b[8m"))
        for args in (("diff", before, after), ("diff", before, after, "--format", "markdown"),
                     ("diff", "--textconv", after)):
            with self.subTest(args=args[1:]):
                r = p.envbox(*args)
                self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
                self.assertNotIn("\x1b", r.stdout + r.stderr)
                self.assertIn(f"{after}:7: Invalid character \\x1b", r.stderr)
                self.assertIn("'packages[0].index'", r.stderr)

    def test_a_label_is_printed_escaped(self):
        p = self.project("diff-label")
        before = self.write("before.toml", hand_lock("https://pypi.org/simple"))
        # A lock path is a label of the diff: its hidden characters print escaped.
        odd = self.write("a\x1b[31m\u202e\u2028b.toml", hand_lock("https://mirror.example/simple"))
        for fmt in ("text", "markdown"):
            with self.subTest(fmt=fmt):
                out = p.ok("diff", before, odd, "--format", fmt).stdout
                for c in ("\x1b", "\u202e", "\u2028"):
                    self.assertNotIn(c, out)
                self.assertIn("a\\x1b[31m\\u202e\\u2028b.toml", out)
                self.assertIn("https://mirror.example/simple" if fmt == "text" else "| `alpha` |", out)
        # JSON: the same string to a JSON reader, escaped in the bytes a terminal would show.
        out = p.ok("diff", before, odd, "--format", "json").stdout
        self.assertEqual(json.loads(out)["b"], odd)
        for c in ("\x1b", "\u202e", "\u2028"):
            self.assertNotIn(c, out)


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
