#include "envbox/util/zip.hpp"

#include <fcntl.h>
#include <isa-l/crc.h>
#include <isa-l/igzip_lib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "envbox/util/error.hpp"

namespace envbox::zip {
namespace {

constexpr std::uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50,
                        kEnd64LocatorSig = 0x07064b50, kEnd64Sig = 0x06064b50;
constexpr std::size_t kChunk = 1 << 18;

[[noreturn]] void bad(const std::string& what) {
    throw Error(ErrorCode::integrity, what);
}

std::uint64_t le(std::string_view b, std::size_t at, int n) {
    if (at + static_cast<std::size_t>(n) > b.size()) bad("truncated zip structure");
    std::uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i)
        v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<std::size_t>(i)]);
    return v;
}

std::string quoted(const Member& m) {
    return "member '" + m.name + "'";
}

// One thread's decoding state and buffers (ISA-L's inflate state holds 100+ KiB of tables).
struct Scratch {
    inflate_state state;
    std::vector<unsigned char> in = std::vector<unsigned char>(kChunk);
    std::vector<unsigned char> out = std::vector<unsigned char>(kChunk);
};
Scratch& scratch() {
    thread_local std::unique_ptr<Scratch> s = std::make_unique<Scratch>();
    return *s;
}

// Decodes one member whose compressed bytes come from `next(buffer, max)` (returns bytes placed,
// 0 at the end), checking method, size and CRC-32.
template <typename Next>
void decode_stream(const Member& m, Next&& next, const Sink& sink) {
    Scratch& s = scratch();
    std::uint32_t crc = 0;
    std::uint64_t produced = 0;
    if (m.method == 0) {
        if (m.compressed_size != m.size)
            bad(quoted(m) + " is stored with a compressed size " +
                std::to_string(m.compressed_size) + " unequal to its size " +
                std::to_string(m.size));
        for (;;) {
            std::size_t n = next(s.in.data(), s.in.size());
            if (n == 0) break;
            crc = crc32_gzip_refl(crc, s.in.data(), n);
            produced += n;
            sink(reinterpret_cast<const char*>(s.in.data()), n);
        }
    } else if (m.method == 8) {
        isal_inflate_init(&s.state);
        s.state.crc_flag = ISAL_GZIP_NO_HDR;  // raw deflate; CRC-32 of the output in state.crc
        bool finished = false;
        while (!finished) {
            if (s.state.avail_in == 0) {
                std::size_t n = next(s.in.data(), s.in.size());
                if (n == 0) bad(quoted(m) + " is truncated (its deflate stream does not end)");
                s.state.next_in = s.in.data();
                s.state.avail_in = static_cast<std::uint32_t>(n);
            }
            s.state.next_out = s.out.data();
            s.state.avail_out = static_cast<std::uint32_t>(s.out.size());
            int rc = isal_inflate(&s.state);
            if (rc < 0)
                bad(quoted(m) + " has a corrupt deflate stream (ISA-L error " + std::to_string(rc) +
                    ")");
            std::size_t got = s.out.size() - s.state.avail_out;
            produced += got;
            if (produced > m.size)
                bad(quoted(m) + " inflates to more than the " + std::to_string(m.size) +
                    " bytes the directory records");
            if (got) sink(reinterpret_cast<const char*>(s.out.data()), got);
            finished = s.state.block_state == ISAL_BLOCK_FINISH;
        }
        // Bytes after the end of the stream but inside the recorded compressed size are read
        // differently by other readers (libarchive refuses the member; a streaming reader that
        // trusts the local header or a data descriptor would look for the next member there).
        // ISA-L reads its input eight bytes at a time: whole bytes still in its bit buffer
        // (read_in) at the end of the stream are such bytes too.
        if (s.state.avail_in != 0 || s.state.read_in_length >= 8 ||
            next(s.in.data(), s.in.size()) != 0)
            bad(quoted(m) + "'s deflate stream ends before the " +
                std::to_string(m.compressed_size) +
                " bytes of compressed data the directory records");
        crc = s.state.crc;
    } else {
        bad(quoted(m) + " uses compression method " + std::to_string(m.method) +
            "; wheels use stored (0) or deflate (8)");
    }
    if (produced != m.size)
        bad(quoted(m) + " has " + std::to_string(produced) + " bytes, the directory records " +
            std::to_string(m.size));
    if (crc != m.crc32) bad(quoted(m) + " fails its CRC-32 check (damaged archive)");
}

