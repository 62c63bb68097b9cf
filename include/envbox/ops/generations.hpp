#pragma once
/// verify, history, rollback and gc: the commands that make generations trustworthy.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "envbox/env/check_record.hpp"
#include "envbox/env/generation.hpp"
#include "envbox/env/known_good.hpp"
#include "envbox/env/link_check.hpp"
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
    /// Its packages whose wheel envbox built from an sdist: name → the build's key digest.
    std::map<std::string, std::string> built;
    /// The link check of its native files (env/link_check.hpp): reported, never drift.
    env::LinkReport link;
};

/// Verifies ENV's current generation against its lock (see env/verify.hpp).
VerifyResult verify(const Context& ctx, const std::string& env, bool deep);

/// The link check of ENV's current generation alone (`envbox doctor ENV`): what its native files
/// need that this machine or the environment lacks (env/link_check.hpp).
env::LinkReport check_current_links(const Context& ctx, const std::string& env);

/// `envbox verify --store`: the whole store checked (`store::Store::check`), under the store
/// lock held shared (a gc waits; creates go on).
store::CheckResult verify_store(const Context& ctx, bool deep);

struct HistoryEntry {
    env::Generation generation;
    bool current = false;
    bool pinned = false;  ///< `envbox pin`: gc keeps it whatever --keep says
    /// The oldest earlier generation built from the same lock (equal lock digests): a rebuild
    /// of a known lock, shown as such instead of as changes.
    std::optional<int> same_lock_as;
    std::vector<std::string> added, removed, changed;  ///< vs the previous complete generation
    /// Its kept `envbox check`, and what changed since the previous checked generation's
    /// (ops::compare_checks).
    std::optional<env::CheckRecord> check;
    std::vector<std::string> check_changes;
};

struct History {
    std::vector<HistoryEntry> generations;     ///< oldest first
    std::vector<env::GenerationEvent> events;  ///< rollbacks, pins and unpins, oldest first
    std::vector<env::Pin> pins;                ///< every pin, of generations gone too
    std::vector<std::string> damaged_checks;   ///< check records that did not read: why
};

/// ENV's generations, what each changed, and its event log (env/known_good.hpp).
History history(const Context& ctx, const std::string& env);

struct RollbackResult {
    int from = 0, to = 0;
    double seconds = 0;
    /// The newest generation whose kept `envbox check` is clean, if any.
    std::optional<int> last_clean_check;
};

/// Switches ENV's `current` to generation `to` (default: the newest complete one older than
/// the current one) with one rename. Refuses an incomplete or missing generation. A switch is
/// recorded in ENV's event log (`rollback 5 → 4`).
RollbackResult rollback(const Context& ctx, const std::string& env, std::optional<int> to);

struct PinResult {
    int number = 0;
    bool changed = false;     ///< false: it was pinned already (pin) or was not pinned (unpin)
    std::vector<int> pinned;  ///< ENV's pinned generations afterwards
};

/// Pins generation `number` of ENV (default: the current one), under ENV's lock: gc never
/// removes it, whatever --keep says. Refuses a missing (usage, exit 2) or incomplete (exit 1)
/// generation, naming it. Recorded in ENV's event log (`pin N`) when it was not pinned yet.
PinResult pin(const Context& ctx, const std::string& env, std::optional<int> number);

/// Removes the pin of generation `number` (which need not exist any more); `changed` false
/// when it was not pinned. Recorded in ENV's event log (`unpin N`).
PinResult unpin(const Context& ctx, const std::string& env, int number);

struct GcOptions {
    /// Complete unpinned generations kept per environment; the current one and pinned ones are
    /// kept besides, always.
    int keep = 3;
    bool dry_run = false;
};

struct GcResult {
    std::vector<std::string> generations_removed;  ///< "project ENV gen-N"
    std::vector<std::string> busy;                 ///< environments skipped: a create is running
    std::vector<std::string> in_use;               ///< "project ENV gen-N: who uses it", kept
    /// "project ENV gen-N: pinned" (or ": current", ": current, pinned"): generations --keep
    /// alone would have removed (every pinned one: pins do not count towards --keep), kept
    std::vector<std::string> kept;
    /// Why an environment's pins did not read (a link planted there, content envbox did not
    /// write): that environment kept every generation, the rest was collected; the command
    /// then fails (integrity) naming the first.
    std::vector<std::string> unreadable_pins;
    std::size_t wheels_removed = 0;
    std::size_t bytecode_removed = 0;  ///< bytecode lists no kept generation links
    std::size_t objects_removed = 0;
    std::size_t temporary_removed = 0;
    /// Build environments (cache/build-envs) no build was using: made again when needed.
    std::size_t build_environments_removed = 0;
    std::uint64_t bytes_freed = 0;
};

/// Removes generations beyond the newest `keep` unpinned ones per environment (never the
/// current one, never a pinned one, never one being built, never one a process uses: an `envbox
/// run` job holding it, or a process found in /proc; see env/generation.hpp), then, holding the
/// store exclusively, the file lists and objects no remaining generation needs and leftover
/// temporary files. Build environments no build holds go first (a cache: their wheels are then
/// swept unless an environment links them). A dry run reports exactly what the same call would
/// remove.
GcResult gc(const Context& ctx, const GcOptions& options);

/// `home/locks/store.lock`: creates hold it shared for their whole run, gc's sweep exclusively.
std::filesystem::path store_lock_path(const Context& ctx);

/// `home/locks/<project key>.<env>.lock`, held by whoever builds or switches ENV.
std::filesystem::path env_lock_path(const Context& ctx, const std::string& env);

}  // namespace envbox::ops
