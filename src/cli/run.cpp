// envbox run ENV [--] CMD…
#include "envbox/ops/run.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "envbox/env/generation.hpp"
#include "envbox/env/sandbox.hpp"
#include "envbox/ops/context.hpp"
#include "envbox/ops/create.hpp"
#include "envbox/ops/lock.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/process.hpp"

namespace envbox::cli {
namespace {

// The command: what follows ENV, less one leading `--`. Anything else that looks like an
// option there is one `run` does not know (CLI11 stopped at it).
std::vector<std::string> command_of(const std::vector<std::string>& rest) {
    if (!rest.empty() && rest.front() == "--") return {rest.begin() + 1, rest.end()};
    if (!rest.empty() && rest.front().size() > 1 && rest.front()[0] == '-')
        throw Error(ErrorCode::usage,
                    "run: unknown option " + rest.front() +
                        " (the command starts at its first word; put -- before a command "
                        "that starts with -)");
    return rest;
}

}  // namespace

ops::SandboxMode sandbox_mode(const std::string& flag, bool no_sandbox) {
    std::string mode = flag;
    if (mode.empty() && no_sandbox) return ops::SandboxMode::off;
    std::string from = "--sandbox";
    if (const char* v = std::getenv("ENVBOX_SANDBOX"); mode.empty() && v && *v) {
        mode = v;
        from = "ENVBOX_SANDBOX";
    }
    if (mode.empty() || mode == "auto") return ops::SandboxMode::automatic;
    if (mode == "strict") return ops::SandboxMode::strict;
    if (mode == "off") return ops::SandboxMode::off;
    throw Error(ErrorCode::usage,
                from + "=" + mode + " is not a sandbox mode (auto, strict or off)");
}

namespace {

// The temporary directory ($TMPDIR, else /tmp) when it is the home or one of its ancestors.
std::optional<std::filesystem::path> temp_dir_holding(const std::filesystem::path& home) {
    const char* t = std::getenv("TMPDIR");
    std::error_code ec;
    auto tmp = std::filesystem::canonical(t && *t ? t : "/tmp", ec);
    auto real_home = std::filesystem::canonical(home, ec);
    if (ec || tmp.empty()) return std::nullopt;
    auto [a, b] = std::mismatch(tmp.begin(), tmp.end(), real_home.begin(), real_home.end());
    if (a != tmp.end()) return std::nullopt;
    return tmp;
}

// What the user must know every time (a weaker or no sandbox), and with -v what happened.
void report_sandbox(const GlobalOptions& global, const std::filesystem::path& home,
                    const ops::RunPlan& plan, ops::SandboxMode mode, const env::SandboxOutcome& o) {
    if (mode == ops::SandboxMode::off) {
        if (global.verbosity > 0)
            std::fprintf(stderr, "envbox: running in %s without the sandbox (--sandbox off)\n",
                         plan.generation.c_str());
    } else if (o.kind == env::SandboxKind::mount_namespace) {
        if (global.verbosity > 0)
            std::fprintf(stderr, "envbox: running in %s in the read-only sandbox\n",
                         plan.generation.c_str());
    } else if (o.kind == env::SandboxKind::landlock) {
        if (global.verbosity >= 0)
            std::fprintf(
                stderr,
                "envbox: note: no mount namespace here (%s); Landlock keeps the envbox home "
                "read-only instead\n",
                o.namespace_refused.c_str());
        // Landlock's one limit bites hardest here: gcc (Triton's kernels) aborts when it cannot
        // make a file in its temporary directory.
        if (auto tmp = temp_dir_holding(home))
            std::fprintf(
                stderr,
                "envbox: warning: %s holds the envbox home, so under Landlock no new file can be "
                "made directly in it: set TMPDIR to another directory, or move the home\n",
                tmp->c_str());
    } else {
        std::fprintf(stderr,
                     "envbox: warning: running WITHOUT the sandbox: no mount namespace (%s) and no "
                     "Landlock (%s); this command can write into every environment and the store "
                     "(--sandbox strict refuses to run like this)\n",
                     o.namespace_refused.c_str(), o.landlock_refused.c_str());
    }
    if (global.verbosity > 0)
        for (const auto& n : plan.notes)
            std::fprintf(stderr, "envbox: %s\n", n.c_str());
}

// `uv run`'s sync: lock and create first when ENV is out of date (said on stderr, as the
// command's stdout is its own); --locked refuses a stale lock instead, --frozen skips this.
void sync_first(const GlobalOptions& global, const ops::Context& ctx, const RunCommand& args) {
    if (args.frozen) return;
    ops::SyncPlan plan = ops::plan_sync(ctx, args.env);
    if (!plan.note.empty() && global.verbosity >= 0)
        std::fprintf(stderr, "envbox: note: %s: %s\n", args.env.c_str(), plan.note.c_str());
    if (plan.reasons.empty()) return;
    if (args.locked && plan.stale_lock)
        throw ops::locked_refusal(args.env, plan.reasons,
                                  "`envbox run --frozen` to run the current generation");
    ops::CreateOptions options;
    options.env = args.env;
    options.locked = args.locked;
    // Said once create has locked (a lock may be refused) and found a generation to build.
    options.on_build = [&args, what = plan.what] {
        std::fprintf(stderr, "envbox: %s%s; creating…\n", args.env.c_str(), what.c_str());
    };
    options.freshness = std::move(plan.freshness);  // the lock is not read again
    options.keep_cuda_line = true;  // a new CUDA line is made on purpose, never by a launch
    ops::create(ctx, options);
}

}  // namespace

std::string environment_or_default(const GlobalOptions& global, const std::string& env) {
    if (!env.empty()) return env;
    if (const char* v = std::getenv("ENVBOX_ENV"); v && *v) {
        ops::check_env_name(v);
        return v;
    }
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    if (ctx.project_root.empty())
        throw Error(ErrorCode::usage,
                    "no ENV given, no ENVBOX_ENV and no project here (no manifests/ directory "
                    "in this directory or above)");
    if (auto project = ops::read_project_file(ctx.project_root); project && project->default_env)
        return *project->default_env;
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(ctx.project().manifests(), ec)) {
        std::string n = e.path().filename().string();
        if (n.ends_with(".toml") && !n.starts_with("pylock.") && e.is_regular_file(ec))
            names.push_back(n.substr(0, n.size() - 5));
    }
    std::sort(names.begin(), names.end());
    if (names.size() == 1) return names.front();
    std::string where = (ctx.project().manifests()).string();
    if (names.empty())
        throw Error(ErrorCode::usage, "no ENV given, no ENVBOX_ENV and no manifest in " + where);
    std::string list;
    for (const auto& n : names)
        list += (list.empty() ? "" : ", ") + n;
    throw Error(ErrorCode::usage, "no ENV given and no ENVBOX_ENV, and " + where +
                                      " holds several environments (" + list +
                                      "): name one, as `envbox run ENV -- CMD`, set ENVBOX_ENV, "
                                      "or set default-env in " +
                                      (ctx.project_root / "envbox.toml").string());
}

