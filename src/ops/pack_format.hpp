#pragma once
// The pack format's names and libarchive handles, shared by pack and unpack (private to ops).

#include <archive.h>
#include <archive_entry.h>

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>

#include "envbox/ops/fleet.hpp"
#include "envbox/util/error.hpp"

namespace envbox::ops::pack_format {

constexpr const char* kLockMember = "pylock.toml";
constexpr const char* kWheelDir = "wheels/";
// Wheels built from the lock's sdists, one line each, between the lock and the wheels.
constexpr const char* kBuildsMember = "builds";
// After the wheels: `bytecode/<wheel sha256>.<key name>`, a bytecode layer each
// (store/bytecode_layer.hpp).
constexpr const char* kBytecodeDir = "bytecode/";
constexpr std::string_view kBuildsHeader = "envbox-pack-builds 1";
// An OCI image layout (image-spec 1.1, "Image Layout"), as `pack --format oci` writes it.
constexpr std::string_view kOciLayoutMember = "oci-layout";
constexpr std::string_view kOciLayoutText = "{\"imageLayoutVersion\":\"1.0.0\"}";
constexpr std::string_view kOciIndexMember = "index.json";
constexpr std::string_view kOciBlobDir = "blobs/sha256/";
constexpr std::uint64_t kMaxBuildsBytes = 1ull << 20;
constexpr std::uint64_t kMaxLockBytes = 64ull << 20;
constexpr std::size_t kBlock = 1 << 20;

// libarchive handles, freed on every path.
struct Writer {
    archive* a = archive_write_new();
    ~Writer() { archive_write_free(a); }
};
struct Reader {
    archive* a = archive_read_new();
    ~Reader() { archive_read_free(a); }
};

inline Error archive_error(archive* a, const std::string& what) {
    const char* msg = archive_error_string(a);
    return Error(ErrorCode::generic, what + ": " + (msg ? msg : "libarchive failed"));
}

// ---- reading (unpack.cpp) ----------------------------------------------------------------------

/// A member name pack writes: relative, no `.` or `..` component, no empty one.
bool safe_name(const std::string& name);

/// The member's data into memory, no more than `limit` (integrity naming `what` past it).
std::string read_member(archive* a, std::uint64_t limit, const std::string& what);

/// The member's data into `dest` (a temporary name beside it, renamed once its size is `size`
/// and its sha256 `sha256`, when that is given); anything else is refused and nothing is left.
/// Returns its sha256.
std::string extract_member(archive* a, const std::filesystem::path& dest, const std::string& sha256,
                           std::uint64_t size, const std::string& what);

/// The size of a member that may be read: a regular file under a safe name, given once.
std::uint64_t member_size(archive_entry* e, const std::string& name, const std::string& what,
                          std::set<std::string>& seen);

/// Opens `file` for reading as a pack: a tar, plain, gzip or zstd.
void open_pack(archive* a, const std::filesystem::path& file);

// ---- an OCI image layout (unpack_oci.cpp) ------------------------------------------------------

/// Whether the tar `file` holds an OCI image layout rather than envbox's pack (whose first
/// member is always pylock.toml): its first member is oci-layout, index.json or under blobs/.
bool is_oci_archive(const std::filesystem::path& file);

/// `unpack` of an OCI image layout at `file`: a folder, or a tar (skopeo's `oci-archive:`, its
/// members in any order) extracted first into the store's tmp/ with every blob hashed against
/// its name and anything but oci-layout, index.json and blobs/sha256/<hex> refused. index.json
/// must name one manifest of envbox's artifact type (or only one manifest); from there on it is
/// `pull`'s path (`fleet::receive_artifact`), every blob read from the layout checked against
/// its digest and size.
void unpack_oci(const Context& ctx, const ReceiveOptions& receive,
                const std::filesystem::path& file, ReceiveResult& result);

}  // namespace envbox::ops::pack_format
