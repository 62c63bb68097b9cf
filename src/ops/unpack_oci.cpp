// `envbox unpack` of an OCI image layout (a folder, or a tar such as skopeo's `oci-archive:`
// writes): the manifest `push` sends and its blobs, every blob checked against its digest before
// it is used (contracts in pack_format.hpp; the design in docs/ARCHITECTURE.md, "Fleet").

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>

#include "envbox/index/fetch.hpp"
#include "envbox/index/oci.hpp"
#include "envbox/install/source_build.hpp"
#include "envbox/pep/digest.hpp"
#include "envbox/store/home.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/own_tree.hpp"
#include "envbox/util/parallel.hpp"
#include "envbox/util/printable.hpp"
#include "envbox/util/sha256.hpp"
#include "envbox/util/unique_fd.hpp"
#include "fleet_steps.hpp"
#include "pack_format.hpp"

namespace fs = std::filesystem;
namespace oci = envbox::index::oci;

namespace envbox::ops::pack_format {
namespace {

constexpr std::uint64_t kMaxLayoutFileBytes = 64 << 10;  // oci-layout
constexpr std::size_t kMaxMembers = 1'000'000;

Error refuse(const std::string& what, const std::string& why) {
    return Error(ErrorCode::integrity, what + " " + why);
}

// A tar's member name as the layout's: a leading "./" dropped (tar writers differ).
std::string layout_name(std::string name) {
    while (name.starts_with("./"))
        name.erase(0, 2);
    return name;
}

// Extracts the OCI archive `file` into `dir` (new, the store's tmp/): only oci-layout,
// index.json and blobs/sha256/<hex> (each hashed while extracting, its bytes its name) and the
// two folders; anything else, a link, a duplicate or an oversized member is refused. The tar is
// read as a plain tar (skopeo's oci-archive is one), so what is extracted is never more than
// the file holds.
void extract_layout(const fs::path& file, const fs::path& dir) {
    Reader r;
    archive_read_support_format_tar(r.a);
    if (archive_read_open_filename(r.a, file.c_str(), kBlock) != ARCHIVE_OK)
        throw archive_error(r.a,
                            "cannot open " + file.string() + " (an OCI layout is a plain tar)");
    std::error_code ec;
    const std::uint64_t file_bytes = fs::file_size(file, ec);
    std::uint64_t total = 0;
    make_own_dir(dir, fs::path(kOciBlobDir).parent_path());
    std::set<std::string> seen;
    archive_entry* e = nullptr;
    for (std::size_t index = 0;; ++index) {
        const int rc = archive_read_next_header(r.a, &e);
        if (rc == ARCHIVE_EOF) break;
        if (rc != ARCHIVE_OK) throw archive_error(r.a, "cannot read " + file.string());
        if (index >= kMaxMembers) throw refuse(file.string(), "has too many members");
        std::string name = layout_name(archive_entry_pathname(e) ? archive_entry_pathname(e) : "");
        if (archive_entry_filetype(e) == AE_IFDIR && !archive_entry_hardlink(e) &&
            (name == "blobs/" || name == "blobs/sha256/" || name == "blobs" ||
             name == "blobs/sha256" || name.empty())) {
            archive_read_data_skip(r.a);
            continue;
        }
        const std::string what = file.string() + ": member " + printable(name);
        const std::uint64_t size = member_size(e, name, what, seen);
        total += size;
        if (ec || total > file_bytes) throw refuse(what, "takes the layout past the file's size");
        if (name == kOciLayoutMember || name == kOciIndexMember) {
            const std::uint64_t limit =
                name == kOciLayoutMember ? kMaxLayoutFileBytes : oci::kMaxManifestBytes;
            if (size > limit) throw refuse(what, "is larger than " + std::to_string(limit));
            extract_member(r.a, dir / name, {}, size, what);
            continue;
        }
        const std::string hex =
            name.starts_with(kOciBlobDir) ? name.substr(kOciBlobDir.size()) : "";
        if (!pep::is_sha256_hex(hex))
            throw refuse(what, "is not oci-layout, index.json or blobs/sha256/<digest>");
        if (size > index::kMaxDownloadBytes)
            throw refuse(what, "is larger than the download limit");
        extract_member(r.a, dir / kOciBlobDir / hex, hex, size, what);
    }
}

// A layout file opened for reading, no link followed: a regular file of at most `limit` bytes
// (its size in `size`).
UniqueFd open_layout_file(const fs::path& path, std::uint64_t limit, std::uint64_t& size) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
        static_cast<std::uint64_t>(st.st_size) > limit)
        throw Error(ErrorCode::integrity, path.string() + " is not a regular file of at most " +
                                              std::to_string(limit) + " bytes");
    size = static_cast<std::uint64_t>(st.st_size);
    return fd;
}

