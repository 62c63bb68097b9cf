#!/usr/bin/env python3
"""Build wheels and PEP 751 locks for envbox's tests, benchmarks and offline example.

Standard library only. Wheels are real zip archives with a sha256 RECORD, as a build backend
would write them; options produce the quirks the standards allow (CRLF RECORD, .data
directories, entry points, explicit directory entries, non-ASCII names) and, for hostile-input
tests, the defects an installer must refuse.

Library use:
    from wheelgen import Wheel, write_lock
    w = Wheel("demo-pkg", "1.0", files={"demo_pkg/__init__.py": "x = 1\\n"})
    path = w.build("/tmp/wheels")
    write_lock("/tmp/pylock.toml", [path], base_dir="/tmp")

Command line:
    wheelgen.py lock OUT.toml WHEEL... [--url-prefix URL]   write a lock for existing wheels
"""
import argparse
import base64
import hashlib
import os
import re
import sys
import zipfile


def record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


class Wheel:
    """A wheel to build. `files` maps archive paths to str/bytes (str is UTF-8 encoded);
    `executables` lists paths stored with the exec bit; `requires_python` and `provides_extras`
    become METADATA's Requires-Python and Provides-Extra lines."""

    def __init__(self, name, version, files=None, *, tag="py3-none-any", purelib=True,
                 entry_points=None, requires=(), executables=(), crlf_record=False,
                 explicit_dirs=False, metadata_name=None, wheel_version="1.0", requires_python=None,
                 provides_extras=()):
        self.name = name
        self.version = version
        self.files = dict(files or {})
        self.tag = tag
        self.purelib = purelib
        self.entry_points = entry_points or {}
        self.requires = list(requires)
        self.executables = set(executables)
        self.crlf_record = crlf_record
        self.explicit_dirs = explicit_dirs
        self.metadata_name = metadata_name or name
        self.wheel_version = wheel_version
        self.requires_python = requires_python      # METADATA's Requires-Python, when given
        self.provides_extras = list(provides_extras)
        # Hostile variants (tests only).
        self.extra_members = []       # (ZipInfo or name, bytes) appended after RECORD rows are made
        self.record_override = None   # callable(rows) -> rows
        self.omit_record = False

    @property
    def dist(self):
        return re.sub(r"[-_.]+", "_", self.name)

    @property
    def dist_info(self):
        return f"{self.dist}-{self.version}.dist-info"

    @property
    def filename(self):
        return f"{self.dist}-{self.version}-{self.tag}.whl"

    def _dist_info_files(self):
        meta = [f"Metadata-Version: 2.1", f"Name: {self.metadata_name}", f"Version: {self.version}"]
        if self.requires_python:
            meta.append(f"Requires-Python: {self.requires_python}")
        meta += [f"Provides-Extra: {e}" for e in self.provides_extras]
        meta += [f"Requires-Dist: {r}" for r in self.requires]
        out = {
            f"{self.dist_info}/METADATA": "\n".join(meta) + "\n\n",
            f"{self.dist_info}/WHEEL": (
                f"Wheel-Version: {self.wheel_version}\nGenerator: envbox-wheelgen\n"
                f"Root-Is-Purelib: {'true' if self.purelib else 'false'}\nTag: {self.tag}\n\n"),
        }
        if self.entry_points:
            text = ""
            for section, entries in self.entry_points.items():
                text += f"[{section}]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items()) + "\n"
            out[f"{self.dist_info}/entry_points.txt"] = text
        return out

    def build(self, out_dir) -> str:
        os.makedirs(out_dir, exist_ok=True)
        members = {}
        for path, content in {**self.files, **self._dist_info_files()}.items():
            members[path] = content.encode() if isinstance(content, str) else content
        rows = [(p, record_hash(d), str(len(d))) for p, d in members.items()]
        rows.append((f"{self.dist_info}/RECORD", "", ""))
        if self.record_override:
            rows = self.record_override(rows)
        eol = "\r\n" if self.crlf_record else "\n"

        def csv_field(s):
            return '"' + s.replace('"', '""') + '"' if any(c in s for c in ',"\r\n') else s

        record = eol.join(",".join(csv_field(f) for f in row) for row in rows) + eol
        path = os.path.join(out_dir, self.filename)
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            if self.explicit_dirs:
                dirs = sorted({p.rsplit("/", 1)[0] + "/" for p in members if "/" in p})
                for d in dirs:
                    z.writestr(zipfile.ZipInfo(d, (1980, 1, 1, 0, 0, 0)), b"")
            for p, data in members.items():
                info = zipfile.ZipInfo(p, (1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = (0o100755 if p in self.executables else 0o100644) << 16
                z.writestr(info, data)
            for member, data in self.extra_members:
                z.writestr(member, data)
            if not self.omit_record:
                info = zipfile.ZipInfo(f"{self.dist_info}/RECORD", (1980, 1, 1, 0, 0, 0))
                info.external_attr = 0o100644 << 16
                z.writestr(info, record.encode())
        return path


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def toml_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_lock(out, wheels, *, base_dir=None, url_prefix=None, requires_python=None,
               sha_override=None):
    """Writes a PEP 751 lock with one package per wheel: `path` relative to `base_dir`
    (default: the lock's directory) or `url` under `url_prefix`. `sha_override` maps a
    wheel file name to the digest to record instead of the real one (hostile tests)."""
    base_dir = base_dir or os.path.dirname(os.path.abspath(out))
    lines = ['lock-version = "1.0"', 'created-by = "envbox-wheelgen"']
    if requires_python:
        lines.append(f"requires-python = {toml_str(requires_python)}")
    for whl in sorted(wheels, key=lambda p: os.path.basename(p).lower()):
        fn = os.path.basename(whl)
        name, version = fn.split("-")[0], fn.split("-")[1]
        digest = (sha_override or {}).get(fn) or sha256_file(whl)
        lines += ["", "[[packages]]", f"name = {toml_str(normalize(name))}",
                  f"version = {toml_str(version)}", "",
                  "[[packages.wheels]]"]
        if url_prefix:
            lines.append(f"url = {toml_str(url_prefix.rstrip('/') + '/' + fn)}")
        else:
            lines.append(f"path = {toml_str(os.path.relpath(os.path.abspath(whl), base_dir))}")
        lines += [f"size = {os.path.getsize(whl)}", f"hashes = {{ sha256 = {toml_str(digest)} }}"]
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    lk = sub.add_parser("lock", help="write a PEP 751 lock for existing wheels")
    lk.add_argument("out")
    lk.add_argument("wheels", nargs="+")
    lk.add_argument("--url-prefix")
    args = ap.parse_args(argv)
    if args.cmd == "lock":
        write_lock(args.out, args.wheels, url_prefix=args.url_prefix)


if __name__ == "__main__":
    main(sys.argv[1:])
