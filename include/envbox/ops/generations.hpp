#pragma once
/// verify, history, rollback and gc: the commands that make generations trustworthy.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "envbox/env/generation.hpp"
#include "envbox/env/verify.hpp"
#include "envbox/ops/context.hpp"
#include "envbox/ops/lock_agreement.hpp"
#include "envbox/store/store.hpp"

namespace envbox::ops {

struct VerifyResult {
    env::Generation generation;
    env::VerifyReport report;
    double seconds = 0;
    double load_s = 0, plan_s = 0, check_s = 0;  ///< file lists read, plan made, tree checked
    /// Whether the generation is the project's lock (a note, not drift: see lock_agreement.hpp).
    LockAgreement lock;
};

/// Verifies ENV's current generation against its lock (see env/verify.hpp).
VerifyResult verify(const Context& ctx, const std::string& env, bool deep);

/// `envbox verify --store`: the whole store checked (`store::Store::check`), under the store
/// lock held shared (a gc waits; creates go on).
store::CheckResult verify_store(const Context& ctx, bool deep);

struct HistoryEntry {
    env::Generation generation;
    bool current = false;
    std::vector<std::string> added, removed, changed;  ///< vs the previous complete generation
};

std::vector<HistoryEntry> history(const Context& ctx, const std::string& env);

struct RollbackResult {
    int from = 0, to = 0;
    double seconds = 0;
};

/// Switches ENV's `current` to generation `to` (default: the newest complete one older than
/// the current one) with one rename. Refuses an incomplete or missing generation.
RollbackResult rollback(const Context& ctx, const std::string& env, std::optional<int> to);

struct GcOptions {
    int keep = 3;  ///< complete generations kept per environment (the current one always)
    bool dry_run = false;
};

struct GcResult {
    std::vector<std::string> generations_removed;  ///< "project ENV gen-N"
    std::vector<std::string> busy;                 ///< environments skipped: a create is running
    std::vector<std::string> in_use;               ///< "project ENV gen-N: who uses it", kept
    std::size_t wheels_removed = 0;
    std::size_t bytecode_removed = 0;  ///< bytecode lists no kept generation links
    std::size_t objects_removed = 0;
    std::size_t temporary_removed = 0;
    std::uint64_t bytes_freed = 0;
};

/// Removes generations beyond the newest `keep` per environment (never the current one, never
/// one being built, never one a process uses: an `envbox run` job holding it, or a process
/// found in /proc; see env/generation.hpp), then, holding the store exclusively, the file lists
/// and objects no remaining generation needs and leftover temporary files. A dry run reports
/// exactly what the same call would remove.
GcResult gc(const Context& ctx, const GcOptions& options);

/// `home/locks/store.lock`: creates hold it shared for their whole run, gc's sweep exclusively.
std::filesystem::path store_lock_path(const Context& ctx);

/// `home/locks/<project key>.<env>.lock`, held by whoever builds or switches ENV.
std::filesystem::path env_lock_path(const Context& ctx, const std::string& env);

}  // namespace envbox::ops
