// envbox delete ENV [--force]
#include "envbox/ops/delete.hpp"

#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "cli/progress.hpp"

namespace envbox::cli {
namespace {

struct DeleteCommand {
    std::string env;
    bool force = false;
};

void run_delete(const GlobalOptions& global, const DeleteCommand& cmd) {
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    ops::DeleteResult r = ops::delete_environment(ctx, {cmd.env, cmd.force});
    if (global.verbosity < 0) return;
    for (const auto& u : r.in_use)
        std::fprintf(stderr, "envbox: warning: deleted %s (--force)\n", u.c_str());
    if (global.verbosity > 0)
        for (const auto& p : r.removed)
            std::fprintf(stderr, "removed %s\n", p.c_str());
    std::fprintf(
        stderr,
        "Deleted %s (%zu generation%s%s); its manifest and lock stay, and store content no other "
        "environment uses goes with the next `envbox gc`\n",
        cmd.env.c_str(), r.generations.size(), r.generations.size() == 1 ? "" : "s",
        r.pins.empty() ? "" : (", " + std::to_string(r.pins.size()) + " of them pinned").c_str());
}

}  // namespace

void register_delete(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<DeleteCommand>();
    CLI::App* c =
        app.add_subcommand("delete",
                           "Delete ENV: every generation and its folders (the store keeps "
                           "content until gc)");
    c->add_option("ENV", cmd->env, "Environment")->required();
    c->add_flag("--force", cmd->force, "Delete even while a process uses a generation");
    c->callback([&global, cmd] { run_delete(global, *cmd); });
}

}  // namespace envbox::cli
