// envbox tree ENV [--invert PKG] [--depth N] [--json] and envbox why ENV PKG [--json]
#include "envbox/ops/tree.hpp"

#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "cli/tree_render.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/json.hpp"
#include "envbox/util/printable.hpp"

namespace envbox::cli {
namespace {

struct TreeCommand {
    std::string env, invert;
    std::string target;  ///< --target, may be empty
    std::optional<std::size_t> depth;
};

struct WhyCommand {
    std::string env, package;
    std::string target;  ///< --target, may be empty
};

void print(const std::string& text) {
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0)
        throw Error(ErrorCode::generic, "cannot write to stdout");
}

void run_tree(const GlobalOptions& global, const TreeCommand& cmd) {
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    ops::require_environment_files(ctx, cmd.env);
    note_if_stale(global, ctx, cmd.env);
    const ops::DependencyGraph g = ops::read_dependency_graph(ctx, cmd.env, cmd.target);
    ops::TreeOptions options;
    if (!cmd.invert.empty()) options.invert = ops::package_node(g, cmd.invert);
    options.depth = cmd.depth;
    const auto lines = ops::tree_lines(g, options);
    if (global.json)
        print(json_line(tree_json(g, lines, options)) + "\n");
    else
        print(printable_lines(render_tree(g, lines)));  // names and versions from the lock
}

void run_why(const GlobalOptions& global, const WhyCommand& cmd) {
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    ops::require_environment_files(ctx, cmd.env);
    note_if_stale(global, ctx, cmd.env);
    const ops::DependencyGraph g = ops::read_dependency_graph(ctx, cmd.env, cmd.target);
    const std::size_t target = ops::package_node(g, cmd.package);
    const ops::WhyPaths why = ops::why_paths(g, target);
    if (global.json)
        print(json_line(why_json(g, target, why)) + "\n");
    else
        print(printable_lines(render_why(g, target, why)));
}

}  // namespace

void register_tree(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<TreeCommand>();
    CLI::App* c = app.add_subcommand(
        "tree", "Show ENV's dependency tree from its lock: the manifest's requirements at the top");
    c->add_option("ENV", cmd->env, "Environment")->required();
    c->add_option("--invert", cmd->invert,
                  "Show the packages that depend on PKG, up to the manifest's requirements")
        ->option_text("PKG");
    c->add_option("--depth", cmd->depth, "Show N levels below the top (default: 255, as uv tree)")
        ->option_text("N")
        ->check(CLI::Range(0, 255).description(""));
    c->add_option("--target", cmd->target,
                  "Of a lock for several platforms, the tree of this one (a platform or its "
                  "machine: aarch64)");
    c->callback([&global, cmd] { run_tree(global, *cmd); });
}

void register_why(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<WhyCommand>();
    CLI::App* c = app.add_subcommand(
        "why", "Show each path from the manifest's requirements to PKG in ENV's lock");
    c->add_option("ENV", cmd->env, "Environment")->required();
    c->add_option("PKG", cmd->package, "Package")->required();
    c->add_option("--target", cmd->target,
                  "Of a lock for several platforms, the paths on this one (a platform or its "
                  "machine: aarch64)");
    c->callback([&global, cmd] { run_why(global, *cmd); });
}

}  // namespace envbox::cli
