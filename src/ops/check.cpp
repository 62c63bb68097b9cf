#include "envbox/ops/check.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "envbox/env/confine.hpp"
#include "envbox/env/generation.hpp"
#include "envbox/env/known_good.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/own_tree.hpp"
#include "envbox/util/printable.hpp"
#include "envbox/util/process.hpp"
#include "envbox/util/unique_fd.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {
namespace {

std::string_view probe_code() {
    static constexpr std::string_view code =
#include "check_probe_code.inc"
        ;
    return code;
}

constexpr std::size_t kMaxProbeOutput = 4u << 20;
constexpr std::size_t kMaxProbeErrors = 64u << 10;

// One name of a module's path: `env::is_module_name` without a dot.
bool is_identifier(std::string_view s) {
    return s.find('.') == std::string_view::npos && env::is_module_name(s);
}

// The module a file of a package folder is: "x.py" → "x", "x.cpython-312-x86_64-linux-gnu.so"
// and "x.abi3.so" → "x"; "" for anything else.
std::string module_of_file(std::string_view file) {
    std::string_view stem;
    if (file.ends_with(".py"))
        stem = file.substr(0, file.size() - 3);
    else if (file.ends_with(".so"))
        stem = file.substr(0, file.find('.'));
    return is_identifier(stem) ? std::string(stem) : std::string();
}

bool shipped_by_mistake(std::string_view top) {
    for (const char* n : {"test", "tests", "docs", "doc", "examples", "benchmarks", "__pycache__"})
        if (top == n) return true;
    return false;
}

// A member's path as installed at the top of site-packages; "" when it is not installed there.
std::string_view installed_path(std::string_view path, std::string_view data_dir) {
    if (path.starts_with(data_dir)) {
        path.remove_prefix(data_dir.size());
        for (std::string_view lib : {"purelib/", "platlib/"})
            if (path.starts_with(lib)) return path.substr(lib.size());
        return {};
    }
    const auto slash = path.find('/');
    if (slash != std::string_view::npos && path.substr(0, slash).ends_with(".dist-info")) return {};
    return path;
}

}  // namespace

std::vector<std::string> top_level_modules(const store::WheelFiles& wheel) {
    struct Folder {
        bool package = false;         // has __init__
        std::set<std::string> inner;  // its own modules and packages
    };
    std::map<std::string, Folder> folders;
    std::set<std::string> out;
    std::string data_dir = wheel.dist_info;
    if (data_dir.ends_with(".dist-info")) data_dir.replace(data_dir.size() - 10, 10, ".data/");
    for (const auto& f : wheel.files) {
        const std::string_view path = installed_path(f.path, data_dir);
        const auto slash = path.find('/');
        if (path.empty()) continue;
        if (slash == std::string_view::npos) {
            if (auto m = module_of_file(path); !m.empty() && !shipped_by_mistake(m)) out.insert(m);
            continue;
        }
        const std::string top(path.substr(0, slash));
        const std::string_view rest = path.substr(slash + 1);
        if (!is_identifier(top) || shipped_by_mistake(top)) continue;
        Folder& folder = folders[top];
        const auto inner_slash = rest.find('/');
        if (inner_slash == std::string_view::npos) {
            const std::string m = module_of_file(rest);
            if (m == "__init__")
                folder.package = true;
            else if (!m.empty())
                folder.inner.insert(m);
        } else if (module_of_file(rest.substr(inner_slash + 1)) == "__init__" &&
                   is_identifier(rest.substr(0, inner_slash))) {
            folder.inner.insert(std::string(rest.substr(0, inner_slash)));
        }
    }
    for (const auto& [top, folder] : folders) {
        if (folder.package) {
            out.insert(top);
            continue;
        }
        for (const auto& inner : folder.inner)
            if (!shipped_by_mistake(inner)) out.insert(top + "." + inner);
    }
    return {out.begin(), out.end()};
}

namespace {

// Every module `gen` installs, less the skipped ones (a name or a prefix "x." of it).
std::vector<std::string> modules_of(const Context& ctx, const env::Generation& gen,
                                    const std::vector<std::string>& skip) {
    store::Store store(ctx.home);
    std::set<std::string> all;
    for (const auto& p : gen.packages) {
        const auto files = store.load_wheel(p.wheel_sha256);
        if (!files)
            throw Error(ErrorCode::integrity, "the store has no file list of " + p.filename + " (" +
                                                  p.name + " " + p.version +
                                                  "); `envbox verify` says what else is missing");
        for (auto& m : top_level_modules(*files))
            all.insert(std::move(m));
    }
    std::vector<std::string> out;
    for (const auto& m : all)
        if (std::none_of(skip.begin(), skip.end(),
                         [&](const std::string& s) { return m == s || m.starts_with(s + "."); }))
            out.push_back(m);
    return out;
}

struct ProbeRun {
    std::string out, err;
    int status = 0;          // the exit status; -1: stopped at the time limit
    std::string refused;     // why the probe could not start (its sandbox, its interpreter)
    bool truncated = false;  // the channel went past kMaxProbeOutput
};

// Reads the child's stdout and stderr until both end or `limit` passes, each bounded.
void collect(int out, int err, std::chrono::seconds limit, ProbeRun& run) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    pollfd p[2] = {{out, POLLIN, 0}, {err, POLLIN, 0}};
    char chunk[65536];
    while (p[0].fd >= 0 || p[1].fd >= 0) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        const int wait = static_cast<int>(std::min<long long>(left.count(), 1 << 30));
        const int ready = left.count() <= 0 ? 0 : ::poll(p, 2, wait);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) {
            run.status = -1;
            return;
        }
        for (int i = 0; i < 2; ++i) {
            if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            const ssize_t n = ::read(p[i].fd, chunk, sizeof chunk);
            if (n < 0 && errno == EINTR) continue;
            std::string& into = i == 0 ? run.out : run.err;
            const std::size_t cap = i == 0 ? kMaxProbeOutput : kMaxProbeErrors;
            if (n <= 0) {
                p[i].fd = -1;
            } else {
                const auto room = cap - into.size();
                if (i == 0 && static_cast<std::size_t>(n) > room) run.truncated = true;
                into.append(chunk, std::min(static_cast<std::size_t>(n), room));
            }
        }
    }
}

