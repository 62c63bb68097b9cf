// The command surface (ARCHITECTURE.md, "Commands"): the global options and the list of
// commands. Each command registers its own options and runs in its own file (lock.cpp, …).

#include "cli/commands.hpp"

#include "cli/options.hpp"

namespace envbox::cli {

void add_global_options(CLI::App& app, GlobalOptions& o, bool on_subcommand) {
    if (!on_subcommand)
        app.fallthrough();  // global options are accepted after the command name too
    // On a command they are its own options too, in their own group, so its --help lists them.
    CLI::App& group = on_subcommand ? *app.add_option_group("Global options") : app;
    auto* home = group.add_option("--home", o.home,
                                  "Store and environments root (default: $ENVBOX_HOME, "
                                  "else $XDG_DATA_HOME/envbox)");
    if (!on_subcommand) home->envname("ENVBOX_HOME");
    group.add_option("--project", o.project,
                     "Project root (default: nearest directory upward holding manifests/)");
    group.add_flag_function(
        "-v,--verbose", [&o](std::int64_t n) { o.verbosity += static_cast<int>(n); },
        "More output (repeatable)");
    group.add_flag_function(
        "-q,--quiet", [&o](std::int64_t n) { o.verbosity -= static_cast<int>(n); }, "Less output");
    group.add_flag("--json", o.json, "Machine-readable output where a command reports something");
    group.add_option("--color", o.color, "Colour: auto, always or never (NO_COLOR is honoured)")
        ->check(CLI::IsMember({"auto", "always", "never"}));
}

void add_commands(CLI::App& app, GlobalOptions& global) {
    // The order `envbox --help` and the completion scripts list them in.
    for (auto* register_command :
         {register_lock,   register_create, register_run,       register_check,   register_diff,
          register_verify, register_list,   register_show,      register_history, register_rollback,
          register_pin,    register_unpin,  register_gc,        register_doctor,  register_init,
          register_export, register_tree,   register_why,       register_add,     register_remove,
          register_delete, register_cache,  register_shell,     register_push,    register_pull,
          register_pack,   register_unpack, register_completion})
        register_command(app, global);
    // Every command's --help is whole: the global options, and the exit statuses after a
    // command's own footer.
    auto complete_help = [&](CLI::App& c) {
        if (!c.get_option_no_throw("--home")) add_global_options(c, global, true);
        if (c.get_footer().find("Exit status") == std::string::npos)
            c.footer(c.get_footer() + "\n\n" + app.get_footer());
    };
    for (CLI::App* sub : app.get_subcommands({})) {
        complete_help(*sub);
        for (CLI::App* nested : sub->get_subcommands({}))  // `cache clean`
            if (!nested->get_name().empty()) complete_help(*nested);
    }
    app.require_subcommand(0, 1);
}

}  // namespace envbox::cli
