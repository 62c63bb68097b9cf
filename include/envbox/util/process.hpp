#pragma once
/// Running other programs: capture (interpreter probes) and exec (`envbox run`).

#include <map>
#include <string>
#include <string_view>
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

/// A program started with its stdin and stdout on pipes to this process and its stderr on
/// /dev/null, for a request-and-answer protocol (the bytecode compiler's interpreters). Not
/// thread-safe: one thread talks to one coprocess at a time.
class Coprocess {
  public:
    /// Starts `argv` (argv[0] a path) with this process's environment. Throws `Error` when it
    /// cannot be started.
    explicit Coprocess(const std::vector<std::string>& argv);
    /// Closes its stdin, then waits for it (killing it when `kill` was called or it is stuck).
    ~Coprocess();
    Coprocess(const Coprocess&) = delete;
    Coprocess& operator=(const Coprocess&) = delete;

    /// Writes all of `bytes` to its stdin; false when it is gone (EPIPE, never a SIGPIPE).
    bool write(std::string_view bytes);
    /// Reads exactly `n` bytes of its stdout into `out`, waiting at most `timeout_ms` for each
    /// chunk; false on end of file, an error or the timeout.
    bool read(char* out, std::size_t n, int timeout_ms);
    /// Kills it (SIGKILL); the destructor then reaps it.
    void kill();
    /// Closes its stdin (the end of its input: a worker loop ends), without waiting.
    void close_input();
    /// Its exit status once it is gone ("exit 1", "signal 9"), for messages; waits for it.
    std::string wait_status();

  private:
    int pid_ = -1;
    int in_ = -1, out_ = -1;
    bool reaped_ = false;
    int status_ = 0;
};

/// The current process environment as a map.
std::map<std::string, std::string> current_environment();

/// The process groups of children that run in a group of their own (so that a time limit can
/// kill them with all they started), which envbox's SIGINT/SIGTERM handler kills before envbox
/// exits: a terminal's Ctrl-C reaches only the foreground group. Registered for the lifetime of
/// an `InterruptGroup`; at most 64 at once (one more is not registered, and is still killed by
/// its owner's own limit). `kill_interrupt_groups` is async-signal-safe.
class InterruptGroup {
  public:
    explicit InterruptGroup(int pgid);
    ~InterruptGroup();
    InterruptGroup(const InterruptGroup&) = delete;
    InterruptGroup& operator=(const InterruptGroup&) = delete;

  private:
    int slot_ = -1;
};
void kill_interrupt_groups();

}  // namespace envbox
