// envbox export ENV [--format requirements-txt|pylock] [-o FILE]
#include "envbox/ops/export.hpp"

#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"

namespace envbox::cli {
namespace {

struct ExportCommand {
    std::string env, format = "requirements-txt", output;
    std::string target;  ///< --target, may be empty
    std::string wheels;  ///< --wheels DIR, may be empty
};

void run_export(const GlobalOptions& global, const ExportCommand& cmd) {
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    auto format =
        cmd.format == "pylock" ? ops::ExportFormat::pylock : ops::ExportFormat::requirements_txt;
    ops::require_environment_files(ctx, cmd.env);
    note_if_stale(global, ctx, cmd.env);
    ops::ExportResult r = ops::export_lock(ctx, cmd.env, format, cmd.target, cmd.wheels);
    if (global.verbosity >= 0 && !cmd.wheels.empty())
        std::fprintf(stderr, "Wrote %zu wheel%s built from sdists to %s\n", r.built_wheels,
                     r.built_wheels == 1 ? "" : "s", cmd.wheels.c_str());
    if (cmd.output.empty() || cmd.output == "-") {
        if (std::fwrite(r.text.data(), 1, r.text.size(), stdout) != r.text.size() ||
            std::fflush(stdout) != 0)
            throw Error(ErrorCode::generic, "cannot write the export to stdout");
        return;
    }
    write_file_atomic(cmd.output, r.text);
    if (global.verbosity >= 0)
        std::fprintf(stderr, "Exported %zu package%s of %s to %s\n", r.packages,
                     r.packages == 1 ? "" : "s", r.lock.c_str(), cmd.output.c_str());
}

}  // namespace

void register_export(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<ExportCommand>();
    CLI::App* c = app.add_subcommand(
        "export", "Write ENV's lock as pinned requirements with hashes (pip) or as PEP 751");
    c->add_option("ENV", cmd->env, "Environment")->required();
    c->add_option("--format", cmd->format,
                  "requirements-txt (for pip install --require-hashes -r) or pylock")
        ->check(CLI::IsMember({"requirements-txt", "pylock"}))
        ->capture_default_str();
    c->add_option("-o,--output", cmd->output, "Write to FILE (atomically) instead of stdout");
    c->add_option("--target", cmd->target,
                  "Of a lock for several platforms, the requirements of this one (a platform "
                  "or its machine: aarch64)");
    c->add_option("--wheels", cmd->wheels,
                  "Also write the wheels envbox built from the lock's sdists, folders and git "
                  "commits (ENV's current "
                  "generation) into DIR, and point the requirements file at them (--find-links, "
                  "their hashes), so pip installs them instead of building");
    c->callback([&global, cmd] { run_export(global, *cmd); });
}

}  // namespace envbox::cli
