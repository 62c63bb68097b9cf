#include "envbox/util/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "envbox/util/error.hpp"

extern char** environ;

namespace envbox {
namespace {

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
    std::vector<char*> out;
    out.reserve(argv.size() + 1);
    for (const auto& a : argv)
        out.push_back(const_cast<char*>(a.c_str()));
    out.push_back(nullptr);
    return out;
}

std::string describe_command(const std::vector<std::string>& argv) {
    std::ostringstream s;
    for (std::size_t i = 0; i < argv.size(); ++i)
        s << (i ? " " : "") << argv[i];
    return s.str();
}

// The exit statuses shells give a command that cannot run (127: not found, 126: found but not
// executable), which scripts test for. envbox's own statuses stop at 7, so this ends the process
// here, after the one line main() would print, instead of throwing an Error.
[[noreturn]] void exit_as_shell(int status, const std::string& message) {
    std::fprintf(stderr, "error: %s\n", message.c_str());
    std::fflush(stderr);
    ::_exit(status);
}

}  // namespace

ProcessResult run_capture(const std::vector<std::string>& argv) {
    if (argv.empty()) throw Error(ErrorCode::generic, "run_capture: empty command");
    int out_pipe[2], err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw Error(ErrorCode::generic, "pipe2 failed");
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
        ::close(out_pipe[0]);
        ::close(out_pipe[1]);
        throw Error(ErrorCode::generic, "pipe2 failed");
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
    auto args = c_argv(argv);
    pid_t pid = -1;
    int rc = argv[0].find('/') == std::string::npos
                 ? ::posix_spawnp(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ)
                 : ::posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    if (rc != 0) {
        ::close(out_pipe[0]);
        ::close(err_pipe[0]);
        throw Error(ErrorCode::generic,
                    "cannot run " + describe_command(argv) + ": " + std::strerror(rc));
    }
    ProcessResult result;
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    std::string* sinks[2] = {&result.out, &result.err};
    int open_count = 2;
    char buf[65536];
    while (open_count > 0) {
        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
            if (n > 0) {
                sinks[i]->append(buf, static_cast<std::size_t>(n));
            } else if (n == 0 || errno != EINTR) {
                ::close(fds[i].fd);
                fds[i].fd = -1;
                --open_count;
            }
        }
    }
    for (auto& f : fds)
        if (f.fd >= 0) ::close(f.fd);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return result;
}

Coprocess::Coprocess(const std::vector<std::string>& argv) {
    if (argv.empty()) throw Error(ErrorCode::generic, "Coprocess: empty command");
    int in_pipe[2], out_pipe[2];
    if (::pipe2(in_pipe, O_CLOEXEC) != 0) throw Error(ErrorCode::generic, "pipe2 failed", errno);
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
        const int err = errno;
        ::close(in_pipe[0]);
        ::close(in_pipe[1]);
        throw Error(ErrorCode::generic, "pipe2 failed", err);
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    auto args = c_argv(argv);
    pid_t pid = -1;
    const int rc = ::posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(in_pipe[0]);
    ::close(out_pipe[1]);
    if (rc != 0) {
        ::close(in_pipe[1]);
        ::close(out_pipe[0]);
        throw Error(ErrorCode::generic,
                    "cannot run " + describe_command(argv) + ": " + std::strerror(rc));
    }
    pid_ = pid;
    in_ = in_pipe[1];
    out_ = out_pipe[0];
}

Coprocess::~Coprocess() {
    if (in_ >= 0) ::close(in_);
    if (out_ >= 0) ::close(out_);
    if (!reaped_ && pid_ > 0) {
        // Its stdin is closed: a worker ends by itself. One that does not within a few
        // seconds is stuck and is killed.
        for (int i = 0; i < 3000; ++i) {
            if (::waitpid(pid_, &status_, WNOHANG) == pid_) return;
            ::usleep(1000);
        }
        ::kill(pid_, SIGKILL);
        while (::waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
        }
    }
}

