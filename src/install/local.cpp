// Local source trees (install/local.hpp): read and checked for `lock`, walked for a build's key.
#include "envbox/install/local.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <functional>
#include <set>

#include "envbox/pep/name.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/sha256.hpp"

namespace fs = std::filesystem;

namespace envbox::install {
namespace {

constexpr std::size_t kMaxEntries = 100000;
constexpr std::uint64_t kMaxBytes = 4ull << 30;
constexpr int kMaxDepth = 64;

// Whether `p` is `root` or below it (both canonical).
bool inside(const fs::path& p, const fs::path& root) {
    auto r = root.begin(), q = p.begin();
    for (; r != root.end(); ++r, ++q)
        if (q == p.end() || *q != *r) return false;
    return true;
}

bool skipped(const std::string& name, bool top) {
    static const std::set<std::string> kAnywhere = {
        ".git", ".hg",         ".svn",          ".envbox",     "__pycache__",  ".venv", ".tox",
        ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", "node_modules", ".eggs"};
    if (kAnywhere.count(name) || name.ends_with(".pyc")) return true;
    return top && (name == "build" || name == "dist" || name.ends_with(".egg-info"));
}

struct Walk {
    fs::path root, skip;
    fs::path real_root;  ///< `root` with every link resolved
    std::size_t entries = 0;
    std::uint64_t bytes = 0;
    // kind 'd', 'f' (executable or not) or 'l' (its target), with the path below the root
    std::function<void(char, const fs::path&, const fs::path&, bool, const std::string&)> visit;

    void folder(const fs::path& dir, const fs::path& rel, int depth) {
        if (depth > kMaxDepth)
            throw Error(ErrorCode::invalid_input, dir.string() + " is nested deeper than " +
                                                      std::to_string(kMaxDepth) + " folders");
        std::vector<fs::directory_entry> list;
        for (const auto& e : fs::directory_iterator(dir))
            list.push_back(e);
        std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
            return a.path().filename() < b.path().filename();
        });
        for (const auto& e : list) {
            const std::string name = e.path().filename().string();
            if (skipped(name, depth == 0) || (!skip.empty() && e.path() == skip)) continue;
            if (++entries > kMaxEntries)
                throw Error(ErrorCode::invalid_input, root.string() + " holds over " +
                                                          std::to_string(kMaxEntries) + " files");
            const fs::path r = rel / name;
            const fs::file_status st = e.symlink_status();
            if (fs::is_symlink(st)) {
                const fs::path target = fs::read_symlink(e.path());
                const std::string lands = (rel / target).lexically_normal().string();
                // Where the kernel would land, every link of a chain followed, and as written.
                std::error_code ec;
                const fs::path real = fs::weakly_canonical(e.path(), ec);
                if (target.empty() || target.is_absolute() || lands == ".." ||
                    lands.starts_with("../") || ec || !inside(real, real_root))
                    throw Error(ErrorCode::invalid_input, e.path().string() + " links out of " +
                                                              root.string() + " (to " +
                                                              target.string() +
                                                              "); a local package's tree is "
                                                              "built from what is inside it");
                visit('l', e.path(), r, false, target.string());
            } else if (fs::is_directory(st)) {
                visit('d', e.path(), r, false, "");
                folder(e.path(), r, depth + 1);
            } else if (fs::is_regular_file(st)) {
                bytes += fs::file_size(e.path());
                if (bytes > kMaxBytes)
                    throw Error(
                        ErrorCode::invalid_input,
                        root.string() + " holds over " + std::to_string(kMaxBytes >> 30) + " GiB");
                const bool exec = (st.permissions() & fs::perms::owner_exec) != fs::perms::none;
                visit('f', e.path(), r, exec, "");
            }  // sockets, pipes, devices: nothing a build reads
        }
    }
};

Error refused(const lock::LocalSource& s, const fs::path& manifest_path, const std::string& name,
              const std::string& why) {
    const fs::path file =
        s.from_project ? manifest_path.parent_path().parent_path() / "envbox.toml" : manifest_path;
    const std::string what =
        s.git.empty() ? "path = \"" + s.path + "\"" : "git = \"" + s.git + "\"";
    return Error(ErrorCode::invalid_input, file.string() + ":" + std::to_string(s.line) +
                                               ": [sources] " + name + " = { " + what +
                                               " }: " + why);
}

std::optional<std::string> read_if_file(const fs::path& file) {
    std::error_code ec;
    if (!fs::is_regular_file(fs::symlink_status(file, ec))) return std::nullopt;
    return read_input_file(file, kMaxInputFileBytes, ErrorCode::invalid_input);
}

// The tree `s` names, canonical, checked to be a folder inside the project.
fs::path source_tree(const lock::LocalSource& s, const fs::path& manifest_path,
                     const std::string& name) {
    const fs::path root = manifest_path.parent_path().parent_path();
    const fs::path base = s.from_project ? root : manifest_path.parent_path();
    std::error_code ec;
    const fs::path dir = fs::canonical(base / s.path, ec);
    if (ec || !fs::is_directory(dir))
        throw refused(s, manifest_path, name,
                      (base / s.path).lexically_normal().string() + " is not a folder");
    if (!inside(dir, fs::canonical(root)))
        throw refused(s, manifest_path, name,
                      dir.string() + " is outside the project " + root.string() +
                          "; a lock is shared, so a local source is a folder of the project");
    return dir;
}

}  // namespace

