// libFuzzer target: the zip reader (util/zip) on arbitrary archives. The input is written to a
// memfd and opened through /proc/self/fd like a wheel on disk, so the whole File path runs:
// central directory, local headers, stored and deflate decoding, size and CRC checks.
// Properties beyond "no crash": anything hostile is refused with envbox::Error (integrity, or
// generic for an unreadable offset) and never another exception; every member listed lies inside
// the archive; what read() returns equals what decode() returns for the same compressed bytes,
// and its length is the directory's size.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "envbox/util/error.hpp"
#include "envbox/util/zip.hpp"

namespace {

int archive_fd() {
    static int fd = ::memfd_create("fuzz-zip", MFD_CLOEXEC);
    if (fd < 0) std::abort();
    return fd;
}

void write_archive(const std::uint8_t* data, std::size_t size) {
    int fd = archive_fd();
    if (::ftruncate(fd, 0) != 0) std::abort();
    std::size_t done = 0;
    while (done < size) {
        ssize_t n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
        if (n <= 0) std::abort();
        done += static_cast<std::size_t>(n);
    }
}

// The reader's contract for a member it lists: its local header and data lie inside the
// archive, before the central directory (computed wide, so no sum can wrap).
void check_bounds(const envbox::zip::Member& m, std::size_t archive_size) {
    unsigned __int128 end = static_cast<unsigned __int128>(m.local_offset) + 30 + m.name.size() + m.compressed_size;
    if (end > archive_size) std::abort();
}

// Data offsets (from the local headers) let the member be decoded a second way, from memory;
// both ways must give the same bytes, as many as the directory records.
void check_member(const envbox::zip::File& file, std::size_t i, std::string_view archive) {
    const envbox::zip::Member& m = file.members()[i];
    std::string read = file.read(i);
    if (read.size() != m.size) std::abort();  // read() must have refused the member
    std::uint64_t at = envbox::zip::data_offset(m, archive.substr(m.local_offset, 30 + m.name.size()));
    if (at > archive.size() || m.compressed_size > archive.size() - at) return;
    if (envbox::zip::decode(m, archive.substr(at, m.compressed_size)) != read) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    write_archive(data, size);
    std::string_view archive(reinterpret_cast<const char*>(data), size);
    try {
        envbox::zip::File file("/proc/self/fd/" + std::to_string(archive_fd()));
        envbox::zip::find_dist_info(file.members(), "METADATA");
        for (const auto& m : file.members()) check_bounds(m, size);
        for (std::size_t i = 0; i < file.members().size() && i < 64; ++i) {
            try {
                check_member(file, i, archive);
            } catch (const envbox::Error&) {
            }
        }
    } catch (const envbox::Error&) {
    }
    return 0;
}
