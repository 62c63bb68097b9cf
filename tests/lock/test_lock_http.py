#!/usr/bin/env python3
"""The index client against hostile and protected servers: nginx over TLS with a CA this
fixture creates (HTTP/2 offered), a fault-injecting server (5xx, 429 with Retry-After, resets,
truncated bodies), Basic-auth indexes with credentials from the environment and from ~/.netrc,
and a redirect to another host that must not carry them.

    test_lock_http.py ENVBOX_BINARY
"""
import base64
import os
import socket
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "support"), os.path.join(HERE, "..", "..", "tools")]
import envboxtest  # noqa: E402
import indexworld  # noqa: E402
from envboxtest import envbox, keep_or_remove, manifest_text, packages, write_manifest  # noqa: E402
from httpserver import HttpServer, Nginx, QuietFiles, free_port, make_test_ca  # noqa: E402
from indexworld import manifest  # noqa: E402


class Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-http-")
        os.chmod(cls.tmp, 0o755)
        cls.www = os.path.join(cls.tmp, "www")
        indexworld.build(cls.www)

    @classmethod
    def tearDownClass(cls):
        keep_or_remove(cls.tmp)

    def project(self, name, text):
        return write_manifest(os.path.join(self.tmp, name), "env", text)

    def lock(self, root, env=None, home=None):
        return envbox("lock", "env", home=home or os.path.join(root, "home"), project=root, check=False, env=env)


class Tls(Base):
    """nginx from Debian, TLS with a CA made here."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        Nginx.require()
        t = cls.tmp
        make_test_ca(t)
        cls.port = free_port()
        cls.nginx = Nginx(t, cls.port, '$connection "$request" $status $body_bytes_sent', f"""    server {{
        listen 127.0.0.1:{cls.port} ssl http2;
        ssl_certificate {t}/server.pem;
        ssl_certificate_key {t}/server.key;
        root {cls.www};
        location ~ /$ {{ try_files $uri$simple_page $uri/index.html =404; }}
    }}
