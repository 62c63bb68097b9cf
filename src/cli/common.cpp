#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cli/commands.hpp"
#include "envbox/env/cuda.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/parallel.hpp"

namespace fs = std::filesystem;

namespace envbox::cli {

ops::Context make_context(const GlobalOptions& global, ops::Progress& progress) {
    ops::Context ctx;
    ctx.home = global.home.empty() ? ops::default_home() : fs::path(global.home);
    ctx.user_umask = ::umask(static_cast<mode_t>(ops::home_umask(ctx.home)));
    ctx.home = ops::canonical_home(ctx.home);
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
    if (const char* d = std::getenv("ENVBOX_CUDA_DRIVER"); d && *d)
        (void)env::nvidia_driver_version();
    ctx.jobs = default_jobs();
    ctx.progress = &progress;
    return ctx;
}

bool stderr_is_tty() {
    return ::isatty(2) == 1;
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