// The probe runs as all foreign code does (env/confine.hpp), with the GPU's device nodes and
// the compile caches writable. Its records come on fd 3, which only the probe's own process
// holds (it runs with -S: no .pth file of the environment runs in it); its stderr is kept for
// errors; its stdout goes nowhere.
ProbeRun run_probe(const Context& ctx, const RunPlan& plan, std::chrono::seconds limit) {
    int fds[4];
    if (::pipe2(fds, O_CLOEXEC) != 0 || ::pipe2(fds + 2, O_CLOEXEC) != 0)
        throw sys_error("pipe", errno);
    UniqueFd out_r(fds[0]), out_w(fds[1]), err_r(fds[2]), err_w(fds[3]);
    env::ConfineSpec spec;
    spec.argv = plan.argv;
    for (const auto& [k, v] : plan.environment)
        spec.env.push_back(k + "=" + v);
    spec.writable = plan.writable;
    spec.keep = {ctx.home};
    spec.keep.insert(spec.keep.end(), plan.base_installation.begin(), plan.base_installation.end());
    spec.gpu = true;
    spec.unix_sockets = true;  // CUDA's driver makes one at cuInit (error 304 without)
    spec.channel_fd = out_w.get();
    spec.stderr_fd = err_w.get();
    ProbeRun run;
    pid_t pid = 0;
    try {
        pid = env::spawn_confined(spec);
    } catch (const Error& e) {
        run.refused = e.what();
        return run;
    }
    const InterruptGroup interrupt(pid);  // Ctrl-C reaches envbox's group only
    out_w.reset();
    err_w.reset();
    collect(out_r.get(), err_r.get(), limit, run);
    ::kill(-pid, SIGKILL);  // the confinement's init: everything the probe started goes with it
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (run.status == 0)
        run.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return run;
}

// Files and bytes below each compile cache the plan set, never through a link.
std::vector<env::CacheUse> count_caches(const Context& ctx, const RunPlan& plan) {
    std::vector<env::CacheUse> out;
    for (const auto& [variable, folder] : plan.compile_caches) {
        const FileTally t = tally_own_files(ctx.home, folder);
        out.push_back({variable, t.files, t.bytes});
    }
    return out;
}

// "the probe failed (exit 1): <its last error line>".
Error probe_failure(const std::string& env, const ProbeRun& run, const std::string& why) {
    std::string last = run.err.substr(0, 4000);
    while (!last.empty() && (last.back() == '\n' || last.back() == ' '))
        last.pop_back();
    if (auto nl = last.rfind('\n'); nl != std::string::npos) last = last.substr(nl + 1);
    return Error(ErrorCode::generic,
                 "checking " + env + ": " + why + (last.empty() ? "" : ": " + printable(last)));
}

}  // namespace

CheckResult check_environment(const Context& ctx, const std::string& env,
                              const CheckOptions& options) {
    RunPlan plan = options.generation ? plan_run_in(ctx, env, *options.generation, {}, options.base)
                                      : plan_run(ctx, env, {"python"}, options.base);
    const auto gen = env::read_generation(plan.generation);
    if (!gen) throw Error(ErrorCode::generic, "cannot read " + plan.generation.string());
    const std::vector<std::string> modules = modules_of(ctx, *gen, options.skip);
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int jobs = options.jobs > 0 ? options.jobs : std::min(8, cores);
    const auto each = options.timeout.count();
    plan.argv = {(plan.generation / "bin" / "python").string(),
                 "-I",
                 "-S",
                 "-c",
                 std::string(probe_code()),
                 std::to_string(each),
                 std::to_string(jobs)};
    plan.argv.insert(plan.argv.end(), modules.begin(), modules.end());
    const auto rounds = static_cast<long long>((modules.size() + jobs - 1) / jobs);
    const std::chrono::seconds limit(each * rounds + std::max<long long>(each, 300) + 60);
    const ProbeRun run = run_probe(ctx, plan, limit);
    if (run.status == -1)
        throw probe_failure(env, run,
                            "the probe took longer than " + std::to_string(limit.count()) + " s");
    if (!run.refused.empty()) throw probe_failure(env, run, run.refused);
    if (run.status != 0)
        throw probe_failure(env, run, "the probe failed (exit " + std::to_string(run.status) + ")");
    const std::string what = "the output of envbox's probe in " + env;
    if (run.truncated)
        throw Error(ErrorCode::integrity, what + " is larger than 4 MiB; nothing was kept");
    CheckResult result;
    result.record = env::parse_check(run.out, what, /*probe=*/true, modules);
    if (result.record.imports.size() != modules.size())
        throw Error(ErrorCode::integrity,
                    what + " reports " + std::to_string(result.record.imports.size()) + " of " +
                        std::to_string(modules.size()) + " modules; nothing was kept");
    result.record.generation = gen->number;
    result.record.when = env::utc_timestamp();
    result.record.caches = count_caches(ctx, plan);
    result.sandbox = "confined (own user, mount, pid and network namespaces; no capabilities)";
    result.notes = plan.notes;
    const fs::path dir = env_dir(ctx, env);
    env::write_check_record(dir, result.record);
    result.record_path = env::check_record_path(dir, gen->number);
    return result;
}

}  // namespace envbox::ops
