// The central directory of a zip archive: its end records (zip64 included), each entry, and
// the checks that make every reader agree on what the archive holds.
#include <sys/stat.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "envbox/util/zip.hpp"
#include "util/zip_format.hpp"

namespace envbox::zip {
namespace detail {

bool valid_utf8(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        std::size_t n = 0;
        std::uint32_t cp = 0;
        if (c < 0x80) {
            ++i;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            n = 1, cp = c & 0x1fu;
        } else if ((c & 0xf0) == 0xe0) {
            n = 2, cp = c & 0x0fu;
        } else if ((c & 0xf8) == 0xf0) {
            n = 3, cp = c & 0x07u;
        } else {
            return false;
        }
        if (s.size() - i - 1 < n) return false;
        for (std::size_t k = 1; k <= n; ++k) {
            const auto d = static_cast<unsigned char>(s[i + k]);
            if ((d & 0xc0) != 0x80) return false;
            cp = cp << 6 | (d & 0x3fu);
        }
        if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
            cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += n + 1;
    }
    return true;
}

void refuse_unicode_path(const Member& m, std::string_view field) {
    if (field.size() < 5 || field.substr(5) != m.name)
        bad(quoted(m) +
            " has a Unicode Path extra field naming another file (it reads differently by tool)");
}

}  // namespace detail

namespace {

using namespace detail;

// What readers disagree on or refuse, in one central-directory entry: a name with a NUL (CPython
// cuts it there), a non-ASCII name that is not UTF-8 flagged as UTF-8 (CPython decodes an
// unflagged one as CP437, libarchive refuses a flagged one that is not UTF-8), a "version
// needed" CPython refuses (above 6.3), flags for strong encryption, patched data or a masked
// directory, an entry starting on another disk.
void refuse_unreadable_entry(const Member& m, unsigned version_needed, std::uint64_t disk) {
    if (m.name.find('\0') != std::string::npos) bad("a zip member name holds a NUL byte");
    const bool ascii = std::all_of(m.name.begin(), m.name.end(),
                                   [](char c) { return static_cast<unsigned char>(c) < 0x80; });
    if (!ascii && !valid_utf8(m.name)) bad("a zip member name is not valid UTF-8");
    if (!ascii && !(m.flags & 0x0800))
        bad(quoted(m) +
            " has a non-ASCII name without the UTF-8 flag (CPython and pip read it "
            "as CP437, another name)");
    if (version_needed > 63)
        bad(quoted(m) + " needs zip version " + std::to_string(version_needed / 10) + "." +
            std::to_string(version_needed % 10) + " to extract");
    if (m.flags & (0x0020 | 0x0040 | 0x2000))
        bad(quoted(m) + " uses patched data, strong encryption or a masked directory (flags " +
            std::to_string(m.flags) + ")");
    if (disk != 0) bad("the zip archive spans several disks");
    // A directory is a name ending in '/' for CPython (and pip); libarchive also takes the
    // attributes' word for it (a Unix S_IFDIR mode, or the MS-DOS directory bit on other
    // hosts) and reads such a member as a directory named with a '/' added. Refused, so every
    // reader agrees on what is a file.
    const bool dir_by_attributes =
        (m.made_by >> 8) == 3 ? (m.unix_mode() & S_IFMT) == S_IFDIR : (m.external_attr & 0x10) != 0;
    if (dir_by_attributes && !m.is_directory())
        bad(quoted(m) +
            " is a directory by its attributes but its name has no trailing '/' (it reads "
            "differently by tool)");
}

// The archive's bytes as read_directory sees them: the tail it was handed, `read_at` for the rest.
struct ArchiveBytes {
    std::uint64_t file_size;
    const std::string& tail;
    const ReadAt& read_at;