std::string LocalProject::input_line() const {
    if (!git.empty())
        return name + " git " + git + " " + rev.value_or("-") + " " + subdirectory.value_or("-");
    return name + " " + lock_path + (editable ? " editable " : " built ") +
           to_hex(sha256(metadata.resolution_text()));
}

namespace {

// The metadata of `p` (`text`, its pyproject.toml, named `source`) checked and made the
// resolver's one candidate.
void read_metadata(LocalProject& p, const std::string& text, const std::string& source,
                   const lock::Manifest& manifest,
                   const std::function<Error(std::string)>& refuse) {
    auto meta = lock::read_project_metadata(text, source);
    if (!meta) throw meta.error();
    p.metadata = std::move(*meta);
    if (pep::canonicalize_name(p.metadata.name) != p.name)
        throw refuse(source + " is the project '" + p.metadata.name + "', not " + p.name);
    auto bs = lock::read_build_system(text, source);
    if (!bs) throw bs.error();
    p.build_system = std::move(*bs);
    const auto given = manifest.package_builds.find(p.name);
    if (given != manifest.package_builds.end() && given->second.requires_dist) {
        p.metadata.dependencies = *given->second.requires_dist;
        p.metadata.optional_dependencies.clear();
    } else if (!p.metadata.static_dependencies()) {
        throw refuse(source +
                     " declares its dependencies dynamic; give them in the manifest as [build." +
                     p.name + "] requires-dist = [...]");
    }
    p.package.version = p.metadata.version.value_or(pep::Version::parse("0").value());
    p.package.dependencies.requires_dist = p.metadata.requires_dist();
}

// A git source: its commit (the previous lock's, else resolved now) and its metadata there.
void read_git(LocalProject& p, const lock::LocalSource& s, const GitLocking& git,
              const lock::Manifest& manifest, const std::function<Error(std::string)>& refuse) {
    const GitAccess access = git.access(p.name);
    const auto pinned = git.pinned.find(p.name);
    p.commit = pinned != git.pinned.end() ? pinned->second : git_resolve(access, s.git, s.rev);
    const std::string file = (s.subdirectory ? *s.subdirectory + "/" : "") + "pyproject.toml";
    const auto text = git_file(access, s.git, p.commit, file);
    if (!text) throw refuse("commit " + p.commit + " has no " + file);
    read_metadata(p, *text, s.git + " " + p.commit.substr(0, 12) + ":" + file, manifest, refuse);
    p.package.url = "git+" + s.git + "@" + p.commit;
}

}  // namespace

