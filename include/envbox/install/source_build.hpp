#pragma once
/// Source builds: each package a lock installs from an sdist, a local folder or a git commit is
/// built once, in a build environment made from the PEP 751 lock the main lock names for it
/// (`[tool.envbox] builds`), by envbox's own frontend in the sandbox (install/build.hpp), and
/// kept in the store under a key of every input (install/built.hpp). A received artifact's
/// environment never builds: it installs the wheel the artifact carried, checked as a build's
/// output is. `Transaction` builds its lock's sources so; `lock` builds one sdist whose metadata
/// its PKG-INFO does not give.

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "envbox/index/fetch.hpp"
#include "envbox/install/built.hpp"
#include "envbox/install/fetch.hpp"
#include "envbox/install/git.hpp"
#include "envbox/install/item.hpp"
#include "envbox/install/target.hpp"
#include "envbox/lock/lock_file.hpp"
#include "envbox/pep/version.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/progress.hpp"

namespace envbox::install {

/// Where builds run and what they may use.
struct BuildSite {
    /// The home: build environments in its cache/build-envs, work in its tmp/, its locks; bound
    /// read-only into the sandbox.
    std::filesystem::path home;
    Progress* progress = nullptr;
    unsigned jobs = 1;
    GitSettings git;  ///< how a git commit is fetched
    /// Package → the git URL its manifest source names: a git source's credentials go to the
    /// lock's URL only where it is this one (a lock is hostile input; the manifest is intent).
    std::map<std::string, std::string> git_credential_urls;
};

/// The packages `lock` names a build environment for (`[tool.envbox] builds`): their sdists
/// are items to build. An entry that is not "NAME FILE SHA256" is invalid_input naming the lock.
std::set<std::string> buildable_packages(const lock::LockFile& lock);

/// An sdist to build: its package (normalised), the version the lock names, its file name and
/// sha256, and how to fetch it (install::artifact_request).
struct SdistToBuild {
    std::string name;
    std::optional<pep::Version> version;
    std::string filename, sha256;
    index::ArtifactRequest request;
    /// Its `[build.NAME]` settings as the lock records them: the variables set for the backend
    /// (those not marked speed-only are part of the key).
    lock::PackageBuild settings;
    /// The environment's own wheels the build sees (`settings.dependencies` and what they
    /// depend on), installed into its build environment over the build lock's: each is part
    /// of the key by its sha256.
    std::vector<Item> runtime;
    /// A local tree instead of an sdist (`Item::local`): `sha256` is its digest, `request`
    /// unused; `tree_skip` is the project's `manifests/`.
    std::filesystem::path tree, tree_skip;
    bool editable = false;
    /// A git commit instead (`Item::local` with `package->vcs`): archived and built as an sdist.
    const lock::VcsRef* vcs = nullptr;
    bool local = false;  ///< a folder or a git commit (a received build is found by its name)
};

/// Gives each local item (`Item::local`) its tree (install::locked_tree: a folder inside the
/// project whose `manifests/` folder is `manifests`) and, as its sha256, the digest its build
/// is keyed by (install::tree_digest, or editable_digest), so the generation's digest changes
/// when the tree does. `received` (the builds an artifact carried): a node's create, which
/// reads no tree and takes the received wheel's sha256 instead.
void prepare_local_items(std::vector<Item>& items, const lock::LockFile& lock,
                         const std::filesystem::path& manifests,
                         const std::map<std::string, BuiltRecord>* received = nullptr);

/// The wheel of `sdist` for `target`, built in the environment of `build_lock` (`build_sha`:
/// its bytes' digest): the store's when a build of the same key ran before (install/built.hpp:
/// the sdist, the build lock's digest, the interpreter, the platform, the variables, the
/// runtime wheels and the toolchain the build would see); with `plan.received`, the wheel the
/// artifact carried for that sdist (checked as a build's output is; none is an integrity error:
/// a node never builds); else the build environment is made in the home's cache (once per build
/// lock and interpreter), the sdist located (its path, downloads/, or its URL: hashed), built
/// there by install::build_wheel, checked to be the package, version and target, and stored. A
/// failed build keeps its folder in the home's tmp/ with the log the error names.
// shape: where builds run, the store and target, what to build, in which environment.
BuiltRecord build_sdist(const BuildSite& site, store::Store& store, const Target& target,
                        const SdistToBuild& sdist, const lock::LockFile& build_lock,
                        const std::string& build_sha, const FetchPlan& plan);

/// A folder name for work on the sdist `sha256` in the home's tmp/ that no other process or
/// thread, and no earlier run with this PID (a container's PID 1), has: `PREFIX-SHA16-PID-RAND`.
std::string work_folder_name(const std::string& prefix, const std::string& sha256);

/// Gives each sdist and local item its built wheel by `build_sdist`, in the environment of its
/// build lock (FILE beside `lock`, whose sha256 must be the recorded one; a local tree's build
/// skips `manifests`): the item's sha256 and file name become the wheel's, which the fetch then
/// finds in the store. Returns the received builds it adopted, to record
/// (`install::record_received_build`) once fetched.
// shape: where builds run, the store and target, the items and their lock, how to fetch.
std::vector<BuiltRecord> build_sdists(const BuildSite& site, store::Store& store,
                                      std::vector<Item>& items, const Target& target,
                                      const lock::LockFile& lock,
                                      const std::filesystem::path& manifests,
                                      const FetchPlan& plan);

}  // namespace envbox::install
