#pragma once
/// Local source trees (`[sources] NAME = { path = "…", editable = true }`): the project's own
/// package or a library beside it, built like an sdist but from a folder. `lock` resolves one
/// with the dependencies of its `[project]` table (PEP 621; `[build.NAME] requires-dist` where
/// they are dynamic) and records it as PEP 751 `[packages.directory]`; `create` builds it in
/// the sandbox, keyed by what the build reads (`tree_digest`), or for an editable one by its
/// build files (`editable_digest`), so an unchanged tree builds once.
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "envbox/install/git.hpp"
#include "envbox/lock/build_system.hpp"
#include "envbox/lock/manifest.hpp"
#include "envbox/lock/project_metadata.hpp"
#include "envbox/resolve/resolver.hpp"

namespace envbox::install {

/// One local source tree of a manifest, read and checked.
struct LocalProject {
    std::string name;           ///< normalised; its `[project] name`
    std::filesystem::path dir;  ///< the tree, canonical (inside the project); empty for git
    /// The path the lock records: relative to the lock's folder (`manifests/`), `/`-separated.
    std::string lock_path;
    bool editable = false;
    /// A git source: its URL, the revision asked for, its subdirectory and the commit it
    /// resolved to (empty until `local_projects` is given git access).
    std::string git, commit;
    std::optional<std::string> rev, subdirectory;
    lock::ProjectMetadata metadata;
    lock::BuildSystem build_system;  ///< its `[build-system]` (what its build lock resolves)
    /// What the resolver takes for it: the one version (its own, or 0 when dynamic) and its
    /// Requires-Dist (or the manifest's `[build.NAME] requires-dist`).
    resolve::DirectPackage package;
    /// "NAME PATH editable|built SHA256": what the lock records of it (`[tool.envbox] local`),
    /// SHA256 the digest of the metadata it was resolved from; a git source's is "NAME git URL
    /// REV SUBDIRECTORY" ("-" for none): its commit is pinned by the lock, its metadata with it.
    std::string input_line() const;
};

/// How `local_projects` reads git sources: access to the cache and the remote, and the commit
/// each package's source resolved to in the previous lock (kept unless it is upgraded, as a
/// previous version is).
struct GitLocking {
    std::function<GitAccess(const std::string& name)> access;
    std::map<std::string, std::string> pinned;  ///< name → commit of an unchanged source
};

/// Every local source of `manifest` (at `manifest_path`, in `manifests/` of its project), by
/// normalised name. Throws invalid_input naming the manifest (or envbox.toml), the package and
/// the path for: a path that is not a folder, one outside the project, no regular
/// `pyproject.toml` there, a `[project]` of another name, dependencies that are dynamic without
/// `[build.NAME] requires-dist`.
/// Without `git`, git sources are given only their `input_line` (nothing is fetched).
std::map<std::string, LocalProject> local_projects(const lock::Manifest& manifest,
                                                   const std::filesystem::path& manifest_path,
                                                   const GitLocking* git = nullptr);

/// The tree a lock's `[packages.directory] path` (relative to `lock_dir`) names for package
/// `name`, canonical; refused (invalid_input, naming the lock's entry) when it is not a folder
/// inside `project_root`, since a lock is committed and read on other machines.
std::filesystem::path locked_tree(const std::filesystem::path& lock_dir, const std::string& path,
                                  const std::filesystem::path& project_root,
                                  const std::string& name);

/// The sha256 of what a build of the tree `dir` reads: every folder, file (its content and
/// whether it is executable) and relative link, by path, sorted; version-control folders, caches
/// (`__pycache__`, `.venv`, `.tox`, …), `.envbox`, a top-level `build/`, `dist/` and
/// `*.egg-info`, and `skip` (the project's `manifests/`, whose locks change with every `lock`)
/// left out. Refuses a link that leaves the tree, past 100 000 entries, 4 GiB or depth 64.
std::string tree_digest(const std::filesystem::path& dir, const std::filesystem::path& skip = {});

/// Copies what `tree_digest` reads of `from` into `to` (made here), for a build that must not
/// write the user's tree.
void copy_tree(const std::filesystem::path& from, const std::filesystem::path& to,
               const std::filesystem::path& skip = {});

/// The key of an editable build of `dir`: its path, its build files (`pyproject.toml`,
/// `setup.py`, `setup.cfg`) and the names at its top and in `src/` (what a backend maps).
std::string editable_digest(const std::filesystem::path& dir);

}  // namespace envbox::install