void run_run(const GlobalOptions& global, const RunCommand& cmd) {
    RunCommand args = cmd;
    args.env = environment_or_default(global, cmd.env);
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    ops::SandboxMode mode = sandbox_mode(args.sandbox, args.no_sandbox);
    std::vector<std::string> argv = command_of(args.rest);  // usage errors first
    if (!cmd.env.empty()) {
        // The first word was taken as ENV (no `--` before it): when no environment has that
        // name, it may have been meant as the command, as `uv run python` means.
        try {
            ops::require_known_environment(ctx, args.env);
        } catch (const Error& e) {
            throw Error(e.code(), e.message() + "\n  if " + args.env +
                                      " is the command, put -- before it: `envbox run -- " +
                                      args.env + (args.rest.empty() ? "" : " …") + "`");
        }
    }
    sync_first(global, ctx, args);
    ops::RunPlan plan = ops::plan_run(ctx, args.env, std::move(argv), current_environment());
    for (const auto& [k, v] : args.environment)
        plan.environment[k] = v;
    plan.keep_capabilities = args.keep_caps;
    env::SandboxOutcome sandbox = ops::enter_run_sandbox(ctx, plan, mode);
    report_sandbox(global, ctx.home, plan, mode, sandbox);
    std::fflush(nullptr);
    ::umask(static_cast<mode_t>(ctx.user_umask));  // the workload's files are the user's business
    exec_replace(plan.argv, plan.environment);
}

void register_run(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<RunCommand>();
    CLI::App* c =
        app.add_subcommand("run", "Run a command inside ENV (sandboxed where the kernel allows)");
    // ENV is the first word unless `--` comes first: then the default environment. A word after
    // `--` reaches this check while the `--` is already among what was not parsed.
    auto after_marker = std::make_shared<std::optional<bool>>();  // decided once, at the parse
    c->add_option("ENV", cmd->env,
                  "Environment (default, when -- comes first: $ENVBOX_ENV, else default-env "
                  "of envbox.toml, else the project's only manifest)")
        ->check([c, after_marker](const std::string&) {
            if (!*after_marker) {
                auto seen = c->remaining();
                *after_marker = std::find(seen.begin(), seen.end(), "--") != seen.end();
            }
            return **after_marker ? std::string("the command's own") : std::string();
        });
    auto* off =
        c->add_flag("--no-sandbox", cmd->no_sandbox, "Run without the sandbox (--sandbox off)");
    auto* locked = c->add_flag("--locked", cmd->locked,
                               "Fail (exit 3) if the lock is missing or stale instead of locking");
    c->add_flag("--frozen", cmd->frozen, "Run the current generation as it is: no lock, no create")
        ->excludes(locked);
    c->add_option("--sandbox", cmd->sandbox,
                  "auto (default; warn when the kernel allows none), strict (refuse to run "
                  "unsandboxed) or off; default $ENVBOX_SANDBOX")
        ->check(CLI::IsMember({"auto", "strict", "off"}))
        ->excludes(off);
    c->add_option("--keep-cap", cmd->keep_caps,
                  "As root the command loses the capabilities that could undo the sandbox "
                  "(CAP_SYS_ADMIN, CAP_SYS_PTRACE, …; docs/SECURITY.md); keep this one all the "
                  "same (repeat for several), e.g. --keep-cap sys_admin for a GPU profiler")
        ->allow_extra_args(false)
        ->type_size(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    // The command's first word and everything after it are the command's, as with `uv run`:
    // CLI11 stops at the first positional nothing takes (prefix_command). CMD takes nothing (its
    // check refuses every word); it exists so that `--` stays with `run`. What CLI11 leaves
    // unparsed becomes `rest` when the command runs.
    c->add_option("CMD", cmd->rest,
                  "The command and its arguments, which envbox never reads "
                  "(`--` before it is optional)")
        ->expected(1, -1)
        ->check([](const std::string&) { return std::string("the command's own"); });
    c->validate_positionals();
    c->prefix_command();
    add_global_options(*c, global, true);
    c->fallthrough(false);
    c->callback([&global, cmd, c] {
        cmd->rest = c->remaining();
        run_run(global, *cmd);
    });
}

}  // namespace envbox::cli
