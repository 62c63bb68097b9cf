// envbox history, rollback, pin, unpin, gc (verify: cli/verify.cpp)
#include "envbox/ops/generations.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.hpp"
#include "cli/lock_agreement.hpp"
#include "cli/progress.hpp"
#include "envbox/env/generation.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/json.hpp"
#include "envbox/util/printable.hpp"

namespace envbox::cli {
namespace {

struct HistoryCommand {
    std::string env;
};

struct RollbackCommand {
    std::string env;
    std::string to;           ///< --to N, may be empty: the previous generation
    bool write_lock = false;  ///< --write-lock: the generation's lock into manifests/
};

struct PinCommand {
    std::string env;
    std::string number;  ///< N, may be empty (pin: the current generation)
};

struct GcCommand {
    bool dry_run = false;
    int keep = 3;  ///< --keep: complete generations kept per environment
};

// A generation's kept check for `history --json`: null when never checked.
Json check_summary_json(const ops::HistoryEntry& h) {
    if (!h.check) return Json();
    const env::GpuFigures& g = h.check->gpu;
    return Json{{"when", h.check->when},
                {"clean", h.check->findings().empty()},
                {"findings", h.check->findings()},
                {"context_bytes", g.context_bytes ? Json(*g.context_bytes) : Json()},
                {"matmul_tflops", g.matmul_tflops ? Json(*g.matmul_tflops) : Json()},
                {"changes", h.check_changes}};
}

// "  check 2026-…: clean, cuda context 512 MiB, bf16 matmul 710.2 TFLOP/s", then what changed
// since the previous checked generation.
void print_check_summary(const ops::HistoryEntry& h) {
    if (!h.check) return;
    const auto findings = h.check->findings();
    std::string line = findings.empty() ? "clean" : counted(findings.size(), "finding", "findings");
    const env::GpuFigures& g = h.check->gpu;
    if (g.context_bytes)
        line += ", cuda context " + std::to_string((*g.context_bytes + (1u << 19)) >> 20) + " MiB";
    if (g.matmul_tflops) {
        char m[64];
        std::snprintf(m, sizeof m, ", bf16 matmul %.1f TFLOP/s", *g.matmul_tflops);
        line += m;
    }
    std::printf("           check %s: %s\n", h.check->when.c_str(), line.c_str());
    for (const auto& c : h.check_changes)
        std::printf("           ! %s\n", c.c_str());
}

void run_history(const GlobalOptions& global, const HistoryCommand& cmd) {
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    const ops::History history = ops::history(ctx, cmd.env);
    if (global.json) {
        Json list = Json::array(), events = Json::array(), pins = Json::array();
        for (const auto& h : history.generations)
            list.push_back(Json{{"generation", h.generation.number},
                                {"current", h.current},
                                {"complete", h.generation.complete},
                                {"pinned", h.pinned},
                                {"created", h.generation.created},
                                {"lock_digest", h.generation.lock_digest},
                                {"same_lock_as", h.same_lock_as ? Json(*h.same_lock_as) : Json()},
                                {"packages", h.generation.packages.size()},
                                {"added", h.added},
                                {"removed", h.removed},
                                {"changed", h.changed},
                                {"check", check_summary_json(h)}});
        for (const auto& e : history.events)
            events.push_back(Json{{"when", e.when},
                                  {"event", e.kind},
                                  {"from", e.kind == "rollback" ? Json(e.from) : Json()},
                                  {"generation", e.to},
                                  {"text", e.describe()}});
        for (const auto& p : history.pins)
            pins.push_back(Json{{"generation", p.number}, {"when", p.when}});
        std::printf("%s\n", json_line(Json{{"environment", cmd.env},
                                           {"generations", std::move(list)},
                                           {"events", std::move(events)},
                                           {"pins", std::move(pins)}})
                                .c_str());
        return;
    }
    for (const auto& h : history.generations) {
        std::printf(
            "%s gen %-4d %s  lock %s  %s%s%s\n", h.current ? "*" : " ", h.generation.number,
            h.generation.created.empty() ? "(unknown date)        " : h.generation.created.c_str(),
            h.generation.lock_digest.substr(0, 12).c_str(),
            counted(h.generation.packages.size(), "package", "packages").c_str(),
            h.pinned ? "  pinned" : "",
            h.generation.complete ? "" : "  INCOMPLETE (never switched to)");
        if (h.same_lock_as) {
            std::printf("           = same lock as generation %d\n", *h.same_lock_as);
            print_check_summary(h);
            continue;
        }
        for (const auto& a : h.added)
            std::printf("           + %s\n", a.c_str());
        for (const auto& c : h.changed)
            std::printf("           ~ %s\n", c.c_str());
        for (const auto& r : h.removed)
            std::printf("           - %s\n", r.c_str());
        print_check_summary(h);
    }
    for (const auto& d : history.damaged_checks)
        std::fprintf(stderr, "warning: %s\n", d.c_str());
    if (!history.events.empty()) {
        std::printf("events:\n");
        for (const auto& e : history.events)
            std::printf("  %s  %s\n", e.when.c_str(), e.describe().c_str());
    }
}

// A generation number given on the command line; `what` names the argument ("--to", "N").
int parse_generation_number(const std::string& text, const char* what) {
    // Digits only, 1 or more: no sign, no blank, nothing past them (gen-0 never exists).
    int n = 0;
    const bool digits =
        !text.empty() && text.size() <= 9 &&
        std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits) n = std::stoi(text);
    if (n < 1)
        throw Error(
            ErrorCode::usage,
            std::string(what) + " expects a generation number (1 or more), not '" + text + "'");
    return n;
}

// What a rollback did, on stderr: the switch, the lock written for the user to commit, and
// how the repository and the environment disagree when they still do.
void report_rollback(const GlobalOptions& global, const std::string& env,
                     const ops::RollbackResult& r, const std::optional<ops::WrittenLock>& written,
                     const ops::LockAgreement& agreement) {
    if (global.verbosity < 0) return;
    if (r.from == r.to)
        std::fprintf(stderr, "%s is already on generation %d\n", env.c_str(), r.to);
    else
        std::fprintf(stderr, "%s: generation %d → %d (%.1f ms)\n", env.c_str(), r.from, r.to,
                     r.seconds * 1000);
    if (written) {
        const std::string name = agreement.lock_name();
        if (written->changed)
            std::fprintf(stderr,
                         "wrote generation %d's lock into %s: commit it (`git commit %s`), so "
                         "that CI and teammates build generation %d's packages too\n",
                         written->generation, name.c_str(), name.c_str(), written->generation);
        else
            std::fprintf(stderr, "%s holds generation %d's lock already\n", name.c_str(),
                         written->generation);
        if (!written->manifest_stale.empty())
            std::fprintf(stderr,
                         "warning: manifests/%s.toml is not the manifest this lock was made from "
                         "(%s): revert it in git too, or the next `envbox lock %s` or `envbox "
                         "run %s` locks it again\n",
                         env.c_str(), written->manifest_stale.front().c_str(), env.c_str(),
                         env.c_str());
    }
    if (r.last_clean_check == r.to)
        std::fprintf(stderr, "generation %d's kept check is clean (`envbox history %s`)\n", r.to,
                     env.c_str());
    else if (r.last_clean_check)
        std::fprintf(stderr,
                     "the last clean check is generation %d's (`envbox rollback %s --to %d`)\n",
                     *r.last_clean_check, env.c_str(), *r.last_clean_check);
    note_lock_agreement(global, agreement);
}

void run_rollback(const GlobalOptions& global, const RollbackCommand& cmd) {
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    std::optional<int> target;
    if (!cmd.to.empty()) target = parse_generation_number(cmd.to, "--to");
    auto r = ops::rollback(ctx, cmd.env, target);
    std::optional<ops::WrittenLock> written;
    if (cmd.write_lock) written = ops::write_generation_lock(ctx, cmd.env, r.to);
    const ops::LockAgreement agreement = ops::lock_agreement(ctx, cmd.env);
    if (global.json) {
        Json report = {
            {"environment", cmd.env}, {"from", r.from}, {"to", r.to}, {"seconds", r.seconds}};
        report["lock_written"] = written ? Json(written->path.string()) : Json();
        report["last_clean_check"] = r.last_clean_check ? Json(*r.last_clean_check) : Json();
        report["manifests_lock"] = lock_agreement_json(agreement);
        std::printf("%s\n", json_line(report, 4).c_str());  // a switch takes well under 1 ms
        return;
    }
    report_rollback(global, cmd.env, r, written, agreement);
}

// `pin ENV [N]` and `unpin ENV N`.
void run_pin(const GlobalOptions& global, const PinCommand& cmd, bool pin) {
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    std::optional<int> number;
    if (!cmd.number.empty()) number = parse_generation_number(cmd.number, "N");
    const ops::PinResult r =
        pin ? ops::pin(ctx, cmd.env, number) : ops::unpin(ctx, cmd.env, *number);
    if (global.json) {
        std::printf("%s\n", json_line(Json{{"environment", cmd.env},
                                           {"generation", r.number},
                                           {"pinned", pin},
                                           {"changed", r.changed},
                                           {"pins", r.pinned}})
                                .c_str());
        return;
    }
    if (global.verbosity < 0) return;
    const std::string gen = cmd.env + " generation " + std::to_string(r.number);
    if (pin)
        std::fprintf(stderr, "%s %s: gc keeps it whatever --keep says (`envbox unpin %s %d`)\n",
                     gen.c_str(), r.changed ? "pinned" : "was pinned already", cmd.env.c_str(),
                     r.number);
    else
        std::fprintf(stderr, "%s %s\n", gen.c_str(),
                     r.changed ? "unpinned: the next gc may remove it" : "was not pinned");
}

// gc collected everything else; an environment whose pins did not read is still an error.
void fail_on_unreadable_pins(const ops::GcResult& r) {
    if (r.unreadable_pins.empty()) return;
    throw Error(ErrorCode::integrity,
                r.unreadable_pins.front() +
                    (r.unreadable_pins.size() > 1
                         ? " (and " + std::to_string(r.unreadable_pins.size() - 1) + " more)"
                         : "") +
                    "; gc kept every generation of that environment");
}

void run_gc(const GlobalOptions& global, const GcCommand& cmd) {
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    ops::GcOptions opt;
    opt.keep = cmd.keep;
    opt.dry_run = cmd.dry_run;
    auto r = ops::gc(ctx, opt);
    if (global.json) {
        Json report = {{"dry_run", cmd.dry_run},
                       {"generations_removed", r.generations_removed.size()},
                       {"wheels_removed", r.wheels_removed},
                       {"bytecode_removed", r.bytecode_removed},
                       {"objects_removed", r.objects_removed},
                       {"temporary_removed", r.temporary_removed},
                       {"build_environments_removed", r.build_environments_removed},
                       {"bytes_freed", r.bytes_freed},
                       {"busy", r.busy.size()},
                       {"removed", r.generations_removed},
                       {"in_use", r.in_use},
                       {"kept", r.kept},
                       {"unreadable_pins", r.unreadable_pins}};
        std::printf("%s\n", json_line(report).c_str());
        return fail_on_unreadable_pins(r);
    }
    const char* verb = cmd.dry_run ? "would remove" : "removed";
    for (const auto& g : r.generations_removed)
        std::printf("%s %s\n", verb, g.c_str());
    for (const auto& k : r.kept)
        std::fprintf(stderr, "note: kept %s\n", k.c_str());
    for (const auto& u : r.in_use)
        std::fprintf(stderr, "note: kept %s\n", u.c_str());
    for (const auto& b : r.busy)
        std::fprintf(stderr, "note: skipped %s: a create is running there\n", b.c_str());
    const std::string bytecode =
        (r.bytecode_removed ? ", " + counted(r.bytecode_removed, "bytecode list", "bytecode lists")
                            : "") +
        (r.build_environments_removed ? ", " + counted(r.build_environments_removed,
                                                       "build environment", "build environments")
                                      : "");
    if (global.verbosity >= 0)
        std::fprintf(stderr, "gc %s %s, %s%s, %s, %s: %s %s\n", verb,
                     counted(r.generations_removed.size(), "generation", "generations").c_str(),
                     counted(r.wheels_removed, "wheel file list", "wheel file lists").c_str(),
                     bytecode.c_str(),
                     counted(r.objects_removed, "store object", "store objects").c_str(),
                     counted(r.temporary_removed, "temporary file", "temporary files").c_str(),
                     human_bytes(r.bytes_freed).c_str(), cmd.dry_run ? "would be freed" : "freed");
    fail_on_unreadable_pins(r);
}

}  // namespace

