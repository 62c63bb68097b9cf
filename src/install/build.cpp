#include "envbox/install/build.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>

#include "envbox/env/confine.hpp"
#include "envbox/install/local.hpp"
#include "envbox/install/sdist.hpp"
#include "envbox/pep/filename.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/own_tree.hpp"
#include "envbox/util/process.hpp"
#include "envbox/util/stopwatch.hpp"
#include "envbox/util/unique_fd.hpp"

namespace fs = std::filesystem;

namespace envbox::install {
namespace {

std::string sdist_name(const BuildRequest& r) {
    return r.sdist_name.empty() ? r.sdist.filename().string() : r.sdist_name;
}

std::string_view frontend_code() {
    static constexpr std::string_view kCode =
#include "pep517_frontend_code.inc"
        ;
    return kCode;
}

// The last lines of the log (at most 20, from its last 4 KiB), for an error.
std::string log_tail(const fs::path& log) {
    UniqueFd fd(::open(log.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return "";  // not the log
    const off_t size = ::lseek(fd.get(), 0, SEEK_END);
    const off_t from = size > 4096 ? size - 4096 : 0;
    std::string text(static_cast<std::size_t>(size - from), '\0');
    const ssize_t n = ::pread(fd.get(), text.data(), text.size(), from);
    text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    std::size_t at = text.size(), lines = 0;
    while (at > 0 && lines < 21)
        if (text[--at] == '\n') ++lines;
    if (lines == 21) text.erase(0, at + 1);
    return text;
}

// What the backend is given: argv and its whole environment.
struct Exec {
    std::vector<std::string> argv, env;
};

Exec frontend_exec(const BuildRequest& r, const lock::BuildSystem& bs, const fs::path& out,
                   const fs::path& result, const fs::path& tmp) {
    Exec e;
    std::string backend_path;
    for (const auto& p : bs.backend_path)
        backend_path += (backend_path.empty() ? "" : std::string(1, '\0')) + p;
    e.argv = {r.python.string(),
              "-I",
              "-c",
              std::string(frontend_code()),
              r.editable ? "build_editable" : "build_wheel",
              bs.backend,
              backend_path,
              out.string(),
              result.string()};
    for (const auto& p : r.build_path)
        e.argv.push_back(p.string());
    // A fixed environment: nothing of the caller's (tokens, proxies, PYTHON*) reaches the
    // backend but what the build declares.
    std::map<std::string, std::string> env = {{"PATH", kBuildPath},
                                              {"TMPDIR", tmp.string()},
                                              {"HOME", tmp.string()},
                                              {"LANG", "C.UTF-8"},
                                              {"PYTHONDONTWRITEBYTECODE", "1"}};
    for (const auto& [k, v] : r.variables)
        env[k] = v;
    for (const auto& [k, v] : env)
        e.env.push_back(k + "=" + v);
    return e;
}

// Waits for `pid`, killing its process group past `timeout`; its exit status (128 + signal),
// or -1 when it was killed for the time.
int wait_bounded(pid_t pid, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        int status = 0;
        const pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (done < 0 && errno != EINTR)
            throw Error(ErrorCode::generic, std::string("waitpid: ") + std::strerror(errno));
        if (std::chrono::steady_clock::now() > deadline) {
            ::kill(-pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            return -1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

// Runs the frontend confined (env/confine.hpp), its output into the log. Throws naming the
// sdist and the log; a sandbox the kernel refuses is refused before anything of the sdist runs.
void run_backend(const BuildRequest& r, const fs::path& project, const fs::path& log, const Exec& e,
                 const std::function<void()>& started) {
    UniqueFd out(::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!out)
        throw Error(ErrorCode::generic,
                    "cannot open " + log.string() + ": " + std::strerror(errno));
    env::ConfineSpec spec;
    spec.argv = e.argv;
    spec.env = e.env;
    spec.workdir = project;
    spec.writable = {r.work};
    spec.keep = {r.read_only};
    if (r.editable) spec.keep.push_back(r.tree);  // built in place, read-only
    spec.stdout_fd = spec.stderr_fd = out.get();
    pid_t pid = 0;
    try {
        pid = env::spawn_confined(spec);
    } catch (const Error& refused) {
        throw Error(ErrorCode::generic, "building " + sdist_name(r) + ": " + refused.what());
    }
    out.reset();
    started();
    const InterruptGroup interrupt(pid);
    // Once this returns, every process of the build is gone (the confinement's init is).
    const int status = wait_bounded(pid, r.timeout);
    if (status != 0) {
        const std::string why =
            status == -1   ? "was stopped after " + std::to_string(r.timeout.count()) + " s"
            : status > 128 ? "was killed by signal " + std::to_string(status - 128)
                           : "failed (exit " + std::to_string(status) + ")";
        throw Error(ErrorCode::generic, "building " + sdist_name(r) + ": the backend " + why +
                                            "; its log is " + log.string() + ":\n" + log_tail(log));
    }
}

// The wheel the hook named: a plain wheel file name, a regular file in `out`.
fs::path built_wheel(const BuildRequest& r, const fs::path& out, const fs::path& result,
                     const fs::path& log) {
    std::string name;
    try {
        name = read_input_file(result, 4096, ErrorCode::generic);  // the backend wrote it
    } catch (const Error&) {
    }
    const auto refuse = [&](const std::string& why) {
        return Error(ErrorCode::generic,
                     "building " + sdist_name(r) + ": " + why + "; its log is " + log.string());
    };
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
        throw refuse("the backend named no wheel file ('" + name.substr(0, 200) + "')");
    if (!pep::WheelFilename::parse(name))
        throw refuse("the backend's '" + name + "' is no wheel file name");
    struct stat st {};
    if (::lstat((out / name).c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        throw refuse("the backend named " + name + ", which it did not make");
    return out / name;
}

// `program` as the build finds it: itself when it has a '/', else the first executable of
// that name on `path`; "" when none.
std::string find_program(const std::string& program, const std::string& path) {
    if (program.find('/') != std::string::npos)
        return ::access(program.c_str(), X_OK) == 0 ? program : "";
    std::size_t at = 0;
    while (at <= path.size()) {
        const std::size_t end = std::min(path.find(':', at), path.size());
        const std::string candidate = path.substr(at, end - at) + "/" + program;
        if (end > at && ::access(candidate.c_str(), X_OK) == 0) return candidate;
        at = end + 1;
    }
    return "";
}

// What `argv` prints on stdout (at most 64 KiB), run as a backend runs: in the sandbox (the
// home read-only, no network), a fixed environment, at most 30 s. The program is named by a
// lock's variables (PATH, CC, CXX, CUDA_HOME), so it is as untrusted as the build it serves.
std::string sandboxed_output(const std::vector<std::string>& argv, const fs::path& home) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return "";
    UniqueFd from_child(fds[0]), to_parent(fds[1]);
    env::ConfineSpec spec;
    spec.argv = argv;
    spec.env = {std::string("PATH=") + kBuildPath, "LANG=C.UTF-8"};
    spec.keep = {home};
    spec.stdout_fd = to_parent.get();
    pid_t pid = 0;
    try {
        pid = env::spawn_confined(spec);
    } catch (const Error&) {
        return "";  // no sandbox, no answer: the build itself says why
    }
    to_parent.reset();
    const InterruptGroup interrupt(pid);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    std::string out;
    char chunk[4096];
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        pollfd p{from_child.get(), POLLIN, 0};
        if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
        const ssize_t n = ::read(from_child.get(), chunk, sizeof chunk);
        if (n <= 0 || out.size() + static_cast<std::size_t>(n) > 64 * 1024) break;
        out.append(chunk, static_cast<std::size_t>(n));
    }
    ::kill(-pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return out;
}

// "TOOL PATH VERSION" for the program at `path`: the first line of its `--version` (the line
// with "release" for nvcc), asked once per process, in the sandbox.
std::string tool_version(const std::string& tool, const std::string& path, const fs::path& home) {
    static std::mutex mutex;
    static std::map<std::string, std::string> asked;
    std::lock_guard lock(mutex);
    if (auto it = asked.find(path); it != asked.end()) return tool + " " + path + " " + it->second;
    std::string version = "unknown";
    const std::string out = sandboxed_output({path, "--version"}, home);
    std::size_t at = 0;
    while (at < out.size()) {
        const std::size_t end = std::min(out.find('\n', at), out.size());
        const std::string line = out.substr(at, end - at);
        if (version == "unknown" || (tool == "nvcc" && line.find("release") != std::string::npos))
            version = line.substr(0, 200);
        at = end + 1;
    }
    asked[path] = version;
    return tool + " " + path + " " + version;
}

}  // namespace

std::vector<std::string> toolchain(const std::map<std::string, std::string>& variables,
                                   const fs::path& home) {
    const auto var = [&](const char* k, const std::string& fallback) {
        const auto it = variables.find(k);
        return it == variables.end() ? fallback : it->second;
    };
    const std::string path = var("PATH", kBuildPath);
    std::vector<std::string> out;
    for (const auto& [tool, program] :
         {std::pair<std::string, std::string>{"cc", var("CC", "cc")}, {"c++", var("CXX", "c++")}})
        if (auto found = find_program(program, path); !found.empty())
            out.push_back(tool_version(tool, found, home));
    std::string nvcc = find_program(var("CUDA_HOME", "/nonexistent") + "/bin/nvcc", path);
    if (nvcc.empty()) nvcc = find_program("nvcc", path);
    if (nvcc.empty()) nvcc = find_program("/usr/local/cuda/bin/nvcc", path);
    if (!nvcc.empty()) out.push_back(tool_version("nvcc", nvcc, home));
    std::sort(out.begin(), out.end());
    return out;
}

BuiltWheel build_wheel(const BuildRequest& r) {
    Stopwatch clock;
    if (::mkdir(r.work.c_str(), 0700) != 0)
        throw Error(ErrorCode::generic,
                    "cannot make " + r.work.string() + ": " + std::strerror(errno));
    // A refusal before the backend runs (the archive, its [build-system], the sandbox) leaves
    // nothing; once it ran, the folder stays for its log.
    RemoveOwnTree refused(r.work.parent_path(), r.work);
    BuiltWheel built;
    fs::path project = r.tree;
    if (r.tree.empty())
        project = unpack_sdist(r.sdist, r.work / "src", {}, r.sdist_name);
    else if (!r.editable)
        copy_tree(r.tree, project = r.work / "src", r.tree_skip);
    const fs::path out = r.work / "out", tmp = r.work / "tmp", result = r.work / "result";
    built.log = r.work / "build.log";
    fs::create_directory(out);
    fs::create_directory(tmp);
    std::optional<std::string> pyproject;
    if (fs::is_regular_file(fs::symlink_status(project / "pyproject.toml")))
        pyproject =
            read_input_file(project / "pyproject.toml", kMaxInputFileBytes, ErrorCode::integrity);
    auto bs = lock::read_build_system(pyproject, sdist_name(r) + ":pyproject.toml");
    if (!bs) throw bs.error();
    built.build_system = std::move(*bs);
    const Exec e = frontend_exec(r, built.build_system, out, result, tmp);
    run_backend(r, project, built.log, e, [&refused] { refused.path.clear(); });
    built.wheel = built_wheel(r, out, result, built.log);
    built.seconds = clock.total();
    return built;
}

}  // namespace envbox::install
