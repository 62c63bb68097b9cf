#!/usr/bin/env python3
"""Differential test of envbox's zip reader against CPython's zipfile (what pip installs with)
and libarchive (through ctypes, its seekable zip reader): every archive envbox accepts must read,
in both, as exactly the same members (names as bytes, in directory order) with the same bytes.
Refusing is always allowed; accepting an archive another tool reads differently is the failure
(an archive that installs one thing with envbox and another with pip).

    test_zip_differential.py ZIP_DUMP

ZIP_DUMP is tests/util/zip_dump.cpp's binary. The archives: those tests/util/zip_cases.py
writes, Debian's wheels, crafted ones that tools are known to read differently, and
deterministic byte-level mutations of small ones.
"""
import ctypes
import ctypes.util
import glob
import hashlib
import io
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import zipfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ZIP_DUMP = None


# ---- the three readers -----------------------------------------------------------------------

def envbox_read(paths):
    """{path: [(name_bytes, sha256)] or None (refused)} from zip_dump, many archives per call."""
    out, current = {}, None
    for start in range(0, len(paths), 200):
        r = subprocess.run([ZIP_DUMP, *paths[start:start + 200]], capture_output=True, check=True)
        for line in r.stdout.decode("utf-8", "replace").splitlines():
            word, _, rest = line.partition(" ")
            if word == "archive":
                current = rest
                out[current] = []
            elif word == "member":
                hexname, size, digest = rest.split(" ")
                out[current].append((b"" if hexname == "-" else bytes.fromhex(hexname), digest))
            elif word == "refused":
                out[current] = None
    return out


def cpython_read(path):
    """[(name_bytes, sha256)], or None when zipfile cannot read it all."""
    try:
        with zipfile.ZipFile(path) as z:
            members = []
            for info in z.infolist():
                codec = "utf-8" if info.flag_bits & 0x800 else "cp437"
                members.append((info.orig_filename.encode(codec), hashlib.sha256(z.read(info)).hexdigest()))
            return members
    except Exception:  # noqa: BLE001 - any failure means "does not read it"
        return None


class LibArchive:
    """The few libarchive calls needed to list and read a zip (libarchive13, no -dev package)."""

    def __init__(self):
        name = ctypes.util.find_library("archive") or "libarchive.so.13"
        self.lib = ctypes.CDLL(name)
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        libc.setlocale.restype = ctypes.c_char_p
        libc.setlocale(6, b"C.UTF-8")  # LC_ALL: names as the archive's UTF-8 bytes
        L = self.lib
        L.archive_read_new.restype = ctypes.c_void_p
        for f in ("archive_read_support_format_zip_seekable", "archive_read_support_filter_none",
                  "archive_read_free"):
            getattr(L, f).argtypes = [ctypes.c_void_p]
        L.archive_read_open_filename.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
        L.archive_read_next_header.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
        L.archive_entry_pathname.argtypes = [ctypes.c_void_p]
        L.archive_entry_pathname.restype = ctypes.c_char_p
        L.archive_read_data.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
        L.archive_read_data.restype = ctypes.c_ssize_t

    def read(self, path):
        """[(name_bytes, sha256)], or None when libarchive reports any error or warning."""
        L = self.lib
        a = L.archive_read_new()
        try:
            L.archive_read_support_format_zip_seekable(a)
            L.archive_read_support_filter_none(a)
            if L.archive_read_open_filename(a, path.encode(), 65536) != 0:
                return None
            members, entry, buf = [], ctypes.c_void_p(), ctypes.create_string_buffer(1 << 16)
            while True:
                rc = L.archive_read_next_header(a, ctypes.byref(entry))
                if rc == 1:  # ARCHIVE_EOF
                    return members
                if rc != 0:
                    return None
                name = L.archive_entry_pathname(entry) or b""
                h = hashlib.sha256()
                while True:
                    n = L.archive_read_data(a, buf, len(buf))
                    if n < 0:
                        return None
                    if n == 0:
                        break
                    h.update(buf.raw[:n])
                members.append((name, h.hexdigest()))
        finally:
            L.archive_read_free(a)


# ---- archives ----------------------------------------------------------------------------------

def local_header(name, data, method=0, crc=None, csize=None, usize=None, flags=0, extra=b""):
    crc = zlib.crc32(data) if crc is None else crc
    return struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, flags, method, 0, 0, crc,
                       len(data) if csize is None else csize, len(data) if usize is None else usize,
                       len(name), len(extra)) + name + extra + data


