#pragma once
/// Running other programs: capture (interpreter probes) and exec (`envbox run`).

#include <map>
#include <string>
#include <vector>

namespace envbox {

struct ProcessResult {
    int status = -1;  ///< exit status, or 128 + signal number
    std::string out;  ///< everything written to stdout
    std::string err;  ///< everything written to stderr
};

/// Runs `argv` (argv[0] searched on PATH when it has no '/') with stdin from /dev/null and
/// waits for it. Throws `Error` only when the program cannot be started.
ProcessResult run_capture(const std::vector<std::string>& argv);

/// Replaces this process with `argv`, searched on the PATH of `env`, with exactly the
/// environment `env`. Never returns. When the command cannot run, this process exits as a shell
/// would, after one "error: …" line on stderr: 127 when it does not exist ("command not found:
/// NAME"), 126 when it exists but cannot be executed (no exec bit, not a program). Throws
/// `Error` (usage) only for an empty `argv`.
[[noreturn]] void exec_replace(const std::vector<std::string>& argv,
                               const std::map<std::string, std::string>& env);

/// The current process environment as a map.
std::map<std::string, std::string> current_environment();

}  // namespace envbox