// A layout file read whole from that descriptor, at most `limit` bytes.
std::string read_layout_file(const fs::path& path, std::uint64_t limit) {
    std::uint64_t size = 0;
    const UniqueFd fd = open_layout_file(path, limit, size);
    std::string out(size, '\0');
    if (!read_exact_fd(fd.get(), out.data(), size))
        throw Error(ErrorCode::integrity, "cannot read " + path.string());
    return out;
}

// The layout's blobs: each read or copied with its sha256 and size checked (a folder the user
// gave is as hostile as a registry), or moved when `verified` (extracted and checked above).
class LayoutSource final : public fleet::BlobSource {
  public:
    LayoutSource(const Context& ctx, fs::path dir, bool verified)
        : ctx_(ctx), dir_(std::move(dir)), verified_(verified) {}
    std::string read(const oci::Descriptor& d) override {
        const fs::path p = blob(d);
        std::string bytes = read_layout_file(p, std::max<std::uint64_t>(d.size, 1));
        if (bytes.size() != d.size || "sha256:" + to_hex(sha256(bytes)) != d.digest)
            throw Error(ErrorCode::integrity, p.string() + " is not the blob " + d.digest);
        return bytes;
    }
    void fetch(const std::vector<fleet::BlobTo>& blobs) override {
        parallel_for(blobs.size(), ctx_.jobs, [&](std::size_t i) {
            place(*blobs[i].blob, blobs[i].to);
            ctx_.progress->downloaded(blobs[i].blob->size);
            ctx_.progress->advance(1);
        });
    }

  private:
    fs::path blob(const oci::Descriptor& d) const {
        return dir_ / kOciBlobDir / d.digest.substr(7);
    }
    void place(const oci::Descriptor& d, const fs::path& to) const {
        const fs::path from = blob(d);
        std::error_code ec;
        if (verified_ && fs::file_size(from, ec) == d.size && !ec) {
            fs::rename(from, to, ec);
            if (!ec) return;
        }
        // Copied from the descriptor that was checked, at most its size, hashed on the way.
        std::uint64_t size = 0;
        const UniqueFd in = open_layout_file(from, d.size, size);
        if (size != d.size)
            throw Error(ErrorCode::integrity, from.string() + " is not the blob " + d.digest +
                                                  " of " + std::to_string(d.size) + " bytes");
        fs::path tmp = to;
        tmp += ".part-" + std::to_string(::getpid());
        ScopedRemove remove(tmp);
        ::unlink(tmp.c_str());
        UniqueFd out(
            ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
        if (!out) throw Error(ErrorCode::generic, "cannot create " + tmp.string());
        Sha256 hash;
        std::string buf(kBlock, '\0');
        for (std::uint64_t left = size; left > 0;) {
            const ssize_t n = ::read(in.get(), buf.data(), std::min<std::uint64_t>(kBlock, left));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) throw Error(ErrorCode::integrity, from.string() + " ends early");
            hash.update(buf.data(), static_cast<std::size_t>(n));
            if (!write_all_fd(out.get(), buf.data(), static_cast<std::size_t>(n)))
                throw Error(ErrorCode::generic, "cannot write " + tmp.string());
            left -= static_cast<std::uint64_t>(n);
        }
        if ("sha256:" + to_hex(hash.finish()) != d.digest)
            throw Error(ErrorCode::integrity, from.string() + " is not the blob " + d.digest);
        out.reset();
        fs::rename(tmp, to);
        remove.release();
    }
    const Context& ctx_;
    const fs::path dir_;
    const bool verified_;
};