def central_entry(name, offset, data_len, usize, crc, method=0, flags=0, extra=b"", made_by=0x031E):
    return struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, made_by, 20, flags, method, 0, 0, crc, data_len,
                       usize, len(name), len(extra), 0, 0, 0, 0o100644 << 16, offset) + name + extra


def end_record(entries, cd_size, cd_offset, comment=b""):
    return struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, entries, entries, cd_size, cd_offset,
                       len(comment)) + comment


def simple_zip(members, comment=b""):
    """A well-formed archive of stored members [(name, data)], built by hand."""
    body, cd = b"", b""
    for name, data in members:
        cd += central_entry(name, len(body), len(data), len(data), zlib.crc32(data))
        body += local_header(name, data)
    return body + cd + end_record(len(members), len(cd), len(body), comment)


def zipfile_bytes(build):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        build(z)
    return buf.getvalue()


def crafted():
    """{file name: bytes} of archives tools have been known to read differently."""
    a, b = (b"a.txt", b"alpha\n" * 50), (b"b.txt", b"beta\n" * 40)
    cases = {"plain.zip": simple_zip([a, b])}
    good = simple_zip([a, b])
    # A comment holding a whole second end record (and directory) for other bytes.
    fake_cd = central_entry(b"evil", 0, len(a[1]), len(a[1]), zlib.crc32(a[1]))
    cases["comment-with-end-record.zip"] = simple_zip([a, b], comment=b"x" * 10 + fake_cd +
                                                      end_record(1, len(fake_cd), 0) + b"y" * 7)
    # An end record whose comment length overruns the file, after a valid one.
    cases["overrunning-second-end-record.zip"] = good + end_record(1, 10, 0)[:-2] + struct.pack("<H", 500)
    cases["prepended-junk.zip"] = b"#!/bin/sh\nexit 0\n" + good  # a self-extracting archive
    cases["appended-junk.zip"] = good + b"trailing bytes"
    end = good.rfind(b"PK\x05\x06")
    cases["junk-before-end-record.zip"] = good[:end] + b"JUNK" + good[end:]  # zipfile: a 4-byte prefix
    # Duplicate names, differing bytes.
    cases["duplicate-names.zip"] = simple_zip([a, (b"a.txt", b"other\n")])
    # Local and central headers disagreeing on the method, the sizes, the extra field.
    body = local_header(a[0], a[1], method=8)
    cd = central_entry(a[0], 0, len(a[1]), len(a[1]), zlib.crc32(a[1]))
    cases["method-disagrees.zip"] = body + cd + end_record(1, len(cd), len(body))
    body = local_header(a[0], a[1], csize=3, usize=3)
    cd = central_entry(a[0], 0, len(a[1]), len(a[1]), zlib.crc32(a[1]))
    cases["local-sizes-disagree.zip"] = body + cd + end_record(1, len(cd), len(body))
    body = local_header(a[0], a[1], extra=struct.pack("<HH", 0xCAFE, 4) + b"1234")
    cd = central_entry(a[0], 0, len(a[1]), len(a[1]), zlib.crc32(a[1]))
    cases["local-extra-only.zip"] = body + cd + end_record(1, len(cd), len(body))
    # An Info-ZIP Unicode Path field (0x7075) naming another file than the header does.
    upath = b"\x01" + struct.pack("<I", zlib.crc32(a[0])) + b"evil.py"
    body = local_header(a[0], a[1], extra=struct.pack("<HH", 0x7075, len(upath)) + upath)
    cd = central_entry(a[0], 0, len(a[1]), len(a[1]), zlib.crc32(a[1]),
                       extra=struct.pack("<HH", 0x7075, len(upath)) + upath)
    cases["unicode-path-field.zip"] = body + cd + end_record(1, len(cd), len(body))
    body = local_header(a[0], a[1], extra=struct.pack("<HH", 0x7075, len(upath)) + upath)
    cd = central_entry(a[0], 0, len(a[1]), len(a[1]), zlib.crc32(a[1]))
    cases["local-unicode-path-field.zip"] = body + cd + end_record(1, len(cd), len(body))
    # A data descriptor (flag 3) whose sizes and CRC-32 are not the directory's.
    desc = struct.pack("<IIII", 0x08074B50, 0, 1, 1)
    body = local_header(a[0], a[1], flags=8, crc=0, csize=0, usize=0) + desc
    cd = central_entry(a[0], 0, len(a[1]), len(a[1]), zlib.crc32(a[1]), flags=8)
    cases["lying-descriptor.zip"] = body + cd + end_record(1, len(cd), len(body))
    # Names with a NUL, a backslash, a non-UTF-8 byte without the UTF-8 flag.
    cases["nul-in-name.zip"] = simple_zip([(b"a.txt\x00.py", a[1])])
    cases["backslash-name.zip"] = simple_zip([(b"pkg\\mod.py", a[1])])
    cases["cp437-name.zip"] = simple_zip([(b"caf\x82.txt", a[1])])
    # Data descriptors, zip64 and deflate, as zipfile writes them.
    def descriptors(z):
        with z.open("d.txt", "w", force_zip64=True) as f:
            f.write(b"data " * 1000)
        z.writestr("e.txt", b"x" * 5000, compress_type=zipfile.ZIP_DEFLATED)
    cases["zip64-deflate.zip"] = zipfile_bytes(descriptors)
    def featureful(z):
        z.comment = b"a comment"
        z.writestr("pkg/", b"")
        info = zipfile.ZipInfo("pkg/run.sh")
        info.external_attr = 0o100755 << 16
        z.writestr(info, b"#!/bin/sh\necho hi\n" * 20, compress_type=zipfile.ZIP_DEFLATED)
        z.writestr("pkg/data.bin", bytes(range(256)) * 4)
    cases["featureful.zip"] = zipfile_bytes(featureful)
    return cases


