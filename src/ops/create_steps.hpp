#pragma once
/// The steps of `ops::create`, in the order it runs them (private to ops). `create` itself
/// (create.cpp) is the list of these calls; the engines are the install and env layers':
///
///   read_inputs          create.cpp             manifest, lock path, re-lock decision, lock
///   create_target        install/target.cpp     interpreter, platform, tags, markers
///   bytecode_keys        install/bytecode.cpp   the keys modules are compiled for (or none)
///   Transaction          install/transaction    one item per package for the target, from the
///                                               lock's sources or a received artifact
///   check_cuda_coherence create.cpp             one CUDA line, the manifest's (unless allowed)
///   check_driver         create.cpp             the driver runs the CUDA line (or a note)
///   lock_environment     create.cpp             the environment's lock, the store's shared
///   generation_digest    create.cpp             what makes two generations the same (no-op)
///   Transaction::fetch   install/transaction    build from source, fetch and ingest what the
///                                               store lacks, compile bytecode, publish
///   link_step            create.cpp             the link check of the fetched wheels
///   Transaction::execute install/transaction    venv + links in gen-N, stamp, switch `current`
///   link_project_dir     create.cpp             PROJECT/.envbox/ENV follows `current`

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
/// makes that an error, exit 3), then reads and parses the lock (`lock_text`, pull's and
/// unpack's received lock, instead of the file) and checks the manifest's `[install].prefer`
/// against it. Throws invalid_input without a project and without --lock, and when the lock
/// file is missing.
Inputs read_inputs(const Context& ctx, const CreateOptions& opt, const std::string* lock_text);

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

// ---- project view --------------------------------------------------------------------------

/// Points PROJECT/.envbox/ENV at the environment's `current` (and makes .envbox/ ignore itself
/// in git). Returns what went wrong, never throws.
std::optional<std::string> link_project_dir(const std::filesystem::path& project_root,
                                            const std::string& env,
                                            const std::filesystem::path& edir);

}  // namespace envbox::ops::create_steps