bool Coprocess::write(std::string_view bytes) {
    // A write to a pipe whose reader is gone raises SIGPIPE: blocked for this thread while it
    // writes, and a pending one taken back, so the answer is EPIPE.
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    bool ok = true;
    while (!bytes.empty()) {
        const ssize_t n = ::write(in_, bytes.data(), bytes.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            ok = false;
            break;
        }
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    if (!ok) {
        const struct timespec zero {};
        while (sigtimedwait(&pipe_set, nullptr, &zero) == SIGPIPE) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return ok;
}

bool Coprocess::read(char* out, std::size_t n, int timeout_ms) {
    while (n > 0) {
        pollfd p{out_, POLLIN, 0};
        const int r = ::poll(&p, 1, timeout_ms);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        const ssize_t got = ::read(out_, out, n);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return false;
        out += got;
        n -= static_cast<std::size_t>(got);
    }
    return true;
}

void Coprocess::close_input() {
    if (in_ >= 0) {
        ::close(in_);
        in_ = -1;
    }
}

void Coprocess::kill() {
    if (pid_ > 0 && !reaped_) ::kill(pid_, SIGKILL);
}

std::string Coprocess::wait_status() {
    if (!reaped_ && pid_ > 0) {
        if (in_ >= 0) {
            ::close(in_);
            in_ = -1;
        }
        while (::waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
        }
        reaped_ = true;
    }
    if (WIFEXITED(status_)) return "exit " + std::to_string(WEXITSTATUS(status_));
    if (WIFSIGNALED(status_)) return "signal " + std::to_string(WTERMSIG(status_));
    return "status " + std::to_string(status_);
}

void exec_replace(const std::vector<std::string>& argv,
                  const std::map<std::string, std::string>& env) {
    if (argv.empty()) throw Error(ErrorCode::usage, "no command given to run");
    std::vector<std::string> env_strings;
    env_strings.reserve(env.size());
    for (const auto& [k, v] : env)
        env_strings.push_back(k + "=" + v);
    auto envp = c_argv(env_strings);
    auto args = c_argv(argv);
    // execvpe searches the PATH of the *calling* process; search the target PATH ourselves.
    std::string program = argv[0];
    if (program.find('/') == std::string::npos) {
        auto it = env.find("PATH");
        std::string path = it == env.end() ? "/usr/bin:/bin" : it->second;
        std::string not_executable;  // the first file of that name found without the exec bit
        std::size_t start = 0;
        for (;;) {
            std::size_t end = path.find(':', start);
            std::string dir = path.substr(start, end == std::string::npos ? end : end - start);
            if (dir.empty()) dir = ".";
            std::string candidate = dir + "/" + program;
            if (::access(candidate.c_str(), X_OK) == 0) {
                program = candidate;
                break;
            }
            if (not_executable.empty() && ::access(candidate.c_str(), F_OK) == 0)
                not_executable = candidate;
            if (end == std::string::npos) break;
            start = end + 1;
        }
        // As a shell does: a name found only without the exec bit is tried (and refused, 126).
        if (program.find('/') == std::string::npos && !not_executable.empty())
            program = not_executable;
        if (program.find('/') == std::string::npos)
            exit_as_shell(127,
                          "command not found: " + argv[0] + " (searched the environment's PATH)");
    }
    ::execve(program.c_str(), args.data(), envp.data());
    const int err = errno;
    exit_as_shell(err == ENOENT ? 127 : 126,
                  (err == ENOENT ? "command not found: " : "cannot run ") + program + ": " +
                      std::strerror(err));
}

namespace {
std::atomic<int> g_interrupt_groups[64];
}  // namespace

InterruptGroup::InterruptGroup(int pgid) {
    for (int i = 0; i < 64 && pgid > 0; ++i) {
        int free = 0;
        if (g_interrupt_groups[i].compare_exchange_strong(free, pgid)) {
            slot_ = i;
            return;
        }
    }
}

InterruptGroup::~InterruptGroup() {
    if (slot_ >= 0) g_interrupt_groups[slot_].store(0);
}

void kill_interrupt_groups() {
    for (auto& g : g_interrupt_groups)
        if (const int pgid = g.load(); pgid > 0) ::kill(-pgid, SIGKILL);
}

std::map<std::string, std::string> current_environment() {
    std::map<std::string, std::string> out;
    for (char** e = environ; e && *e; ++e) {
        std::string_view kv(*e);
        auto eq = kv.find('=');
        if (eq == std::string_view::npos) continue;
        out.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
    }
    return out;
}

}  // namespace envbox