""", scheme="https")
        cls.url = cls.nginx.url

    @classmethod
    def tearDownClass(cls):
        cls.nginx.close()
        super().tearDownClass()

    def test_lock_over_tls_with_the_index_ca(self):
        text = manifest(self.url, "cu128", ["torch==2.11.0+cu128", "transformers"])
        text = text.replace('url = "' + self.url + '/pypi"', 'url = "' + self.url + '/pypi"\nca = "../../ca.pem"')
        text = text.replace('explicit = true', 'explicit = true\nca = "../../ca.pem"')
        root = self.project("tls-ca", text)
        log_path = os.path.join(self.tmp, "nginx-access.log")
        log_start = os.path.getsize(log_path) if os.path.exists(log_path) else 0
        r = self.lock(root)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(root, "manifests", "pylock.env.toml")) as f:
            p = packages(f.read())
        self.assertEqual(p["torch"], ("2.11.0+cu128", "pytorch-cu128"))
        self.assertEqual(p["typing-extensions"][1], "pypi")
        with open(log_path) as f:
            f.seek(log_start)
            log = f.read()  # this lock's requests only
        self.assertIn("HTTP/2.0", log, "HTTP/2 is used where the server offers it")
        # All requests in flight at once share one connection: HTTP/2 streams multiplexed by
        # the client's single libcurl multi handle, not a connection per request.
        lines = log.splitlines()
        connections = {l.split()[0] for l in lines}
        self.assertGreater(len(lines), 20)
        self.assertLessEqual(len(connections), 2, f"{len(lines)} requests over {len(connections)} connections")
        # The PyTorch indexes offer no metadata files: torch's METADATA comes from range
        # requests on the wheel (206), never from downloading it whole.
        torch_lines = [l for l in log.splitlines() if "/files/pytorch-cu128/torch-2.11.0" in l]
        self.assertTrue(torch_lines)
        self.assertTrue(all('" 206 ' in l for l in torch_lines), torch_lines)

    def test_unknown_ca_is_refused_and_ssl_cert_file_is_honoured(self):
        root = self.project("tls-plain", manifest(self.url, "cu128", ["torch==2.11.0+cu128"]))
        r = self.lock(root)
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn("127.0.0.1", r.stderr)
        r = self.lock(root, env={"SSL_CERT_FILE": os.path.join(self.tmp, "ca.pem")})
        self.assertEqual(r.returncode, 0, r.stderr)


class Faults(Base):
    """A server that fails the first requests for each page in a chosen way."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        www = cls.www
        cls.seen = {}
        cls.headers_seen = []
        cls.delay_files = False
        outer = cls

        class Handler(QuietFiles):
            protocol_version = "HTTP/1.1"

            def __init__(self, *a, **k):
                super().__init__(*a, directory=www, **k)

            def start_a_long_page(self):
                """Headers promising 100 000 bytes, then six of them."""
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", "100000")
                self.end_headers()
                self.wfile.write(b"<html>")
                self.wfile.flush()
                self.close_connection = True

            def do_GET(self):
                if outer.delay_files and self.path.startswith("/files/"):
                    time.sleep(2)  # a metadata prefetch still in flight when the lock fails
                outer.headers_seen.append((self.path, self.headers.get("Authorization")))
                n = outer.seen.get(self.path, 0)
                outer.seen[self.path] = n + 1
                if self.path.startswith("/private/"):
                    if self.headers.get("Authorization") != "Basic " + base64.b64encode(b"alice:s3cret").decode():
                        self.send_response(401)
                        self.send_header("WWW-Authenticate", 'Basic realm="private"')
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    self.path = "/pypi/" + self.path[len("/private/"):]
                    return super().do_GET()
                if self.path.startswith("/redirect/"):
                    self.send_response(302)
                    self.send_header("Location", f"http://127.0.0.2:{outer.port}/pypi/" + self.path[len("/redirect/"):])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                kind = self.path.split("/")[2] if self.path.count("/") > 2 else ""
                if self.path.startswith("/flaky/") and n < 2:
                    fault = ["503", "429", "reset", "truncate"][hash(self.path) % 4]
                    if fault == "503":
                        self.send_response(503)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                    elif fault == "429":
                        self.send_response(429)
                        self.send_header("Retry-After", "1")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                    elif fault == "reset":
                        # RST instead of an answer
                        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                    else:
                        self.start_a_long_page()
                        self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if self.path.startswith("/slow/") and n < 2 and not self.path.endswith("/simple/"):
                    # Headers, then nothing for longer than the client's stall timeout.
                    self.start_a_long_page()
                    time.sleep(4)
                    return
                if self.path.startswith("/flaky/") or self.path.startswith("/slow/"):
                    self.path = "/pypi/" + self.path.split("/", 2)[2]
                del kind
                return super().do_GET()

        # On every address: the redirect test reaches it as 127.0.0.2 too.
        cls.server = HttpServer(Handler, host="0.0.0.0")
        cls.port = cls.server.port
        cls.url = f"http://127.0.0.1:{cls.port}"

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        super().tearDownClass()

    def single_index(self, name, path):
        return manifest_text(["transformers", "wandb"], indexes=[(name, f"{self.url}/{path}", "")])

    def test_a_failed_resolution_ends_while_prefetches_are_in_flight(self):
        """No solution while the metadata of a likely version is still being fetched: the
        error, exit 3, once the prefetch has ended, never a wait on a client already gone."""
        root = self.project("unsolvable", manifest_text(["transformers>=99"],
                                                        indexes=[("pypi", f"{self.url}/pypi", "")]))
        type(self).delay_files = True
        try:
            r = envbox("lock", "env", home=os.path.join(root, "home"), project=root, check=False,
                       timeout=60)
        finally:
            type(self).delay_files = False
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("no solution", r.stderr)
        self.assertIn("index pypi has 4.57.0, 4.56.2", r.stderr)

    def test_retries_through_5xx_429_resets_and_truncated_bodies(self):
        root = self.project("flaky", self.single_index("flaky", "flaky"))
        start = time.time()
        r = self.lock(root)
        self.assertEqual(r.returncode, 0, r.stderr)
        retried = [p for p, n in self.seen.items() if p.startswith("/flaky/") and n >= 3]
        self.assertGreater(len(retried), 5, self.seen)
        self.assertLess(time.time() - start, 60)

    def test_a_stalled_transfer_is_retried_after_the_timeout(self):
        text = self.single_index("slow", "slow").replace('["transformers", "wandb"]', '["wandb"]')
        root = self.project("slow", text)
        start = time.time()
        r = self.lock(root, env={"ENVBOX_HTTP_TIMEOUT": "1"})
        self.assertEqual(r.returncode, 0, r.stderr)
        stalled = [p for p, n in self.seen.items() if p.startswith("/slow/") and n >= 2]
        self.assertTrue(stalled, self.seen)
        self.assertLess(time.time() - start, 30)

    def test_credentials_from_the_environment_and_netrc(self):
        root = self.project("private", self.single_index("private-mirror", "private"))
        r = self.lock(root)
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn("401", r.stderr)
        r = self.lock(root, env={"ENVBOX_INDEX_PRIVATE_MIRROR_USERNAME": "alice",
                                 "ENVBOX_INDEX_PRIVATE_MIRROR_PASSWORD": "s3cret"})
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(root, "manifests", "pylock.env.toml")) as f:
            self.assertNotIn("s3cret", f.read(), "credentials never reach the lock")
        home = os.path.join(self.tmp, "netrc-home")
        os.makedirs(home, exist_ok=True)
        with open(os.path.join(home, ".netrc"), "w") as f:
            f.write("machine 127.0.0.1 login alice password s3cret\n")
        os.chmod(os.path.join(home, ".netrc"), 0o600)
        r = self.lock(root, env={"HOME": home}, home=os.path.join(self.tmp, "netrc-envbox-home"))
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_a_redirect_to_another_host_drops_credentials(self):
        root = self.project("redirect", self.single_index("redirect", "redirect"))
        self.headers_seen.clear()
        r = self.lock(root, env={"ENVBOX_INDEX_REDIRECT_USERNAME": "alice", "ENVBOX_INDEX_REDIRECT_PASSWORD": "s3cret"})
        self.assertEqual(r.returncode, 0, r.stderr)
        first_host = [a for p, a in self.headers_seen if p.startswith("/redirect/")]
        self.assertTrue(first_host and all(a for a in first_host), "credentials go to the index's own host")
        other_host = [a for p, a in self.headers_seen if p.startswith("/pypi/")]
        self.assertTrue(other_host)
        self.assertTrue(all(a is None for a in other_host), "…and never to the host it redirects to")


if __name__ == "__main__":
    envboxtest.take_binary()
    unittest.main(verbosity=1)
