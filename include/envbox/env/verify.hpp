#pragma once
/// `verify`: is a generation exactly what its lock says? Every file the plan of its packages
/// names is checked (a hard link is the same inode as its store object: no hashing; anything
/// else, or everything with `deep`, by content hash), and every entry on disk that the plan does
/// not name is reported.

#include <string>
#include <vector>

#include "envbox/env/generation.hpp"
#include "envbox/env/installer.hpp"
#include "envbox/env/venv.hpp"
#include "envbox/store/store.hpp"

namespace envbox::env {

struct Drift {
    /// `store_object_touched`: a file linked from a store object whose stat says it was written
    /// (mtime, size) or chmod-ed since ingest: every environment linking it sees the change.
    enum class Kind { missing, extra, modified, foreign_dist_info, store_object_touched };
    Kind kind;
    std::string path;    ///< relative to the generation (store objects: absolute)
    std::string detail;  ///< what differs ("content", "not executable", "INSTALLER: pip", …)
    std::string object_digest;  ///< store_object_touched: the object's sha256
};

const char* drift_kind_name(Drift::Kind kind);

struct VerifyReport {
    std::size_t files_checked = 0;
    std::size_t hashed = 0;    ///< files whose content was hashed
    std::vector<Drift> drift;  ///< sorted by path
    bool clean() const { return drift.empty(); }
};

/// An entry found on disk.
struct TreeEntry {
    std::string rel;
    bool is_dir = false;
};

/// Every entry under `root` but `.envbox/`, each directory before its contents: `__pycache__`
/// too, whose `.pyc` files come from the store like any other file (a file Python wrote there in
/// an environment run without the sandbox is extra). Independent of any plan, so it can run while
/// the plan is made.
std::vector<TreeEntry> walk_generation(const std::filesystem::path& root);

/// Compares the generation at `layout.root` with `plan` and `skeleton`; `on_disk` is what
/// `walk_generation` found there.
VerifyReport verify_tree(const store::Store& store, const VenvLayout& layout,
                         const InstallPlan& plan, const std::vector<VenvEntry>& skeleton,
                         const std::vector<TreeEntry>& on_disk, bool deep, unsigned jobs);

}  // namespace envbox::env
