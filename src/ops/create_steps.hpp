#pragma once
/// The steps of `ops::create`, in the order it runs them (private to ops). `create` itself
/// (create.cpp) is the list of these calls; the engines are the install and env layers':
///
///   read_inputs          create.cpp             manifest, lock path, re-lock decision, lock
///   create_target        install/target.cpp     interpreter, platform, tags, markers
///   select_items         install/select.cpp     one wheel per package, for the target
///   check_cuda_coherence create.cpp             one CUDA line, the manifest's (unless allowed)
///   check_driver         create.cpp             the driver runs the CUDA line (or a note)
///   lock_environment     create.cpp             the environment's lock, the store's shared
///   generation_digest    create.cpp             what makes two generations the same (no-op)
///   bytecode_keys        install/bytecode.cpp   the keys modules are compiled for (or none)
///   fetch_into_store     install/fetch.cpp      fetch and ingest what the store lacks, compile
///                                               what has no bytecode (same pool), publish
///   build_generation     env/build.cpp          venv + links in gen-N, stamp, switch `current`
///   link_project_dir     create_generation.cpp  PROJECT/.envbox/ENV follows `current`

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "envbox/env/generation.hpp"
#include "envbox/index/fetch.hpp"
#include "envbox/install/built.hpp"
#include "envbox/install/fetch.hpp"
#include "envbox/install/item.hpp"
#include "envbox/install/target.hpp"
#include "envbox/lock/lock_file.hpp"
#include "envbox/lock/manifest.hpp"
#include "envbox/ops/create.hpp"
#include "envbox/pep/version.hpp"
#include "envbox/store/bytecode.hpp"
#include "envbox/util/fs.hpp"

namespace envbox::ops::create_steps {

// ---- read inputs ---------------------------------------------------------------------------

/// What `create` reads before anything else.
struct Inputs {
    std::optional<lock::Manifest> manifest;  ///< manifests/ENV.toml when the project has it
    std::filesystem::path manifest_path;     ///< where it is (or would be); empty: no project
    std::filesystem::path lock_path;         ///< --lock FILE, else manifests/pylock.ENV.toml
    lock::LockFile lock;    ///< the lock, read once; the selection points into its pylock
    bool relocked = false;  ///< the lock was (re)written first
};

/// Reads the manifest (when there is one), locks first when its own lock is missing or stale
/// (unless --frozen, or the lock was given with --lock, or envbox did not write it; --locked
/// makes that an error, exit 3), then reads and parses the lock and checks the manifest's
/// `[install].prefer` against it. Throws invalid_input without a project and without --lock,
/// and when the lock file is missing.
Inputs read_inputs(const Context& ctx, const CreateOptions& opt);

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
    std::vector<install::Item> runtime;
    /// A local tree instead of an sdist (`Item::local`): `sha256` is its digest, `request`
    /// unused; `tree_skip` is the project's `manifests/`.
    std::filesystem::path tree, tree_skip;
    bool editable = false;
    /// A git commit instead (`Item::local` with `package->vcs`): archived and built as an sdist.
    const lock::VcsRef* vcs = nullptr;
    bool local = false;  ///< a folder or a git commit (a received build is found by its name)
};

/// The project's `manifests/` folder, which a local tree's digest leaves out (its locks change
/// with every `lock`): of `project_root`, else the lock's folder's sibling of that name (the
/// lock's project as `push` finds it from a generation's `lock_source`).
std::filesystem::path manifests_dir(const Context& ctx, const lock::LockFile& lock);

/// Gives each local item (`Item::local`) its tree (install::locked_tree: a folder inside the
/// project) and, as its sha256, the digest its build is keyed by (install::tree_digest, or
/// editable_digest), so the generation's digest changes when the tree does. `received` (the
/// builds an artifact carried): a node's create, which reads no tree and takes the received
/// wheel's sha256 instead.
void prepare_local_items(const Context& ctx, std::vector<install::Item>& items,
                         const lock::LockFile& lock,
                         const std::map<std::string, install::BuiltRecord>* received = nullptr);

