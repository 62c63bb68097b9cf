// envbox shell ENV: `envbox run ENV -- $SHELL -i` (the same sandbox, environment and in-use
// hold), with the venv's own `bin/activate` sourced after the shell's startup files.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "cli/commands.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"

namespace envbox::cli {
namespace {

struct ShellCommand {
    std::string env, sandbox;
    bool no_sandbox = false;
    bool locked = false, frozen = false;  ///< as for `run`
};

// The user's login shell ($SHELL when it is an absolute path), else /bin/sh.
std::string user_shell() {
    const char* s = std::getenv("SHELL");
    if (s && *s == '/') return s;
    return "/bin/sh";
}

// A startup file the shell reads from /dev/fd/N: an in-memory file (nothing to clean up
// after the exec, nothing written into the read-only home), inherited across the exec and
// closed by the file itself once read. `bashrc`: bash's own ~/.bashrc first, which --rcfile
// replaces. Then the generation's activate, after the user's files, so that a PATH they
// prepend (pyenv, conda) does not shadow the environment's python, and PS1 gets "(ENV) ".
std::string startup_file(bool bashrc) {
    int fd = ::memfd_create("envbox-shell-rc", 0);
    if (fd < 0)
        throw Error(ErrorCode::generic,
                    std::string("cannot make the shell's startup file: ") + std::strerror(errno));
    std::string text;
    if (bashrc) text += "if [ -f ~/.bashrc ]; then . ~/.bashrc; fi\n";
    text +=
        "if [ -n \"${VIRTUAL_ENV:-}\" ] && [ -f \"$VIRTUAL_ENV/bin/activate\" ]; then . "
        "\"$VIRTUAL_ENV/bin/activate\"; fi\n";
    if (fd <= 9) text += "exec " + std::to_string(fd) + "<&-\n";  // sh redirects only fds 0-9
    if (!write_all_fd(fd, text.data(), text.size()))
        throw Error(ErrorCode::generic,
                    std::string("cannot write the shell's startup file: ") + std::strerror(errno));
    return "/dev/fd/" + std::to_string(fd);
}

// The command line and prompt for `shell`: bash gets --rcfile, POSIX shells (sh, dash, ash,
// ksh, mksh) $ENV, which they read when interactive; any other shell (zsh, fish) starts with
// the environment `run` computes and VIRTUAL_ENV_PROMPT for its prompt theme.
RunCommand shell_args(const ShellCommand& cmd) {
    const std::string shell = user_shell();
    const std::string name = std::filesystem::path(shell).filename().string();
    RunCommand args;
    args.env = cmd.env;
    args.rest = {"--", shell};
    args.no_sandbox = cmd.no_sandbox;
    args.sandbox = cmd.sandbox;
    args.environment = {{"VIRTUAL_ENV_PROMPT", cmd.env}};
    if (name == "bash") {
        args.rest.insert(args.rest.end(), {"--rcfile", startup_file(true)});
    } else if (name == "sh" || name == "dash" || name == "ash" || name == "ksh" || name == "mksh") {
        args.environment["ENV"] = startup_file(false);
    }
    args.rest.push_back("-i");
    args.locked = cmd.locked;
    args.frozen = cmd.frozen;
    return args;
}

}  // namespace

void register_shell(CLI::App& app, GlobalOptions& global) {
    auto cmd = std::make_shared<ShellCommand>();
    CLI::App* c =
        app.add_subcommand("shell",
                           "An interactive $SHELL inside ENV and its sandbox (as `run ENV -- "
                           "$SHELL -i`)");
    c->add_option("ENV", cmd->env,
                  "Environment (default: $ENVBOX_ENV, else default-env of envbox.toml, else "
                  "the project's only manifest)");
    auto* locked =
        c->add_flag("--locked", cmd->locked, "Fail (exit 3) if the lock is stale, as for `run`");
    c->add_flag("--frozen", cmd->frozen, "Use the current generation as it is, as for `run`")
        ->excludes(locked);
    auto* off =
        c->add_flag("--no-sandbox", cmd->no_sandbox, "Run without the sandbox (--sandbox off)");
    c->add_option("--sandbox", cmd->sandbox,
                  "auto (default), strict or off, as for `run`; default $ENVBOX_SANDBOX")
        ->check(CLI::IsMember({"auto", "strict", "off"}))
        ->excludes(off);
    c->callback([&global, cmd] {
        cmd->env = environment_or_default(global, cmd->env);  // the prompt names it
        run_run(global, shell_args(*cmd));
    });
}

}  // namespace envbox::cli
