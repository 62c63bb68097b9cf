#include "envbox/ops/context.hpp"

#include <cstdlib>

#include "envbox/util/error.hpp"
#include "envbox/util/sha256.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {

fs::path default_home() {
    if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return fs::path(x) / "envbox";
    if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".local" / "share" / "envbox";
    throw Error(ErrorCode::usage, "cannot place the store: set ENVBOX_HOME, XDG_DATA_HOME or HOME");
}

fs::path find_project_root(const fs::path& start) {
    std::error_code ec;
    fs::path dir = fs::absolute(start, ec);
    for (;;) {
        if (fs::is_directory(dir / "manifests", ec)) return dir;
        if (!dir.has_parent_path() || dir.parent_path() == dir) return {};
        dir = dir.parent_path();
    }
}

std::string project_key(const fs::path& root) {
    std::string name = root.filename().string();
    if (name.empty()) name = "root";
    for (auto& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
    return name + "-" + to_hex(sha256(root.string())).substr(0, 12);
}

fs::path env_dir(const Context& ctx, const std::string& env) {
    return ctx.home / "envs" / project_key(ctx.project_root) / env;
}

void check_env_name(const std::string& env) {
    bool ok = !env.empty() && env.front() != '.' && env.size() <= 100;
    for (char c : env)
        ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-');
    if (!ok)
        throw Error(ErrorCode::usage, "invalid environment name '" + env +
                                          "': use letters, digits, '.', '_' and '-'");
}

}  // namespace envbox::ops
