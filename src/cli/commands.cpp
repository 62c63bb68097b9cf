// The command surface (ARCHITECTURE.md, "Commands"). Each command is registered here with its
// options and help and runs the function of its own file (create.cpp, run.cpp, …).

#include "cli/commands.hpp"

#include <algorithm>
#include <functional>
#include <optional>

#include "cli/options.hpp"
#include "envbox/util/error.hpp"

namespace envbox::cli {
namespace {

struct CommandSpec {
    const char* name;
    const char* summary;
    std::function<void(CLI::App&)> options;
    std::function<void()> run;
};

}  // namespace

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
    // Option values are held here so the parsed command lines stay valid for the run.
    static std::vector<std::string> envs;
    static std::string text_a, text_b, format = "text", link_mode, to_gen, textconv_file;
    static std::vector<std::string> upgrade_packages;
    static bool flag_a = false, flag_b = false, flag_c = false, flag_all = false,
                flag_no_wait = false, flag_force = false;
    static int keep = 3;
    static std::vector<std::string> command_line;
    static std::string sandbox_mode;
    static CLI::App* run_app = nullptr;

    const std::vector<CommandSpec> specs = {
        {"lock", "Resolve manifests/ENV.toml and write manifests/pylock.ENV.toml (PEP 751)",
         [](CLI::App& c) {
             c.add_option("ENV", envs, "Environments to lock")->required();
             c.add_flag("--check", flag_a, "Exit 3 if the lock is stale; write nothing");
             c.add_flag("--upgrade", flag_b, "Ignore locked versions");
             c.add_option("--upgrade-package", upgrade_packages,
                          "Ignore the locked version of P (repeatable)");
             c.add_flag("--offline", flag_c, "Use only cached index pages");
             c.add_flag("--allow-mixed-cuda", flag_all,
                        "Write a lock that mixes CUDA lines (recorded in the lock)");
         },
         [&global] { run_lock(global, envs, flag_a, flag_b, upgrade_packages, flag_c, flag_all); }},
        {"create", "Make ENV match its lock: fetch, build a new generation, switch atomically",
         [](CLI::App& c) {
             c.add_option("ENV", text_a, "Environment")->required();
             c.add_flag("--locked", flag_a,
                        "Fail (exit 3) if the lock is missing or stale instead of locking");
             c.add_flag("--frozen", flag_b,
                        "Use the lock as it is, without checking it against the manifest");
             c.add_option("--lock", text_b, "Install this PEP 751 file instead of the ENV lock");
             c.add_option("--link-mode", link_mode, "hardlink, reflink or copy")
                 ->check(CLI::IsMember({"hardlink", "reflink", "copy"}));
             c.add_flag("--offline", flag_c, "Use only the store and caches");
             c.add_flag("--no-wait", flag_no_wait,
                        "Fail at once if another envbox is building this environment");
             c.add_flag(
                 "--force,--reinstall", flag_force,
                 "Build a fresh generation even if up to date, from store objects checked by "
                 "content (the repair for what `verify` reports)");
         },
         [&global] {
             CreateArgs a{text_a, text_b, link_mode,    flag_a,
                          flag_b, flag_c, flag_no_wait, flag_force};
             run_create(global, a);
         }},
        {"run", "Run a command inside ENV (sandboxed where the kernel allows)",
         [&global](CLI::App& c) {
             // ENV is the first word unless `--` comes first: then the default environment. A word
             // after `--` reaches this check while the `--` is already among what was not parsed.
             c.add_option("ENV", text_a,
                          "Environment (default, when -- comes first: $ENVBOX_ENV, else "
                          "the project's only manifest)")
                 ->check([](const std::string&) {
                     static std::optional<bool> after_marker;  // decided once, at the parse
                     if (!after_marker) {
                         auto seen = run_app->remaining();
                         after_marker = std::find(seen.begin(), seen.end(), "--") != seen.end();
                     }
                     return *after_marker ? std::string("the command's own") : std::string();
                 });
             auto* off =
                 c.add_flag("--no-sandbox", flag_a, "Run without the sandbox (--sandbox off)");
             auto* locked =
                 c.add_flag("--locked", flag_b,
                            "Fail (exit 3) if the lock is missing or stale instead of locking");
             c.add_flag("--frozen", flag_c,
                        "Run the current generation as it is: no lock, no create")
                 ->excludes(locked);
             c.add_option("--sandbox", sandbox_mode,
                          "auto (default; warn when the kernel allows none), strict (refuse to run "
                          "unsandboxed) or off; default $ENVBOX_SANDBOX")
                 ->check(CLI::IsMember({"auto", "strict", "off"}))
                 ->excludes(off);
             // The command's first word and everything after it are the command's, as with `uv
             // run`: CLI11 stops at the first positional nothing takes (prefix_command). CMD takes
             // nothing (its check refuses every word); it exists so that `--` stays with `run`.
             c.add_option("CMD", command_line,
                          "The command and its arguments, which envbox never reads "
                          "(`--` before it is optional)")
                 ->expected(1, -1)
                 ->check([](const std::string&) { return std::string("the command's own"); });
             c.validate_positionals();
             c.prefix_command();
             add_global_options(c, global, true);
             c.fallthrough(false);
             run_app = &c;
         },
         [&global] {
             run_run(
                 global,
                 RunArgs{text_a, run_app->remaining(), flag_a, sandbox_mode, {}, flag_b, flag_c});
         }},
        {"diff", "What changed between two locks or environments",
         [](CLI::App& c) {
             c.add_option("A", text_a, "ENV, lock path, ENV@GITREV or ENV#GEN (old side)");
             c.add_option("B", text_b,
                          "New side (default, as git diff: ENV: current generation → lock; "
                          "ENV@REV: → the working lock; ENV#N: → the current generation)");
             c.add_option("--format", format, "text, markdown or json")
                 ->check(CLI::IsMember({"text", "markdown", "json"}));
             c.add_option("--textconv", textconv_file,
                          "Print FILE (a lock) as git's diff driver should show it");
         },
         [&global] { run_diff(global, text_a, text_b, format, textconv_file); }},
        {"verify", "Prove ENV is exactly its lock; report drift",
         [](CLI::App& c) {
             c.add_option("ENV", text_a, "Environment")->required();
             c.add_flag("--deep", flag_a, "Compare file contents by hash, not only inodes");
         },
         [&global] { run_verify(global, text_a, flag_a); }},
        {"list", "List environments (of this project; --all: of every project)",
         [](CLI::App& c) { c.add_flag("--all", flag_all, "Every project's environments"); },
         [&global] { run_list(global, flag_all); }},
        {"show", "Show an environment: generations, packages, sizes",
         [](CLI::App& c) { c.add_option("ENV", text_a, "Environment")->required(); },
         [&global] { run_show(global, text_a); }},
        {"history", "Generations of ENV with dates, lock digests and package changes",
         [](CLI::App& c) { c.add_option("ENV", text_a, "Environment")->required(); },
         [&global] { run_history(global, text_a); }},
        {"rollback", "Switch ENV back to an earlier generation, atomically",
         [](CLI::App& c) {
             c.add_option("ENV", text_a, "Environment")->required();
             c.add_option("--to", to_gen, "Generation number (default: the previous one)");
         },
         [&global] { run_rollback(global, text_a, to_gen); }},
        {"gc", "Delete old generations and unreferenced store content",
         [](CLI::App& c) {
             c.add_flag("--dry-run", flag_a, "Report what would be deleted");
             c.add_option("--keep", keep,
                          "Complete generations to keep per environment (default 3; "
                          "the current one is always kept)");
         },
         [&global] { run_gc(global, keep, flag_a); }},
        {"doctor", "Interpreters, CUDA driver, store filesystem, index reachability",
         [](CLI::App&) {}, [&global] { run_doctor(global); }},
    };
    for (const auto& spec : specs) {
        CLI::App* sub = app.add_subcommand(spec.name, spec.summary);
        spec.options(*sub);
        sub->callback(spec.run);
    }
    register_init(app, global);
    register_export(app, global);
    register_delete(app, global);
    register_shell(app, global);
    register_completion(app, global);
    app.require_subcommand(0, 1);
}

}  // namespace envbox::cli
