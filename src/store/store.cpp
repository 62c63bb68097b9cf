// The store itself: opening it, where objects and file lists live, loading a file list, and
// publishing file lists once their objects are durable.
#include "envbox/store/store.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>

#include "envbox/store/bytecode.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/own_tree.hpp"
#include "store/file_list.hpp"
#include "store/sys.hpp"

namespace fs = std::filesystem;

namespace envbox::store {

IngestStats& IngestStats::operator+=(const IngestStats& o) {
    archive_bytes += o.archive_bytes;
    unpacked_bytes += o.unpacked_bytes;
    new_objects += o.new_objects;
    new_object_bytes += o.new_object_bytes;
    decode_s += o.decode_s;
    hash_s += o.hash_s;
    write_s += o.write_s;
    return *this;
}

std::uint64_t WheelFiles::total_size() const {
    std::uint64_t n = 0;
    for (const auto& f : files)
        n += f.size;
    return n;
}

const WheelFile* WheelFiles::find(std::string_view path) const {
    for (const auto& f : files)
        if (f.path == path) return &f;
    return nullptr;
}

Store::Store(fs::path home) : layout_(std::move(home)) {
    const fs::path objects = layout_.objects();
    // Made and opened without following a link: objects are never written into a folder a
    // planted link points to (the link rule, docs/SECURITY.md).
    (void)make_own_dir_at_path(layout_.root(), layout_.wheels());
    (void)make_own_dir_at_path(layout_.root(), layout_.tmp());
    objects_fd_ = make_own_dir_at_path(layout_.root(), objects);
    // The 256 shard directories exist from the start, so ingest never has to create one, and
    // each is a real folder: ingest opens "ab/cdef…" relative to objects_fd_, which would follow
    // a link planted as a shard. 256 fstatat calls, a fraction of a millisecond.
    static const char* hex = "0123456789abcdef";
    for (int i = 0; i < 256; ++i) {
        char shard[3] = {hex[i >> 4], hex[i & 15], 0};
        struct stat st {};
        if (::fstatat(objects_fd_.get(), shard, &st, AT_SYMLINK_NOFOLLOW) == 0) {
            if (S_ISLNK(st.st_mode)) refuse_planted_link(objects / shard);
            continue;
        }
        // 0777 less envbox's umask (ops::home_umask): 0775 in a group-shared home, where
        // every member adds objects.
        if (::mkdirat(objects_fd_.get(), shard, 0777) != 0 && errno != EEXIST)
            sys_fail("cannot create", objects / shard, errno);
    }
}

Store::~Store() = default;

fs::path Store::object_path(std::string_view digest, bool executable) const {
    return layout_.objects() / object_relpath(digest, executable);
}

std::string Store::object_relpath(std::string_view digest, bool executable) const {
    require_digest(digest, "object");
    std::string rel;
    rel.reserve(digest.size() + 4);
    rel.append(digest.substr(0, 2)).append("/").append(digest.substr(2));
    if (executable) rel += ".x";
    return rel;
}

std::optional<WheelFiles> Store::load_wheel(std::string_view wheel_sha256) const {
    require_digest(wheel_sha256, "wheel");
    fs::path p = layout_.wheels() / std::string(wheel_sha256) / "files";
    std::error_code ec;
    if (!fs::exists(p, ec)) return std::nullopt;
    auto w = parse_file_list(read_file(p), wheel_sha256);
    if (!w)
        throw Error(ErrorCode::integrity, "the store's file list " + p.string() +
                                              " is damaged; remove that directory and retry");
    return w;
}

void Store::publish(const std::vector<const WheelFiles*>& wheels,
                    const std::vector<const WheelBytecode*>& bytecode) const {
    if (wheels.empty() && bytecode.empty()) return;
    sync_filesystem(root());
    for (const WheelFiles* w : wheels) {
        fs::path dir = layout_.wheels() / w->wheel_sha256;
        make_dir(dir);
        write_file_atomic(dir / "files", serialise_file_list(*w), 0444, Durability::none);
    }
    for (const WheelBytecode* b : bytecode) {
        require_digest(b->wheel_sha256, "wheel");
        fs::path dir = layout_.wheels() / b->wheel_sha256 / "bytecode";
        make_dir(dir);
        write_file_atomic(dir / b->key.name(), serialise_bytecode(*b), 0444, Durability::none);
    }
}

}  // namespace envbox::store
