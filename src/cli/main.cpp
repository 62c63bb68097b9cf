// envbox entry point: the only place that catches errors and turns them into output and exit
// status (docs/exit-codes.md).

#include <signal.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <iostream>

#include "cli/options.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/printable.hpp"
#include "envbox/util/process.hpp"
#include "envbox/util/spelling.hpp"

namespace {

// When no command was recognised and the first word left over is not an option, that word was
// meant as a command: say so and list the commands (true), instead of CLI11's "arguments were
// not expected".
bool unknown_command(CLI::App& app) {
    if (!app.get_subcommands().empty()) return false;
    auto rest = app.remaining();
    if (rest.empty() || rest.front().empty() || rest.front()[0] == '-') return false;
    std::vector<std::string_view> names;
    for (const CLI::App* sub : app.get_subcommands({}))
        names.push_back(sub->get_name());
    auto near = envbox::closest_spelling(rest.front(), names);
    std::cerr << "error: unknown command '" << rest.front() << "'"
              << (near ? " (did you mean '" + *near + "'?)" : "") << "; the commands are:\n";
    for (const CLI::App* sub : app.get_subcommands({}))
        std::cerr << "  " << sub->get_name()
                  << std::string(sub->get_name().size() < 12 ? 12 - sub->get_name().size() : 1, ' ')
                  << sub->get_description() << "\n";
    std::cerr << "Run 'envbox --help' for the options.\n";
    return true;
}

// An option the command (the innermost one parsed) does not have, when one of its own or a
// global option is a likely typo of it: says which (true), instead of CLI11's "argument was
// not expected".
bool unknown_option(CLI::App& app) {
    // Commands pass what they do not take up to their parent (fallthrough, for the global
    // options), so the word may be left at any level.
    CLI::App* command = &app;
    std::string path = "envbox", word;
    for (;;) {
        for (const auto& arg : command->remaining())
            if (word.empty() && arg.starts_with("--") && arg.size() > 2)
                word = arg.substr(0, arg.find('='));
        if (command->get_subcommands().empty()) break;
        command = command->get_subcommands().front();
        path += " " + command->get_name();
    }
    if (word.empty()) return false;
    std::vector<std::string> spelled;
    for (const CLI::App* a : {command, &app})
        for (const CLI::Option* o : a->get_options())
            for (const auto& name : o->get_lnames())
                spelled.push_back("--" + name);
    std::vector<std::string_view> candidates(spelled.begin(), spelled.end());
    auto near = envbox::closest_spelling(word, candidates);
    if (!near) return false;
    std::cerr << "error: " << path << ": unknown option '" << word << "' (did you mean '" << *near
              << "'?)\nRun '" << path << " --help' for its options.\n";
    return true;
}

// SIGINT and SIGTERM end envbox with 130 (docs/exit-codes.md), as documented, instead of the
// death by signal a caller would otherwise see. Nothing needs undoing first: every write of
// envbox is a temporary name renamed into place (a crash leaves the previous state), a staged
// folder in tmp/ goes with the next gc, a download's part is resumed or pruned, and the kernel
// drops the file locks. `run` and `shell` exec their command, which starts with the defaults
// (a caught signal is reset by exec).
void on_interrupt(int) {
    envbox::kill_interrupt_groups();
    static const char msg[] = "\nenvbox: interrupted\n";
    ssize_t ignored = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
    ::_exit(envbox::exit_status(envbox::ErrorCode::interrupted));
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{
        "envbox: separate, immutable, content-addressed Python environments built from "
        "PEP 751 lock files.",
        "envbox"};
    app.set_version_flag("-V,--version", std::string("envbox ") + ENVBOX_VERSION);
    app.footer(
        "Exit status: 0 ok, 1 failure, 2 usage, 3 manifest/lock invalid or stale, 4 network or "
        "index, 5 integrity (hash mismatch, drift), 6 CUDA/driver incompatible, 7 install "
        "conflict (two wheels ship one path with different content), 8 a native file needs a "
        "symbol its library lacks, 9 `check` found a module that does not import, 130 "
        "interrupted; `run`: "
        "126 the command cannot be executed, 127 it does not exist.");
    for (int sig : {SIGINT, SIGTERM})
        if (std::signal(sig, on_interrupt) == SIG_IGN)
            std::signal(sig,
                        SIG_IGN);  // ignored by whoever started envbox (nohup, `cmd &`): stays so
    envbox::cli::GlobalOptions options;
    envbox::cli::add_global_options(app, options);
    envbox::cli::add_commands(app, options);

    try {
        app.parse(argc, argv);
        if (argc == 1) {
            std::cout << app.help();
            return envbox::exit_status(envbox::ErrorCode::usage);
        }
        return 0;
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ExtrasError& e) {
        if (!unknown_command(app) && !unknown_option(app)) app.exit(e);
        return envbox::exit_status(envbox::ErrorCode::usage);
    } catch (const CLI::ParseError& e) {
        app.exit(e);
        return envbox::exit_status(envbox::ErrorCode::usage);
    } catch (const envbox::Error& e) {
        // A message may quote a value from a lock, an index or a wheel: printed line by line
        // with hidden characters escaped, so none can redraw the terminal.
        std::cerr << "error: " << envbox::printable_lines(e.describe()) << "\n";
        return envbox::exit_status(e.code());
    } catch (const std::exception& e) {
        std::cerr << "error: internal: " << e.what() << "\n";
        return envbox::exit_status(envbox::ErrorCode::generic);
    }
}
