#!/usr/bin/env python3
"""`envbox lock` and `envbox create` against hostile package indexes: real HTTP(S) servers on
127.0.0.1 / 127.0.0.2 that link to other hosts, redirect https to http, link to local files,
put passwords in URLs, answer with gzip bombs, endless bodies, a 200 to a range request, a
million `&` in an href, and a package with 3000 dependencies. Each server records the
Authorization header of every request, so where credentials went is checked, not assumed.

    test_hostile_index.py ENVBOX_BINARY
"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
from envboxtest import envbox_cmd, envbox_env, keep_or_remove, manifest_text, sha256_hex, write_manifest  # noqa: E402
from httpserver import RouteServer, make_test_ca  # noqa: E402
from wheelgen import Wheel, write_lock  # noqa: E402

AUTH = "Basic " + base64.b64encode(b"alice:s3cret").decode()
MEMORY_GUARD_KIB = 1536 << 10
CREDS = {"ENVBOX_INDEX_IX_USERNAME": "alice", "ENVBOX_INDEX_IX_PASSWORD": "s3cret"}


def manifest(url, requirements, extra=""):
    """A manifest with the one index `ix` (the index CREDS are for) at `url`."""
    return manifest_text(requirements, indexes=[("ix", url, extra)])


def reply(h, status, body=b"", ctype="text/html", headers=()):
    h.send_response(status)
    h.send_header("Content-Type", ctype)
    h.send_header("Content-Length", str(len(body)))
    for k, v in headers:
        h.send_header(k, v)
    h.end_headers()
    if h.command != "HEAD":
        h.wfile.write(body)


def endless(h, status=200, ctype="text/html", chunk=b"<!-- " + b"x" * 65530 + b"\n"):
    """A chunked body that never ends (until the client goes)."""
    h.send_response(status)
    h.send_header("Content-Type", ctype)
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    frame = b"%x\r\n" % len(chunk) + chunk + b"\r\n"
    try:
        while True:
            h.wfile.write(frame)
    except OSError:
        pass
    h.close_connection = True


class Run:
    """envbox run to completion, sampling its peak thread count and resident memory."""

    def __init__(self, cmd, env, timeout):
        self.peak_threads = self.peak_rss_kib = 0
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        out = {}
        reader = threading.Thread(target=lambda: out.update(zip(("stdout", "stderr"), p.communicate())))
        reader.start()
        deadline = time.time() + timeout
        while p.poll() is None and time.time() < deadline:
            try:
                with open(f"/proc/{p.pid}/status") as f:
                    for line in f:
                        if line.startswith("Threads:"):
                            self.peak_threads = max(self.peak_threads, int(line.split()[1]))
                        elif line.startswith("VmRSS:"):
                            self.peak_rss_kib = max(self.peak_rss_kib, int(line.split()[1]))
            except OSError:
                pass
            if self.peak_rss_kib > MEMORY_GUARD_KIB:
                break  # runaway memory (the bug under test): stopped before it hurts the machine
            time.sleep(0.01)
        self.timed_out = p.poll() is None
        if self.timed_out:
            p.kill()
        reader.join()
        self.returncode = p.returncode
        self.stdout, self.stderr = out.get("stdout", ""), out.get("stderr", "")

    def __str__(self):
        return (f"exit {self.returncode} (timed out or killed: {self.timed_out}, peak RSS {self.peak_rss_kib} KiB)\n"
                f"{self.stdout}{self.stderr[-3000:]}")


class Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-hostile-")
        os.chmod(cls.tmp, 0o755)
        path = Wheel("alpha", "1.0", {"alpha/__init__.py": "A = 1\n"}).build(os.path.join(cls.tmp, "wheels"))
        with open(path, "rb") as f:
            cls.wheel = f.read()
        cls.wheel_name = os.path.basename(path)
        import zipfile
        with zipfile.ZipFile(path) as z:
            cls.metadata = z.read("alpha-1.0.dist-info/METADATA")

    @classmethod
    def tearDownClass(cls):
        keep_or_remove(cls.tmp)

    def project(self, name, text):
        return write_manifest(os.path.join(self.tmp, name), "env", text)

    def envbox(self, root, *args, env=None, timeout=120):
        e = envbox_env(env)
        # Under AddressSanitizer freed memory waits in a quarantine (256 MB by default) and counts
        # as resident; the memory bounds here are envbox's own, so the quarantine is kept small.
        if "ASAN_OPTIONS" in e:
            e["ASAN_OPTIONS"] += ":quarantine_size_mb=16"
        return Run(envbox_cmd(os.path.join(root, "home"), root) + list(args), e, timeout)

    def lock_text(self, root):
        path = os.path.join(root, "manifests", "pylock.env.toml")
        if not os.path.exists(path):
            return ""
        with open(path) as f:
            return f.read()

    def anchor(self, url, metadata=True):
        meta = f' data-core-metadata="sha256={sha256_hex(self.metadata)}"' if metadata else ""
        return f'<a href="{url}#sha256={sha256_hex(self.wheel)}"{meta}>{self.wheel_name}</a>'

    def serve_wheel(self, h, path):
        """Answers /files/<wheel> and its .metadata; False for any other path."""
        if path.endswith(self.wheel_name + ".metadata"):
            reply(h, 200, self.metadata, "application/octet-stream")
        elif path.endswith(self.wheel_name):
            reply(h, 200, self.wheel, "application/octet-stream")
        else:
            return False
        return True


class Credentials(Base):
    """Index credentials go to the index's own origin only (scheme, host and port); https never
    continues over http; a remote page cannot point envbox at local files; no password in a
    URL is ever printed or written into a lock."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        t = cls.tmp
        make_test_ca(t)
        cls.tls = (f"{t}/server.pem", f"{t}/server.key")
        cls.ca = f"{t}/ca.pem"
        cls.netrc_home = os.path.join(t, "netrc-home")
        os.makedirs(cls.netrc_home)
        with open(os.path.join(cls.netrc_home, ".netrc"), "w") as f:
            f.write("machine 127.0.0.1 login alice password s3cret\n")
        os.chmod(os.path.join(cls.netrc_home, ".netrc"), 0o600)

    def files_server(self, host="127.0.0.1"):
        def route(h):
            if not self.serve_wheel(h, h.path):
                reply(h, 404)
        s = RouteServer(route, host)
        self.addCleanup(s.close)
        return s

    def index_server(self, pages, tls=False, require_auth=True):
        """`pages`: path → HTML text, or ("redirect", url)."""
        def route(h):
            if require_auth and h.headers.get("Authorization") != AUTH:
                return reply(h, 401, headers=[("WWW-Authenticate", 'Basic realm="ix"')])
            page = pages.get(h.path)
            if isinstance(page, tuple):
                return reply(h, 302, headers=[("Location", page[1])])
            if page is not None:
                return reply(h, 200, page.encode())
            if not self.serve_wheel(h, h.path):
                reply(h, 404)
        s = RouteServer(route, tls=self.tls if tls else None)
        self.addCleanup(s.close)
        return s

    def test_credentials_never_go_to_another_host_or_port_a_page_links_to(self):
        other_host = self.files_server("127.0.0.2")
        other_port = self.files_server("127.0.0.1")
        pages = {"/simple/alpha/": self.anchor(f"{other_host.url}/files/{self.wheel_name}")}
        ix = self.index_server(pages)
        root = self.project("links", manifest(f"{ix.url}/simple", ["alpha"]))
        r = self.envbox(root, "lock", "env", env=CREDS)
        self.assertEqual(r.returncode, 0, r)
        self.assertTrue(ix.auth_of("/simple/") and all(a == AUTH for a in ix.auth_of("/simple/")))
        self.assertTrue(other_host.seen, "the metadata and wheel are fetched from the other host")
        self.assertEqual([a for _, a in other_host.seen if a], [], "no credentials to another host")
        # The same with a file on the index's host but another port: another origin.
        pages["/simple/alpha/"] = self.anchor(f"{other_port.url}/files/{self.wheel_name}")
        root = self.project("links-port", manifest(f"{ix.url}/simple", ["alpha"]))
        r = self.envbox(root, "lock", "env", env=CREDS)
        self.assertEqual(r.returncode, 0, r)
        self.assertTrue(other_port.seen)
        self.assertEqual([a for _, a in other_port.seen if a], [], "no credentials to another port")

    def test_an_https_index_never_continues_over_http(self):
        plain = self.files_server("127.0.0.1")
        pages = {"/simple/alpha/": ("redirect", f"{plain.url}/simple/alpha/")}
        ix = self.index_server(pages, tls=True)
        extra = f'ca = "{self.ca}"\n'
        root = self.project("downgrade", manifest(f"{ix.url}/simple", ["alpha"], extra))
        for env in (CREDS, {"HOME": self.netrc_home}):
            r = self.envbox(root, "lock", "env", env=env)
            self.assertEqual(r.returncode, 4, r)
            self.assertIn(f"{ix.url}/simple/alpha/", r.stderr)
            self.assertEqual(plain.seen, [], "an https -> http redirect is not followed")
        # A page linking its files over plain http: fetched, but ~/.netrc (an entry for the
        # host, whatever the scheme) is not sent in clear text.
        pages["/simple/alpha/"] = self.anchor(f"{plain.url}/files/{self.wheel_name}")
        r = self.envbox(root, "lock", "env", env={"HOME": self.netrc_home})
        self.assertEqual(r.returncode, 0, r)
        self.assertTrue(ix.auth_of("/simple/alpha/")[-1] == AUTH, "netrc is used for the https index")
        self.assertTrue(plain.seen)
        self.assertEqual([a for _, a in plain.seen if a], [], "netrc credentials never go over http")

    def test_a_remote_page_cannot_link_to_local_files(self):
        planted = os.path.join(self.tmp, "planted")
        os.makedirs(planted, exist_ok=True)
        with open(os.path.join(planted, self.wheel_name), "wb") as f:
            f.write(self.wheel)
        pages = {"/simple/alpha/": self.anchor(f"file://{planted}/{self.wheel_name}", metadata=False)}
        ix = self.index_server(pages, require_auth=False)
        root = self.project("file-link", manifest(f"{ix.url}/simple", ["alpha"]))
        r = self.envbox(root, "lock", "env")
        self.assertEqual(r.returncode, 4, r)
        self.assertIn(f"{ix.url}/simple/alpha/", r.stderr)
        self.assertIn("file", r.stderr)
        self.assertEqual(self.lock_text(root), "")
        # A <base href> pointing at the file system, and /etc/passwd itself, the same.
        pages["/simple/alpha/"] = '<base href="file:///etc/"><a href="passwd#/alpha-1.0-py3-none-any.whl">' \
                                  'alpha-1.0-py3-none-any.whl</a>'
        r = self.envbox(root, "lock", "env")
        self.assertEqual(r.returncode, 4, r)
        self.assertNotIn("root:", r.stdout + r.stderr)

    def test_passwords_in_urls_are_never_printed_or_locked(self):
        ix = self.index_server({}, require_auth=False)
        root = self.project("userinfo-manifest", manifest(
            ix.url.replace("://", "://alice:PW-IN-MANIFEST@") + "/simple", ["alpha"]))
        r = self.envbox(root, "lock", "env")
        self.assertEqual(r.returncode, 3, r)
        self.assertNotIn("PW-IN-MANIFEST", r.stdout + r.stderr)
        self.assertIn("ENVBOX_INDEX_IX_PASSWORD", r.stderr)
        self.assertEqual(self.lock_text(root), "")
        # A page linking to a URL with a password: not in a message when it fails…
        dead = self.files_server()
        dead_url = dead.url
        dead.close()
        pages = {"/simple/alpha/": self.anchor(dead_url.replace("://", "://bob:PW-IN-LINK@") + "/files/" +
                                               self.wheel_name)}
        ix = self.index_server(pages, require_auth=False)
        root = self.project("userinfo-link", manifest(f"{ix.url}/simple", ["alpha"]))
        r = self.envbox(root, "lock", "env", env={"ENVBOX_HTTP_TIMEOUT": "2"})
        self.assertEqual(r.returncode, 4, r)
        self.assertNotIn("PW-IN-LINK", r.stdout + r.stderr)
        self.assertIn("***@", r.stderr)
        # …nor sent to a live server: a URL's userinfo is never sent, so the link is refused
        # (exit 4) and the server sees no request.
        files = self.files_server()
        pages["/simple/alpha/"] = self.anchor(files.url.replace("://", "://bob:PW-IN-LINK@") + "/files/" +
                                              self.wheel_name)
        r = self.envbox(root, "lock", "env")
        self.assertEqual(r.returncode, 4, r)
        self.assertNotIn("PW-IN-LINK", r.stdout + r.stderr)
        self.assertIn(f"{files.url.replace('://', '://***@')}/files/{self.wheel_name}", r.stderr)
        self.assertEqual(files.seen, [])
        self.assertEqual(self.lock_text(root), "")
        pages["/simple/alpha/"] = self.anchor(f"{files.url}/files/{self.wheel_name}")
        r = self.envbox(root, "lock", "env")
        self.assertEqual(r.returncode, 0, r)
        self.assertIn(f'{files.url}/files/{self.wheel_name}', self.lock_text(root))
        self.assertNotIn("PW-IN-LINK", self.lock_text(root) + r.stdout + r.stderr)
        # A lock written by hand with a password in a URL: create does not print it.
        lock_path = os.path.join(root, "manifests", "pylock.env.toml")
        text = self.lock_text(root).replace(files.url, dead_url.replace("://", "://carol:PW-IN-LOCK@"))
        with open(lock_path, "w") as f:
            f.write(text)
        r = self.envbox(root, "create", "env", env={"ENVBOX_HTTP_TIMEOUT": "2"})
        self.assertEqual(r.returncode, 4, r)
        self.assertNotIn("PW-IN-LOCK", r.stdout + r.stderr)
        self.assertIn("***@", r.stderr)


    def test_a_password_in_an_index_url_is_refused_by_every_command_and_never_sent(self):
        """`lock` refused `user:secret@` in an index URL while `doctor` (and every command but
        lock) read the same manifest, or the project's envbox.toml, as fine and sent the
        password as Basic auth, in clear over http. The server records every request."""
        ix = self.index_server({"/simple/": "<html></html>"}, require_auth=False)
        url = ix.url.replace("://", "://user:PW-IN-URL@") + "/simple"
        in_manifest = self.project("userinfo-doctor", manifest(url, ["alpha"]))
        in_project = self.project("userinfo-doctor-shared", manifest_text(["alpha"]))
        with open(os.path.join(in_project, "envbox.toml"), "w") as f:
            f.write(f'[[index]]\nname = "ix"\nurl = "{url}"\n')
        for root, source in ((in_manifest, os.path.join("manifests", "env.toml")), (in_project, "envbox.toml")):
            with self.subTest(source=source):
                r = self.envbox(root, "doctor")
                self.assertEqual(r.returncode, 1, r)
                self.assertIn(os.path.join(root, source), r.stdout + r.stderr)
                self.assertIn("ENVBOX_INDEX_IX_PASSWORD", r.stdout + r.stderr)
                r = self.envbox(root, "doctor", "--json")
                self.assertEqual(r.returncode, 1, r)
                report = json.loads(r.stdout)
                self.assertTrue(any("without credentials" in p for p in report["problems"]), report)
                self.assertEqual(report["indexes"], [])
                for args in (("lock", "env"), ("create", "env"), ("add", "env", "beta", "--no-sync")):
                    r = self.envbox(root, *args)
                    self.assertEqual(r.returncode, 3, (args, r))
                    self.assertIn("ENVBOX_INDEX_IX_PASSWORD", r.stderr)
                self.assertEqual(ix.seen, [], "no request, so no Authorization, ever")
        # A mirror variable with a password: doctor refuses it as lock does, asking nothing.
        clean = self.project("userinfo-doctor-mirror", manifest(f"{ix.url}/simple", ["alpha"]))
        r = self.envbox(clean, "doctor", env={"ENVBOX_INDEX_IX_URL": url})
        self.assertEqual(r.returncode, 1, r)
        self.assertIn("ENVBOX_INDEX_IX_URL (the mirror of index ix) has credentials in its URL", r.stdout + r.stderr)
        self.assertNotIn("PW-IN-URL", r.stdout + r.stderr)
        self.assertEqual(ix.seen, [])
        # A lock (no manifest) naming its wheel by a URL with a password: the HTTP client
        # refuses the URL (exit 4) and sends nothing.
        lock_only = os.path.join(self.tmp, "userinfo-lock-only")
        os.makedirs(os.path.join(lock_only, "manifests"))
        write_lock(os.path.join(lock_only, "manifests", "pylock.env.toml"),
                   [os.path.join(self.tmp, "wheels", self.wheel_name)], url_prefix=url)
        r = self.envbox(lock_only, "create", "env")
        self.assertEqual(r.returncode, 4, r)
        self.assertIn("***@", r.stderr)
        self.assertNotIn("PW-IN-URL", r.stdout + r.stderr)
        self.assertEqual(ix.seen, [])

    def test_a_malformed_index_url_is_the_manifests_error_not_the_servers(self):
        for url in ("https://exa mple.org/simple", "http://[::1/simple", "https:///simple",
                    "http://127.0.0.1:99999/simple"):
            with self.subTest(url=url):
                root = self.project("bad-url", manifest(url, ["alpha"]))
                r = self.envbox(root, "lock", "env", env={"ENVBOX_HTTP_TIMEOUT": "2"})
                self.assertEqual(r.returncode, 3, r)
                self.assertIn(f"env.toml: index ix: '{url}' is not a valid URL", r.stderr)
                self.assertNotIn("cannot fetch", r.stderr)
        # No host at all: said with the URL as written, not as the reader trims it ("https:").
        for url in ("https://", "http:////"):
            with self.subTest(url=url):
                root = self.project("no-host", manifest(url, ["alpha"]))
                r = self.envbox(root, "lock", "env")
                self.assertEqual(r.returncode, 3, r)
                self.assertIn(f"Expected a host after '{url[:url.index('//') + 2]}' in '{url}'",
                              r.stderr)


