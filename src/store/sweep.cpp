// The store's sweep (the store half of `envbox gc`): file lists of wheels no root names, the
// objects no kept list names, and everything left in tmp/.
#include <sys/stat.h>
#include <unistd.h>

#include <unordered_set>

#include "envbox/store/bytecode.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"

namespace fs = std::filesystem;

namespace envbox::store {
namespace {

void remove_tree(const fs::path& p) {
    std::error_code ec;
    fs::remove_all(p, ec);
    if (ec) throw Error(ErrorCode::generic, "cannot remove " + p.string() + ": " + ec.message());
}

}  // namespace

void Store::keep_bytecode(const std::string& sha, const SweepOptions& options,
                          std::unordered_set<std::string>& live_objects,
                          SweepResult& result) const {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(layout_.wheels() / sha / "bytecode", ec)) {
        const std::string name = e.path().filename().string();
        auto key = BytecodeKey::parse(name);
        if (key && options.live_bytecode.count(sha + "/" + name)) {
            // A kept list that does not read throws (load_bytecode) before anything is removed.
            if (auto b = load_bytecode(sha, *key))
                for (const auto& f : b->files)
                    live_objects.insert(object_relpath(f.pyc.digest, false));
            continue;
        }
        result.bytecode_removed++;
        if (!options.dry_run) remove_tree(e.path());
    }
}

SweepResult Store::sweep(const std::set<std::string>& live_wheels,
                         const SweepOptions& options) const {
    SweepResult result;
    std::error_code ec;
    // The kept wheels' objects, as paths relative to objects/sha256 ("ab/cdef…[.x]").
    std::unordered_set<std::string> live_objects;
    for (const auto& w : fs::directory_iterator(layout_.wheels(), ec)) {
        std::string sha = w.path().filename().string();
        if (live_wheels.count(sha)) {
            if (auto files = load_wheel(sha))
                for (const auto& f : files->files)
                    live_objects.insert(object_relpath(f.digest, f.executable));
            keep_bytecode(sha, options, live_objects, result);
            continue;
        }
        result.wheels_removed++;
        if (!options.dry_run) remove_tree(w.path());
    }
    for (const auto& shard : fs::directory_iterator(layout_.objects(), ec)) {
        if (!shard.is_directory(ec)) continue;
        const std::string prefix = shard.path().filename().string() + "/";
        for (const auto& o : fs::directory_iterator(shard.path(), ec)) {
            std::string rel = prefix + o.path().filename().string();
            if (live_objects.count(rel)) continue;
            struct stat st {};
            if (::lstat(o.path().c_str(), &st) == 0)
                result.bytes_freed += static_cast<std::uint64_t>(st.st_size);
            result.objects_removed++;
            if (!options.dry_run) ::unlink(o.path().c_str());
        }
    }
    for (const auto& t : fs::directory_iterator(layout_.tmp(), ec)) {
        result.temporary_removed++;
        if (!options.dry_run) remove_tree(t.path());
    }
    return result;
}

}  // namespace envbox::store
