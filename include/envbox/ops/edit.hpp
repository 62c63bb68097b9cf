#pragma once
/// `envbox add ENV REQ…` and `envbox remove ENV NAME…`: edit `manifests/ENV.toml` (keeping its
/// comments and layout, lock/manifest_edit.hpp), lock, and create, as `uv add` / `uv remove` do.
///
/// All or nothing: every requirement is checked and every edit made in memory before the
/// manifest is written; when the lock or the create then fails, the manifest and the lock are
/// put back byte for byte as they were (unless someone else rewrote them meanwhile), so the
/// project is never left with a manifest its lock does not match.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "envbox/ops/context.hpp"
#include "envbox/ops/create.hpp"
#include "envbox/ops/lock.hpp"

namespace envbox::ops {

struct AddOptions {
    std::string env;
    std::vector<std::string> requirements;  ///< PEP 508 requirements as typed
    /// `--index NAME`: also pin each added package to the `[[index]]` of that name in
    /// `[sources]` (a name the manifest does not have is a usage error listing its indexes).
    std::optional<std::string> index;
    /// `-e PATH[extras]`: a folder (absolute) of the project whose `[project] name` (with the
    /// extras) is required and named in `[sources]` as an editable local source.
    struct Editable {
        std::filesystem::path path;
        std::string extras;  ///< "[train]" or ""
    };
    std::vector<Editable> editables;
    /// `-r FILE`: a pip requirements file's requirements and `-e` folders (ops/init_from.hpp);
    /// its index and other options are named in a note, not applied.
    std::vector<std::filesystem::path> requirement_files;
    bool sync = true;  ///< create after the lock (`--no-sync`: stop after it)
    bool offline = false;
    bool allow_cuda_change = false;  ///< LockOptions::allow_cuda_change
};

struct RemoveOptions {
    std::string env;
    std::vector<std::string> names;  ///< package names, compared canonicalized (PEP 503)
    bool sync = true;
    bool offline = false;
    bool allow_cuda_change = false;  ///< LockOptions::allow_cuda_change
};

struct EditResult {
    std::filesystem::path manifest;
    bool manifest_changed = false;       ///< false: every requirement was already there as given
    std::vector<std::string> added;      ///< requirements appended, as written
    std::vector<std::string> replaced;   ///< requirements that took the place of their name's
    std::vector<std::string> removed;    ///< names removed
    std::vector<std::string> pinned;     ///< packages pinned to `AddOptions::index`
    LockResult lock;                     ///< its `changes` are what the edit changed in the lock
    std::optional<CreateResult> create;  ///< unless `sync` is false
};

/// Adds (or replaces) requirements; invalid requirement text is a usage error (exit 2) before
/// anything is written.
EditResult add(const Context& ctx, const AddOptions& options);

/// Removes every requirement of each name; a name that is not required is a usage error
/// naming it and listing what is. `[sources]` pins stay (they also steer dependencies).
EditResult remove(const Context& ctx, const RemoveOptions& options);

}  // namespace envbox::ops
