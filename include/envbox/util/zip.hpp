#pragma once
/// Reading zip archives (wheels): the central directory (zip64 aware) and members, stored or
/// deflated. Members are read with pread, so any number of threads may extract members of one
/// open archive at once; deflate is decoded by ISA-L's streaming inflater (about twice zlib's
/// speed) into fixed-size chunks, so memory stays bounded whatever a member's size. Every
/// member's CRC-32 and size are checked against the central directory.
///
/// The same directory parser serves a remote wheel read with HTTP range requests (index layer):
/// it takes the archive's tail and a callback for any other bytes it needs.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace envbox::zip {

/// One central-directory entry.
struct Member {
    std::string name;           ///< as stored (wheels: UTF-8)
    std::uint16_t made_by = 0;  ///< "version made by"; the high byte is the host system (3: Unix)
    std::uint16_t flags = 0;
    std::uint16_t method = 0;  ///< 0 stored, 8 deflate
    std::uint32_t crc32 = 0;
    std::uint32_t external_attr = 0;  ///< on Unix hosts, st_mode in the high 16 bits
    std::uint64_t compressed_size = 0;
    std::uint64_t size = 0;          ///< uncompressed
    std::uint64_t local_offset = 0;  ///< of the local file header

    bool is_directory() const { return !name.empty() && name.back() == '/'; }
    /// The Unix file mode recorded for the member, or 0 when the archive's host was not Unix.
    std::uint32_t unix_mode() const { return (made_by >> 8) == 3 ? external_attr >> 16 : 0; }
};

/// Reads `length` bytes at `offset` of the archive (throws when it cannot).
using ReadAt = std::function<std::string(std::uint64_t offset, std::uint64_t length)>;

/// The bytes of the tail worth reading first: the end-of-central-directory record sits in the
/// last 22 + 65535 bytes.
constexpr std::uint64_t kTailSize = 65536 + 22;

/// Parses the central directory of an archive of `file_size` bytes whose last bytes are `tail`.
/// Bytes before the tail come from `read_at`. Throws `Error` (integrity) naming the problem for
/// anything that is not a well-formed zip: no end record, a directory outside the file, a
/// member whose data would lie outside the file or overlap the directory, encryption; and what
/// zip readers disagree on (tests/util/test_zip_differential.py): a second end record, a
/// spanned archive, a NUL in a name, a "version needed" above 6.3, patched data or a masked
/// directory, a Unicode Path field naming another file.
std::vector<Member> read_directory(std::uint64_t file_size, const std::string& tail,
                                   const ReadAt& read_at);

/// Offset of a member's data, from its local header (at least the first 30 + name bytes of it,
/// starting at `member.local_offset`; with its extra field too, that is checked as well). Throws
/// when the local header is damaged or disagrees with the central directory on the name, method,
/// flags, or (without a data descriptor) CRC-32 and sizes, or has a Unicode Path field naming
/// another file: archives that read differently by tool are refused.
std::uint64_t data_offset(const Member& member, std::string_view local_header);

/// Receives a member's bytes in order, in chunks.
using Sink = std::function<void(const char* data, std::size_t size)>;

/// An archive on disk, opened once and read with pread (thread-safe for extraction).
class File {
  public:
    explicit File(const std::string& path);
    ~File();
    File(const File&) = delete;
    File& operator=(const File&) = delete;

    const std::vector<Member>& members() const { return members_; }
    std::uint64_t size() const { return size_; }
    int fd() const { return fd_; }

    /// Streams member `i` into `sink`, checking method, size and CRC-32. Thread-safe.
    void extract(std::size_t i, const Sink& sink) const;
    /// Member `i` whole, in memory.
    std::string read(std::size_t i) const;

  private:
    std::string path_;
    int fd_ = -1;
    std::uint64_t size_ = 0;
    std::vector<Member> members_;
};

/// Decodes a member's data already in memory (`compressed`: exactly its compressed bytes).
std::string decode(const Member& member, std::string_view compressed);

/// The index of the top-level `<dir>.dist-info/<leaf>` member, if any.
std::optional<std::size_t> find_dist_info(const std::vector<Member>& members,
                                          std::string_view leaf);

}  // namespace envbox::zip