std::map<std::string, LocalProject> local_projects(const lock::Manifest& manifest,
                                                   const fs::path& manifest_path,
                                                   const GitLocking* git) {
    std::map<std::string, LocalProject> out;
    for (const auto& [name, s] : manifest.local_sources) {
        LocalProject p;
        p.name = name;
        p.editable = s.editable;
        const auto refuse = [&, n = name](const std::string& why) {
            return refused(s, manifest_path, n, why);
        };
        if (!s.git.empty()) {
            p.git = s.git;
            p.rev = s.rev;
            p.subdirectory = s.subdirectory;
            if (git) read_git(p, s, *git, manifest, refuse);
            out.emplace(name, std::move(p));
            continue;
        }
        p.dir = source_tree(s, manifest_path, name);
        const auto text = read_if_file(p.dir / "pyproject.toml");
        if (!text) throw refuse(p.dir.string() + " has no pyproject.toml");
        read_metadata(p, *text, (p.dir / "pyproject.toml").string(), manifest, refuse);
        p.lock_path =
            p.dir.lexically_relative(fs::canonical(manifest_path.parent_path())).generic_string();
        if (p.lock_path.empty()) p.lock_path = ".";
        p.package.url = "file://" + p.dir.string();
        out.emplace(name, std::move(p));
    }
    return out;
}

fs::path locked_tree(const fs::path& lock_dir, const std::string& path,
                     const fs::path& project_root, const std::string& name) {
    const std::string what = "the lock's directory entry of " + name + " (path = \"" + path + "\")";
    std::error_code ec;
    const fs::path dir = fs::canonical(lock_dir / path, ec);
    if (ec || !fs::is_directory(dir))
        throw Error(
            ErrorCode::invalid_input,
            what + ": " + (lock_dir / path).lexically_normal().string() + " is not a folder");
    const fs::path root = fs::canonical(project_root, ec);
    if (ec || !inside(dir, root))
        throw Error(
            ErrorCode::invalid_input,
            what + ": " + dir.string() + " is outside the project " + project_root.string());
    return dir;
}

std::string tree_digest(const fs::path& dir, const fs::path& skip) {
    Sha256 all;
    Walk w{dir, skip, fs::canonical(dir), 0, 0, {}};
    w.visit = [&](char kind, const fs::path& at, const fs::path& rel, bool exec,
                  const std::string& target) {
        std::string line = std::string(1, kind) + " " + rel.generic_string();
        if (kind == 'f') line += std::string(exec ? " x " : " - ") + to_hex(sha256_file(at));
        if (kind == 'l') line += " -> " + target;
        all.update(line + "\n");
    };
    w.folder(dir, {}, 0);
    return to_hex(all.finish());
}

void copy_tree(const fs::path& from, const fs::path& to, const fs::path& skip) {
    fs::create_directory(to);
    Walk w{from, skip, fs::canonical(from), 0, 0, {}};
    w.visit = [&](char kind, const fs::path& at, const fs::path& rel, bool exec,
                  const std::string& target) {
        const fs::path dst = to / rel;
        if (kind == 'd') fs::create_directory(dst);
        if (kind == 'l') fs::create_symlink(target, dst);
        if (kind == 'f') {
            fs::copy_file(at, dst);
            fs::permissions(dst, exec ? fs::perms(0755) : fs::perms(0644));
        }
    };
    w.folder(from, {}, 0);
}

std::string editable_digest(const fs::path& dir) {
    std::string all = "editable " + dir.string() + "\n";
    for (const char* file : {"pyproject.toml", "setup.py", "setup.cfg"})
        if (auto text = read_if_file(dir / file))
            all += std::string(file) + " " + to_hex(sha256(*text)) + "\n";
    for (const fs::path& folder : {dir, dir / "src"}) {
        std::error_code ec;
        if (!fs::is_directory(fs::symlink_status(folder, ec))) continue;
        std::vector<std::string> names;
        for (const auto& e : fs::directory_iterator(folder))
            if (!skipped(e.path().filename().string(), true))
                names.push_back(e.path().filename().string());
        std::sort(names.begin(), names.end());
        for (const auto& n : names)
            all += "name " + (folder / n).lexically_relative(dir).generic_string() + "\n";
    }
    return to_hex(sha256(all));
}

}  // namespace envbox::install
