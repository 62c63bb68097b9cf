#pragma once
// Global options shared by every command (see README "Usage").

#include <string>

#include <CLI/CLI.hpp>

namespace envbox::cli {

struct GlobalOptions {
    std::string home;             ///< --home / ENVBOX_HOME
    std::string project;          ///< --project
    int verbosity = 0;            ///< -v (+1 each), -q (-1)
    bool json = false;            ///< --json
    std::string color = "auto";   ///< --color auto|always|never (NO_COLOR honoured)
};

/// Registers the global options on `app`.
void add_global_options(CLI::App& app, GlobalOptions& options);

/// Registers every command of the envbox surface on `app`.
void add_commands(CLI::App& app, GlobalOptions& options);

}  // namespace envbox::cli
