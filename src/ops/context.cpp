#include "envbox/ops/context.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "envbox/lock/project_metadata.hpp"
#include "envbox/store/home.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/own_tree.hpp"
#include "envbox/util/sha256.hpp"
#include "envbox/util/spelling.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {

fs::path default_home(const Settings& settings) {
    if (!settings.xdg_data_home.empty()) return fs::path(settings.xdg_data_home) / "envbox";
    if (!settings.user_home.empty())
        return fs::path(settings.user_home) / ".local" / "share" / "envbox";
    throw Error(ErrorCode::usage, "cannot place the store: set ENVBOX_HOME, XDG_DATA_HOME or HOME");
}

fs::path canonical_home(const fs::path& home) {
    std::error_code ec;
    fs::path path = fs::absolute(home, ec).lexically_normal();
    fs::create_directories(path, ec);  // a failure shows later, where the home is used
    fs::path canonical = fs::weakly_canonical(path, ec);
    if (!ec) path = canonical;
    const fs::path record = path / ".home-path";
    struct stat here {
    }, there{};
    if (::stat(path.c_str(), &here) != 0) return path;
    if (!fs::exists(record, ec)) {
        try {  // best effort: a read-only home simply has no recorded name
            write_file_atomic(record, path.string() + "\n", 0644, Durability::none);
        } catch (const Error&) {
        }
        return path;
    }
    std::string recorded;
    try {
        recorded = read_file(record);
    } catch (const Error&) {
        return path;
    }
    if (!recorded.empty() && recorded.back() == '\n') recorded.pop_back();
    // Only a name of this same directory is taken: the file cannot send envbox elsewhere.
    if (recorded.empty() || recorded.front() != '/' || ::stat(recorded.c_str(), &there) != 0 ||
        there.st_dev != here.st_dev || there.st_ino != here.st_ino)
        return path;
    return fs::path(recorded);
}

void check_home_layout(const fs::path& home) {
    const store::Home h(home);
    for (const fs::path& dir : {h.objects(), h.wheels(), h.tmp(), h.locks(), h.envs(),
                                h.http_cache(), h.metadata_cache(), h.downloads(), h.interpreters(),
                                h.oci_cache(), h.compile_cache("key", "env").parent_path()})
        require_no_link_below(home, dir);
}

unsigned home_umask(const fs::path& home) {
    struct stat st {};
    return ::stat(home.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & S_ISGID) ? 002
                                                                                           : 022;
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

std::string known_environments(const fs::path& project_root, std::string_view mistyped) {
    std::set<std::string> names;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(Project{project_root}.manifests(), ec)) {
        const std::string file = entry.path().filename().string();
        if (file.ends_with(".toml") && !file.starts_with("pylock."))
            names.insert(file.substr(0, file.size() - 5));
    }
    if (names.empty()) return "this project has no manifest yet";
    std::string out;
    for (const auto& n : names)
        out += (out.empty() ? "" : ", ") + n;
    std::optional<std::string> near;
    if (!mistyped.empty())
        near =
            closest_spelling(mistyped, std::vector<std::string_view>(names.begin(), names.end()));
    return (near ? "did you mean " + *near + "? " : "") + "the environments here are " + out;
}

std::vector<std::string> project_environments(const Context& ctx) {
    std::set<std::string> names;
    if (ctx.project_root.empty()) return {};
    auto add = [&](std::string name) {
        try {
            check_env_name(name);
            names.insert(std::move(name));
        } catch (const Error&) {
            // not an environment: a file that only looks like a manifest
        }
    };
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(ctx.project().manifests(), ec)) {
        const std::string file = entry.path().filename().string();
        if (!file.ends_with(".toml")) continue;
        const std::size_t from = file.starts_with("pylock.") ? 7 : 0;
        if (file.size() > from + 5) add(file.substr(from, file.size() - 5 - from));
    }
    // This project's folders only (another project's planted link is not this one's problem);
    // a link among them is named, and refused when it is checked.
    const fs::path rel = fs::path("envs") / project_key(ctx);
    if (UniqueFd project = open_own_dir(ctx.home, rel))
        for (const auto& e : list_own_dir(project.get(), ctx.home / rel))
            if (e.type == OwnEntry::Type::folder || e.type == OwnEntry::Type::link) add(e.name);
    return {names.begin(), names.end()};
}

void require_environment_files(const Context& ctx, const std::string& env) {
    if (ctx.project_root.empty()) return;
    check_env_name(env);
    const fs::path manifest = ctx.project().manifest(env);
    std::error_code ec;
    if (fs::exists(manifest, ec) || fs::exists(ctx.project().lock(env), ec)) return;
    throw Error(ErrorCode::invalid_input, "no manifest " + manifest.string() + " (" +
                                              known_environments(ctx.project_root, env) +
                                              "; `envbox init " + env + "` writes one)");
}