// Exactly `length` bytes at `offset` into `buf`.
void pread_into(int fd, void* buf, std::size_t length, std::uint64_t offset,
                const std::string& path) {
    std::size_t done = 0;
    while (done < length) {
        ssize_t n = ::pread(fd, static_cast<char*>(buf) + done, length - done,
                            static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            throw Error(ErrorCode::generic, "cannot read " + path + ": " + std::strerror(errno));
        if (n == 0) bad(path + " is truncated");
        done += static_cast<std::size_t>(n);
    }
}

// True when `s` is well-formed UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF).
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

// An Info-ZIP Unicode Path field (0x7075) renames the member in the readers that honour it
// (libarchive, CPython 3.12) and not in the others: refused unless it names the same file.
void refuse_unicode_path(const Member& m, std::string_view field) {
    if (field.size() < 5 || field.substr(5) != m.name)
        bad(quoted(m) +
            " has a Unicode Path extra field naming another file (it reads differently by tool)");
}

// The sizes a local header's zip64 extra field (0x0001) gives: {size, compressed size}.
struct LocalZip64 {
    std::optional<std::uint64_t> size, compressed_size;
};

// The local header's method, flags, CRC-32 and sizes must be the central directory's (with a
// data descriptor, flag 3, they may also be 0): readers that stream an archive, and libarchive,
// take the local ones. A saturated local size (0xFFFFFFFF) is the one in the local zip64 field,
// checked when the caller read the extra field (`extra_read`).
void refuse_local_disagreement(const Member& m, std::string_view local, bool extra_read,
                               const LocalZip64& z64) {
    const std::uint64_t flags = le(local, 6, 2);
    const bool descriptor = (flags & 8) != 0;
    auto agrees = [&](std::size_t at, std::uint64_t central,
                      const std::optional<std::uint64_t>& wide) {
        std::uint64_t v = le(local, at, 4);
        if ((v == central && central < 0xFFFFFFFF) || (descriptor && v == 0)) return true;
        if (v != 0xFFFFFFFF) return false;
        return !extra_read || (wide && (*wide == central || (descriptor && *wide == 0)));
    };
    const std::uint64_t crc = le(local, 14, 4);
    bool same = le(local, 8, 2) == m.method && (flags & 1) == (m.flags & 1u) &&
                (crc == m.crc32 || (descriptor && crc == 0)) &&
                agrees(18, m.compressed_size, z64.compressed_size) && agrees(22, m.size, z64.size);
    if (!same)
        bad(quoted(m) +
            "'s local header disagrees with the central directory (method, flags, CRC-32 or "
            "sizes)");
}

std::string pread_exact(int fd, std::uint64_t offset, std::uint64_t length,
                        const std::string& path) {
    std::string out(length, '\0');
    pread_into(fd, out.data(), out.size(), offset, path);
    return out;
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

std::uint64_t data_offset(const Member& m, std::string_view local) {
    if (le(local, 0, 4) != kLocalSig)
        bad(quoted(m) + " has no local header where the directory says");
    std::size_t name_len = le(local, 26, 2), extra_len = le(local, 28, 2);
    if (local.size() < 30 + name_len || local.substr(30, name_len) != m.name)
        bad(quoted(m) + "'s local header names another file (" +
            std::string(local.substr(30, std::min(name_len, local.size() - 30))) + ")");
    // The local extra field, when the caller read it: a Unicode Path field there renames the
    // member for libarchive as one in the directory does; a zip64 field gives the local sizes.
    const bool extra_read = local.size() >= 30 + name_len + extra_len;
    LocalZip64 z64;
    if (extra_read) {
        for (std::size_t e = 30 + name_len, end = e + extra_len; e < end;) {
            std::uint64_t id = e + 4 <= end ? le(local, e, 2) : 0,
                          len = e + 4 <= end ? le(local, e + 2, 2) : 0;
            if (e + 4 > end || e + 4 + len > end)
                bad("damaged zip extra field in the local header of '" + m.name + "'");
            if (id == 0x7075) refuse_unicode_path(m, local.substr(e + 4, len));
            if (id == 1 && len >= 8) z64.size = le(local, e + 4, 8);
            if (id == 1 && len >= 16) z64.compressed_size = le(local, e + 12, 8);
            e += 4 + len;
        }
    }
    refuse_local_disagreement(m, local, extra_read, z64);
    return m.local_offset + 30 + name_len + extra_len;
}

File::File(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0)
        throw Error(ErrorCode::generic, "cannot open " + path + ": " + std::strerror(errno));
    try {
        struct stat st {};
        if (::fstat(fd_, &st) != 0)
            throw Error(ErrorCode::generic, "cannot stat " + path + ": " + std::strerror(errno));
        size_ = static_cast<std::uint64_t>(st.st_size);
        std::uint64_t tail_len = std::min(size_, kTailSize);
        std::string tail = pread_exact(fd_, size_ - tail_len, tail_len, path_);
        members_ = read_directory(size_, tail, [&](std::uint64_t off, std::uint64_t len) {
            return pread_exact(fd_, off, len, path_);
        });
    } catch (...) {
        ::close(fd_);
        throw;
    }
}

File::~File() {
    if (fd_ >= 0) ::close(fd_);
}

void File::extract(std::size_t i, const Sink& sink) const {
    const Member& m = members_.at(i);
    std::string local = pread_exact(fd_, m.local_offset, 30 + m.name.size(), path_);
    if (std::uint64_t extra = le(local, 28, 2);
        extra > 0 && m.local_offset + local.size() + extra <= size_)
        local += pread_exact(fd_, m.local_offset + local.size(), extra, path_);
    std::uint64_t at = data_offset(m, local);
    if (at + m.compressed_size > size_) bad(quoted(m) + " is truncated");
    std::uint64_t left = m.compressed_size;
    auto next = [&](unsigned char* buf, std::size_t max) -> std::size_t {
        std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(left, max));
        pread_into(fd_, buf, want, at, path_);
        at += want;
        left -= want;
        return want;
    };
    decode_stream(m, next, sink);
}

