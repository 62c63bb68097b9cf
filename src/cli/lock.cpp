// envbox lock ENV…
#include "envbox/ops/lock.hpp"

#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "cli/lock_agreement.hpp"
#include "cli/progress.hpp"
#include "envbox/lock/writer.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/json.hpp"
#include "envbox/util/printable.hpp"

namespace envbox::cli {
namespace {

struct LockCommand {
    std::vector<std::string> envs;
    bool check = false;    ///< --check: exit 3 if stale, write nothing
    bool upgrade = false;  ///< --upgrade
    std::vector<std::string> upgrade_packages;
    bool offline = false;
    bool allow_mixed_cuda = false;
    bool allow_cuda_change = false;
    std::string target;  ///< --target (with --check), may be empty
};

// --check: says whether the lock is stale (with --json: one line
// {"environment", "lock", "stale", "reasons"}); true when it is.
// What makes a stale lock of `env` fit again: `envbox lock ENV`, unless the manifest's `cuda`
// changed (`reasons`), which that command refuses: then the flag that moves the line on purpose
// and the undo of the edit.
std::string stale_advice(const std::string& env, const std::vector<std::string>& reasons) {
    for (const auto& why : reasons)
        if (why.starts_with("cuda changed:"))
            return "the manifest moves " + env +
                   " to another CUDA line, which `envbox lock` refuses: `envbox lock " + env +
                   " --allow-cuda-change` makes the move on purpose, `git checkout -- "
                   "manifests/" +
                   env + ".toml` puts back the edit";
    return "`envbox lock " + env + "` updates it";
}

bool report_check(const GlobalOptions& global, const std::string& env, const ops::LockResult& r) {
    if (global.json) {
        Json reasons = Json::array();
        for (const auto& why : r.reasons)
            reasons.push_back(why);
        std::printf("%s\n", json_line(Json{{"environment", env},
                                           {"lock", r.lock_path.string()},
                                           {"stale", r.stale},
                                           {"reasons", reasons}})
                                .c_str());
    } else if (r.stale) {
        std::fprintf(stderr, "%s: the lock is stale:\n", env.c_str());
        for (const auto& why : r.reasons)
            std::fprintf(stderr, "  %s\n", why.c_str());
        std::fprintf(stderr, "%s\n", stale_advice(env, r.reasons).c_str());
    } else if (global.verbosity >= 0) {
        std::fprintf(stderr, "%s: the lock is up to date\n", env.c_str());
    }
    return r.stale;
}

void run_lock(const GlobalOptions& global, const LockCommand& cmd) {
    ConsoleProgress progress(global.verbosity, stderr_is_tty());
    ops::Context ctx = make_context(global, progress);
    std::vector<std::string> stale;
    bool moved_line = false;  // a manifest's CUDA line edited: `envbox lock` alone refuses
    for (const auto& env : cmd.envs) {
        ops::LockOptions opt;
        opt.env = env;
        opt.check = cmd.check;
        opt.upgrade = cmd.upgrade;
        opt.upgrade_packages = cmd.upgrade_packages;
        opt.offline = cmd.offline;
        opt.allow_mixed_cuda = cmd.allow_mixed_cuda;
        opt.allow_cuda_change = cmd.allow_cuda_change;
        opt.target = cmd.target;
        opt.explain_all = global.verbosity > 0;
        ops::require_environment_files(ctx, env);
        ops::LockResult r = ops::lock(ctx, opt);
        progress.clear();
        if (!cmd.check)
            report_lock(global, env, r);
        else if (report_check(global, env, r))
            stale.push_back(env);
        if (cmd.check &&
            stale_advice(env, r.reasons).find("--allow-cuda-change") != std::string::npos)
            moved_line = true;
        // A note, not staleness: CI without generations checks the lock against the manifest.
        if (cmd.check) note_lock_agreement(global, ops::lock_agreement(ctx, env));
    }
    if (!stale.empty())
        throw Error(ErrorCode::invalid_input, counted(stale.size(), "stale lock", "stale locks") +
                                                  (moved_line ? "; what updates each is said above"
                                                              : "; run `envbox lock` to update"));
}

}  // namespace

Json changes_json(const std::vector<ops::VersionChange>& changes) {
    auto or_null = [](const std::string& v) { return v.empty() ? Json(nullptr) : Json(v); };
    Json out = Json::array();
    for (const auto& c : changes)
        out.push_back(
            Json{{"name", c.name}, {"old", or_null(c.before)}, {"new", or_null(c.after)}});
    return out;
}

void print_changes(const GlobalOptions& global, const std::vector<ops::VersionChange>& changes,
                   const std::optional<std::string>& cuda_change) {
    if (global.verbosity < 0) return;
    // A new CUDA line is the change that matters most: before every package.
    if (cuda_change) std::fprintf(stderr, "! %s\n", printable(*cuda_change).c_str());
    for (const auto& c : changes) {
        if (c.before.empty())
            std::fprintf(stderr, "+ %s %s\n", c.name.c_str(), c.after.c_str());
        else if (c.after.empty())
            std::fprintf(stderr, "- %s %s\n", c.name.c_str(), c.before.c_str());
        else
            std::fprintf(stderr, "~ %s %s → %s\n", c.name.c_str(), c.before.c_str(),
                         c.after.c_str());
    }
}

void note_if_stale(const GlobalOptions& global, const ops::Context& ctx, const std::string& env) {
    if (global.verbosity < 0 || ctx.project_root.empty()) return;
    const auto manifest = ctx.project().manifest(env);
    std::error_code ec;
    if (!std::filesystem::exists(manifest, ec)) return;
    try {
        // Only a lock envbox wrote, and that is there, is said to be stale here.
        const ops::Freshness f = ops::freshness(manifest, ctx.project().lock(env));
        const auto& reasons = f.reasons;
        if (f.state == ops::Freshness::State::stale)
            std::fprintf(stderr, "note: the lock of %s is stale (%s); %s\n", env.c_str(),
                         reasons.front().c_str(), stale_advice(env, reasons).c_str());
    } catch (const Error&) {
        // the command itself reports what is wrong with the manifest or the lock
    }
}

void report_lock(const GlobalOptions& global, const std::string& env, const ops::LockResult& r) {
    if (r.up_to_date && !global.json) {
        if (global.verbosity >= 0)
            std::fprintf(stderr, "%s: the lock is up to date (%s); `--upgrade` resolves again\n",
                         env.c_str(), counted(r.packages, "package", "packages").c_str());
        return;
    }
    if (global.json) {
        Json report = {{"environment", env},
                       {"lock", r.lock_path.string()},
                       {"changed", r.changed},
                       {"up_to_date", r.up_to_date},
                       {"packages", r.packages},
                       {"seconds", r.seconds},
                       {"requests", r.requests},
                       {"cache_hits", r.cache_hits},
                       {"peak_in_flight", r.peak_in_flight},
                       {"changes", changes_json(r.changes)},
                       {"cuda_change", r.cuda_change ? Json(*r.cuda_change) : Json(nullptr)},
                       {"targets_differ", r.target_notes},
                       {"older", r.older}};
        std::printf("%s\n", json_line(report).c_str());
    } else if (global.verbosity >= 0) {
        std::fprintf(stderr,
                     "%s %s: %s in %.2f s (%s, %llu answered from the cache, up to %d in "
                     "flight)\n",
                     r.changed ? "Locked" : "Lock unchanged for", env.c_str(),
                     counted(r.packages, "package", "packages").c_str(), r.seconds,
                     counted(r.requests, "request", "requests").c_str(),
                     static_cast<unsigned long long>(r.cache_hits), r.peak_in_flight);
        print_changes(global, r.changes, r.cuda_change);
    }
}

void register_lock(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<LockCommand>();
    CLI::App* c = app.add_subcommand(
        "lock", "Resolve manifests/ENV.toml and write manifests/pylock.ENV.toml (PEP 751)");
    c->add_option("ENV", cmd->envs, "Environments to lock")->required();
    c->add_flag("--check", cmd->check, "Exit 3 if the lock is stale; write nothing");
    c->add_flag("--upgrade", cmd->upgrade, "Ignore locked versions");
    c->add_option("--upgrade-package", cmd->upgrade_packages,
                  "Ignore the locked version of P (repeatable)");
    c->add_flag("--offline", cmd->offline, "Use only cached index pages");
    c->add_flag("--allow-mixed-cuda", cmd->allow_mixed_cuda,
                "Write a lock that mixes CUDA lines (recorded in the lock)");
    c->add_flag("--allow-cuda-change", cmd->allow_cuda_change,
                "Write a lock that moves ENV to another CUDA line than its lock's (refused "
                "without it: a new line belongs in an environment of its own)");
    c->add_option("--target", cmd->target,
                  "With --check: also that the lock covers this platform of the manifest's "
                  "`platforms` (a tag or its machine: aarch64)");
    c->callback([&global, cmd] { run_lock(global, *cmd); });
}

}  // namespace envbox::cli
