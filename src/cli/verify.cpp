// envbox verify
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.hpp"
#include "cli/lock_agreement.hpp"
#include "cli/progress.hpp"
#include "envbox/env/generation.hpp"
#include "envbox/ops/generations.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/json.hpp"
#include "envbox/util/printable.hpp"
#include "envbox/util/stopwatch.hpp"

namespace envbox::cli {
namespace {

struct VerifyCommand {
    std::string env;
    bool deep = false;   ///< --deep: compare contents by hash
    bool store = false;  ///< --store: check the whole store, not an environment
};

}  // namespace

Json link_json(const env::LinkReport& report) {
    Json findings = Json::array();
    for (const auto& f : report.findings)
        findings.push_back({{"kind", f.kind_name()},
                            {"package", f.package},
                            {"wheel", f.wheel},
                            {"file", f.file},
                            {"what", f.what},
                            {"message", f.message},
                            {"refuses", f.refuses()},
                            {"allowed", f.allowed}});
    return Json{{"native_files", report.native_files},
                {"seconds", report.seconds},
                {"facts_seconds", report.facts_seconds},
                {"cached", report.cached},
                {"findings", std::move(findings)}};
}

namespace {

void print_verify_json(const VerifyCommand& cmd, const ops::VerifyResult& r) {
    const auto& rep = r.report;
    Json drift = Json::array();
    for (const auto& d : rep.drift)
        drift.push_back(
            Json{{"kind", env::drift_kind_name(d.kind)}, {"path", d.path}, {"detail", d.detail}});
    Json report = {
        {"environment", cmd.env}, {"generation", r.generation.number},  {"deep", cmd.deep},
        {"clean", rep.clean()},   {"files_checked", rep.files_checked}, {"hashed", rep.hashed},
        {"seconds", r.seconds},   {"drift", std::move(drift)}};
    report["manifests_lock"] = lock_agreement_json(r.lock);  // a note, never drift
    report["built"] = r.built;  // package → build key digest: wheels built from sdists
    report["link"] = link_json(r.link);
    std::printf("%s\n", json_line(report).c_str());
}

// `named`: each drift line starts with the environment (`verify` of several).
void print_verify_text(const GlobalOptions& global, const VerifyCommand& cmd,
                       const ops::VerifyResult& r, bool named = false) {
    const auto& rep = r.report;
    for (const auto& d : rep.drift)
        std::printf("%s%s%-9s %s%s%s\n", named ? cmd.env.c_str() : "", named ? "  " : "",
                    env::drift_kind_name(d.kind), d.path.c_str(), d.detail.empty() ? "" : "  (",
                    d.detail.empty() ? "" : (d.detail + ")").c_str());
    if (global.verbosity >= 0)
        std::fprintf(stderr, "%s generation %d: %s (%s checked%s, %zu hashed, %.2f s)\n",
                     cmd.env.c_str(), r.generation.number,
                     rep.clean() ? "clean"
                                 : (counted(rep.drift.size(), "difference", "differences") +
                                    " from the lock")
                                       .c_str(),
                     counted(rep.files_checked, "file", "files").c_str(),
                     cmd.deep ? " by content" : "", rep.hashed, r.seconds);
    if (global.verbosity >= 0 && !r.built.empty()) {
        std::string names;
        for (const auto& [name, key] : r.built)
            names += (names.empty() ? "" : ", ") + name + " (build " + key.substr(0, 12) + ")";
        std::fprintf(stderr, "  built from sdists by envbox: %s\n", names.c_str());
    }
    if (global.verbosity >= 0)
        for (const auto& f : r.link.findings)
            std::fprintf(stderr, "  link check%s: %s\n",
                         f.allowed     ? " (allowed by [install].allow-unlinked)"
                         : f.refuses() ? " (create would refuse this)"
                                       : "",
                         f.message.c_str());
    note_lock_agreement(global, r.lock);
    if (global.verbosity > 1)
        std::fprintf(stderr, "  seconds: load %.3f, plan %.3f, check %.3f\n", r.load_s, r.plan_s,
                     r.check_s);
}

// `verify` without ENV: every environment of the project (ops::project_environments), each
// reported as `verify ENV` reports it (--json: its line); one never created here is said and
// passed over (a node builds the environments it runs). Exit 5 when any drifted, else the
// status of the first that could not be checked.
void run_verify_all(const GlobalOptions& global, const VerifyCommand& cmd) {
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    const std::vector<std::string> envs = ops::project_environments(ctx);
    if (envs.empty())
        throw Error(ErrorCode::usage,
                    "verify: give ENV, or --store to check the whole store (" +
                        (ctx.project_root.empty() ? std::string("no project here")
                                                  : ops::known_environments(ctx.project_root)) +
                        ")");
    std::vector<std::string> drifted, failed;
    std::optional<ErrorCode> failure;
    std::size_t clean = 0, absent = 0;
    for (const auto& name : envs) {
        VerifyCommand one = cmd;
        one.env = name;
        try {
            // Never created: no generation at all. One whose `current` is gone or dangles, or
            // whose generations are incomplete, is verified, and reported as verify ENV does.
            const std::filesystem::path dir = ops::env_dir(ctx, name);
            std::error_code ec;
            if (!std::filesystem::exists(dir, ec) || env::list_generations(dir).empty()) {
                ++absent;
                if (global.json)
                    std::printf("%s\n", json_line(Json{{"environment", name},
                                                       {"generation", Json()},
                                                       {"clean", Json()},
                                                       {"skipped", "never created"}})
                                            .c_str());
                else if (global.verbosity >= 0)
                    std::fprintf(stderr, "%s: never created here (`envbox create %s`)\n",
                                 name.c_str(), name.c_str());
                continue;
            }
            const ops::VerifyResult r = ops::verify(ctx, name, cmd.deep);
            global.json ? print_verify_json(one, r) : print_verify_text(global, one, r, true);
            r.report.clean() ? void(++clean) : drifted.push_back(name);
        } catch (const Error& e) {
            failed.push_back(name);
            if (!failure) failure = e.code();
            if (global.json)
                std::printf("%s\n", json_line(Json{{"environment", name},
                                                   {"generation", Json()},
                                                   {"clean", false},
                                                   {"error", e.message()}})
                                        .c_str());
            else
                std::fprintf(stderr, "%s: %s\n", name.c_str(),
                             printable_lines(e.message()).c_str());
        }
    }
    std::fflush(stdout);
    if (!global.json && global.verbosity >= 0)
        std::fprintf(stderr, "%s: %zu clean, %zu drifted, %zu not checked, %zu never created\n",
                     counted(envs.size(), "environment", "environments").c_str(), clean,
                     drifted.size(), failed.size(), absent);
    auto names = [](const std::vector<std::string>& list) {
        std::string out;
        for (const auto& n : list)
            out += (out.empty() ? "" : ", ") + n;
        return out;
    };
    if (!drifted.empty())
        throw Error(
            ErrorCode::integrity,
            names(drifted) + (drifted.size() == 1 ? " has" : " have") + " drifted from " +
                (drifted.size() == 1 ? "its lock" : "their locks") +
                (failed.empty() ? "" : " (and " + names(failed) + " could not be checked)") +
                "; `envbox create --force ENV` builds a fresh generation from verified "
                "store objects, `envbox rollback ENV` switches back");
    if (failure) throw Error(*failure, names(failed) + " could not be checked (said above)");
}

// `verify --store`: every problem on stdout, a summary on stderr, exit 5 when any.
void run_verify_store(const GlobalOptions& global, const VerifyCommand& cmd) {
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    const Stopwatch started;
    const store::CheckResult r = ops::verify_store(ctx, cmd.deep);
    const double seconds = started.total();
    if (global.json) {
        Json problems = Json::array();
        for (const auto& p : r.problems)
            problems.push_back(p);
        std::printf("%s\n", json_line(Json{{"store", ctx.home.string()},
                                           {"deep", cmd.deep},
                                           {"clean", r.clean()},
                                           {"wheels", r.wheels},
                                           {"objects", r.objects},
                                           {"hashed", r.hashed},
                                           {"seconds", seconds},
                                           {"problems", std::move(problems)}})
                                .c_str());
    } else {
        for (const auto& p : r.problems)
            std::printf("%s\n", p.c_str());
        if (global.verbosity >= 0)
            std::fprintf(
                stderr, "store %s: %s (%s, %s checked%s, %.2f s)\n", ctx.home.c_str(),
                r.clean() ? "clean" : counted(r.problems.size(), "problem", "problems").c_str(),
                counted(r.wheels, "wheel", "wheels").c_str(),
                counted(r.objects, "object", "objects").c_str(), cmd.deep ? " by content" : "",
                seconds);
    }
    if (!r.clean())
        throw Error(ErrorCode::integrity,
                    "the store has " +
                        counted(r.problems.size(), "damaged object or file list",
                                "damaged objects or file lists") +
                        "; `envbox create --force ENV` of an "
                        "environment built from them stores them again");
}

void run_verify(const GlobalOptions& global, const VerifyCommand& cmd) {
    if (cmd.store) return run_verify_store(global, cmd);
    if (cmd.env.empty()) return run_verify_all(global, cmd);
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    ops::VerifyResult r = ops::verify(ctx, cmd.env, cmd.deep);
    if (global.json)
        print_verify_json(cmd, r);
    else
        print_verify_text(global, cmd, r);
    if (!r.report.clean()) {
        const std::string& env = cmd.env;
        throw Error(ErrorCode::integrity,
                    env + " has drifted from its lock (" +
                        counted(r.report.drift.size(), "difference", "differences") +
                        "); `envbox create --force " + env +
                        "` builds a fresh generation from verified store objects, "
                        "`envbox rollback " +
                        env + "` switches back");
    }
}

}  // namespace

void register_verify(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<VerifyCommand>();
    CLI::App* c = app.add_subcommand(
        "verify", "Prove ENV (none: each of the project's) is exactly its lock; report drift");
    c->add_option("ENV", cmd->env,
                  "Environment (not with --store); none: every environment of the project")
        ->check([](const std::string& name) {
            // An empty word (`verify "$UNSET"`) is no environment, not "all of them".
            return name.empty() ? std::string("an empty ENV names no environment") : "";
        });
    c->add_flag("--deep", cmd->deep, "Compare file contents by hash, not only inodes");
    c->add_flag("--store", cmd->store,
                "Check the whole store instead: every file list reads and every object it names "
                "is untouched (with --deep: holds the bytes its name says)");
    c->callback([&global, cmd] { run_verify(global, *cmd); });
}

}  // namespace envbox::cli
