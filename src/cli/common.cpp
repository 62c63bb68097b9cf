#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cli/commands.hpp"
#include "envbox/env/cuda.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/parallel.hpp"

namespace fs = std::filesystem;

namespace envbox::cli {

namespace {

std::string variable(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

// ENVBOX_JOBS when a positive number, else every core.
unsigned jobs_from(const std::string& value) {
    try {
        if (!value.empty() && std::stoi(value) > 0) return static_cast<unsigned>(std::stoi(value));
    } catch (const std::exception&) {
    }
    return hardware_jobs();
}

}  // namespace

ops::Settings settings_from_environment() {
    ops::Settings s;
    s.python = variable("ENVBOX_PYTHON");
    s.cuda_driver = variable("ENVBOX_CUDA_DRIVER");
    s.http_timeout = variable("ENVBOX_HTTP_TIMEOUT");
    s.ca_file = variable("SSL_CERT_FILE");
    s.resolve_debug = std::getenv("ENVBOX_RESOLVE_DEBUG") != nullptr;
    s.resolve_max_steps = variable("ENVBOX_RESOLVE_MAX_STEPS");
    s.path = variable("PATH");
    s.user_home = variable("HOME");
    s.pyenv_root = variable("PYENV_ROOT");
    s.uv_python_install_dir = variable("UV_PYTHON_INSTALL_DIR");
    s.xdg_data_home = variable("XDG_DATA_HOME");
    for (char** e = environ; e && *e; ++e) {
        std::string_view entry(*e);
        auto eq = entry.find('=');
        if (eq == std::string_view::npos) continue;
        const std::string_view key = entry.substr(0, eq);
        if (key.starts_with("ENVBOX_INDEX_")) s.index_variables.emplace(key, entry.substr(eq + 1));
        if (key.starts_with("ENVBOX_GIT_")) s.git_variables.emplace(key, entry.substr(eq + 1));
        static constexpr std::string_view kGit[] = {
            "HOME",        "PATH",           "SSH_AUTH_SOCK", "GIT_SSH_COMMAND",
            "GIT_SSH",     "GIT_SSL_CAINFO", "SSL_CERT_FILE", "SSL_CERT_DIR",
            "http_proxy",  "https_proxy",    "no_proxy",      "HTTP_PROXY",
            "HTTPS_PROXY", "NO_PROXY",       "ALL_PROXY",     "all_proxy"};
        if (std::find(std::begin(kGit), std::end(kGit), key) != std::end(kGit))
            s.git_environment.emplace_back(entry);
    }
    return s;
}

ops::Context make_context(const GlobalOptions& global, ops::Progress& progress) {
    ops::Context ctx;
    ctx.settings = settings_from_environment();
    ctx.home = global.home.empty() ? ops::default_home(ctx.settings) : fs::path(global.home);
    ctx.user_umask = ::umask(static_cast<mode_t>(ops::home_umask(ctx.home)));
    ctx.home = ops::canonical_home(ctx.home);
    ops::check_home_layout(ctx.home);
    if (!global.project.empty()) {
        ctx.project_root = fs::absolute(global.project).lexically_normal();
        std::error_code ec;
        if (!fs::is_directory(ctx.project_root, ec))
            throw Error(ErrorCode::usage, "--project " + global.project + " is not a directory");
    } else {
        ctx.project_root = ops::find_project_root(fs::current_path());
    }
    if (!ctx.project_root.empty()) {
        std::error_code ec;
        fs::path canonical = fs::canonical(ctx.project_root, ec);
        if (!ec) ctx.project_root = canonical;
    }
    // A malformed ENVBOX_CUDA_DRIVER is an error whatever the command, not only once a CUDA
    // environment reads it.
    if (!ctx.settings.cuda_driver.empty())
        (void)env::nvidia_driver_version(ctx.settings.cuda_driver);
    ctx.jobs = jobs_from(variable("ENVBOX_JOBS"));
    ctx.progress = &progress;
    return ctx;
}

bool stderr_is_tty() {
    return ::isatty(2) == 1;
}

std::string counted(unsigned long long n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string human_bytes(unsigned long long bytes) {
    const char* units[] = {"B", "kB", "MB", "GB", "TB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while (v >= 1000 && u < 4) {
        v /= 1000;
        ++u;
    }
    char buf[32];
    if (u == 0)
        std::snprintf(buf, sizeof buf, "%llu B", bytes);
    else
        std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
    return buf;
}

}  // namespace envbox::cli