/// The wheel of `sdist` for `target`, built in the environment of `build_lock` (`build_sha`:
/// its bytes' digest): the store's when a build of the same key ran before (install/built.hpp:
/// the sdist, the build lock's digest, the interpreter, the platform, the variables, the
/// runtime wheels and the toolchain the build would see); with `plan.received`, the wheel the
/// artifact carried for that sdist (`plan.received_builds`, checked as a build's output is; none
/// is an integrity error: a node never builds); else the build environment is made in the
/// home's cache (once per build lock and interpreter), the sdist located (its path, downloads/,
/// or its URL: hashed), built there by install::build_wheel, checked to be the package, version
/// and target, and stored. A failed build keeps its folder in the home's tmp/ with the log the
/// error names. `create` builds its lock's sdists so; `lock` builds one whose metadata its
/// PKG-INFO does not give.
// shape: the context, store and target of a build, what to build, in which environment.
install::BuiltRecord build_sdist(const Context& ctx, store::Store& store,
                                 const install::Target& target, const SdistToBuild& sdist,
                                 const lock::LockFile& build_lock, const std::string& build_sha,
                                 const install::FetchPlan& plan);

/// A folder name for work on the sdist `sha256` in the home's tmp/ that no other process or
/// thread, and no earlier run with this PID (a container's PID 1), has: `PREFIX-SHA16-PID-RAND`.
std::string work_folder_name(const std::string& prefix, const std::string& sha256);

/// Gives each sdist item (`Item::sdist`) its built wheel by `build_sdist`, in the environment of
/// its build lock (FILE beside `lock`, whose sha256 must be the recorded one): the item's sha256
/// and file name become the wheel's, which the fetch then finds in the store. Returns the
/// received builds it adopted, to record (`install::record_received_build`) once fetched.
std::vector<install::BuiltRecord> build_sdists(const Context& ctx, store::Store& store,
                                               std::vector<install::Item>& items,
                                               const install::Target& target,
                                               const lock::LockFile& lock,
                                               const install::FetchPlan& plan);

// ---- check the selection -------------------------------------------------------------------

/// Refuses (invalid_input, naming each side and the lock) items whose CUDA-bearing packages
/// mix lines or disagree with the manifest's `cuda`, as `lock` does, unless the lock records
/// that it was written with --allow-mixed-cuda: a hand-edited lock, `--lock FILE` and
/// `--frozen` get the same check as a lock envbox wrote.
void check_cuda_coherence(const std::vector<install::Item>& items, const lock::Manifest* manifest,
                          const Inputs& in);

// ---- locks and the no-op check -------------------------------------------------------------

/// Held while one create runs: the environment's own lock (one create per environment at a
/// time) and the store's, shared, so gc's sweep (exclusive) never deletes what this create has
/// ingested but not yet linked.
struct EnvLocks {
    std::optional<FileLock> env;
    FileLock store;
};

/// Creates `edir` and the home's locks/ folder and takes both locks, noting each wait; with
/// --no-wait an environment held by another envbox is an error instead.
EnvLocks lock_environment(const Context& ctx, const CreateOptions& opt,
                          const std::filesystem::path& edir);

/// The digest a generation records: the lock's bytes, the interpreter, its version, the
/// platform, the manifest's `[install].prefer` and the bytecode keys. The current generation with
/// this digest already is what create would build.
std::string generation_digest(const std::string& lock_text, const install::Target& target,
                              const lock::Manifest* manifest,
                              const std::vector<store::BytecodeKey>& bytecode = {});

// ---- build the generation (create_generation.cpp) ------------------------------------------

/// The PEP 610 direct_url.json of an item installed from an `archive` (no credentials); a
/// relative `path` is made absolute from `lock_dir`, the lock's directory.
std::string direct_url_json(const install::Item& item, const std::filesystem::path& lock_dir = {});

/// The number of the next generation in `edir` (one past the highest); unstamped leftovers of
/// a crash are removed on the way.
int next_generation_number(const std::filesystem::path& edir);

/// The record of the generation to build next in `edir` (numbered by `next_generation_number`,
/// created now, for `target`, from the lock at `lock_path` whose generation digest is
/// `digest`); its packages are added by `install_requests`.
env::Generation next_generation(const std::filesystem::path& edir, const std::string& digest,
                                const std::filesystem::path& lock_path,
                                const install::Target& target, const CreateOptions& opt);

/// The install requests for `items`, in their order, and `gen`'s package records beside them:
/// requested when the manifest requires the package (or without a manifest, always), preferred
/// when its `[install].prefer` names it.
std::vector<env::InstallRequest> install_requests(const std::vector<install::Item>& items,
                                                  const lock::Manifest* manifest,
                                                  env::Generation& gen);

// ---- project view --------------------------------------------------------------------------

/// Points PROJECT/.envbox/ENV at the environment's `current` (and makes .envbox/ ignore itself
/// in git). Returns what went wrong, never throws.
std::optional<std::string> link_project_dir(const std::filesystem::path& project_root,
                                            const std::string& env,
                                            const std::filesystem::path& edir);

}  // namespace envbox::ops::create_steps