// A string field of a JSON object, or "" when it is absent or not a string.
std::string text_field(const nlohmann::json& j, const char* key) {
    return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// The manifest index.json names: the one image manifest of envbox's artifact type (or the
// only manifest, where a copy dropped the index's artifactType).
oci::Descriptor pick_manifest(const std::string& text, const std::string& what) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception&) {
        throw refuse(what, "is not JSON");
    }
    if (!j.is_object() || !j.contains("manifests") || !j["manifests"].is_array())
        throw refuse(what, "names no manifests");
    std::vector<oci::Descriptor> all, ours;
    for (const auto& m : j["manifests"]) {
        if (text_field(m, "mediaType") != oci::kManifestMediaType) continue;
        const std::string digest = text_field(m, "digest");
        if (!m.contains("size") || !m["size"].is_number_unsigned() ||
            !digest.starts_with("sha256:") ||
            !pep::is_sha256_hex(std::string_view(digest).substr(7)))
            throw refuse(what, "names a manifest with no sha256 digest and size");
        oci::Descriptor d{
            std::string(oci::kManifestMediaType), digest, m["size"].get<std::uint64_t>(), {}};
        if (d.size > oci::kMaxManifestBytes) throw refuse(what, "names a manifest too large");
        all.push_back(d);
        if (text_field(m, "artifactType") == oci::kArtifactType) ours.push_back(d);
    }
    if (ours.size() == 1) return ours.front();
    if (ours.empty() && all.size() == 1) return all.front();
    throw refuse(what, "names " + std::to_string(ours.empty() ? all.size() : ours.size()) +
                           " manifests; an envbox layout holds one environment");
}

}  // namespace

bool is_oci_archive(const fs::path& file) {
    Reader r;
    open_pack(r.a, file);
    archive_entry* e = nullptr;
    if (archive_read_next_header(r.a, &e) != ARCHIVE_OK) return false;
    const std::string name =
        layout_name(archive_entry_pathname(e) ? archive_entry_pathname(e) : "");
    return name == kOciLayoutMember || name == kOciIndexMember || name.empty() ||
           name.starts_with("blobs");
}

void unpack_oci(const Context& ctx, const ReceiveOptions& receive, const fs::path& file,
                ReceiveResult& result) {
    fs::path dir = file;
    std::optional<FileLock> held;  // while the extracted folder lives: gc's sweep of tmp/ waits
    std::optional<RemoveOwnTree> extracted;
    std::error_code ec;
    const bool folder = fs::is_directory(file, ec);
    if (!folder) {
        const store::Home home(ctx.home);
        make_own_dir_at_path(ctx.home, home.locks());
        held.emplace(FileLock::shared(home.store_lock()));
        make_own_dir_at_path(ctx.home, home.tmp());
        dir = home.tmp() / install::work_folder_name("unpack-oci", to_hex(sha256(file.string())));
        extracted.emplace(home.tmp(), dir);
        make_own_dir_at_path(home.tmp(), dir);
        ctx.progress->phase("Reading the layout", 0);
        extract_layout(file, dir);
    }
    const std::string layout = read_layout_file(dir / kOciLayoutMember, kMaxLayoutFileBytes);
    nlohmann::json version;
    try {
        version = nlohmann::json::parse(layout);
    } catch (const nlohmann::json::exception&) {
    }
    if (text_field(version, "imageLayoutVersion") != "1.0.0")
        throw refuse(file.string() + ": oci-layout", "is not image layout version 1.0.0");
    const oci::Descriptor d =
        pick_manifest(read_layout_file(dir / kOciIndexMember, oci::kMaxManifestBytes),
                      file.string() + ": index.json");
    LayoutSource source(ctx, dir, !folder);
    const std::string body = source.read(d);
    result.manifest_digest = d.digest;
    const oci::ArtifactManifest m = oci::ArtifactManifest::parse(body, file.string());
    fleet::receive_artifact(ctx, receive, m, file.string(), source, result);
}

}  // namespace envbox::ops::pack_format
