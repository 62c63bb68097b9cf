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
#include "util/zip_format.hpp"

namespace envbox::zip {
namespace {

using namespace detail;  // the format's constants and checks (util/zip_format.hpp)

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

}  // namespace

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
