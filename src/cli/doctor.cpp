// envbox doctor [--json]
#include "envbox/ops/doctor.hpp"

#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/json.hpp"

namespace envbox::cli {
namespace {

std::string json_list(const std::vector<std::string>& v) {
    std::string o = "[";
    for (std::size_t i = 0; i < v.size(); ++i)
        o += (i ? ", " : "") + json_quote(v[i]);
    return o + "]";
}

const char* json_bool(bool b) {
    return b ? "true" : "false";
}

// The shape README.md documents under `doctor --json`; one object on one line.
void print_json(const ops::DoctorReport& r) {
    std::string o = "{\"ok\": " + std::string(json_bool(r.problems.empty()));
    o += ", \"problems\": " + json_list(r.problems);
    o += ", \"interpreters\": " + json_list(r.interpreters);
    o += ", \"driver\": " + (r.driver ? json_quote(*r.driver) : std::string("null"));
    o += ", \"cuda_lines\": " + json_list(r.cuda_lines);
    o += ", \"store\": {\"path\": " + json_quote(r.store_path) +
         ", \"filesystem\": " + json_quote(r.store_filesystem) +
         ", \"free_bytes\": " + std::to_string(r.store_free) +
         ", \"placing\": " + json_quote(r.link_mode) + "}";
    o += ", \"sandbox\": {\"ok\": " + std::string(json_bool(r.sandboxed)) +
         ", \"description\": " + json_quote(r.sandbox) + "}";
    o += ", \"indexes\": [";
    for (std::size_t i = 0; i < r.indexes.size(); ++i) {
        const auto& x = r.indexes[i];
        o += std::string(i ? ", " : "") + "{\"name\": " + json_quote(x.name) +
             ", \"url\": " + json_quote(x.url) + ", \"ok\": " + json_bool(x.ok) +
             ", \"status\": " + json_quote(x.status) +
             ", \"environments\": " + json_list(x.environments) + "}";
    }
    o += "], \"environments\": [";
    for (std::size_t i = 0; i < r.environments.size(); ++i) {
        const auto& e = r.environments[i];
        o += std::string(i ? ", " : "") + "{\"name\": " + json_quote(e.name) +
             ", \"ok\": " + json_bool(e.ok) + ", \"cuda_lines\": " + json_list(e.cuda_lines) +
             ", \"problem\": " + (e.ok ? std::string("null") : json_quote(e.problem)) + "}";
    }
    std::printf("%s]}\n", o.c_str());
}

void print_text(const ops::DoctorReport& r) {
    std::printf("interpreters:\n");
    if (r.interpreters.empty())
        std::printf("  none found (install Python, or set ENVBOX_PYTHON)\n");
    for (const auto& i : r.interpreters)
        std::printf("  %s\n", i.c_str());
    if (r.driver) {
        std::printf("NVIDIA driver: %s, runs CUDA", r.driver->c_str());
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
    }
    if (!r.indexes.empty()) std::printf("indexes:\n");
    for (const auto& i : r.indexes)
        std::printf("  %s  %s  %s\n", i.name.c_str(), i.url.c_str(), i.status.c_str());
}

}  // namespace

void run_doctor(const GlobalOptions& global) {
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    auto r = ops::doctor(ctx);
    if (global.json)
        print_json(r);
    else
        print_text(r);
    if (r.problems.empty()) return;
    std::fflush(stdout);
    std::string msg = std::to_string(r.problems.size()) +
                      (r.problems.size() == 1 ? " problem" : " problems") +
                      " for this project's manifests:";
    for (const auto& p : r.problems)
        msg += "\n  " + p;
    throw Error(ErrorCode::generic, msg);
}

}  // namespace envbox::cli
