// envbox list, envbox show ENV
#include "envbox/ops/inspect.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "cli/lock_agreement.hpp"
#include "cli/progress.hpp"
#include "envbox/util/json.hpp"

namespace envbox::cli {
namespace {

struct ListCommand {
    bool all = false;  ///< --all: every project's environments
};

struct ShowCommand {
    std::string env;
};

void run_list(const GlobalOptions& global, const ListCommand& cmd) {
    const bool all = cmd.all;
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    auto envs = ops::list_environments(ctx, all);
    if (global.json) {
        Json list = Json::array();
        for (const auto& e : envs)
            list.push_back(Json{{"project", e.project},
                                {"name", e.name},
                                {"current", e.current ? Json(*e.current) : Json()},
                                {"generations", e.generations},
                                {"pinned", e.pinned},
                                {"packages", e.packages},
                                {"python", e.python_version},
                                {"manifests_lock", lock_agreement_json(e.lock)}});
        std::printf("%s\n", json_line(list).c_str());
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
        std::string pinned;
        for (int n : e.pinned)
            pinned += (pinned.empty() ? "  pinned " : ", ") + std::to_string(n);
        std::printf("  %-24s %s  %s  python %s%s\n", e.name.c_str(),
                    e.current ? ("gen " + std::to_string(*e.current)).c_str() : "(none)",
                    counted(e.packages, "package", "packages").c_str(),
                    e.python_version.empty() ? "-" : e.python_version.c_str(), pinned.c_str());
        if (e.lock.disagrees())  // the marker; the note below says what to do
            std::printf("  %-24s ! %s\n", "", e.lock.summary().c_str());
    }
    std::fflush(stdout);
    for (const auto& e : envs)
        note_lock_agreement(global, e.lock);
}

void print_show_json(const ops::EnvDetails& d) {
    Json generations = Json::array(), packages = Json::array();
    auto is_pinned = [&d](int n) {
        return std::find(d.pinned.begin(), d.pinned.end(), n) != d.pinned.end();
    };
    for (const auto& g : d.generations)
        generations.push_back(Json{{"number", g.number},
                                   {"complete", g.complete},
                                   {"pinned", is_pinned(g.number)},
                                   {"created", g.created},
                                   {"lock_digest", g.lock_digest}});
    if (d.current)
        for (const auto& p : d.current->packages)
            packages.push_back(
                Json{{"name", p.name},
                     {"version", p.version},
                     {"built", d.built.count(p.name) ? Json(d.built.at(p.name)) : Json()}});
    Json report = {{"name", d.name},
                   {"path", d.path.string()},
                   {"current", d.current ? Json(d.current->number) : Json()},
                   {"pinned", d.pinned},
                   {"files", d.files},
                   {"bytes", d.bytes},
                   {"unique_bytes", d.unique_bytes},
                   {"bytecode", Json{{"files", d.bytecode_files},
                                     {"bytes", d.bytecode_bytes},
                                     {"unique_bytes", d.bytecode_bytes - d.bytecode_shared_bytes},
                                     {"shared_bytes", d.bytecode_shared_bytes}}},
                   {"compile_caches",
                    Json{{"path", d.compile_cache.string()}, {"bytes", d.compile_cache_bytes}}},
                   {"generations", std::move(generations)},
                   {"packages", std::move(packages)},
                   {"manifests_lock", lock_agreement_json(d.lock)}};
    std::printf("%s\n", json_line(report).c_str());
}

void run_show(const GlobalOptions& global, const ShowCommand& cmd) {
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    auto d = ops::show_environment(ctx, cmd.env);
    if (global.json) return print_show_json(d);
    std::printf("%s  (%s)\n", d.name.c_str(), d.path.c_str());
    for (const auto& g : d.generations)
        std::printf("  gen %-4d %s  %s  lock %s%s%s\n", g.number, g.created.c_str(),
                    g.complete ? "complete  " : "incomplete", g.lock_digest.substr(0, 12).c_str(),
                    std::find(d.pinned.begin(), d.pinned.end(), g.number) != d.pinned.end()
                        ? "  pinned"
                        : "",
                    d.current && d.current->number == g.number ? "  <- current" : "");
    if (!d.current) {
        std::printf("  no complete generation\n");
        return;
    }
    if (d.lock.disagrees())
        std::printf("lock: %s\n", d.lock.summary().c_str());
    else if (d.lock.agrees)
        std::printf("lock: %s is generation %d's, the current one\n", d.lock.lock_name().c_str(),
                    d.current->number);
    std::printf("python %s (%s), platform %s\n", d.current->python_version.c_str(),
                d.current->python.c_str(), d.current->platform.c_str());
    std::printf("%s, %s; %s unique to this generation, the rest shared\n",
                counted(d.files, "file", "files").c_str(), human_bytes(d.bytes).c_str(),
                human_bytes(d.unique_bytes).c_str());
    if (d.bytecode_files > 0)
        std::printf(
            "bytecode: %s, %s; %s unique to this generation, %s shared with other "
            "generations or environments\n",
            counted(d.bytecode_files, ".pyc file", ".pyc files").c_str(),
            human_bytes(d.bytecode_bytes).c_str(),
            human_bytes(d.bytecode_bytes - d.bytecode_shared_bytes).c_str(),
            human_bytes(d.bytecode_shared_bytes).c_str());
    else
        std::printf("bytecode: none\n");
    if (d.compile_cache_bytes > 0)
        std::printf("compile caches: %s in %s\n", human_bytes(d.compile_cache_bytes).c_str(),
                    d.compile_cache.c_str());
    std::printf("%s:\n", counted(d.current->packages.size(), "package", "packages").c_str());
    for (const auto& p : d.current->packages)
        std::printf("  %s %s%s\n", p.name.c_str(), p.version.c_str(),
                    d.built.count(p.name) ? ("  (built from its sdist, build " +
                                             d.built.at(p.name).substr(0, 12) + ")")
                                                .c_str()
                                          : "");
    std::fflush(stdout);
    note_lock_agreement(global, d.lock);
}

}  // namespace

void register_list(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<ListCommand>();
    CLI::App* c =
        app.add_subcommand("list", "List environments (of this project; --all: of every project)");
    c->add_flag("--all", cmd->all, "Every project's environments");
    c->callback([&global, cmd] { run_list(global, *cmd); });
}

void register_show(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<ShowCommand>();
    CLI::App* c = app.add_subcommand("show", "Show an environment: generations, packages, sizes");
    c->add_option("ENV", cmd->env, "Environment")->required();
    c->callback([&global, cmd] { run_show(global, *cmd); });
}

}  // namespace envbox::cli
