#include "envbox/util/tar.hpp"

#include <fcntl.h>
#include <isa-l/igzip_lib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "envbox/util/error.hpp"
#include "envbox/util/unique_fd.hpp"

namespace envbox::tar {
namespace {

constexpr std::size_t kBlock = 512;
constexpr std::size_t kChunk = 1 << 16;
constexpr std::uint64_t kMaxHeaderData = 1 << 20;  // a pax record set or GNU long name

[[noreturn]] void bad(const std::string& path, const std::string& why) {
    throw Error(ErrorCode::integrity, path + ": " + why);
}

// The gzip stream of a file, decoded on demand: `read` gives the next bytes of the tar.
class Gunzip {
  public:
    explicit Gunzip(const std::string& path) : path_(path) {
        fd_ = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
        if (!fd_)
            throw Error(ErrorCode::generic, "cannot open " + path + ": " + std::strerror(errno));
        isal_inflate_init(&state_);
        state_.crc_flag = ISAL_GZIP;  // the header is parsed and the CRC-32 checked at the end
    }

    // Up to `n` bytes of the tar into `dst`; 0 only at the end of the gzip stream.
    std::size_t read(char* dst, std::size_t n) {
        std::size_t got = 0;
        while (got < n && !finished_) {
            if (state_.avail_in == 0) fill();
            state_.next_out = reinterpret_cast<std::uint8_t*>(dst + got);
            state_.avail_out = static_cast<std::uint32_t>(n - got);
            const int rc = isal_inflate(&state_);
            if (rc == ISAL_INCORRECT_CHECKSUM) bad(path_, "fails its gzip CRC-32 check (damaged)");
            if (rc < 0)
                bad(path_,
                    "is not a gzip stream ISA-L can decode (error " + std::to_string(rc) + ")");
            got = n - state_.avail_out;
            finished_ = state_.block_state == ISAL_BLOCK_FINISH;
            if (!finished_ && state_.avail_in == 0 && eof_)
                bad(path_, "is truncated (its gzip stream does not end)");
        }
        return got;
    }

  private:
    void fill() {
        for (;;) {
            const ssize_t r = ::read(fd_.get(), in_.data(), in_.size());
            if (r < 0 && errno == EINTR) continue;
            if (r < 0)
                throw Error(ErrorCode::generic,
                            "cannot read " + path_ + ": " + std::strerror(errno));
            eof_ = r == 0;
            state_.next_in = in_.data();
            state_.avail_in = static_cast<std::uint32_t>(r);
            return;
        }
    }

