#pragma once
// The commands of the envbox surface, one file each (src/cli/<command>.cpp): each registers its
// options, bound to its own options struct, and runs one library function. What they share is
// declared here.

#include <map>
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "envbox/env/link_check.hpp"
#include "envbox/ops/context.hpp"
#include "envbox/ops/lock.hpp"
#include "envbox/ops/run.hpp"
#include "envbox/util/json.hpp"

namespace envbox::cli {

// Each registers its command on `app`, in the order `envbox --help` lists them (add_commands).
// The command's options struct is owned by the command's callback, so the values CLI11 parses
// into it live as long as `app`.
void register_lock(CLI::App& app, GlobalOptions& global);        // lock.cpp
void register_create(CLI::App& app, GlobalOptions& global);      // create.cpp
void register_run(CLI::App& app, GlobalOptions& global);         // run.cpp
void register_diff(CLI::App& app, GlobalOptions& global);        // diff.cpp
void register_verify(CLI::App& app, GlobalOptions& global);      // generations.cpp
void register_list(CLI::App& app, GlobalOptions& global);        // inspect.cpp
void register_show(CLI::App& app, GlobalOptions& global);        // inspect.cpp
void register_history(CLI::App& app, GlobalOptions& global);     // generations.cpp
void register_rollback(CLI::App& app, GlobalOptions& global);    // generations.cpp
void register_pin(CLI::App& app, GlobalOptions& global);         // generations.cpp
void register_unpin(CLI::App& app, GlobalOptions& global);       // generations.cpp
void register_gc(CLI::App& app, GlobalOptions& global);          // generations.cpp
void register_doctor(CLI::App& app, GlobalOptions& global);      // doctor.cpp
void register_init(CLI::App& app, GlobalOptions& global);        // init.cpp
void register_export(CLI::App& app, GlobalOptions& global);      // export.cpp
void register_tree(CLI::App& app, GlobalOptions& global);        // tree.cpp
void register_why(CLI::App& app, GlobalOptions& global);         // tree.cpp
void register_add(CLI::App& app, GlobalOptions& global);         // add.cpp
void register_remove(CLI::App& app, GlobalOptions& global);      // add.cpp
void register_delete(CLI::App& app, GlobalOptions& global);      // delete.cpp
void register_cache(CLI::App& app, GlobalOptions& global);       // cache.cpp
void register_shell(CLI::App& app, GlobalOptions& global);       // shell.cpp
void register_push(CLI::App& app, GlobalOptions& global);        // fleet.cpp
void register_pull(CLI::App& app, GlobalOptions& global);        // fleet.cpp
void register_pack(CLI::App& app, GlobalOptions& global);        // fleet.cpp
void register_unpack(CLI::App& app, GlobalOptions& global);      // fleet.cpp
void register_check(CLI::App& app, GlobalOptions& global);       // check.cpp
void register_completion(CLI::App& app, GlobalOptions& global);  // completion.cpp

/// `run`'s options, and what `shell` runs: `run ENV -- $SHELL -i` with its startup file.
struct RunCommand {
    std::string env;                ///< ENV, may be empty: then $ENVBOX_ENV or the only manifest
    std::vector<std::string> rest;  ///< what follows ENV and run's options: [--] CMD ARGS…
    bool no_sandbox = false;        ///< --no-sandbox
    std::string sandbox;            ///< --sandbox, may be empty: then $ENVBOX_SANDBOX, else auto
    /// Set in the command's environment last, over the plan's (`shell`: the prompt).
    std::map<std::string, std::string> environment;
    bool locked = false;  ///< --locked: a stale lock is an error (exit 3), never re-locked
    bool frozen = false;  ///< --frozen: run the current generation as it is, no sync
    std::vector<std::string> keep_caps;  ///< --keep-cap: as root, capabilities kept all the same
};

/// The summary of one `ops::lock` on stderr ("Locked ENV: N packages …", then the change
/// list), or with --json its report on stdout (`changes` included); lock.cpp.
void report_lock(const GlobalOptions& global, const std::string& env, const ops::LockResult& r);

/// The change list on stderr, as uv prints it: `+ tqdm 4.68.0`, `- foo 1.0`,
/// `~ torch 2.11.0+cu128 → 2.11.1+cu128`, after `! CUDA 12.8 → 13.0 (…)` when the lock moved
/// the environment to another CUDA line; nothing with -q.
void print_changes(const GlobalOptions& global, const std::vector<ops::VersionChange>& changes,
                   const std::optional<std::string>& cuda_change);

/// A link check's report as JSON: `{"native_files", "seconds", "cached", "findings": [{"kind",
/// "package", "wheel", "file", "what", "message", "refuses"}]}` (verify.cpp).
Json link_json(const env::LinkReport& report);

/// The change list as JSON: `[{"name", "old", "new"}]`, null where absent.
Json changes_json(const std::vector<ops::VersionChange>& changes);

/// For commands that read ENV's lock as it is (tree, why, export): a note on stderr when the
/// lock `envbox lock` wrote no longer fits the manifest (or envbox.toml), naming the first
/// reason, so an answer from a stale lock is never taken for the manifest's (lock.cpp).
void note_if_stale(const GlobalOptions& global, const ops::Context& ctx, const std::string& env);

/// `create ENV --from REF`: what `pull REF ENV` does, with create's link mode and bytecode
/// flags (fleet.cpp).
struct CreateFrom {
    std::string ref, env;
    bool plain_http = false;
    std::string ca, link_mode;
    bool no_compile = false;
    bool update_lock = false;        ///< --update-lock: the artifact's lock over the project's
    std::string lock;                ///< --lock FILE: the reviewed lock the artifact's must be
    bool ignore_bytecode = false;    ///< --ignore-bytecode: compile here
    bool allow_cuda_change = false;  ///< --allow-cuda-change: another CUDA line on purpose
};
void create_from_registry(const GlobalOptions& global, const CreateFrom& from);

/// `--sandbox` (`flag`, may be empty), else `--no-sandbox`, else $ENVBOX_SANDBOX, else auto
/// (run.cpp). The flag beats the variable so that one run can opt out of a strict default.
ops::SandboxMode sandbox_mode(const std::string& flag, bool no_sandbox);

/// Runs `cmd` in place of envbox (exec); returns only by throwing.
[[noreturn]] void run_run(const GlobalOptions& global, const RunCommand& cmd);

/// `env`, else the default environment: $ENVBOX_ENV, else the project's only manifest. Several
/// manifests and no ENVBOX_ENV, or none, is a usage error (exit 2) naming them.
std::string environment_or_default(const GlobalOptions& global, const std::string& env);

/// What envbox takes from the process environment (every variable the layers below use), read
/// once: the only place outside src/cli that environment variables reach.
ops::Settings settings_from_environment();

/// The context of a command: home (--home / ENVBOX_HOME / default), project root (--project,
/// else the nearest directory upward holding manifests/), jobs (ENVBOX_JOBS, else every core),
/// the settings, a progress renderer.
ops::Context make_context(const GlobalOptions& global, ops::Progress& progress);

/// True when stderr is a terminal and output is not quieted.
bool stderr_is_tty();

/// "1 package", "3 packages": `n` and the noun it counts, `one` for exactly one, else `many`.
std::string counted(unsigned long long n, const char* one, const char* many);

/// "1.5 GB", "12.0 MB", "512 B".
std::string human_bytes(unsigned long long bytes);

}  // namespace envbox::cli
