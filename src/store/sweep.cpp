// The store's sweep (the store half of `envbox gc`): file lists of wheels no root names, the
// objects no kept list names, and everything left in tmp/.
#include <sys/stat.h>
#include <unistd.h>

#include <unordered_set>

#include "envbox/store/bytecode.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/own_tree.hpp"

namespace fs = std::filesystem;

namespace envbox::store {
namespace {

// The store's folders are opened without following links, and what is removed below them is
// removed itself: a link planted where a shard or a wheel's folder should be is garbage like any
// other entry, unlinked, never emptied through (the link rule, docs/SECURITY.md).
struct OwnFolder {
    UniqueFd fd;
    fs::path path;
    std::vector<OwnEntry> entries() const {
        return fd ? list_own_dir(fd.get(), path) : std::vector<OwnEntry>{};
    }
    void remove(const std::string& name) const { remove_own_entry(fd.get(), name, path); }
};

OwnFolder own_folder(const fs::path& root, const fs::path& path) {
    return {open_own_dir_at_path(root, path), path};
}

}  // namespace

void Store::keep_bytecode(const std::string& sha, const SweepOptions& options,
                          std::unordered_set<std::string>& live_objects,
                          SweepResult& result) const {
    const OwnFolder dir = own_folder(layout_.root(), layout_.wheels() / sha / "bytecode");
    for (const auto& e : dir.entries()) {
        const std::string& name = e.name;
        auto key = BytecodeKey::parse(name);
        if (key && e.type == OwnEntry::Type::file &&
            options.live_bytecode.count(sha + "/" + name)) {
            // A kept list that does not read throws (load_bytecode) before anything is removed.
            if (auto b = load_bytecode(sha, *key))
                for (const auto& f : b->files)
                    live_objects.insert(object_relpath(f.pyc.digest, false));
            continue;
        }
        result.bytecode_removed++;
        if (!options.dry_run) dir.remove(name);
    }
}

SweepResult Store::sweep(const std::set<std::string>& live_wheels,
                         const SweepOptions& options) const {
    SweepResult result;
    // The kept wheels' objects, as paths relative to objects/sha256 ("ab/cdef…[.x]").
    std::unordered_set<std::string> live_objects;
    const OwnFolder wheels = own_folder(layout_.root(), layout_.wheels());
    for (const auto& w : wheels.entries()) {
        const std::string& sha = w.name;
        if (live_wheels.count(sha) && w.type == OwnEntry::Type::folder) {
            if (auto files = load_wheel(sha))
                for (const auto& f : files->files)
                    live_objects.insert(object_relpath(f.digest, f.executable));
            keep_bytecode(sha, options, live_objects, result);
            continue;
        }
        result.wheels_removed++;
        if (!options.dry_run) wheels.remove(sha);
    }
    const OwnFolder objects = own_folder(layout_.root(), layout_.objects());
    for (const auto& shard : objects.entries()) {
        if (shard.type != OwnEntry::Type::folder) {
            // Not a shard of ours (a link, a file): removed itself.
            result.objects_removed++;
            if (!options.dry_run) objects.remove(shard.name);
            continue;
        }
        const OwnFolder dir = own_folder(layout_.root(), objects.path / shard.name);
        for (const auto& o : dir.entries()) {
            const std::string rel = shard.name + "/" + o.name;
            if (live_objects.count(rel) && o.type == OwnEntry::Type::file) continue;
            result.bytes_freed += static_cast<std::uint64_t>(o.size);
            result.objects_removed++;
            if (!options.dry_run) dir.remove(o.name);
        }
    }
    // A build record goes with its wheel: it would find nothing (and one that does not read is
    // garbage too).
    const OwnFolder builds = own_folder(layout_.root(), layout_.builds());
    for (const auto& b : builds.entries()) {
        std::optional<BuildRecord> record;
        try {
            if (b.type == OwnEntry::Type::file) record = load_build(b.name);
        } catch (const Error&) {
        }
        if (record && live_wheels.count(record->wheel_sha256)) continue;
        result.builds_removed++;
        if (!options.dry_run) builds.remove(b.name);
    }
    const OwnFolder tmp = own_folder(layout_.root(), layout_.tmp());
    for (const auto& t : tmp.entries()) {
        result.temporary_removed++;
        if (!options.dry_run) tmp.remove(t.name);
    }
    return result;
}

}  // namespace envbox::store