namespace {
// What to reserve for a member of `size` bytes: the directory's word is not trusted with more
// than 64 MiB up front (a zip64 size of 2^62 would throw length_error, not a zip error).
std::size_t reserve_for(std::uint64_t size) {
    return static_cast<std::size_t>(std::min<std::uint64_t>(size, 64u << 20));
}
}  // namespace

std::string File::read(std::size_t i) const {
    std::string out;
    out.reserve(reserve_for(members_.at(i).size));
    extract(i, [&](const char* d, std::size_t n) { out.append(d, n); });
    return out;
}

std::string decode(const Member& m, std::string_view compressed) {
    if (compressed.size() != m.compressed_size) bad(quoted(m) + " is truncated");
    std::string out;
    out.reserve(reserve_for(m.size));
    auto next = [&](unsigned char* buf, std::size_t max) -> std::size_t {
        std::size_t n = std::min(max, compressed.size());
        std::memcpy(buf, compressed.data(), n);
        compressed.remove_prefix(n);
        return n;
    };
    decode_stream(m, next, [&](const char* d, std::size_t n) { out.append(d, n); });
    return out;
}

std::optional<std::size_t> find_dist_info(const std::vector<Member>& members,
                                          std::string_view leaf) {
    const std::string suffix = ".dist-info/" + std::string(leaf);
    for (std::size_t i = 0; i < members.size(); ++i) {
        std::string_view n = members[i].name;
        if (n.size() <= suffix.size() || !n.ends_with(suffix)) continue;
        if (n.substr(0, n.size() - suffix.size()).find('/') == std::string_view::npos) return i;
    }
    return std::nullopt;
}

}  // namespace envbox::zip
