// envbox doctor [ENV] [--json]
#include "envbox/ops/doctor.hpp"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "cli/lock_agreement.hpp"
#include "cli/progress.hpp"
#include "envbox/ops/generations.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/json.hpp"

namespace envbox::cli {
namespace {

// The shape docs/usage.md documents under `doctor --json`.
Json json_report(const ops::DoctorReport& r) {
    Json indexes = Json::array(), environments = Json::array();
    for (const auto& x : r.indexes)
        indexes.push_back(Json{{"name", x.name},
                               {"url", x.url},
                               {"mirror", x.via},
                               {"ok", x.ok},
                               {"status", x.status},
                               {"environments", x.environments}});
    for (const auto& e : r.environments)
        environments.push_back(Json{{"name", e.name},
                                    {"ok", e.ok},
                                    {"cuda_lines", e.cuda_lines},
                                    {"problem", e.ok ? Json() : Json(e.problem)},
                                    {"manifests_lock", lock_agreement_json(e.lock)}});
    Json report = {{"ok", r.problems.empty()},
                   {"problems", r.problems},
                   {"interpreters", r.interpreters},
                   {"driver", r.driver ? Json(*r.driver) : Json()},
                   {"driver_source", r.driver ? Json(r.driver_source) : Json()},
                   {"cuda_lines", r.cuda_lines},
                   {"store",
                    {{"path", r.store_path},
                     {"filesystem", r.store_filesystem},
                     {"free_bytes", r.store_free},
                     {"placing", r.link_mode}}},
                   {"sandbox", {{"ok", r.sandboxed}, {"description", r.sandbox}}},
                   {"indexes", std::move(indexes)},
                   {"environments", std::move(environments)}};
    return report;
}

void print_text(const ops::DoctorReport& r) {
    std::printf("interpreters:\n");
    if (r.interpreters.empty())
        std::printf("%s", std::getenv("ENVBOX_PYTHON") && *std::getenv("ENVBOX_PYTHON")
                              ? "  none found: ENVBOX_PYTHON is set, and is not a Python 3 "
                                "interpreter envbox can run\n"
                              : "  none found (install Python, or set ENVBOX_PYTHON)\n");
    for (const auto& i : r.interpreters)
        std::printf("  %s\n", i.c_str());
    if (r.driver) {
        std::printf(
            "NVIDIA driver: %s%s, runs CUDA", r.driver->c_str(),
            r.driver_source == "installed" ? "" : (" (from " + r.driver_source + ")").c_str());
        for (const auto& l : r.cuda_lines)
            std::printf(" %s", l.c_str());
        std::printf("%s\n", r.cuda_lines.empty() ? " (no line envbox knows)" : "");
    } else {
        std::printf("NVIDIA driver: none found (CUDA environments build, but find no GPU here)\n");
    }
    std::printf("store: %s on %s, %s free; placing files: %s\n", r.store_path.c_str(),
                r.store_filesystem.c_str(), human_bytes(r.store_free).c_str(), r.link_mode.c_str());
    std::printf(
        "run sandbox: %s%s\n", r.sandbox.c_str(),
        r.sandboxed ? "" : "; `envbox run` warns and runs unsandboxed (--sandbox strict refuses)");
    if (!r.environments.empty()) std::printf("environments:\n");
    for (const auto& e : r.environments) {
        std::string lines;
        for (const auto& l : e.cuda_lines)
            lines += (lines.empty() ? " (CUDA " : ", ") + l;
        if (!lines.empty()) lines += ")";
        std::printf("  %s%s  %s\n", e.name.c_str(), lines.c_str(),
                    e.ok ? "ok" : ("CANNOT RUN: " + e.problem).c_str());
        if (e.lock.disagrees())
            std::printf("    warning: %s (`envbox verify %s` says how to make them agree)\n",
                        e.lock.summary().c_str(), e.name.c_str());
    }
    if (!r.indexes.empty()) std::printf("indexes:\n");
    for (const auto& i : r.indexes)
        std::printf("  %s  %s%s  %s\n", i.name.c_str(), i.url.c_str(),
                    i.via.empty() ? "" : (" (mirror: " + i.via + ")").c_str(), i.status.c_str());
}

// `doctor ENV`: the link check of ENV's current generation on this machine.
void add_link_check(const ops::Context& ctx, const std::string& env, ops::DoctorReport& r,
                    Json* json) {
    const env::LinkReport link = ops::check_current_links(ctx, env);
    for (const auto& f : link.findings)
        if (f.refuses() && !f.allowed) r.problems.push_back(env + ": " + f.message);
    if (json) {
        (*json)["link"] = link_json(link);
        return;
    }
    std::printf("link check of %s: %zu native files, %zu findings\n", env.c_str(),
                link.native_files, link.findings.size());
    for (const auto& f : link.findings)
        std::printf("  %s: %s\n", f.kind_name(), f.message.c_str());
}

void run_doctor(const GlobalOptions& global, const std::string& env) {
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    auto r = ops::doctor(ctx);
    if (global.json) {
        Json report = json_report(r);
        if (!env.empty()) add_link_check(ctx, env, r, &report);
        report["ok"] = r.problems.empty();
        report["problems"] = r.problems;
        std::printf("%s\n", json_line(report).c_str());
    } else {
        print_text(r);
        if (!env.empty()) add_link_check(ctx, env, r, nullptr);
    }
    if (r.problems.empty()) return;
    std::fflush(stdout);
    std::string msg = std::to_string(r.problems.size()) +
                      (r.problems.size() == 1 ? " problem" : " problems") +
                      " for this project's manifests:";
    for (const auto& p : r.problems)
        msg += "\n  " + p;
    throw Error(ErrorCode::generic, msg);
}

}  // namespace

void register_doctor(CLI::App& app, GlobalOptions& global) {
    CLI::App* c = app.add_subcommand(
        "doctor",
        "Interpreters, CUDA driver, store filesystem, index reachability; with ENV, "
        "also whether its native files link here");
    auto env = std::make_shared<std::string>();
    c->add_option("ENV", *env,
                  "Also link ENV's current generation on paper on this machine: libraries found "
                  "nowhere, other CUDA lines, missing symbols");
    c->callback([&global, env] { run_doctor(global, *env); });
}

}  // namespace envbox::cli
