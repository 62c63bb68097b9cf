#pragma once
/// Reading gzip-compressed tar archives (`.tar.gz` source distributions), streamed: the gzip
/// stream is decoded by ISA-L's inflater (as zip members are, util/zip.hpp) in fixed-size
/// chunks, and each member's bytes reach the caller in order, so memory stays bounded whatever
/// the archive holds. The archive is hostile until read: every header's checksum is checked,
/// sizes and names are bounded, and only regular files and directories are members; a link, a
/// device, a FIFO or a sparse file is refused naming the member (a source distribution has
/// no need of them, and a link is how an archive writes outside the directory it is unpacked
/// into). ustar names (prefix and name), POSIX pax `path` and `size` records, and GNU long
/// names are read, as Python's tarfile (which writes every sdist setuptools makes) writes them.

#include <cstdint>
#include <functional>
#include <string>

namespace envbox::tar {

/// What one archive may hold; past any of these the archive is refused.
struct Limits {
    std::uint64_t max_member = 1ull << 31;  ///< bytes of one member
    std::uint64_t max_total = 1ull << 32;   ///< bytes of all members together
    std::uint64_t max_members = 200000;     ///< members, directories included
    std::size_t max_name = 4096;            ///< bytes of a member's name
};

/// One member: a regular file or a directory.
struct Entry {
    std::string name;  ///< as stored, without a trailing '/' for a directory
    bool directory = false;
    std::uint32_t mode = 0644;  ///< the permission bits stored (07777)
    std::uint64_t size = 0;     ///< bytes of a file; 0 for a directory
};

/// Receives a member's bytes in order, in chunks.
using Sink = std::function<void(const char* data, std::size_t size)>;

/// Called once per member, in archive order; returns where that member's bytes go (an empty
/// Sink: they are skipped, and a directory has none).
using Visit = std::function<Sink(const Entry& entry)>;

/// Reads the `.tar.gz` at `path`, calling `visit` for each member. Throws `Error` (integrity)
/// naming `path` and the member for anything that is not a well-formed gzip-compressed tar
/// within `limits`: a damaged gzip stream or CRC, a header whose checksum fails, a size that is
/// not a number, a member that is not a file or a directory, a name with a NUL, an archive that
/// ends inside a member or without its end blocks. `visit` may throw to stop early.
void read_tar_gz(const std::string& path, const Limits& limits, const Visit& visit);

}  // namespace envbox::tar