    std::uint64_t tail_start() const { return file_size - tail.size(); }
    // `length` bytes at `offset`, refused when they run past the end of the file.
    std::string at(std::uint64_t offset, std::uint64_t length) const {
        if (offset > file_size || length > file_size - offset)
            bad("zip structure points past the end of the file");
        if (offset >= tail_start()) return tail.substr(offset - tail_start(), length);
        return read_at(offset, length);
    }
};

// Where the central directory is, by the end record(s): entry count, size, offset, and where the
// directory must end (the end record, or the zip64 end record when there is one).
struct DirectoryBounds {
    std::uint64_t entries, cd_size, cd_offset, end_of_cd;
};

// The end of central directory record's position in the tail: the last "PK\5\6" whose comment
// fits in the file, refused when another end-record signature follows it.
std::size_t find_end_record(const std::string& tail) {
    std::size_t eocd = std::string::npos;
    if (tail.size() >= 22) {
        for (std::size_t i = tail.size() - 22;; --i) {
            if (le(tail, i, 4) == kEndSig && i + 22 + le(tail, i + 20, 2) <= tail.size()) {
                eocd = i;
                break;
            }
            if (i == 0) break;
        }
    }
    if (eocd == std::string::npos) bad("not a zip archive (no end-of-central-directory record)");
    // Another end-record signature after the one used is one that other readers take instead
    // (CPython's zipfile takes the last signature, fitting or not): the archive would read
    // differently by tool.
    if (tail.find(std::string_view("PK\x05\x06", 4), eocd + 1) != std::string::npos)
        bad("the zip archive has a second end-of-central-directory record (it reads differently by "
            "tool)");
    return eocd;
}

// Replaces `b`'s counts with the zip64 end record's, found through the locator just before the
// end record at `eocd` in the tail.
void read_zip64_end_record(const ArchiveBytes& archive, std::size_t eocd, DirectoryBounds& b) {
    const std::string& tail = archive.tail;
    if (eocd < 20 || le(tail, eocd - 20, 4) != kEnd64LocatorSig)
        bad("zip64 archive without its end-record locator");
    std::uint64_t z64 = le(tail, eocd - 20 + 8, 8);
    if (le(tail, eocd - 20 + 4, 4) != 0 || le(tail, eocd - 20 + 16, 4) > 1)
        bad("the zip archive spans several disks");
    // CPython's zipfile reads the zip64 record just before the locator, not where it points.
    if (z64 != archive.tail_start() + eocd - 20 - 56)
        bad("the zip64 end record is not where its locator says");
    std::string rec = archive.at(z64, 56);
    if (le(rec, 0, 4) != kEnd64Sig) bad("damaged zip64 end-of-central-directory record");
    if (le(rec, 16, 4) != 0 || le(rec, 20, 4) != 0 || le(rec, 24, 8) != le(rec, 32, 8))
        bad("the zip archive spans several disks");
    b.entries = le(rec, 32, 8);
    b.cd_size = le(rec, 40, 8);
    b.cd_offset = le(rec, 48, 8);
    b.end_of_cd = z64;
}

// The central directory's bounds from the end record (and the zip64 one when its fields are
// saturated), refused unless the directory ends exactly where the end record starts.
DirectoryBounds read_end_records(const ArchiveBytes& archive) {
    const std::string& tail = archive.tail;
    const std::size_t eocd = find_end_record(tail);
    DirectoryBounds b{le(tail, eocd + 10, 2), le(tail, eocd + 12, 4), le(tail, eocd + 16, 4),
                      archive.tail_start() + eocd};
    // Spanned (multi-disk) archives: wheels never are, and readers disagree on them.
    if (le(tail, eocd + 4, 2) != 0 || le(tail, eocd + 6, 2) != 0 ||
        le(tail, eocd + 8, 2) != b.entries)
        bad("the zip archive spans several disks");
    if (b.entries == 0xFFFF || b.cd_size == 0xFFFFFFFF || b.cd_offset == 0xFFFFFFFF)
        read_zip64_end_record(archive, eocd, b);
    if (b.cd_offset > b.end_of_cd || b.cd_size > b.end_of_cd - b.cd_offset)
        bad("the zip central directory lies outside the archive");
    // Bytes between the directory and the end record are what CPython's zipfile takes for data
    // prepended to the archive, shifting every offset by their count.
    if (b.cd_offset + b.cd_size != b.end_of_cd)
        bad("the zip archive has bytes between its central directory and its end record (it reads "
            "differently by tool)");
    return b;
}

// Walks the extra fields of the entry in `cd[e, end)`: a Unicode Path field is refused unless it
// names the same file; the zip64 field (0x0001) holds, in this order, whichever of size,
// compressed size and offset are saturated in the fixed header.
void read_central_extra(Member& m, const std::string& cd, std::size_t e, std::size_t end) {
    while (e + 4 <= end) {
        std::uint64_t id = le(cd, e, 2), len = le(cd, e + 2, 2);
        if (e + 4 + len > end) bad("damaged zip extra field for '" + m.name + "'");
        if (id == 0x7075) refuse_unicode_path(m, std::string_view(cd).substr(e + 4, len));
        if (id == 1) {
            std::size_t f = e + 4, fend = f + len;
            auto take = [&](std::uint64_t& v) {
                if (v != 0xFFFFFFFF) return;
                if (f + 8 > fend) bad("damaged zip64 extra field for '" + m.name + "'");
                v = le(cd, f, 8);
                f += 8;
            };
            take(m.size);
            take(m.compressed_size);
            take(m.local_offset);
        }
        e += 4 + len;
    }
    // Bytes left over, too few for a field header, are parsed differently by libarchive.
    if (e != end) bad("damaged zip extra field for '" + m.name + "'");
}

// The central-directory entry at `cd[p]` (the `ordinal`th, from 1), checked and with its data
// inside the archive before `cd_offset`; `p` moves past it.
Member read_central_entry(const std::string& cd, std::size_t& p, std::size_t ordinal,
                          std::uint64_t cd_offset) {
    if (le(cd, p, 4) != kCentralSig)
        bad("damaged zip central directory (entry " + std::to_string(ordinal) + ")");
    Member m;
    m.made_by = static_cast<std::uint16_t>(le(cd, p + 4, 2));
    m.flags = static_cast<std::uint16_t>(le(cd, p + 8, 2));
    m.method = static_cast<std::uint16_t>(le(cd, p + 10, 2));
    m.crc32 = static_cast<std::uint32_t>(le(cd, p + 16, 4));
    m.compressed_size = le(cd, p + 20, 4);
    m.size = le(cd, p + 24, 4);
    std::size_t name_len = le(cd, p + 28, 2), extra_len = le(cd, p + 30, 2),
                comment_len = le(cd, p + 32, 2);
    m.external_attr = static_cast<std::uint32_t>(le(cd, p + 38, 4));
    m.local_offset = le(cd, p + 42, 4);
    if (p + 46 + name_len + extra_len + comment_len > cd.size())
        bad("damaged zip central directory (entry overruns it)");
    m.name = cd.substr(p + 46, name_len);
    refuse_unreadable_entry(m, static_cast<unsigned>(le(cd, p + 6, 1)), le(cd, p + 34, 2));
    read_central_extra(m, cd, p + 46 + name_len, p + 46 + name_len + extra_len);
    if (m.flags & 1) bad(quoted(m) + " is encrypted");
    // Compared by subtraction: a zip64 offset or size near 2^64 must not wrap the sum
    // back inside the archive (a member would then claim the bytes of every other).
    if (m.local_offset > cd_offset || 30 + name_len > cd_offset - m.local_offset ||
        m.compressed_size > cd_offset - m.local_offset - 30 - name_len)
        bad(quoted(m) + "'s data lies outside the archive");
    p += 46 + name_len + extra_len + comment_len;
    return m;
}

// No two members may share bytes (overlapping entries are how zip bombs and tool-dependent
// archives are made).
void refuse_overlap(const std::vector<Member>& members) {
    std::vector<const Member*> by_offset;
    by_offset.reserve(members.size());
    for (const auto& m : members)
        by_offset.push_back(&m);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const Member* a, const Member* b) { return a->local_offset < b->local_offset; });
    for (std::size_t i = 1; i < by_offset.size(); ++i) {
        const Member& a = *by_offset[i - 1];
        if (a.local_offset + 30 + a.name.size() + a.compressed_size > by_offset[i]->local_offset)
            bad("members '" + a.name + "' and '" + by_offset[i]->name + "' overlap in the archive");
    }
}

}  // namespace

std::vector<Member> read_directory(std::uint64_t file_size, const std::string& tail,
                                   const ReadAt& read_at) {
    if (tail.size() > file_size) bad("zip tail larger than the file");
    const ArchiveBytes archive{file_size, tail, read_at};
    const DirectoryBounds b = read_end_records(archive);
    const std::string cd = archive.at(b.cd_offset, b.cd_size);

    std::vector<Member> members;
    members.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(b.entries, b.cd_size / 46)));
    for (std::size_t p = 0; p < cd.size();)
        members.push_back(read_central_entry(cd, p, members.size() + 1, b.cd_offset));
    // No wheel is empty, and readers disagree on where an empty archive's end record may sit
    // (libarchive finds none at offset 0).
    if (members.empty()) bad("the zip archive has no members");
    if (members.size() != b.entries)
        bad("the zip central directory holds " + std::to_string(members.size()) +
            " entries, its end record says " + std::to_string(b.entries));
    refuse_overlap(members);
    return members;
}

}  // namespace envbox::zip