void require_known_environment(const Context& ctx, const std::string& env) {
    check_env_name(env);
    std::error_code ec;
    if (!ctx.project_root.empty() && !fs::exists(env_dir(ctx, env), ec))
        require_environment_files(ctx, env);
}

std::string key_part(std::string name) {
    if (name.empty()) name = "root";
    for (auto& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
            c = '_';
    return name;
}

std::string path_key(const fs::path& root) {
    return key_part(root.filename().string()) + "-" + to_hex(sha256(root.string())).substr(0, 12);
}

fs::path env_dir(const Context& ctx, const std::string& env) {
    fs::path dir = store::Home(ctx.home).env(project_key(ctx), env);
    // envs/ and envs/<key>/ are envbox's own folders: a link planted at either is refused
    // before any command reads or writes through it (the link rule, docs/SECURITY.md).
    require_no_link_below(ctx.home, dir);
    return dir;
}

std::vector<EnvDir> environment_dirs(const fs::path& home) {
    std::vector<EnvDir> out;
    const fs::path envs = store::Home(home).envs();
    UniqueFd top = open_own_dir(home, "envs");
    if (!top) return out;
    auto folders = [](int dir, const fs::path& shown) {
        std::vector<std::string> names;
        for (const auto& e : list_own_dir(dir, shown))
            if (e.type == OwnEntry::Type::link)
                refuse_planted_link(shown / e.name);
            else if (e.type == OwnEntry::Type::folder)
                names.push_back(e.name);
        return names;
    };
    for (const auto& key : folders(top.get(), envs)) {
        UniqueFd project = open_own_dir(envs, key);
        if (!project) continue;
        for (const auto& env : folders(project.get(), envs / key))
            out.push_back({key, env, envs / key / env});
    }
    return out;
}

void check_env_name(const std::string& env) {
    bool ok = !env.empty() && env.front() != '.' && env.size() <= 100;
    for (char c : env)
        ok =
            ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-');
    if (!ok)
        throw Error(ErrorCode::usage, "invalid environment name '" + env +
                                          "': use letters, digits, '.', '_' and '-'");
    // manifests/pylock.ENV.build.NAME.toml is the lock of ENV's build environment for NAME.
    if (env.find(".build.") != std::string::npos)
        throw Error(ErrorCode::usage, "invalid environment name '" + env +
                                          "': '.build.' names build locks (pylock.ENV.build."
                                          "NAME.toml)");
}

std::optional<lock::ProjectFile> read_project_file(const fs::path& project_root) {
    if (project_root.empty()) return std::nullopt;
    const fs::path path = project_root / "envbox.toml";
    std::error_code ec;
    if (!fs::exists(path, ec)) return std::nullopt;
    auto p = lock::ProjectFile::parse(read_manifest_file(path), path.string());
    if (!p) throw p.error();
    if (p->default_env) {
        try {
            check_env_name(*p->default_env);
        } catch (Error& e) {
            throw Error(ErrorCode::invalid_input,
                        path.string() + ": default-env: " + std::string(e.what()));
        }
    }
    return std::move(*p);
}

lock::Manifest read_manifest(const fs::path& manifest_path) {
    std::error_code ec;
    if (!fs::exists(manifest_path, ec))
        throw Error(ErrorCode::invalid_input, "no manifest " + manifest_path.string());
    const auto project = read_project_file(manifest_path.parent_path().parent_path());
    auto m = lock::Manifest::parse(read_manifest_file(manifest_path), manifest_path.string(),
                                   project ? &*project : nullptr);
    if (!m) throw m.error();
    if (!m->dependency_groups.empty()) {  // PEP 735: the project's shared sets
        const fs::path pyproject = manifest_path.parent_path().parent_path() / "pyproject.toml";
        if (!fs::is_regular_file(fs::symlink_status(pyproject, ec)))
            throw Error(ErrorCode::invalid_input, manifest_path.string() +
                                                      ": dependency-groups needs the project's " +
                                                      pyproject.string() + ", which is not there");
        auto reqs = lock::read_dependency_groups(read_manifest_file(pyproject), pyproject.string(),
                                                 m->dependency_groups);
        if (!reqs) throw reqs.error();
        for (auto& r : *reqs)
            if (std::none_of(m->requirements.begin(), m->requirements.end(),
                             [&](const pep::Requirement& have) { return have == r; }))
                m->requirements.push_back(std::move(r));
    }
    return std::move(*m);
}

}  // namespace envbox::ops
