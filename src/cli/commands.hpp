#pragma once
// The implementations behind the commands (one file each) and what they share.

#include <map>
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "envbox/ops/context.hpp"
#include "envbox/util/json.hpp"

namespace envbox::cli {

struct CreateArgs {
    std::string env;
    std::string lock;       ///< --lock, may be empty
    std::string link_mode;  ///< --link-mode, may be empty
    bool locked = false, frozen = false, offline = false, no_wait = false;
    bool force = false;  ///< --force / --reinstall
};

void run_create(const GlobalOptions& global, const CreateArgs& args);
void run_lock(const GlobalOptions& global, const std::vector<std::string>& envs, bool check,
              bool upgrade, const std::vector<std::string>& upgrade_packages, bool offline,
              bool allow_mixed_cuda);
struct RunArgs {
    std::string env;
    std::vector<std::string> rest;  ///< what follows ENV and run's options: [--] CMD ARGS…
    bool no_sandbox = false;        ///< --no-sandbox
    std::string sandbox;            ///< --sandbox, may be empty
    /// Set in the command's environment last, over the plan's (`shell`: the prompt).
    std::map<std::string, std::string> environment;
    bool locked = false;  ///< --locked: a stale lock is an error (exit 3), never re-locked
    bool frozen = false;  ///< --frozen: run the current generation as it is, no sync
};

[[noreturn]] void run_run(const GlobalOptions& global, const RunArgs& args);
/// `env`, else the default environment: $ENVBOX_ENV, else the project's only manifest. Several
/// manifests and no ENVBOX_ENV, or none, is a usage error (exit 2) naming them.
std::string environment_or_default(const GlobalOptions& global, const std::string& env);
void run_list(const GlobalOptions& global, bool all);
void run_show(const GlobalOptions& global, const std::string& env);
void run_verify(const GlobalOptions& global, const std::string& env, bool deep);
void run_history(const GlobalOptions& global, const std::string& env);
void run_rollback(const GlobalOptions& global, const std::string& env, const std::string& to);
void run_gc(const GlobalOptions& global, int keep, bool dry_run);
void run_doctor(const GlobalOptions& global);
void run_diff(const GlobalOptions& global, const std::string& a, const std::string& b,
              const std::string& format, const std::string& textconv_file);

// Commands registered by their own file, each with its own options struct.
void register_init(CLI::App& app, const GlobalOptions& global);
void register_export(CLI::App& app, const GlobalOptions& global);
void register_delete(CLI::App& app, const GlobalOptions& global);
void register_shell(CLI::App& app, const GlobalOptions& global);
void register_completion(CLI::App& app, const GlobalOptions& global);

/// The context of a command: home (--home / ENVBOX_HOME / default), project root (--project,
/// else the nearest directory upward holding manifests/), jobs, a progress renderer.
ops::Context make_context(const GlobalOptions& global, ops::Progress& progress);

/// True when stderr is a terminal and output is not quieted.
bool stderr_is_tty();

/// "1.5 GB", "12.0 MB", "512 B".
std::string human_bytes(unsigned long long bytes);

}  // namespace envbox::cli