    std::string path_;
    UniqueFd fd_;
    inflate_state state_{};
    std::vector<std::uint8_t> in_ = std::vector<std::uint8_t>(kChunk);
    bool eof_ = false, finished_ = false;
};

// A header field: the bytes up to the first NUL.
std::string field(const char* h, std::size_t at, std::size_t length) {
    const char* start = h + at;
    return std::string(start, strnlen(start, length));
}

// A numeric header field: octal digits (padded with spaces or NULs), or base-256 when its first
// byte has the high bit set (GNU, for sizes past 8 GiB); none when it is neither.
std::optional<std::uint64_t> number(const char* h, std::size_t at, std::size_t length) {
    const auto* p = reinterpret_cast<const unsigned char*>(h + at);
    std::uint64_t v = 0;
    if (p[0] & 0x80) {
        if (p[0] != 0x80) return std::nullopt;  // negative, or too large to matter
        for (std::size_t i = 1; i < length; ++i) {
            if (v >> 56) return std::nullopt;
            v = (v << 8) | p[i];
        }
        return v;
    }
    std::size_t i = 0;
    while (i < length && p[i] == ' ')
        ++i;
    bool digits = false;
    for (; i < length && p[i] >= '0' && p[i] <= '7'; ++i) {
        if (v >> 60) return std::nullopt;
        v = v * 8 + (p[i] - '0');
        digits = true;
    }
    for (; i < length; ++i)
        if (p[i] != ' ' && p[i] != 0) return std::nullopt;
    return digits ? std::optional<std::uint64_t>(v) : std::nullopt;
}

bool checksum_holds(const char* h) {
    const auto stored = number(h, 148, 8);
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < kBlock; ++i)
        sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(h[i]);
    return stored && *stored == sum;
}

// What pax extended headers and GNU long names say of the next member.
struct Pending {
    std::optional<std::string> path;
    std::optional<std::uint64_t> size;
};

// Reads "LENGTH key=value\n" records (POSIX pax) into `next`: `path` and `size` are used, every
// other key (times, owners, SCHILY and LIBARCHIVE attributes) is ignored.
void read_pax(const std::string& records, Pending& next, const std::string& what) {
    std::size_t at = 0;
    while (at < records.size()) {
        const std::size_t space = records.find(' ', at);
        if (space == std::string::npos || space == at || space - at > 20)
            bad(what, "has a malformed pax record");
        std::uint64_t length = 0;
        for (std::size_t i = at; i < space; ++i) {
            if (records[i] < '0' || records[i] > '9') bad(what, "has a malformed pax record");
            length = length * 10 + static_cast<unsigned>(records[i] - '0');
        }
        if (length <= space - at + 1 || length > records.size() - at ||
            records[at + length - 1] != '\n')
            bad(what, "has a malformed pax record");
        const std::string record = records.substr(space + 1, at + length - space - 2);
        const std::size_t eq = record.find('=');
        if (eq == std::string::npos) bad(what, "has a malformed pax record");
        const std::string key = record.substr(0, eq), value = record.substr(eq + 1);
        if (key == "path") {
            next.path = value;
        } else if (key == "size") {
            std::uint64_t v = 0;
            if (value.empty() || value.size() > 19) bad(what, "has a pax size that is no number");
            for (char c : value) {
                if (c < '0' || c > '9') bad(what, "has a pax size that is no number");
                v = v * 10 + static_cast<unsigned>(c - '0');
            }
            next.size = v;
        }
        at += length;
    }
}

class Reader {
  public:
    Reader(const std::string& path, const Limits& limits)
        : path_(path), limits_(limits), gz_(path) {}

    void run(const Visit& visit) {
        char h[kBlock];
        Pending next;
        for (;;) {
            if (!block(h)) bad(path_, "ends without the two zero blocks that end a tar archive");
            if (std::all_of(h, h + kBlock, [](char c) { return c == 0; })) {
                drain();  // the end: the rest of the record, then the gzip CRC-32 is checked
                return;
            }
            if (!checksum_holds(h)) bad(path_, "has a tar header whose checksum fails (damaged)");
            const char type = h[156];
            const auto size = number(h, 124, 12);
            if (!size) bad(path_, "has a tar header whose size is not a number");
            if (type == 'x' || type == 'g' || type == 'L') {
                const std::string data = header_data(*size);
                if (type == 'x') read_pax(data, next, path_);
                if (type == 'L') next.path = std::string(data.c_str());  // NUL-terminated
                continue;
            }
            member(h, type, next.size.value_or(*size), next.path, visit);
            next = Pending{};
        }
    }

  private:
    // One 512-byte block; false at the end of the stream (before any byte of it).
    bool block(char* out) {
        std::size_t got = 0;
        while (got < kBlock) {
            const std::size_t n = gz_.read(out + got, kBlock - got);
            if (n == 0) break;
            got += n;
        }
        if (got != 0 && got != kBlock) bad(path_, "ends inside a tar block (truncated)");
        return got == kBlock;
    }

    // Reads what follows the end block (zeros to the end of the record, 10 KiB from tarfile and
    // GNU tar) to the end of the gzip stream, whose CRC-32 is checked there; at most 1 MiB.
    void drain() {
        std::uint64_t left = kMaxHeaderData;
        while (left > 0) {
            const std::size_t n = gz_.read(buffer_.data(), buffer_.size());
            if (n == 0) return;
            left -= std::min<std::uint64_t>(left, n);
        }
    }