class Hangs(Base):
    def lock_against_page(self, project, page):
        """Locks alpha from an index whose page for it is `page`; asserts it succeeds within 30 s.
        Returns the project root and the run."""
        def route(h):
            if h.path == "/simple/alpha/":
                return reply(h, 200, page)
            if not self.serve_wheel(h, h.path):
                reply(h, 404)
        s = RouteServer(route)
        self.addCleanup(s.close)
        root = self.project(project, manifest(f"{s.url}/simple", ["alpha"]))
        start = time.time()
        r = self.envbox(root, "lock", "env", timeout=60)
        self.assertEqual(r.returncode, 0, r)
        self.assertLess(time.time() - start, 30)
        return root, r

    def test_a_million_ampersands_in_an_href_parse_in_linear_time(self):
        page = ('<a href="' + "&" * 3_000_000 + '">x</a>\n' + self.anchor(f"/files/{self.wheel_name}")).encode()
        self.lock_against_page("ampersands", page)

    def test_a_file_name_whose_tags_expand_to_billions_is_skipped_at_once(self):
        # Three dotted tag sets of 1 500: 3.4 billion tags were the name expanded.
        sets = [".".join(f"{p}{i}" for i in range(1500)) for p in ("py", "abi", "plat")]
        hostile = f"alpha-2.0-{sets[0]}-{sets[1]}-{sets[2]}.whl"
        page = (f'<a href="/files/{hostile}#sha256={"0" * 64}">{hostile}</a>\n' +
                self.anchor(f"/files/{self.wheel_name}")).encode()
        root, r = self.lock_against_page("tag-bomb", page)
        self.assertIn('version = "1.0"', self.lock_text(root))  # the hostile 2.0 is no candidate
        self.assertLess(r.peak_rss_kib, 512 << 10, r)

    def test_a_manifest_preferring_400_000_packages_is_read_in_linear_time(self):
        # Each name checked against every one before it was 80 billion comparisons.
        names = ", ".join(f'"p{i}"' for i in range(400_000))
        def route(h):
            if h.path == "/simple/alpha/":
                return reply(h, 200, self.anchor(f"/files/{self.wheel_name}").encode())
            if not self.serve_wheel(h, h.path):
                reply(h, 404)
        s = RouteServer(route)
        self.addCleanup(s.close)
        root = self.project("prefer-many", manifest(f"{s.url}/simple", ["alpha"]) +
                            f"\n[install]\nprefer = [{names}]\n")
        start = time.time()
        r = self.envbox(root, "lock", "env", timeout=120)
        self.assertEqual(r.returncode, 3, r)
        self.assertIn("'p0' is not a package of the lock in 'install.prefer'", r.stderr)
        self.assertLess(time.time() - start, 30, r)

    def test_a_search_past_the_step_budget_gives_up_saying_so(self):
        # 300 versions of `a`, each needing a `b` that does not exist: every version is tried,
        # one metadata file each.
        n = 300

        def route(h):
            parts = h.path.strip("/").split("/")
            if parts[0] == "simple" and len(parts) == 2 and parts[1] in ("a", "b"):
                versions = range(1, n + 1) if parts[1] == "a" else ["0.1"]
                files = [{"filename": f"{parts[1]}-{v}-py3-none-any.whl", "url": f"/files/{parts[1]}-{v}-py3-none-any.whl",
                          "hashes": {"sha256": sha256_hex(f"{parts[1]}{v}".encode())}, "size": 1000,
                          "core-metadata": True} for v in versions]
                body = json.dumps({"meta": {"api-version": "1.1"}, "name": parts[1], "files": files}).encode()
                return reply(h, 200, body, "application/vnd.pypi.simple.v1+json")
            if parts[0] == "files" and h.path.endswith(".whl.metadata"):
                name, version = parts[1].split("-")[:2]
                text = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                if name == "a":
                    text += f"Requires-Dist: b>={version}\n"
                return reply(h, 200, text.encode(), "application/octet-stream")
            reply(h, 404)
        s = RouteServer(route)
        self.addCleanup(s.close)
        root = self.project("steps", manifest(f"{s.url}/simple", ["a"]))
        r = self.envbox(root, "lock", "env", env={"ENVBOX_RESOLVE_MAX_STEPS": "50"})
        self.assertEqual(r.returncode, 3, r)
        self.assertIn("resolution gave up after 50 steps", r.stderr)
        self.assertIn("ENVBOX_RESOLVE_MAX_STEPS", r.stderr)
        self.assertEqual(self.lock_text(root), "")
        # Unbounded enough, the same search ends in its explanation.
        r = self.envbox(root, "lock", "env", timeout=300)
        self.assertEqual(r.returncode, 3, r)
        self.assertIn("no solution", r.stderr)
        r = self.envbox(root, "lock", "env", env={"ENVBOX_RESOLVE_MAX_STEPS": "many"})
        self.assertEqual(r.returncode, 2, r)
        self.assertIn("ENVBOX_RESOLVE_MAX_STEPS must be a number of steps", r.stderr)

    def test_thousands_of_dependencies_run_on_a_bounded_pool_of_threads(self):
        n = 3000
        deps = [f"dep{i}" for i in range(n)]

        def route(h):
            time.sleep(0.005)
            parts = h.path.strip("/").split("/")
            if parts[0] == "simple" and len(parts) == 2:
                name = parts[1]
                fn = f"{name}-1.0-py3-none-any.whl"
                body = json.dumps({"meta": {"api-version": "1.1"}, "name": name, "files": [
                    {"filename": fn, "url": f"/files/{fn}", "hashes": {"sha256": sha256_hex(fn.encode())},
                     "size": 1000, "core-metadata": True}]}).encode()
                return reply(h, 200, body, "application/vnd.pypi.simple.v1+json")
            if parts[0] == "files" and h.path.endswith(".whl.metadata"):
                name = parts[1].split("-")[0]
                text = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
                if name == "big":
                    text += "".join(f"Requires-Dist: {d}\n" for d in deps)
                return reply(h, 200, text.encode(), "application/octet-stream")
            reply(h, 404)
        s = RouteServer(route)
        self.addCleanup(s.close)
        root = self.project("many-deps", manifest(f"{s.url}/simple", ["big"]))
        r = self.envbox(root, "lock", "env", timeout=300)
        self.assertEqual(r.returncode, 0, r)
        self.assertEqual(self.lock_text(root).count("[[packages]]"), n + 1)
        # 32 fetch workers, the HTTP loop, the main thread and the lock writer's 16.
        self.assertLessEqual(r.peak_threads, 64, "fetches run on a fixed pool, not a thread per package")


