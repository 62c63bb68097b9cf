#!/usr/bin/env python3
"""Builds zip archives for tests/util/test_zip.cpp into OUT_DIR and prints, for each good one,
what CPython's zipfile reads from it: `good<TAB>archive` then `name<TAB>sha256<TAB>size<TAB>mode`
per member; for each bad one, `bad<TAB>archive<TAB>words the error must contain`."""
import hashlib, io, os, struct, sys, zipfile

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
random_bytes = bytes((i * 7919 + (i >> 3) * 31) & 0xFF for i in range(300_000))
text = b"".join(b"line %d of a text file\n" % i for i in range(40_000))


def describe(path):
    print(f"good\t{path}")
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            data = z.read(info)
            print(f"{info.filename}\t{hashlib.sha256(data).hexdigest()}\t{len(data)}\t{(info.external_attr >> 16) if info.create_system == 3 else 0:o}")


def bad(path, words):
    print(f"bad\t{path}\t{words}")


# Real wheels, as Debian ships them.
for name in sorted(os.listdir("/usr/share/python-wheels")):
    if name.endswith(".whl"):
        describe(os.path.join("/usr/share/python-wheels", name))

# Stored and deflated members, levels 1 and 9, an empty file, Unicode and nested names, a comment.
p = os.path.join(out, "mixed.zip")
with zipfile.ZipFile(p, "w") as z:
    z.comment = b"x" * 1000
    z.writestr(zipfile.ZipInfo("stored.bin"), random_bytes, compress_type=zipfile.ZIP_STORED)
    z.writestr("deflate1.txt", text, compress_type=zipfile.ZIP_DEFLATED, compresslevel=1)
    z.writestr("deflate9.txt", text, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    z.writestr("empty", b"", compress_type=zipfile.ZIP_DEFLATED)
    info = zipfile.ZipInfo("pkg/வணக்கம்/નમસ્તે.py")
    info.external_attr = 0o100755 << 16
    z.writestr(info, b"print('hi')\n", compress_type=zipfile.ZIP_DEFLATED)
describe(p)

# Zip64 extra fields on every member, and data descriptors (written to an unseekable stream).
p = os.path.join(out, "zip64.zip")
with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED) as z:
    for i in range(3):
        with z.open(f"member{i}", "w", force_zip64=True) as f:
            f.write(text[: 100_000 * (i + 1)])
describe(p)


class Unseekable(io.RawIOBase):
    def __init__(self, f):
        self.f = f
    def writable(self):
        return True
    def write(self, b):
        return self.f.write(b)


p = os.path.join(out, "descriptors.zip")
with open(p, "wb") as raw:
    with zipfile.ZipFile(Unseekable(raw), "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("a.txt", text)
        z.writestr("b.bin", random_bytes)
describe(p)

# A zip64 end record (more entries than fit the classic record would need; forced here).
p = os.path.join(out, "many.zip")
with zipfile.ZipFile(p, "w", zipfile.ZIP_STORED) as z:
    for i in range(70_000):
        z.writestr(f"d/{i}", b"")
describe(p)


def simple(name, data=b"hello world\n" * 100, method=zipfile.ZIP_STORED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        z.writestr(name, data)
    return bytearray(buf.getvalue())


# Damaged and hostile archives.
open(os.path.join(out, "notzip.zip"), "wb").write(b"just some bytes, not an archive" * 10)
bad(os.path.join(out, "notzip.zip"), "end-of-central-directory")

b = simple("a.txt")
open(os.path.join(out, "truncated.zip"), "wb").write(b[: len(b) // 2])
bad(os.path.join(out, "truncated.zip"), "end-of-central-directory")

b = simple("a.txt")
b[40] ^= 0xFF  # inside the stored data
open(os.path.join(out, "crc.zip"), "wb").write(b)
bad(os.path.join(out, "crc.zip"), "CRC-32")

b = simple("a.txt", text, zipfile.ZIP_DEFLATED)
for i in range(100, 140):
    b[i] ^= 0x55
open(os.path.join(out, "corrupt-deflate.zip"), "wb").write(b)
bad(os.path.join(out, "corrupt-deflate.zip"), "a.txt")

b = simple("a.txt")
b[30:35] = b"b.txt"  # local header names another file than the directory
open(os.path.join(out, "local-name.zip"), "wb").write(b)
bad(os.path.join(out, "local-name.zip"), "local header")

b = simple("a.txt", text, zipfile.ZIP_BZIP2)
open(os.path.join(out, "bzip2.zip"), "wb").write(b)
bad(os.path.join(out, "bzip2.zip"), "compression method 12")

b = simple("a.txt")
cd = b.rfind(b"PK\x01\x02")
b[cd + 8] |= 1  # encrypted flag
open(os.path.join(out, "encrypted.zip"), "wb").write(b)
bad(os.path.join(out, "encrypted.zip"), "encrypted")

b = simple("a.txt", text, zipfile.ZIP_DEFLATED)
cd = b.rfind(b"PK\x01\x02")
struct.pack_into("<I", b, cd + 24, 1000)  # says it inflates to 1000 bytes (both headers)
struct.pack_into("<I", b, 22, 1000)
open(os.path.join(out, "bomb.zip"), "wb").write(b)
bad(os.path.join(out, "bomb.zip"), "more than the 1000 bytes")

# Two directory entries pointing at the same data.
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w") as z:
    z.writestr("a.txt", b"x" * 1000)
    z.writestr("b.txt", b"y" * 1000)
b = bytearray(buf.getvalue())
second = b.rfind(b"PK\x01\x02")
struct.pack_into("<I", b, second + 42, 0)
open(os.path.join(out, "overlap.zip"), "wb").write(b)
bad(os.path.join(out, "overlap.zip"), "overlap")
