#pragma once
/// `envbox run ENV CMD…`: the computed environment a command runs with, and its sandbox.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "envbox/env/sandbox.hpp"
#include "envbox/ops/context.hpp"
#include "envbox/ops/lock.hpp"

namespace envbox::ops {

struct RunPlan {
    std::filesystem::path generation;  ///< the generation the command runs in
    std::vector<std::string> argv;
    std::map<std::string, std::string> environment;
    std::vector<std::filesystem::path>
        writable;  ///< what stays writable in the home (compile caches), created
    std::vector<std::filesystem::path>
        base_installation;           ///< read-only too: the base interpreter's (env/sandbox.hpp)
    std::vector<std::string> notes;  ///< what was changed, for -v
    /// The compile caches envbox pointed into the environment's folder: variable, folder.
    std::vector<std::pair<std::string, std::filesystem::path>> compile_caches;
    /// As root: capabilities of those a workload loses that it keeps all the same (`--keep-cap`,
    /// env::drop_workload_capabilities).
    std::vector<std::string> keep_capabilities;
};

/// The environment for running `argv` in ENV's current generation, starting from `base`
/// (the caller's environment): `bin/` first on PATH, VIRTUAL_ENV set, PYTHONPATH and
/// PYTHONHOME removed, PYTHONNOUSERSITE=1, then the manifest's `[run].env`. Throws when the
/// environment has no complete generation, or (exit 6) when this machine's NVIDIA driver cannot
/// run the environment's CUDA line; a missing driver is only a note (create and doctor say it).
RunPlan plan_run(const Context& ctx, const std::string& env, std::vector<std::string> argv,
                 std::map<std::string, std::string> base);

/// The same for ENV's generation `generation`, current or not (`envbox check --generation`),
/// held as run holds the current one; `argv` may be empty. Throws (exit 1) when it is not a
/// complete generation.
RunPlan plan_run_in(const Context& ctx, const std::string& env, int generation,
                    std::vector<std::string> argv, std::map<std::string, std::string> base);

/// What run's sync does before running ENV, decided as create would but without resolving the
/// target. Nothing to do (the fast path: a few reads and a manifest digest) when the lock is fresh
/// against the manifest (a lock envbox did not write is taken as it is) and its bytes are the
/// current generation's. A rollback is on purpose: while the lock file is the lock of a newer
/// generation than the current one (the one rolled back from), run keeps the current one and
/// says so, never rebuilding what the user rolled back from. A lock of no generation, or of an
/// older one than the current (a `git revert` before a rollback), is created, as `create` does.
/// A generation made with `create --lock FILE` is left alone unless the project's lock changed
/// since a generation was built from it.
struct SyncPlan {
    std::vector<std::string> reasons;  ///< why a create is needed; empty: run as it is
    bool stale_lock = false;           ///< locking is among what is needed
    std::string what;                  ///< what "ENV…; creating…" says when it builds
    std::string note;                  ///< said although nothing is created (a rollback kept)
    /// The lock's freshness as decided here (none without a manifest), for create to reuse.
    std::optional<Freshness> freshness;
};
SyncPlan plan_sync(const Context& ctx, const std::string& env);

/// How hard `run` insists on its sandbox (`--sandbox`, `ENVBOX_SANDBOX`).
enum class SandboxMode {
    off,        ///< no sandbox (`--no-sandbox`)
    automatic,  ///< the sandbox where the kernel allows; otherwise run anyway, with a warning
    strict,     ///< refuse to run unsandboxed
};

/// Confines this process for the command of `plan`: the whole of `ctx.home` read-only except
/// `plan.writable` (env/sandbox.hpp says how), and as root without the capabilities that could
/// undo that (env::drop_workload_capabilities; a drop the kernel refuses is an error). Call
/// right before exec, single-threaded. In `strict` mode, throws (exit 1, with the kernel's
/// reasons) when no sandbox could be made.
env::SandboxOutcome enter_run_sandbox(const Context& ctx, const RunPlan& plan, SandboxMode mode);

}  // namespace envbox::ops
