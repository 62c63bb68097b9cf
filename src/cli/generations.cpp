// envbox verify, history, rollback, gc
#include "envbox/ops/generations.hpp"

#include <cstdio>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "envbox/util/error.hpp"

namespace envbox::cli {

void run_verify(const GlobalOptions& global, const std::string& env, bool deep) {
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    ops::VerifyResult r = ops::verify(ctx, env, deep);
    const auto& rep = r.report;
    if (global.json) {
        std::printf(
            "{\"environment\": %s, \"generation\": %d, \"deep\": %s, \"clean\": %s, "
            "\"files_checked\": %zu, "
            "\"hashed\": %zu, \"seconds\": %.3f, \"drift\": [",
            json_quote(env).c_str(), r.generation.number, deep ? "true" : "false",
            rep.clean() ? "true" : "false", rep.files_checked, rep.hashed, r.seconds);
        for (std::size_t i = 0; i < rep.drift.size(); ++i)
            std::printf("%s{\"kind\": %s, \"path\": %s, \"detail\": %s}", i ? ", " : "",
                        json_quote(env::drift_kind_name(rep.drift[i].kind)).c_str(),
                        json_quote(rep.drift[i].path).c_str(),
                        json_quote(rep.drift[i].detail).c_str());
        std::printf("]}\n");
    } else {
        for (const auto& d : rep.drift)
            std::printf("%-9s %s%s%s\n", env::drift_kind_name(d.kind), d.path.c_str(),
                        d.detail.empty() ? "" : "  (",
                        d.detail.empty() ? "" : (d.detail + ")").c_str());
        if (global.verbosity >= 0)
            std::fprintf(
                stderr, "%s generation %d: %s (%zu files checked%s, %zu hashed, %.2f s)\n",
                env.c_str(), r.generation.number,
                rep.clean()
                    ? "clean"
                    : (std::to_string(rep.drift.size()) + " differences from the lock").c_str(),
                rep.files_checked, deep ? " by content" : "", rep.hashed, r.seconds);
        if (global.verbosity > 1)
            std::fprintf(stderr, "  seconds: load %.3f, plan %.3f, check %.3f\n", r.load_s,
                         r.plan_s, r.check_s);
    }
    if (!rep.clean())
        throw Error(ErrorCode::integrity,
                    env + " has drifted from its lock (" + std::to_string(rep.drift.size()) +
                        " differences); `envbox create --force " + env +
                        "` builds a fresh generation from verified store objects, "
                        "`envbox rollback " +
                        env + "` switches back");
}

void run_history(const GlobalOptions& global, const std::string& env) {
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    auto entries = ops::history(ctx, env);
    if (global.json) {
        auto list = [](const std::vector<std::string>& v) {
            std::string o = "[";
            for (std::size_t i = 0; i < v.size(); ++i)
                o += (i ? ", " : "") + json_quote(v[i]);
            return o + "]";
        };
        std::printf("[");
        for (std::size_t i = 0; i < entries.size(); ++i) {
            const auto& h = entries[i];
            std::printf(
                "%s{\"generation\": %d, \"current\": %s, \"complete\": %s, \"created\": %s, "
                "\"lock_digest\": %s, "
                "\"packages\": %zu, \"added\": %s, \"removed\": %s, \"changed\": %s}",
                i ? ", " : "", h.generation.number, h.current ? "true" : "false",
                h.generation.complete ? "true" : "false", json_quote(h.generation.created).c_str(),
                json_quote(h.generation.lock_digest).c_str(), h.generation.packages.size(),
                list(h.added).c_str(), list(h.removed).c_str(), list(h.changed).c_str());
        }
        std::printf("]\n");
        return;
    }
    for (const auto& h : entries) {
        std::printf(
            "%s gen %-4d %s  lock %s  %zu packages%s\n", h.current ? "*" : " ", h.generation.number,
            h.generation.created.empty() ? "(unknown date)        " : h.generation.created.c_str(),
            h.generation.lock_digest.substr(0, 12).c_str(), h.generation.packages.size(),
            h.generation.complete ? "" : "  INCOMPLETE (never switched to)");
        for (const auto& a : h.added)
            std::printf("           + %s\n", a.c_str());
        for (const auto& c : h.changed)
            std::printf("           ~ %s\n", c.c_str());
        for (const auto& r : h.removed)
            std::printf("           - %s\n", r.c_str());
    }
}

void run_rollback(const GlobalOptions& global, const std::string& env, const std::string& to) {
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    std::optional<int> target;
    if (!to.empty()) {
        try {
            std::size_t used = 0;
            target = std::stoi(to, &used);
            if (used != to.size()) throw std::invalid_argument(to);
        } catch (const std::exception&) {
            throw Error(ErrorCode::usage, "--to expects a generation number, not '" + to + "'");
        }
    }
    auto r = ops::rollback(ctx, env, target);
    if (global.json) {
        std::printf("{\"environment\": %s, \"from\": %d, \"to\": %d, \"seconds\": %.4f}\n",
                    json_quote(env).c_str(), r.from, r.to, r.seconds);
        return;
    }
    if (global.verbosity >= 0) {
        if (r.from == r.to)
            std::fprintf(stderr, "%s is already on generation %d\n", env.c_str(), r.to);
        else
            std::fprintf(stderr, "%s: generation %d → %d (%.1f ms)\n", env.c_str(), r.from, r.to,
                         r.seconds * 1000);
    }
}

void run_gc(const GlobalOptions& global, int keep, bool dry_run) {
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    ops::GcOptions opt;
    opt.keep = keep;
    opt.dry_run = dry_run;
    auto r = ops::gc(ctx, opt);
    if (global.json) {
        auto list = [](const std::vector<std::string>& v) {
            std::string o = "[";
            for (std::size_t i = 0; i < v.size(); ++i)
                o += (i ? ", " : "") + json_quote(v[i]);
            return o + "]";
        };
        std::printf(
            "{\"dry_run\": %s, \"generations_removed\": %zu, \"wheels_removed\": %zu, "
            "\"objects_removed\": %zu, "
            "\"temporary_removed\": %zu, \"bytes_freed\": %llu, \"busy\": %zu, \"removed\": %s, "
            "\"in_use\": %s}\n",
            dry_run ? "true" : "false", r.generations_removed.size(), r.wheels_removed,
            r.objects_removed, r.temporary_removed, static_cast<unsigned long long>(r.bytes_freed),
            r.busy.size(), list(r.generations_removed).c_str(), list(r.in_use).c_str());
        return;
    }
    const char* verb = dry_run ? "would remove" : "removed";
    for (const auto& g : r.generations_removed)
        std::printf("%s %s\n", verb, g.c_str());
    for (const auto& u : r.in_use)
        std::fprintf(stderr, "note: kept %s\n", u.c_str());
    for (const auto& b : r.busy)
        std::fprintf(stderr, "note: skipped %s: a create is running there\n", b.c_str());
    if (global.verbosity >= 0)
        std::fprintf(stderr,
                     "gc %s %zu generations, %zu wheel file lists, %zu store objects, %zu "
                     "temporary files: %s %s\n",
                     verb, r.generations_removed.size(), r.wheels_removed, r.objects_removed,
                     r.temporary_removed, human_bytes(r.bytes_freed).c_str(),
                     dry_run ? "would be freed" : "freed");
}

}  // namespace envbox::cli
