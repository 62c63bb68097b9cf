"""A real OCI registry for the black-box tests: Debian's `docker-registry` (CNCF distribution
2.8) started on 127.0.0.1 with a port the kernel chose, a temporary storage folder and a
config written here; plain http, or htpasswd (basic) auth behind TLS with a CA made by
`make_test_ca`. `blobs()` lists the digests the storage holds (to count what a push uploaded),
`blob_data(digest)` is the file the registry serves a blob from (to corrupt it), `api()` sends
one request to the registry's HTTP API with the right credentials and CA.
"""
import base64
import json
import os
import shutil
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

from httpserver import free_port, make_test_ca

BINARY = shutil.which("docker-registry") or "/usr/bin/docker-registry"


def available():
    return os.access(BINARY, os.X_OK)


def bcrypt(password):
    """A bcrypt hash for htpasswd (libxcrypt's, through the crypt module; else htpasswd -B)."""
    try:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import crypt
        h = crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH))
        if h and h.startswith("$2"):
            return h
    except Exception:  # noqa: BLE001
        pass
    out = subprocess.run(["htpasswd", "-nbB", "u", password], check=True, capture_output=True, text=True)
    return out.stdout.strip().split(":", 1)[1]


def _b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class TokenService:
    """A token service of distribution's token auth (the Bearer flow docker uses): GET
    /token?service=…&scope=… with basic auth answers a JWT (RS256, signed with openssl, its
    certificate in `x5c`) granting what the scopes ask for. `requests` records (path, whether
    an Authorization header came). Served over https with `certs`' certificate."""

    def __init__(self, tmp, certs, user, password, service="envbox-registry", issuer="envbox-test-issuer"):
        import http.server
        from httpserver import HttpServer
        self.service, self.issuer = service, issuer
        self.key, self.cert = os.path.join(tmp, "token.key"), os.path.join(tmp, "token.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                        "/CN=envbox token signer", "-keyout", self.key, "-out", self.cert],
                       check=True, capture_output=True)
        der = subprocess.run(["openssl", "x509", "-in", self.cert, "-outform", "DER"], check=True,
                             capture_output=True).stdout
        x5c = base64.b64encode(der).decode()
        expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        service_ = self
        self.requests = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                import time as _time
                import urllib.parse
                url = urllib.parse.urlparse(self.path)
                auth = self.headers.get("Authorization")
                service_.requests.append((self.path, auth is not None))
                if auth != expected:
                    self.send_response(401)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                query = urllib.parse.parse_qs(url.query)
                access = []
                for scope in " ".join(query.get("scope", [])).split():
                    kind, name, actions = scope.split(":")[0], ":".join(scope.split(":")[1:-1]), scope.split(":")[-1]
                    access.append({"type": kind, "name": name, "actions": actions.split(",")})
                now = int(_time.time())
                header = {"typ": "JWT", "alg": "RS256", "x5c": [x5c]}
                claims = {"iss": service_.issuer, "sub": user, "aud": service_.service, "exp": now + 300,
                          "nbf": now - 10, "iat": now, "jti": os.urandom(8).hex(), "access": access}
                signing = _b64url(json.dumps(header).encode()) + "." + _b64url(json.dumps(claims).encode())
                sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", service_.key], input=signing.encode(),
                                     check=True, capture_output=True).stdout
                body = json.dumps({"token": signing + "." + _b64url(sig)}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = HttpServer(Handler, tls=(os.path.join(certs, "server.pem"), os.path.join(certs, "server.key")))
        self.realm = self.server.url + "/token"

    def close(self):
        self.server.close()


class Registry:
    def __init__(self, tmp, user=None, password=None, certs=None, token=None, proxy=None):
        """`certs`: a folder where `make_test_ca` already ran (else it runs in `tmp`). `token`:
        a TokenService: token auth (Bearer) instead of htpasswd. `proxy`: the URL of another
        registry this one is a pull-through cache of (distribution's `proxy.remoteurl`)."""
        self.tmp = tmp
        os.makedirs(tmp, exist_ok=True)
        self.storage = os.path.join(tmp, "storage")
        self.port = free_port()
        self.host = f"127.0.0.1:{self.port}"
        self.user, self.password = user, password
        self.tls = user is not None
        self.ca = None
        lines = ["version: 0.1", "log:", "  level: error", "  accesslog:", "    disabled: true",
                 "storage:", "  filesystem:", f"    rootdirectory: {self.storage}",
                 "  delete:", "    enabled: true", "http:", f"  addr: {self.host}"]
        if self.tls:
            if certs is None:
                make_test_ca(tmp)
            certs = certs or tmp
            self.ca = os.path.join(certs, "ca.pem")
            with open(os.path.join(tmp, "htpasswd"), "w") as f:
                f.write(f"{user}:{bcrypt(password)}\n")
            lines += ["  tls:", f"    certificate: {certs}/server.pem", f"    key: {certs}/server.key", "auth:"]
            if token:
                lines += ["  token:", f"    realm: {token.realm}", f"    service: {token.service}",
                          f"    issuer: {token.issuer}", f"    rootcertbundle: {token.cert}"]
            else:
                lines += ["  htpasswd:", "    realm: envbox-test", f"    path: {tmp}/htpasswd"]
        if proxy:
            lines += ["proxy:", f"  remoteurl: {proxy}"]
        self.token = token
        config = os.path.join(tmp, "config.yml")
        with open(config, "w") as f:
            f.write("\n".join(lines) + "\n")
        self.log = open(os.path.join(tmp, "registry.log"), "w")
        self.proc = subprocess.Popen([BINARY, "serve", config], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.05)
        self.close()
        raise RuntimeError("docker-registry did not start: " + open(os.path.join(tmp, "registry.log")).read())

    @property
    def url(self):
        return ("https://" if self.tls else "http://") + self.host

    def flags(self):
        """The envbox options that reach this registry."""
        return ["--ca", self.ca] if self.tls else ["--plain-http"]

    def credentials_env(self):
        return {"ENVBOX_REGISTRY_USERNAME": self.user, "ENVBOX_REGISTRY_PASSWORD": self.password} if self.tls else {}

    def blobs(self):
        """Every blob digest the storage holds."""
        root = os.path.join(self.storage, "docker", "registry", "v2", "blobs", "sha256")
        out = set()
        if os.path.isdir(root):
            for shard in os.listdir(root):
                for d in os.listdir(os.path.join(root, shard)):
                    if os.path.exists(os.path.join(root, shard, d, "data")):
                        out.add("sha256:" + d)
        return out

    def blob_data(self, digest):
        hexd = digest.split(":", 1)[1]
        return os.path.join(self.storage, "docker", "registry", "v2", "blobs", "sha256", hexd[:2], hexd, "data")

    def api(self, method, path, body=None, headers=None):
        """(status, headers, body) of one request to the registry's API."""
        req = urllib.request.Request(self.url + path, data=body, method=method, headers=dict(headers or {}))
        ctx = ssl.create_default_context(cafile=self.ca) if self.tls else None
        if self.token:
            repo = path.split("/v2/", 1)[1].rsplit("/", 2)[0] if "/v2/" in path else ""
            if "/blobs/uploads" in path:
                repo = path.split("/v2/", 1)[1].split("/blobs/uploads")[0]
            treq = urllib.request.Request(self.token.realm + "?" + urllib.parse.urlencode(
                {"service": self.token.service, "scope": f"repository:{repo}:pull,push"}))
            treq.add_header("Authorization", "Basic " + base64.b64encode(f"{self.user}:{self.password}".encode()).decode())
            with urllib.request.urlopen(treq, context=ctx) as r:
                req.add_header("Authorization", "Bearer " + json.loads(r.read())["token"])
        elif self.tls:
            token = base64.b64encode(f"{self.user}:{self.password}".encode()).decode()
            req.add_header("Authorization", "Basic " + token)
        try:
            with urllib.request.urlopen(req, context=ctx) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def put_blob(self, repo, data):
        import hashlib
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        status, h, _ = self.api("POST", f"/v2/{repo}/blobs/uploads/")
        assert status == 202, status
        loc = h["Location"]
        sep = "&" if "?" in loc else "?"
        path = loc.split(self.host, 1)[-1] if loc.startswith("http") else loc
        status, _, body = self.api("PUT", f"{path}{sep}digest={digest}", data,
                                   {"Content-Type": "application/octet-stream"})
        assert status == 201, (status, body)
        return digest

    def put_manifest(self, repo, tag, manifest, media_type="application/vnd.oci.image.manifest.v1+json"):
        body = manifest if isinstance(manifest, bytes) else json.dumps(manifest).encode()
        status, _, text = self.api("PUT", f"/v2/{repo}/manifests/{tag}", body, {"Content-Type": media_type})
        assert status == 201, (status, text)

    def get_manifest(self, repo, tag):
        status, _, body = self.api("GET", f"/v2/{repo}/manifests/{tag}", None,
                                   {"Accept": "application/vnd.oci.image.manifest.v1+json"})
        assert status == 200, status
        return json.loads(body)

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
