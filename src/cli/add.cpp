// envbox add ENV REQ… [--index NAME] [--no-sync], envbox remove ENV NAME… [--no-sync]
#include <cstdio>
#include <functional>
#include <memory>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "envbox/ops/edit.hpp"
#include "envbox/util/json.hpp"

namespace envbox::cli {
namespace {

struct AddCommand {
    std::string env;
    std::vector<std::string> requirements;
    std::string index;                   ///< --index, may be empty
    std::vector<std::string> editables;  ///< -e/--editable PATH[extras]
    std::vector<std::string> files;      ///< -r/--requirement FILE
    bool no_sync = false, offline = false, allow_cuda_change = false;
};

struct RemoveCommand {
    std::string env;
    std::vector<std::string> names;
    bool no_sync = false, offline = false, allow_cuda_change = false;
};

std::string joined(const std::vector<std::string>& words) {
    std::string out;
    for (const auto& w : words)
        out += (out.empty() ? "" : ", ") + w;
    return out;
}

void print_json(const std::string& env, const ops::EditResult& r) {
    Json report = {{"environment", env},
                   {"manifest", r.manifest.string()},
                   {"manifest_changed", r.manifest_changed},
                   {"added", r.added},
                   {"replaced", r.replaced},
                   {"removed", r.removed},
                   {"pinned", r.pinned},
                   {"lock", r.lock.lock_path.string()},
                   {"lock_changed", r.lock.changed},
                   {"packages", r.lock.packages},
                   {"changes", changes_json(r.lock.changes)},
                   {"cuda_change", r.lock.cuda_change ? Json(*r.lock.cuda_change) : Json(nullptr)},
                   {"generation", r.create ? Json(r.create->generation) : Json(nullptr)},
                   {"created", r.create ? r.create->changed : false}};
    std::printf("%s\n", json_line(report).c_str());
}

// What the edit did, the lock's summary and change list, then what create did.
void print_text(const GlobalOptions& global, const std::string& env, const std::string& index,
                const ops::EditResult& r) {
    if (global.verbosity < 0) return;
    const std::string manifest = "manifests/" + r.manifest.filename().string();
    if (!r.added.empty())
        std::fprintf(stderr, "Added %s to %s\n", joined(r.added).c_str(), manifest.c_str());
    if (!r.replaced.empty())
        std::fprintf(stderr, "Replaced the requirement of %s in %s\n", joined(r.replaced).c_str(),
                     manifest.c_str());
    if (!r.removed.empty())
        std::fprintf(stderr, "Removed %s from %s\n", joined(r.removed).c_str(), manifest.c_str());
    if (!r.pinned.empty())
        std::fprintf(stderr, "Pinned %s to the index %s in [sources]\n", joined(r.pinned).c_str(),
                     index.c_str());
    if (!r.manifest_changed)
        std::fprintf(stderr, "%s already requires that; it is unchanged\n", manifest.c_str());
    report_lock(global, env, r.lock);
    if (!r.create) {
        std::fprintf(stderr, "Not creating %s (--no-sync); `envbox create %s` builds it\n",
                     env.c_str(), env.c_str());
    } else if (!r.create->changed) {
        std::fprintf(stderr, "%s is up to date (generation %d)\n", env.c_str(),
                     r.create->generation);
    } else {
        std::fprintf(stderr, "Installed %s (%s) in %.2f s into %s generation %d\n",
                     counted(r.create->packages, "package", "packages").c_str(),
                     counted(r.create->build.install.files, "file", "files").c_str(),
                     r.create->seconds, env.c_str(), r.create->generation);
    }
}

// One edit run with a console progress, then reported.
void run_edit(const GlobalOptions& global, const std::string& env, const std::string& index,
              const std::function<ops::EditResult(const ops::Context&)>& edit) {
    ConsoleProgress progress(global.verbosity, stderr_is_tty());
    ops::Context ctx = make_context(global, progress);
    ops::EditResult r = edit(ctx);
    progress.clear();
    if (global.json)
        print_json(env, r);
    else
        print_text(global, env, index, r);
}

void run_add(const GlobalOptions& global, const AddCommand& cmd) {
    ops::AddOptions opt;
    opt.env = cmd.env;
    opt.requirements = cmd.requirements;
    for (const auto& e : cmd.editables) {  // a path as the user typed it, from here
        const auto bracket = e.find('[');
        opt.editables.push_back({std::filesystem::absolute(e.substr(0, bracket)).lexically_normal(),
                                 bracket == std::string::npos ? "" : e.substr(bracket)});
    }
    for (const auto& f : cmd.files)
        opt.requirement_files.push_back(std::filesystem::absolute(f));
    if (!cmd.index.empty()) opt.index = cmd.index;
    opt.sync = !cmd.no_sync;
    opt.offline = cmd.offline;
    opt.allow_cuda_change = cmd.allow_cuda_change;
    run_edit(global, cmd.env, cmd.index,
             [&](const ops::Context& ctx) { return ops::add(ctx, opt); });
}

void run_remove(const GlobalOptions& global, const RemoveCommand& cmd) {
    ops::RemoveOptions opt;
    opt.env = cmd.env;
    opt.names = cmd.names;
    opt.sync = !cmd.no_sync;
    opt.offline = cmd.offline;
    opt.allow_cuda_change = cmd.allow_cuda_change;
    run_edit(global, cmd.env, "", [&](const ops::Context& ctx) { return ops::remove(ctx, opt); });
}

}  // namespace

void register_add(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<AddCommand>();
    CLI::App* c = app.add_subcommand(
        "add", "Add requirements to manifests/ENV.toml (comments and layout kept), lock, create");
    c->footer(
        "A package already required gets the new requirement in its place. An invalid "
        "requirement is refused (exit 2) before anything is written; when the lock or the "
        "create fails, the manifest and the lock are put back as they were.");
    c->add_option("ENV", cmd->env, "Environment")->required();
    c->add_option(
        "REQ", cmd->requirements,
        "PEP 508 requirements: 'tqdm', 'torch==2.11.0', 'numpy>=2; python_version>=\"3.12\"'");
    c->add_option("-e,--editable", cmd->editables,
                  "A folder of the project with a pyproject.toml (PATH or 'PATH[extra,…]'), "
                  "required by its [project] name and installed editable: [sources] NAME = "
                  "{ path = \"…\", editable = true }");
    c->add_option("-r,--requirement", cmd->files,
                  "A pip requirements file: its requirements and -e folders are added (its index "
                  "options are named, not applied)");
    c->add_option("--index", cmd->index,
                  "Pin the added packages to this [[index]] of the manifest (in [sources])");
    c->add_flag("--no-sync", cmd->no_sync, "Stop after the lock: do not create the environment");
    c->add_flag("--offline", cmd->offline, "Use only cached index pages and the store");
    c->add_flag("--allow-cuda-change", cmd->allow_cuda_change,
                "Lock even when ENV moves to another CUDA line (refused without it)");
    c->callback([&global, cmd] { run_add(global, *cmd); });
}

void register_remove(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<RemoveCommand>();
    CLI::App* c = app.add_subcommand(
        "remove",
        "Remove requirements from manifests/ENV.toml (comments and layout kept), lock, "
        "create");
    c->footer(
        "NAME is compared canonicalized (PEP 503: Typing_Extensions is typing-extensions); every "
        "requirement of that name goes, its [sources] pin stays. A name that is not required is "
        "refused (exit 2); when the lock or the create fails, the manifest and the lock are put "
        "back as they were.");
    c->add_option("ENV", cmd->env, "Environment")->required();
    c->add_option("NAME", cmd->names, "Package names")->required();
    c->add_flag("--no-sync", cmd->no_sync, "Stop after the lock: do not create the environment");
    c->add_flag("--offline", cmd->offline, "Use only cached index pages and the store");
    c->add_flag("--allow-cuda-change", cmd->allow_cuda_change,
                "Lock even when ENV moves to another CUDA line (refused without it)");
    c->callback([&global, cmd] { run_remove(global, *cmd); });
}

}  // namespace envbox::cli
