"""A git smart-HTTP server on 127.0.0.1 for tests: `git http-backend` (the real one, as CGI)
behind a ThreadingHTTPServer, optionally requiring HTTP Basic credentials.

    server = GitHttpServer(root, auth=("user", "secret"))   # root holds bare repositories
    server.url + "/lib.git"
    server.close()
"""
import base64
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class GitHttpServer:
    def __init__(self, root, auth=None):
        self.root, self.auth, self.requests = root, auth, []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self.backend()

            def do_POST(self):
                self.backend()

            def backend(self):
                server.requests.append((self.command, self.path, self.headers.get("Authorization")))
                if server.auth:
                    want = "Basic " + base64.b64encode(":".join(server.auth).encode()).decode()
                    if self.headers.get("Authorization") != want:
                        self.send_response(401)
                        self.send_header("WWW-Authenticate", 'Basic realm="git"')
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                path, _, query = self.path.partition("?")
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                       "GIT_PROJECT_ROOT": server.root, "GIT_HTTP_EXPORT_ALL": "1",
                       "PATH_INFO": path, "QUERY_STRING": query,
                       "REQUEST_METHOD": self.command,
                       "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                       "CONTENT_LENGTH": str(len(body)), "REMOTE_ADDR": "127.0.0.1",
                       "GIT_PROTOCOL": self.headers.get("Git-Protocol", "")}
                if self.headers.get("Content-Encoding"):
                    env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
                out = subprocess.run(["git", "http-backend"], input=body, env=env,
                                     capture_output=True).stdout
                head, _, payload = out.partition(b"\r\n\r\n")
                status = 200
                headers = []
                for line in head.split(b"\r\n"):
                    key, _, value = line.decode().partition(":")
                    if key.lower() == "status":
                        status = int(value.split()[0])
                    elif key:
                        headers.append((key, value.strip()))
                self.send_response(status)
                for key, value in headers:
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
