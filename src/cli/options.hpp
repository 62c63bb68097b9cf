#pragma once
// Global options shared by every command (see docs/usage.md and docs/commands.md).

#include <CLI/CLI.hpp>
#include <string>

namespace envbox::cli {

struct GlobalOptions {
    std::string home;            ///< --home / ENVBOX_HOME
    std::string project;         ///< --project
    int verbosity = 0;           ///< -v (+1 each), -q (-1)
    bool json = false;           ///< --json
    std::string color = "auto";  ///< --color auto|always|never (NO_COLOR honoured)
};

/// Registers the global options on `app`. Every other command takes them after its name by
/// falling through to the main app; `run` cannot (the command's own `-v` would be envbox's), so
/// they are registered on it again with `on_subcommand`: without fallthrough and without their
/// environment variables (the main app reads those, once).
void add_global_options(CLI::App& app, GlobalOptions& options, bool on_subcommand = false);

/// Registers every command of the envbox surface on `app`.
void add_commands(CLI::App& app, GlobalOptions& options);

}  // namespace envbox::cli
