#pragma once
/// Whether an environment's current generation is the project's lock: after `envbox rollback`
/// the current generation is older on purpose, while `manifests/pylock.ENV.toml` (what CI and
/// teammates build) still holds the lock it was rolled back from. Every status command says so
/// (verify, list, show, doctor, `lock --check`, run's sync) until the repository agrees again.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "envbox/ops/context.hpp"

namespace envbox::ops {

struct LockAgreement {
    std::string env;
    /// The project's `manifests/pylock.ENV.toml`; empty without a project (nothing compared).
    std::filesystem::path lock_path;
    bool lock_exists = false;
    std::optional<int> current;  ///< ENV's current generation; none: never created
    /// The current generation was built from another lock than the project's (`create --lock
    /// FILE`, its record's lock-source): it is not compared with manifests/, never reported.
    bool other_source = false;
    /// The current generation's `.envbox/pylock.toml` holds exactly the bytes of `lock_path`.
    bool agrees = false;
    // Filled only when the current generation is compared and does not agree:
    bool rolled_back = false;  ///< a complete generation newer than the current one exists
    /// The newest complete generation built from the bytes now in `lock_path` (none: no
    /// generation was, or the file does not exist).
    std::optional<int> lock_generation;
    /// Filled only for `other_source`: the newest complete generation built from the project's
    /// lock file (whatever its bytes), the one run's sync compares with.
    std::optional<int> project_generation;

    /// A status command must say so: the current generation was built from the project's lock
    /// file, and that file no longer holds its bytes (or is gone).
    bool disagrees() const { return current && !lock_path.empty() && !other_source && !agrees; }

    /// "manifests/pylock.ENV.toml": how messages name the lock, as a repository path.
    std::string lock_name() const;

    /// "generation 4 is current (rolled back); manifests/pylock.X.toml is generation 5's lock"
    /// (or "… is no generation's lock", "… has not been created yet", "… does not exist").
    /// Empty unless `disagrees()`.
    std::string summary() const;

    /// How to make the repository and ENV agree, each a clause to follow "to make them agree:"
    /// (revert the lock in git; `envbox rollback ENV --to N --write-lock`; `envbox rollback ENV
    /// --to M` back to the file's generation, else `envbox create ENV`). Empty unless
    /// `disagrees()`.
    std::vector<std::string> remedies() const;
};

/// ENV's current generation against `project_root`'s `manifests/pylock.ENV.toml`, with `dir` the
/// environment's folder in the home. Reads the current generation's lock, and only when the
/// bytes differ every other complete generation's: no lock taken, nothing written. Never throws
/// for a generation whose lock cannot be read (it is then built from no known bytes).
/// `lock_text`, when given, is the project lock's bytes as the caller read them (run's sync):
/// the file is then not read again.
LockAgreement lock_agreement(const std::filesystem::path& project_root,
                             const std::filesystem::path& dir, const std::string& env,
                             const std::string* lock_text = nullptr);

/// The same for ENV of the context's project (`env_dir(ctx, env)`).
LockAgreement lock_agreement(const Context& ctx, const std::string& env);

struct WrittenLock {
    std::filesystem::path path;  ///< manifests/pylock.ENV.toml
    int generation = 0;
    bool changed = false;  ///< false: the file held those bytes already
    /// Why the lock written is stale against manifests/ENV.toml (ops::lock_staleness): the
    /// manifest was changed with the lock and must be reverted too, or `envbox lock` and run's
    /// sync lock it again. Empty when it matches, or when there is no manifest.
    std::vector<std::string> manifest_stale;
};

/// `envbox rollback ENV --write-lock`: writes generation `number`'s lock (its
/// `.envbox/pylock.toml`, the exact bytes it was built from) over the project's
/// `manifests/pylock.ENV.toml` atomically, for the user to commit. Throws usage without a
/// project, generic for a missing or incomplete generation.
WrittenLock write_generation_lock(const Context& ctx, const std::string& env, int number);

}  // namespace envbox::ops
