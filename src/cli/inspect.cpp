// envbox list, envbox show ENV
#include "envbox/ops/inspect.hpp"

#include <cstdio>

#include "cli/commands.hpp"
#include "cli/progress.hpp"

namespace envbox::cli {

void run_list(const GlobalOptions& global, bool all) {
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    auto envs = ops::list_environments(ctx, all);
    if (global.json) {
        std::printf("[");
        for (std::size_t i = 0; i < envs.size(); ++i) {
            const auto& e = envs[i];
            std::printf(
                "%s{\"project\": %s, \"name\": %s, \"current\": %s, \"generations\": %zu, "
                "\"packages\": %zu, \"python\": %s}",
                i ? ", " : "", json_quote(e.project).c_str(), json_quote(e.name).c_str(),
                e.current ? std::to_string(*e.current).c_str() : "null", e.generations, e.packages,
                json_quote(e.python_version).c_str());
        }
        std::printf("]\n");
        return;
    }
    if (envs.empty()) {
        std::fprintf(stderr, "no environments%s\n",
                     ctx.project_root.empty() || all ? "" : " in this project");
        return;
    }
    std::string last_project = "\x01";
    for (const auto& e : envs) {
        if (e.project != last_project && (all || ctx.project_root.empty())) {
            std::printf("%s\n", e.project.empty() ? "(no project)" : e.project.c_str());
            last_project = e.project;
        }
        std::printf("  %-24s %s  %zu packages  python %s\n", e.name.c_str(),
                    e.current ? ("gen " + std::to_string(*e.current)).c_str() : "(none)",
                    e.packages, e.python_version.empty() ? "-" : e.python_version.c_str());
    }
}

void run_show(const GlobalOptions& global, const std::string& env) {
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    auto d = ops::show_environment(ctx, env);
    if (global.json) {
        std::printf(
            "{\"name\": %s, \"path\": %s, \"current\": %s, \"files\": %zu, \"bytes\": %llu, "
            "\"unique_bytes\": %llu, \"generations\": [",
            json_quote(d.name).c_str(), json_quote(d.path.string()).c_str(),
            d.current ? std::to_string(d.current->number).c_str() : "null", d.files,
            static_cast<unsigned long long>(d.bytes),
            static_cast<unsigned long long>(d.unique_bytes));
        for (std::size_t i = 0; i < d.generations.size(); ++i) {
            const auto& g = d.generations[i];
            std::printf(
                "%s{\"number\": %d, \"complete\": %s, \"created\": %s, \"lock_digest\": %s}",
                i ? ", " : "", g.number, g.complete ? "true" : "false",
                json_quote(g.created).c_str(), json_quote(g.lock_digest).c_str());
        }
        std::printf("], \"packages\": [");
        if (d.current)
            for (std::size_t i = 0; i < d.current->packages.size(); ++i)
                std::printf("%s{\"name\": %s, \"version\": %s}", i ? ", " : "",
                            json_quote(d.current->packages[i].name).c_str(),
                            json_quote(d.current->packages[i].version).c_str());
        std::printf("]}\n");
        return;
    }
    std::printf("%s  (%s)\n", d.name.c_str(), d.path.c_str());
    for (const auto& g : d.generations)
        std::printf("  gen %-4d %s  %s  lock %s%s\n", g.number, g.created.c_str(),
                    g.complete ? "complete  " : "incomplete", g.lock_digest.substr(0, 12).c_str(),
                    d.current && d.current->number == g.number ? "  <- current" : "");
    if (!d.current) {
        std::printf("  no complete generation\n");
        return;
    }
    std::printf("python %s (%s), platform %s\n", d.current->python_version.c_str(),
                d.current->python.c_str(), d.current->platform.c_str());
    std::printf("%zu files, %s; %s unique to this generation, the rest shared\n", d.files,
                human_bytes(d.bytes).c_str(), human_bytes(d.unique_bytes).c_str());
    std::printf("%zu packages:\n", d.current->packages.size());
    for (const auto& p : d.current->packages)
        std::printf("  %s %s\n", p.name.c_str(), p.version.c_str());
}

}  // namespace envbox::cli
