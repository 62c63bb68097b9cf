"""Real HTTP servers on 127.0.0.1 for envbox's black-box tests (imported as envboxtest.py
says): one threaded server that runs any handler in the background, a static one serving a
folder, a ranged one that cuts bodies short, one that answers through a route function, and
nginx from Debian for what Python's http.server cannot do (TLS with HTTP/2, Host routing).
"""
import functools
import http.server
import os
import shutil
import socket
import socketserver
import ssl
import subprocess
import threading
import time
import unittest


def free_port():
    """A TCP port on 127.0.0.1 nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_test_ca(tmp):
    """Makes a CA (tmp/ca.pem) and a certificate it signed for 127.0.0.1 (tmp/server.pem, its
    key tmp/server.key) with openssl; both valid two days."""
    t = tmp
    run = lambda *a: subprocess.run(a, check=True, capture_output=True)  # noqa: E731
    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=envbox test CA",
        "-keyout", f"{t}/ca.key", "-out", f"{t}/ca.pem")
    run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", f"{t}/server.key",
        "-out", f"{t}/server.csr")
    with open(f"{t}/san.ext", "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    run("openssl", "x509", "-req", "-in", f"{t}/server.csr", "-CA", f"{t}/ca.pem", "-CAkey", f"{t}/ca.key",
        "-CAcreateserial", "-days", "2", "-extfile", f"{t}/san.ext", "-out", f"{t}/server.pem")


class _Threading(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    request_queue_size = 256  # the default 5 drops SYNs under parallel clients (1 s retries)


class _Quiet(_Threading):
    def handle_error(self, request, client_address):
        pass  # a client that stopped reading (as envbox does at a limit)


class HttpServer:
    """`handler` (a BaseHTTPRequestHandler class) served on `host`, port chosen by the kernel,
    from a daemon thread until close(). `url` is http(s)://host:port (no trailing slash);
    `httpd.RequestHandlerClass` may be swapped while it runs. `tls`: (certificate, key) files.
    `quiet`: a handler's exception (a client gone mid-body) prints nothing."""

    def __init__(self, handler, host="127.0.0.1", tls=None, quiet=False):
        self.httpd = (_Quiet if quiet else _Threading)((host, 0), handler)
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.url = f"{'https' if tls else 'http'}://{host}:{self.port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class QuietFiles(http.server.SimpleHTTPRequestHandler):
    """http.server's static file handler without the request log on stderr."""

    def log_message(self, *args):
        pass


class StaticServer(HttpServer):
    """`directory` as files (HTTP/1.0, no ranges)."""

    def __init__(self, directory, host="127.0.0.1"):
        super().__init__(functools.partial(QuietFiles, directory=directory), host)


class Cutting(http.server.BaseHTTPRequestHandler):
    """Serves files from `directory`, honouring `Range: bytes=N-`; while `cuts` is above zero, a
    body stops after `cut` bytes (the connection closes mid-transfer; `cuts` counts down); while
    `refuse_ranges` is set, a ranged request gets 503. Every request's path and Range header is
    recorded in `log`. The settings are class attributes: set them before serving."""
    directory = None
    cut = 0
    cuts = 0
    refuse_ranges = False
    log = []

    def do_GET(self):  # noqa: N802
        rng = self.headers.get("Range")
        type(self).log.append((self.path, rng))
        path = os.path.join(self.directory, self.path.lstrip("/"))
        if not os.path.isfile(path):
            self.send_error(404)
            return
        if rng and self.refuse_ranges:
            self.send_error(503)
            return
        with open(path, "rb") as f:
            data = f.read()
        start = int(rng[len("bytes="):].split("-")[0]) if rng else 0
        body = data[start:]
        self.send_response(206 if rng else 200)
        if rng:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if type(self).cuts > 0:
            type(self).cuts -= 1
            body = body[: self.cut]
        self.wfile.write(body)
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args):
        pass


class RouteServer(HttpServer):
    """An HTTP/1.1 server on `host` where `route(handler)` answers every GET and HEAD; `seen`
    records (path, Authorization header) of each request, so where credentials went is
    checked, not assumed."""

    def __init__(self, route, host="127.0.0.1", tls=None):
        self.seen = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):  # noqa: N802
                outer.seen.append((self.path, self.headers.get("Authorization")))
                route(self)

            do_HEAD = do_GET

        super().__init__(Handler, host, tls, quiet=True)

    def auth_of(self, prefix):
        """The Authorization headers of the requests whose path starts with `prefix`."""
        return [a for p, a in self.seen if p.startswith(prefix)]


class Nginx:
    """nginx from Debian, run from `tmp` (its configuration, pid, logs and temporary folders
    there) with `servers` (the server { } blocks, text) inside the http { } block every test
    server shares: `log_format` as given (named `log`, written to tmp/nginx-access.log), the
    wheel, metadata and simple-JSON types, and `$simple_page`, index.json when the client
    accepts PEP 691 JSON, else index.html. Returns once `port` accepts connections; `url` is
    `scheme`://127.0.0.1:port."""

    @staticmethod
    def require():
        """Skips the calling test (or, from setUpClass, its class) where nginx is not installed."""
        if not shutil.which("nginx") and not os.path.exists("/usr/sbin/nginx"):
            raise unittest.SkipTest("nginx is not installed")

    def __init__(self, tmp, port, log_format, servers, scheme="http"):
        self.tmp = tmp
        self.port = port
        self.url = f"{scheme}://127.0.0.1:{port}"
        user = "user root;\n" if os.geteuid() == 0 else ""
        conf = f"""{user}worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log;
daemon off;
events {{ worker_connections 256; }}
http {{
    log_format log '{log_format}';
    access_log {tmp}/nginx-access.log log;
    client_body_temp_path {tmp}/nginx-body; proxy_temp_path {tmp}/nginx-proxy;
    fastcgi_temp_path {tmp}/nginx-fcgi; uwsgi_temp_path {tmp}/nginx-uwsgi; scgi_temp_path {tmp}/nginx-scgi;
    types {{ text/html html; application/octet-stream whl metadata; application/vnd.pypi.simple.v1+json json; }}
    map $http_accept $simple_page {{
        default index.html;
        "~application/vnd\\.pypi\\.simple\\.v1\\+json" index.json;
    }}
{servers}}}
"""
        with open(f"{tmp}/nginx.conf", "w") as f:
            f.write(conf)
        self.proc = subprocess.Popen(["nginx", "-c", f"{tmp}/nginx.conf", "-p", tmp], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)

    def log(self):
        with open(f"{self.tmp}/nginx-access.log") as f:
            return f.read()

    def close(self):
        self.proc.terminate()
        self.proc.wait()
