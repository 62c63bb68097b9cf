// The command surface (ARCHITECTURE.md, "Commands"): the global options and the list of
// commands. Each command registers its own options and runs in its own file (lock.cpp, …).

#include "cli/commands.hpp"

#include "cli/options.hpp"

namespace envbox::cli {

void add_global_options(CLI::App& app, GlobalOptions& o, bool on_subcommand) {
    if (!on_subcommand)
        app.fallthrough();  // global options are accepted after the command name too
    auto* home = app.add_option("--home", o.home,
                                "Store and environments root (default: $ENVBOX_HOME, "
                                "else $XDG_DATA_HOME/envbox)");
    if (!on_subcommand) home->envname("ENVBOX_HOME");
    app.add_option("--project", o.project,
                   "Project root (default: nearest directory upward holding manifests/)");
    app.add_flag_function(
        "-v,--verbose", [&o](std::int64_t n) { o.verbosity += static_cast<int>(n); },
        "More output (repeatable)");
    app.add_flag_function(
        "-q,--quiet", [&o](std::int64_t n) { o.verbosity -= static_cast<int>(n); }, "Less output");
    app.add_flag("--json", o.json, "Machine-readable output where a command reports something");
    app.add_option("--color", o.color, "Colour: auto, always or never (NO_COLOR is honoured)")
        ->check(CLI::IsMember({"auto", "always", "never"}));
}

void add_commands(CLI::App& app, GlobalOptions& global) {
    // The order `envbox --help` and the completion scripts list them in.
    for (auto* register_command :
         {register_lock,      register_create, register_run,    register_diff,
          register_verify,    register_list,   register_show,   register_history,
          register_rollback,  register_gc,     register_doctor, register_init,
          register_export,    register_tree,   register_why,    register_add,
          register_remove,    register_delete, register_cache,  register_shell,
          register_push,      register_pull,   register_pack,   register_unpack,
          register_completion})
        register_command(app, global);
    app.require_subcommand(0, 1);
}

}  // namespace envbox::cli