void register_history(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<HistoryCommand>();
    CLI::App* c = app.add_subcommand(
        "history",
        "Generations of ENV (dates, lock digests, package changes, pins) and its rollbacks");
    c->add_option("ENV", cmd->env, "Environment")->required();
    c->callback([&global, cmd] { run_history(global, *cmd); });
}

void register_rollback(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<RollbackCommand>();
    CLI::App* c =
        app.add_subcommand("rollback", "Switch ENV back to an earlier generation, atomically");
    c->add_option("ENV", cmd->env, "Environment")->required();
    c->add_option("--to", cmd->to, "Generation number (default: the previous one)")->type_name("N");
    c->add_flag("--write-lock", cmd->write_lock,
                "Also write that generation's lock into manifests/pylock.ENV.toml, to commit");
    c->callback([&global, cmd] { run_rollback(global, *cmd); });
}

void register_pin(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<PinCommand>();
    CLI::App* c = app.add_subcommand(
        "pin", "Mark a generation of ENV known-good: gc keeps it whatever --keep says");
    c->add_option("ENV", cmd->env, "Environment")->required();
    c->add_option("N", cmd->number, "Generation number (default: the current one)")
        ->type_name("INT");
    c->footer(
        "See `envbox history ENV` for the generations and their pins; `envbox unpin ENV N` "
        "lets gc remove it again.");
    c->callback([&global, cmd] { run_pin(global, *cmd, true); });
}

void register_unpin(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<PinCommand>();
    CLI::App* c = app.add_subcommand(
        "unpin", "Remove the pin of a generation of ENV: gc counts it with --keep again");
    c->add_option("ENV", cmd->env, "Environment")->required();
    c->add_option("N", cmd->number, "Generation number")->type_name("INT")->required();
    c->callback([&global, cmd] { run_pin(global, *cmd, false); });
}

void register_gc(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<GcCommand>();
    CLI::App* c = app.add_subcommand("gc", "Delete old generations and unreferenced store content");
    c->add_flag("--dry-run", cmd->dry_run, "Report what would be deleted");
    c->add_option("--keep", cmd->keep,
                  "Complete unpinned generations to keep per environment (default 3; "
                  "the current one and pinned ones are always kept)");
    c->callback([&global, cmd] { run_gc(global, *cmd); });
}

}  // namespace envbox::cli