def mutants(base, count, seed):
    """`count` deterministic mutations of `base`: bytes set to 0, 0xFF or random values, or
    small integers written over header fields, mostly in the directory and end record."""
    rng = random.Random(seed)
    cd = base.rfind(b"PK\x01\x02")
    cd = cd if cd > 0 else len(base) // 2
    for _ in range(count):
        b = bytearray(base)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(cd if rng.random() < 0.7 else 0, len(b))
            kind = rng.random()
            if kind < 0.4:
                b[at] = rng.choice((0, 0xFF, 1, 0x80))
            elif kind < 0.7:
                b[at] = rng.randrange(256)
            elif at + 4 <= len(b):
                struct.pack_into("<I", b, at, rng.choice((0, 1, 30, 0xFFFFFFFF, len(b), len(b) - 22)))
        yield bytes(b)


class ZipDifferential(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="envbox-zipdiff-")
        cls.libarchive = LibArchive()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def check(self, paths):
        """Asserts the property on `paths`; returns how many envbox accepted."""
        ours = envbox_read(paths)
        accepted = 0
        for path in paths:
            got = ours[path]
            if got is None:
                continue
            accepted += 1
            with self.subTest(archive=os.path.basename(path)):
                self.assertEqual(cpython_read(path), got, "CPython's zipfile reads it differently")
                self.assertEqual(self.libarchive.read(path), got, "libarchive reads it differently")
        return accepted

    def write(self, name, data):
        p = os.path.join(self.tmp, name)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def test_zip_cases_and_debian_wheels(self):
        d = os.path.join(self.tmp, "cases")
        r = subprocess.run([sys.executable, os.path.join(HERE, "zip_cases.py"), d], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        paths = sorted(glob.glob(os.path.join(d, "*.zip"))) + sorted(glob.glob("/usr/share/python-wheels/*.whl"))
        self.assertGreaterEqual(self.check(paths), 7)

    def test_crafted_archives(self):
        paths = [self.write(name, data) for name, data in sorted(crafted().items())]
        self.assertGreaterEqual(self.check(paths), 3)

    def test_mutated_archives(self):
        bases = [v for k, v in sorted(crafted().items()) if k in ("plain.zip", "zip64-deflate.zip", "featureful.zip")]
        paths = []
        for i, base in enumerate(bases):
            for j, data in enumerate(mutants(base, 700, seed=i)):
                paths.append(self.write(f"mutant-{i}-{j}.zip", data))
        accepted = self.check(paths)
        self.assertGreater(accepted, 50)  # the mutations must leave some archives readable


if __name__ == "__main__":
    ZIP_DUMP = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