class Limits(Base):
    """Every body a server sends is bounded, counted as decoded: pages 64 MiB, metadata files
    16 MiB, a download the size the lock (or the index) gives."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        z = zlib.compressobj(9, zlib.DEFLATED, 31)
        zeros = b"\0" * (1 << 20)
        cls.bomb = b"".join(z.compress(zeros) for _ in range(1024)) + z.flush()  # 1 GiB of zeros

    def serve(self, route):
        s = RouteServer(route)
        self.addCleanup(s.close)
        return s

    def test_a_gzip_bomb_page_stops_at_the_page_limit(self):
        def route(h):
            reply(h, 200, self.bomb, headers=[("Content-Encoding", "gzip")])
        s = self.serve(route)
        root = self.project("bomb", manifest(f"{s.url}/simple", ["alpha"]))
        r = self.envbox(root, "lock", "env", timeout=60)
        self.assertEqual(r.returncode, 4, r)
        self.assertIn(f"{s.url}/simple/alpha/", r.stderr)
        self.assertIn("64 MiB", r.stderr)
        self.assertLess(r.peak_rss_kib, 400 << 10, "the page is not inflated into memory")

    def test_an_endless_page_or_metadata_file_stops_at_its_limit(self):
        def route(h):
            if h.path == "/simple/alpha/":
                return reply(h, 200, self.anchor(f"/files/{self.wheel_name}").encode())
            endless(h)
        s = self.serve(route)
        root = self.project("endless-meta", manifest(f"{s.url}/simple", ["alpha"]))
        r = self.envbox(root, "lock", "env", timeout=60)
        self.assertEqual(r.returncode, 4, r)
        self.assertIn(f"{s.url}/files/{self.wheel_name}.metadata", r.stderr)
        self.assertIn("16 MiB", r.stderr)
        s2 = self.serve(lambda h: endless(h))
        root = self.project("endless-page", manifest(f"{s2.url}/simple", ["alpha"]))
        r = self.envbox(root, "lock", "env", timeout=60)
        self.assertEqual(r.returncode, 4, r)
        self.assertIn("64 MiB", r.stderr)

    def test_a_range_request_answered_with_an_endless_200_stops_at_the_index_size(self):
        page = json.dumps({"meta": {"api-version": "1.1"}, "name": "alpha", "files": [
            {"filename": self.wheel_name, "url": f"/files/{self.wheel_name}", "hashes": {"sha256": sha256_hex(self.wheel)},
             "size": len(self.wheel)}]}).encode()

        def route(h):
            if h.path == "/simple/alpha/":
                return reply(h, 200, page, "application/vnd.pypi.simple.v1+json")
            endless(h, ctype="application/octet-stream")
        s = self.serve(route)
        root = self.project("range-200", manifest(f"{s.url}/simple", ["alpha"]))
        r = self.envbox(root, "lock", "env", timeout=60)
        self.assertEqual(r.returncode, 5, r)
        self.assertIn(f"larger than the index's size {len(self.wheel)}", r.stderr)
        self.assertLess(r.peak_rss_kib, 400 << 10)

    def test_a_whole_wheel_past_the_limit_for_a_range_request_is_named_by_its_file_and_url(self):
        """No metadata file, and the server ignores Range: the whole wheel comes, larger than
        the 64 MiB envbox keeps in memory, so it is downloaded to a temporary file and read
        there. It is no zip: the error names the wheel and its URL, not the temporary file."""
        body = b"\0" * ((64 << 20) + 4096)
        page = (f'<a href="/files/{self.wheel_name}#sha256={sha256_hex(body)}">{self.wheel_name}</a>').encode()

        def route(h):
            if h.path == "/simple/alpha/":
                return reply(h, 200, page)
            reply(h, 200, body, "application/octet-stream")  # whatever the Range header asks
        s = self.serve(route)
        root = self.project("range-whole-big", manifest(f"{s.url}/simple", ["alpha"]))
        r = self.envbox(root, "lock", "env", timeout=120)
        self.assertEqual(r.returncode, 5, r)
        self.assertIn(f"{self.wheel_name} ({s.url}/files/{self.wheel_name}) is not a readable wheel", r.stderr)
        self.assertNotIn("metadata-", r.stderr)
        self.assertNotIn(os.path.join(root, "home"), r.stderr)

    def test_a_download_stops_at_the_first_byte_past_the_locks_size(self):
        state = {"endless": False}

        def route(h):
            if h.path == "/simple/alpha/":
                return reply(h, 200, self.anchor(f"/files/{self.wheel_name}").encode())
            if state["endless"] and h.path.endswith(".whl"):
                return endless(h, ctype="application/octet-stream")
            if not self.serve_wheel(h, h.path):
                reply(h, 404)
        s = self.serve(route)
        root = self.project("create-size", manifest(f"{s.url}/simple", ["alpha"]))
        r = self.envbox(root, "lock", "env")
        self.assertEqual(r.returncode, 0, r)
        self.assertIn(f"size = {len(self.wheel)}", self.lock_text(root))
        state["endless"] = True
        r = self.envbox(root, "create", "env", timeout=60)
        self.assertEqual(r.returncode, 5, r)
        self.assertIn(f"larger than the lock's size {len(self.wheel)}", r.stderr)
        downloads = os.path.join(root, "home", "cache", "downloads")
        left = [f for f in os.listdir(downloads) if not f.endswith(".lock")] if os.path.isdir(downloads) else []
        self.assertEqual(left, [], "the part is removed")


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
