#pragma once
/// `envbox lock ENV`: resolve `manifests/ENV.toml` against its indexes for each of its targets
/// and write `manifests/pylock.ENV.toml`, one PEP 751 lock for all of them.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "envbox/lock/lock_file.hpp"
#include "envbox/lock/manifest.hpp"
#include "envbox/ops/context.hpp"
#include "envbox/ops/diff.hpp"
#include "envbox/resolve/index_source.hpp"
#include "envbox/util/error.hpp"

namespace envbox::ops {

struct LockOptions {
    std::string env;
    bool check = false;                         ///< report staleness, write nothing
    bool upgrade = false;                       ///< ignore the locked versions
    std::vector<std::string> upgrade_packages;  ///< ignore the locked version of these
    bool offline = false;
    bool allow_mixed_cuda = false;  ///< write a lock that mixes CUDA lines (recorded)
    /// Write a lock that moves the environment to another CUDA line (or torch label) than the
    /// lock it replaces; without it such a lock is refused (invalid_input), naming the change.
    bool allow_cuda_change = false;
    /// The command that refusal tells to repeat with --allow-cuda-change (`envbox add ENV X`);
    /// empty: `envbox lock ENV`.
    std::string retry;
    /// Say why for every locked package not at the newest version offered (lock -v), not only
    /// for the user's own requirements.
    bool explain_all = false;
    /// With `check`: a platform of the manifest (a tag or its machine; another is a usage
    /// error) that the lock must also cover, else it is stale; only with `check`.
    std::string target;
};

struct LockResult {
    std::filesystem::path lock_path;
    bool changed = false;              ///< the lock's bytes changed
    bool up_to_date = false;           ///< the lock matched the manifest: nothing was resolved
    bool stale = false;                ///< --check: the lock no longer matches the manifest
    std::vector<std::string> reasons;  ///< why it is stale
    std::size_t packages = 0;
    double seconds = 0;
    std::uint64_t requests = 0, cache_hits = 0;
    int peak_in_flight = 0;
    /// When the lock was rewritten: each package added, removed or at another version, from
    /// the old lock to the new one (every package is added when there was none).
    std::vector<VersionChange> changes;
    /// A lock of several targets: each package they did not lock alike, with the version on
    /// each and why ("torchvision: 0.26.0 on …, 0.25.0 on … (…: 0.26.0 has no wheel …)"),
    /// also shown as notes while locking.
    std::vector<std::string> target_notes;
    /// When the lock moved the environment to another CUDA line (allowed): "CUDA 12.8 → 13.0
    /// (torch 2.9.1+cu128 → 2.10.0+cu130)", said before every other change.
    std::optional<std::string> cuda_change;
    /// No silent old versions: one line per requirement (every package with `explain_all`)
    /// locked below the newest version offered, saying why ("sglang 0.5.11 locked, not
    /// 0.5.12: Because sglang==0.5.12 depends on …"), also shown as notes while locking.
    std::vector<std::string> older;
};

LockResult lock(const Context& ctx, const LockOptions& options);

/// Why `lock` no longer matches the manifest at `manifest_path` (empty: it matches). Compares
/// what its `[tool.envbox]` recorded: requirements, indexes, sources, overrides, constraints,
/// python, target, CUDA line, pre-release policy, exclude-newer. A lock without that table is
/// one reason: envbox did not write it.
std::vector<std::string> lock_staleness(const std::filesystem::path& manifest_path,
                                        const lock::LockFile& lock);

/// Whether a project's lock is what its manifest would lock now: the one rule `lock`, `create`,
/// `run` and the notes of other commands apply.
struct Freshness {
    enum class State {
        fresh,    ///< envbox wrote it and the manifest has not changed since
        missing,  ///< there is no lock file
        foreign,  ///< another tool wrote it (no [tool.envbox] digest): used as it is
        stale,    ///< envbox wrote it for another manifest: `reasons` say what changed
    };
    State state = State::fresh;
    std::vector<std::string> reasons;  ///< missing: "there is no lock file P"; stale: each change
    /// The lock as it was read for the decision, so that no command reads it twice; none when
    /// it is missing or is no PEP 751 lock (the command that uses it reads it and says why).
    std::optional<lock::LockFile> lock;

    /// What makes a lock be written again first: missing or stale.
    bool needs_lock() const { return state == State::missing || state == State::stale; }
};
Freshness freshness(const std::filesystem::path& manifest_path,
                    const std::filesystem::path& lock_path);

/// The refusal of `--locked` when the lock of `env` must be written again: each reason, then
/// the command that writes it and `also` (another way out) when given.
Error locked_refusal(const std::string& env, const std::vector<std::string>& reasons,
                     const std::string& also = {});

/// The manifest's `[[index]]` entries as the resolver and downloads use them: the URL without a
/// trailing slash, or the mirror `ENVBOX_INDEX_<NAME>_URL` names instead (http(s) or file,
/// without userinfo, else invalid_input naming the variable), `ca` relative to the manifest,
/// credentials from
/// `ENVBOX_INDEX_<NAME>_USERNAME` / `_PASSWORD` as `settings` holds them (never from the
/// manifest or the lock: an index URL with userinfo, `https://user:pw@host/…`, is refused, code
/// invalid_input, unprinted).
std::vector<resolve::IndexConfig> index_configs(const lock::Manifest& manifest,
                                                const std::filesystem::path& manifest_path,
                                                const Settings& settings);

}  // namespace envbox::ops
