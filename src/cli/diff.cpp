// envbox diff A [B], envbox diff --textconv FILE
#include "envbox/ops/diff.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "cli/commands.hpp"
#include "cli/diff_render.hpp"
#include "cli/progress.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"

namespace envbox::cli {
namespace {

struct DiffCommand {
    std::string a, b;             ///< the old and the new side; b may be empty (see its help)
    std::string format = "text";  ///< --format text|markdown|json (--json: json)
    std::string target;           ///< --target, may be empty
    std::string textconv_file;    ///< --textconv FILE
};

void run_diff(const GlobalOptions& global, const DiffCommand& cmd) {
    if (!cmd.textconv_file.empty()) {
        const std::string& path = cmd.textconv_file;
        std::fputs(render_textconv(ops::lock_view(read_input_file(path), path)).c_str(), stdout);
        return;
    }
    if (cmd.a.empty())
        throw Error(ErrorCode::usage, "envbox diff needs A (and optionally B), or --textconv FILE");
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    auto [old_side, new_side] = cmd.b.empty()
                                    ? ops::load_sides(ctx, cmd.a, cmd.target)
                                    : std::pair{ops::load_side(ctx, cmd.a, false, cmd.target),
                                                ops::load_side(ctx, cmd.b, false, cmd.target)};
    ops::Diff d = ops::diff(old_side, new_side);
    std::string out;
    if (cmd.format == "json" || global.json)
        out = render_json(d);
    else if (cmd.format == "markdown")
        out = render_markdown(d);
    else {
        bool color = global.color == "always" ||
                     (global.color == "auto" && ::isatty(1) && !std::getenv("NO_COLOR"));
        out = render_text(d, color);
    }
    std::fputs(out.c_str(), stdout);
}

}  // namespace

void register_diff(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<DiffCommand>();
    CLI::App* c = app.add_subcommand("diff", "What changed between two locks or environments");
    c->add_option("A", cmd->a, "ENV, lock path, ENV@GITREV or ENV#GEN (old side)");
    c->add_option("B", cmd->b,
                  "New side (default, as git diff: ENV: current generation → lock; "
                  "ENV@REV: → the working lock; ENV#N: → the current generation)");
    c->add_option("--format", cmd->format, "text, markdown or json")
        ->check(CLI::IsMember({"text", "markdown", "json"}));
    c->add_option("--textconv", cmd->textconv_file,
                  "Print FILE (a lock) as git's diff driver should show it");
    c->add_option("--target", cmd->target,
                  "Of locks for several platforms, what this one installs (a platform or its "
                  "machine: aarch64)");
    c->callback([&global, cmd] { run_diff(global, *cmd); });
}

}  // namespace envbox::cli
