#pragma once
/// Writing PEP 751 locks deterministically: the same resolution gives the same bytes (packages
/// sorted by name then version, keys in a fixed order, one wheel per package and target), so a
/// one-package upgrade is a small diff. Pure: returns the text.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "envbox/util/error.hpp"

namespace envbox::lock {

struct LockedWheel {
    std::string filename;
    std::string url;
    std::string sha256;
    std::optional<std::uint64_t> size;
    std::optional<std::string> upload_time;  ///< RFC 3339, as the index gave it
};

/// One edge of the dependency graph: a package of the same document.
struct LockedDependency {
    std::string name;  ///< normalised
    /// The version depended on: written only where the document holds the name more than once.
    std::string version;
};

/// A wheel from a direct reference (`name @ URL`), written as PEP 751 `[packages.archive]`.
struct LockedArchive {
    std::optional<std::string> url;   ///< `http(s)://` or `file://` URL, no fragment
    std::optional<std::string> path;  ///< else a path relative to the lock's directory
    std::uint64_t size = 0;
    std::string sha256;
};

/// A local source tree (`[sources] NAME = { path = "…" }`), written as PEP 751
/// `[packages.directory]`.
struct LockedDirectory {
    std::string path;  ///< relative to the lock's directory, `/`-separated
    bool editable = false;
};

/// A git source pinned to a commit, written as PEP 751 `[packages.vcs]`.
struct LockedVcs {
    std::string url, commit;
    std::optional<std::string> requested_revision, subdirectory;
};

struct LockedPackage {
    std::string name;     ///< normalised
    std::string version;  ///< empty: not written (a local tree whose version is dynamic)
    /// PEP 751 `marker`: the targets this entry is for, where a multi-target lock holds it
    /// for some targets only (or at another version on others); none: every target.
    std::optional<std::string> marker;
    std::string index;  ///< the simple API URL the package came from
    /// One wheel per target it is locked for (a wheel two targets share, once), written
    /// sorted by file name: each target's install-time selection picks its own.
    std::vector<LockedWheel> wheels;
    /// Its source distribution (PEP 751 `[packages.sdist]`), where the lock builds it: no
    /// wheel of it serves a target.
    std::optional<LockedWheel> sdist;
    /// Set for a direct reference: written instead of `index` and `wheels`.
    std::optional<LockedArchive> archive;
    /// Set for a local source tree: written instead of `index` and `wheels`.
    std::optional<LockedDirectory> directory;
    std::optional<LockedVcs> vcs;  ///< set for a git source: written instead of `index`
    /// Its direct dependencies for the target, written as PEP 751 `dependencies` sorted by name
    /// (then version), duplicates dropped, `[]` for none; absent: the key is not written, and
    /// the lock has no complete graph (`envbox tree` refuses it, `envbox lock` re-resolves it).
    std::optional<std::vector<LockedDependency>> dependencies;
};

struct LockDocument {
    /// PEP 751 `environments`: one marker per target (in that order); none: the key is absent.
    std::vector<std::string> environments;
    std::optional<std::string> requires_python;
    std::vector<LockedPackage> packages;
    /// `[tool.envbox]`: string values and string-array values, written sorted by key (what
    /// envbox writes there is read back as lock::ToolTable, lock/lock_file.hpp).
    std::map<std::string, std::string> tool;
    std::map<std::string, std::vector<std::string>> tool_lists;
};

/// A TOML basic string literal for `s` (quotes, backslashes and control characters escaped).
std::string toml_string(std::string_view s);

/// The lock's text: `lock-version = "1.0"`, `created-by = "envbox"`, …, `[[packages]]` sorted by
/// name (then version, then marker), `[tool.envbox]` last.
std::string write_pylock(const LockDocument& doc);

}  // namespace envbox::lock
