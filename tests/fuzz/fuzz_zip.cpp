// libFuzzer target: the zip reader (util/zip) on arbitrary archives. The input is written to a
// memfd and opened through /proc/self/fd like a wheel on disk, so the whole File path runs:
// central directory, local headers, stored and deflate decoding, size and CRC checks.
// Properties beyond "no crash": anything hostile is refused with envbox::Error (integrity, or
// generic for an unreadable offset) and never another exception; every member listed lies inside
// the archive; what read() returns equals what decode() returns for the same compressed bytes,
// and its length is the directory's size; and an archive envbox would install from (every
// member also passing the store's name and type checks) reads in libarchive as exactly the same
// members with the same bytes (the differential property; CPython's side is
// tests/util/test_zip_differential.py).
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <clocale>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "envbox/pep/wheel.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/zip.hpp"

// libarchive 3 (libarchive13; Debian's -dev package is not needed for these few calls).
extern "C" {
struct archive;
struct archive_entry;
archive* archive_read_new();
int archive_read_support_format_zip_seekable(archive*);
int archive_read_open_memory(archive*, const void*, std::size_t);
int archive_read_next_header(archive*, archive_entry**);
const char* archive_entry_pathname(archive_entry*);
unsigned int archive_entry_filetype(archive_entry*);
long archive_read_data(archive*, void*, std::size_t);
int archive_read_free(archive*);
}

namespace {

using Listing = std::vector<std::pair<std::string, std::string>>;  // name, bytes

// The files (not directories) libarchive's seekable zip reader lists, with their bytes; false
// on any error.
bool libarchive_read(const std::uint8_t* data, std::size_t size, Listing& out) {
    archive* a = archive_read_new();
    bool ok = archive_read_support_format_zip_seekable(a) == 0 &&
              archive_read_open_memory(a, data, size) == 0;
    archive_entry* entry = nullptr;
    while (ok) {
        int rc = archive_read_next_header(a, &entry);
        if (rc == 1) break;  // ARCHIVE_EOF
        if (rc != 0) {
            ok = false;
            break;
        }
        const char* name = archive_entry_pathname(entry);
        const bool directory = (archive_entry_filetype(entry) & S_IFMT) == S_IFDIR;
        std::string bytes;
        char buf[65536];
        for (long n; (n = archive_read_data(a, buf, sizeof buf)) != 0;) {
            if (n < 0) {
                ok = false;
                break;
            }
            bytes.append(buf, static_cast<std::size_t>(n));
        }
        if (!directory) out.emplace_back(name ? name : "", std::move(bytes));
    }
    archive_read_free(a);
    return ok;
}

// The store's checks before it ingests a wheel (src/store/store.cpp): a safe path, a regular
// file or a directory, no name twice. Directories are left out of the listing.
bool installable(const envbox::zip::File& file, std::vector<std::size_t>& files) {
    std::set<std::string> seen;
    for (std::size_t i = 0; i < file.members().size(); ++i) {
        const auto& m = file.members()[i];
        auto safe = envbox::pep::safe_member_path(m.name);
        if (!safe) return false;
        const std::uint32_t type = m.unix_mode() & S_IFMT;
        if (m.is_directory() || type == S_IFDIR) continue;
        if ((type != 0 && type != S_IFREG) || !seen.insert(*safe).second) return false;
        files.push_back(i);
    }
    return true;
}

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
    unsigned __int128 end =
        static_cast<unsigned __int128>(m.local_offset) + 30 + m.name.size() + m.compressed_size;
    if (end > archive_size) std::abort();
}

// Data offsets (from the local headers) let the member be decoded a second way, from memory;
// both ways must give the same bytes, as many as the directory records.
void check_member(const envbox::zip::File& file, std::size_t i, std::string_view archive) {
    const envbox::zip::Member& m = file.members()[i];
    std::string read = file.read(i);
    if (read.size() != m.size) std::abort();  // read() must have refused the member
    std::uint64_t at =
        envbox::zip::data_offset(m, archive.substr(m.local_offset, 30 + m.name.size()));
    if (at > archive.size() || m.compressed_size > archive.size() - at) return;
    if (envbox::zip::decode(m, archive.substr(at, m.compressed_size)) != read) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const bool utf8 =
        std::setlocale(LC_ALL, "C.UTF-8") != nullptr;  // libarchive's names as bytes
    (void)utf8;
    write_archive(data, size);
    std::string_view archive(reinterpret_cast<const char*>(data), size);
    try {
        envbox::zip::File file("/proc/self/fd/" + std::to_string(archive_fd()));
        envbox::zip::find_dist_info(file.members(), "METADATA");
        for (const auto& m : file.members())
            check_bounds(m, size);
        bool all_read = true;
        for (std::size_t i = 0; i < file.members().size() && i < 64; ++i) {
            try {
                check_member(file, i, archive);
            } catch (const envbox::Error&) {
                all_read = false;
            }
        }
        std::vector<std::size_t> files;
        if (all_read && file.members().size() <= 64 && installable(file, files)) {
            Listing ours, theirs;
            for (std::size_t i : files)
                ours.emplace_back(file.members()[i].name, file.read(i));
            if (!libarchive_read(data, size, theirs))
                std::abort();                  // envbox accepts what libarchive refuses
            if (theirs != ours) std::abort();  // the same archive reads differently
        }
    } catch (const envbox::Error&) {
    }
    return 0;
}