    // The data of a pax header or GNU long name, padding skipped.
    std::string header_data(std::uint64_t size) {
        if (size > kMaxHeaderData)
            bad(path_, "has an extended header of " + std::to_string(size) + " bytes");
        std::string data;
        stream(size, [&](const char* p, std::size_t n) { data.append(p, n); });
        return data;
    }

    void member(const char* h, char type, std::uint64_t size,
                const std::optional<std::string>& long_name, const Visit& visit) {
        Entry e;
        if (long_name) {
            e.name = *long_name;
        } else {
            const std::string prefix =
                std::memcmp(h + 257, "ustar", 5) == 0 ? field(h, 345, 155) : "";
            e.name = (prefix.empty() ? "" : prefix + "/") + field(h, 0, 100);
        }
        const std::string what = path_ + " member '" + e.name.substr(0, 200) + "'";
        if (e.name.empty()) bad(path_, "has a member without a name");
        if (e.name.size() > limits_.max_name)
            bad(path_, "has a member name of " + std::to_string(e.name.size()) + " bytes");
        if (e.name.find('\0') != std::string::npos) bad(what, "has a NUL in its name");
        if (++members_ > limits_.max_members)
            bad(path_, "has more than " + std::to_string(limits_.max_members) + " members");
        e.mode = static_cast<std::uint32_t>(number(h, 100, 8).value_or(0644) & 07777);
        if (type != '0' && type != '\0' && type != '7' && type != '5')
            bad(what, std::string("is a ") + kind_of(type) +
                          "; a source distribution holds regular files and directories only");
        // Every member's data counts, a folder's too (a folder with data is read and dropped,
        // never an uncounted stream).
        if (size > limits_.max_member)
            bad(what, "has " + std::to_string(size) + " bytes, more than the " +
                          std::to_string(limits_.max_member) + " a member may have");
        total_ += size;
        if (total_ > limits_.max_total)
            bad(path_, "holds more than " + std::to_string(limits_.max_total) + " bytes");
        if (type == '5') {
            e.directory = true;
            while (!e.name.empty() && e.name.back() == '/')
                e.name.pop_back();
            if (e.name.empty()) bad(path_, "has a folder member named '/'");
            if (size != 0) skip(size);
            visit(e);
            return;
        }
        e.size = size;
        Sink sink = visit(e);
        stream(
            size, sink ? sink : [](const char*, std::size_t) {});
    }

    static const char* kind_of(char type) {
        switch (type) {
            case '1':
                return "hard link";
            case '2':
                return "symbolic link";
            case '3':
                return "character device";
            case '4':
                return "block device";
            case '6':
                return "FIFO";
            case 'S':
                return "sparse file";
            case 'K':
                return "link with a long target";
            default:
                return "member of an unknown type";
        }
    }

    // `size` bytes of data into `sink`, then the padding to the next block.
    void stream(std::uint64_t size, const Sink& sink) {
        std::vector<char>& buf = buffer_;
        std::uint64_t left = size;
        while (left > 0) {
            const std::size_t want =
                static_cast<std::size_t>(std::min<std::uint64_t>(left, buf.size()));
            const std::size_t n = gz_.read(buf.data(), want);
            if (n == 0) bad(path_, "ends inside a member (truncated)");
            sink(buf.data(), n);
            left -= n;
        }
        skip_padding(size);
    }

    void skip(std::uint64_t size) {
        stream(size, [](const char*, std::size_t) {});
    }

    void skip_padding(std::uint64_t size) {
        std::size_t pad = static_cast<std::size_t>((kBlock - size % kBlock) % kBlock);
        char scratch[kBlock];
        while (pad > 0) {
            const std::size_t n = gz_.read(scratch, pad);
            if (n == 0) bad(path_, "ends inside a member's padding (truncated)");
            pad -= n;
        }
    }

    std::string path_;
    Limits limits_;
    Gunzip gz_;
    std::uint64_t members_ = 0, total_ = 0;
    std::vector<char> buffer_ = std::vector<char>(kChunk);
};

}  // namespace

void read_tar_gz(const std::string& path, const Limits& limits, const Visit& visit) {
    Reader(path, limits).run(visit);
}

}  // namespace envbox::tar
