// `lock`'s source builds (lock_build.hpp): an sdist's metadata, static or built, and its build
// environment's lock.
#include "lock_build.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <set>

#include "envbox/install/fetch.hpp"
#include "envbox/install/sdist.hpp"
#include "envbox/install/source_build.hpp"
#include "envbox/lock/build_system.hpp"
#include "envbox/lock/lock_file.hpp"
#include "envbox/ops/generations.hpp"
#include "envbox/ops/lock.hpp"
#include "envbox/pep/metadata.hpp"
#include "envbox/pep/name.hpp"
#include "envbox/store/home.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/kv.hpp"
#include "envbox/util/own_tree.hpp"
#include "envbox/util/printable.hpp"
#include "envbox/util/sha256.hpp"
#include "settings.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {
namespace {

constexpr std::uintmax_t kMaxTextBytes = 16u << 20;  // PKG-INFO, pyproject.toml

// A text file (a regular file, never through a link: unpack_sdist makes nothing else, and a
// build lock beside the lock is read so too), bounded; none when absent.
std::optional<std::string> read_tree_file(const fs::path& file) {
    std::error_code ec;
    if (!fs::is_regular_file(fs::symlink_status(file, ec))) return std::nullopt;
    if (fs::file_size(file, ec) > kMaxTextBytes)
        throw Error(ErrorCode::integrity,
                    file.string() + " is over " + std::to_string(kMaxTextBytes >> 20) + " MiB");
    return read_input_file(file, kMaxTextBytes, ErrorCode::integrity);
}

// `pylock.ENV.build.NAME.toml`: the lock of ENV's build environment for NAME (a normalised
// requirement name), beside ENV's lock.
std::string build_lock_name(const std::string& env, const std::string& name) {
    return "pylock." + env + ".build." + name + ".toml";
}

// The `Dynamic` fields of a core metadata text's header, lowercased.
std::vector<std::string> dynamic_fields(std::string_view text) {
    std::vector<std::string> out;
    while (!text.empty()) {
        const auto end = text.find('\n');
        std::string_view line = text.substr(0, end);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty()) break;  // the body starts
        if (line.size() > 8 && pep::ascii_lower(std::string(line.substr(0, 8))) == "dynamic:") {
            std::string v(line.substr(8));
            v.erase(0, v.find_first_not_of(" \t"));
            v.erase(v.find_last_not_of(" \t") + 1);
            out.push_back(pep::ascii_lower(v));
        }
        if (end == std::string_view::npos) break;
        text.remove_prefix(end + 1);
    }
    return out;
}

// Whether PKG-INFO `meta` (text `text`) gives the dependencies as a build would: Metadata 2.2
// or later (PEP 643) with none of them declared dynamic.
bool static_dependencies(const pep::CoreMetadata& meta, std::string_view text) {
    const auto v = pep::Version::parse(meta.metadata_version);
    if (!v || *v < pep::Version::parse("2.2").value()) return false;
    for (const auto& f : dynamic_fields(text))
        if (f == "requires-dist" || f == "requires-python" || f == "provides-extra") return false;
    return true;
}

// The metadata `text` (from `what`) must be the sdist's package and version.
pep::CoreMetadata checked_metadata(const std::string& text, const resolve::SdistRequest& r,
                                   const std::string& what) {
    auto meta = pep::CoreMetadata::parse(text);
    if (!meta) {
        Error e = meta.error();
        e.add_context("reading " + what);
        throw e;
    }
    if (pep::canonicalize_name(meta->name) != r.name || !(meta->version == r.version))
        throw Error(ErrorCode::integrity, what + " names " + printable(meta->name) + " " +
                                              meta->version.str() + ", not " + r.name + " " +
                                              r.version.str() + " as its file name does");
    return std::move(*meta);
}

// The requirements of a build environment: `[build-system] requires` (`bs`, of the tree's
// `pyproject`), and `wheel` beside a setuptools backend (its get_requires_for_build_wheel asks
// for it).
std::vector<pep::Requirement> build_requirements(const lock::BuildSystem& bs,
                                                 const fs::path& pyproject) {
    std::vector<pep::Requirement> out = bs.requires_;
    for (const auto& r : out)  // the tree's own say: never a URL or a path to fetch or read
        if (r.url)
            throw Error(ErrorCode::invalid_input,
                        pyproject.string() + ": [build-system] requires '" + printable(r.str()) +
                            "' is a direct reference; envbox locks a build "
                            "environment from the indexes only");
    const bool named = std::any_of(out.begin(), out.end(), [](const pep::Requirement& r) {
        return pep::canonicalize_name(r.name) == "wheel";
    });
    if (bs.backend.starts_with("setuptools.build_meta") && !named)
        out.push_back(pep::Requirement::parse("wheel").value());
    return out;
}

// The same for an unpacked sdist's tree.
std::vector<pep::Requirement> build_requirements(const fs::path& tree) {
    const std::optional<std::string> pyproject = read_tree_file(tree / "pyproject.toml");
    auto bs = lock::read_build_system(pyproject, (tree / "pyproject.toml").string());
    if (!bs) throw bs.error();
    return build_requirements(*bs, tree / "pyproject.toml");
}

// The metadata of `r`'s sdist as `[build.NAME] requires-dist` gives it.
std::string given_metadata(const resolve::SdistRequest& r,
                           const std::vector<pep::Requirement>& requires_dist) {
    std::string text =
        "Metadata-Version: 2.2\nName: " + r.name + "\nVersion: " + r.version.str() + "\n";
    for (const auto& req : requires_dist)
        text += "Requires-Dist: " + req.str() + "\n";
    return text;
}

}  // namespace

LockBuilds::LockBuilds(const Context& ctx, const lock::Manifest& manifest, fs::path manifest_path,
                       std::string env, bool offline, ResolveBuildLock resolve_build_lock)
    : ctx_(ctx),
      manifest_(manifest),
      manifest_path_(std::move(manifest_path)),
      env_(std::move(env)),
      offline_(offline),
      indexes_(index_configs(manifest_, manifest_path_, ctx_.settings)),
      resolve_build_lock_(std::move(resolve_build_lock)) {}

resolve::SdistBuilds LockBuilds::hooks() {
    return {[this](const std::string& name) { return manifest_.may_build(name); },
            [this](const resolve::SdistRequest& r) { return metadata(r); }};
}

const install::Target& LockBuilds::build_target() {
    std::lock_guard lock(mutex_);
    if (!target_)
        target_ = install::create_target(&manifest_, store::Home(ctx_.home).interpreters(), env_,
                                         interpreter_search(ctx_.settings));
    return *target_;
}

std::string LockBuilds::metadata(const resolve::SdistRequest& r) {
    const store::Home home(ctx_.home);
    const fs::path lock_dir = manifest_path_.parent_path();
    lock::FileRef file;
    file.url = r.file.url;
    file.size = r.size;
    const std::vector<resolve::IndexConfig>& indexes = indexes_;
    const index::ArtifactRequest request = install::artifact_request(
        r.file.filename, file, r.sha256,
        r.index ? std::optional<std::string>(r.index->url) : std::nullopt, indexes);
    const fs::path sdist = install::locate_sdist(request, lock_dir, home.downloads(),
                                                 http_options(ctx_, offline_), offline_);
    make_own_dir_at_path(ctx_.home, home.tmp());
    const fs::path work = home.tmp() / install::work_folder_name("lock-sdist", r.sha256);
    const RemoveOwnTree remove(home.tmp(), work);
    const fs::path tree = install::unpack_sdist(sdist, work, {}, r.file.filename);
    const std::optional<std::string> pkg_info = read_tree_file(tree / "PKG-INFO");
    std::optional<std::string> previous;
    try {
        previous = read_tree_file(lock_dir / build_lock_name(env_, r.name));
    } catch (const Error&) {  // over the bound: resolved afresh
    }
    const std::string build_lock = resolve_build_lock_(build_requirements(tree), previous);
    {
        std::lock_guard lock(mutex_);
        build_locks_[r.sha256] = build_lock;
    }
    const auto settings = manifest_.package_builds.find(r.name);
    const lock::PackageBuild* b =
        settings == manifest_.package_builds.end() ? nullptr : &settings->second;
    if (b && b->requires_dist) return given_metadata(r, *b->requires_dist);
    if (pkg_info && static_dependencies(
                        checked_metadata(*pkg_info, r, r.file.filename + "'s PKG-INFO"), *pkg_info))
        return *pkg_info;
    if (b && !b->dependencies.empty())
        throw Error(ErrorCode::invalid_input,
                    r.file.filename + " gives its dependencies only through a build, and its " +
                        "build sees " + b->dependencies.front() + " ([build." + r.name +
                        "] dependencies), which is not locked yet: give them in the manifest as " +
                        "[build." + r.name + "] requires-dist = [...]");

    // Dynamic (or no) metadata: what the built wheel says, as pip learns it.
    const install::Target& target = build_target();
    const fs::path build_path = lock_dir / build_lock_name(env_, r.name);
    auto parsed = lock::parse_lock_file(build_path, build_lock);
    if (!parsed) throw parsed.error();
    store::Store store(ctx_.home);
    install::FetchPlan plan;
    plan.lock_dir = lock_dir;
    plan.downloads = home.downloads();
    plan.http = http_options(ctx_, offline_);
    plan.indexes = indexes;
    plan.offline = offline_;
    plan.jobs = ctx_.jobs;
    plan.interpreter = &*target.interpreter;
    install::SdistToBuild what;
    what.name = r.name;
    what.version = r.version;
    what.filename = r.file.filename;
    what.sha256 = r.sha256;
    what.request = request;
    if (b) what.settings = *b;
    // One build at a time (each may use every core), with the store held as create holds it:
    // gc waits.
    std::lock_guard one_build(build_mutex_);
    make_own_dir_at_path(ctx_.home, home.locks());  // a new home has none yet
    const FileLock store_lock = FileLock::shared(store_lock_path(ctx_));
    const install::BuildSite site{ctx_.home, ctx_.progress, ctx_.jobs, git_settings(ctx_), {}};
    const install::BuiltRecord built =
        install::build_sdist(site, store, target, what, *parsed, to_hex(sha256(build_lock)), plan);
    const auto archive = store.kept_archive(built.wheel_sha256);
    if (!archive)
        throw Error(ErrorCode::integrity, "the store keeps no archive of " + built.filename +
                                              ", built from " + r.file.filename);
    auto meta = store::read_dist_info_file(*archive, "METADATA", built.filename);
    if (!meta) throw Error(ErrorCode::integrity, built.filename + " has no METADATA");
    checked_metadata(*meta, r,
                     "the METADATA of " + built.filename + " (built from " + r.file.filename + ")");
    return *meta;
}

void LockBuilds::local(const install::LocalProject& project) {
    const fs::path lock_dir = manifest_path_.parent_path();
    std::optional<std::string> previous;
    try {
        previous = read_tree_file(lock_dir / build_lock_name(env_, project.name));
    } catch (const Error&) {  // over the bound: resolved afresh
    }
    std::string text = resolve_build_lock_(
        build_requirements(project.build_system, project.dir / "pyproject.toml"), previous);
    std::lock_guard lock(mutex_);
    build_locks_["local " + project.name] = std::move(text);
}

std::vector<LockBuilds::File> LockBuilds::files(const std::vector<lock::LockedPackage>& packages,
                                                const fs::path& lock_path) const {
    std::vector<File> out;
    std::set<std::string> names;
    std::lock_guard lock(mutex_);
    for (const auto& p : packages) {
        if (!p.sdist && !p.directory && !p.vcs) continue;
        const auto it = build_locks_.find(p.sdist ? p.sdist->sha256 : "local " + p.name);
        if (it == build_locks_.end())
            throw Error(ErrorCode::generic, "no build lock was resolved for " + p.name);
        const std::string file = build_lock_name(env_, p.name);
        if (!names.insert(p.name).second)  // one name, two versions (on two targets)
            throw Error(ErrorCode::invalid_input,
                        p.name + " is locked from two sdists (" + p.version + " and another) " +
                            "on different targets; envbox builds one sdist per package: pin " +
                            "one version for every target");
        const auto settings = manifest_.package_builds.find(p.name);
        out.push_back({p.name, lock_path.parent_path() / file, it->second,
                       p.name + " " + file + " " + to_hex(sha256(it->second)),
                       settings == manifest_.package_builds.end()
                           ? std::vector<std::string>{}
                           : lock::build_settings_lines(p.name, settings->second)});
    }
    return out;
}

bool build_locks_intact(const lock::LockFile& lock) {
    if (!lock.tool) return true;
    for (const auto& line : lock.tool->builds) {
        const auto f = kv::split_fields(line);
        if (f.size() != 3 || f[1].find('/') != std::string_view::npos) return false;
        try {
            const auto build_lock =
                lock::read_lock_file(lock.path.parent_path() / std::string(f[1]));
            if (!build_lock || to_hex(sha256(build_lock->text)) != f[2]) return false;
        } catch (const Error&) {
            return false;  // gone or unreadable
        }
    }
    return true;
}

std::vector<std::string> remove_stale_build_locks(const std::string& previous,
                                                  const fs::path& lock_path, const std::string& env,
                                                  const std::vector<LockBuilds::File>& kept) {
    std::vector<std::string> removed;
    if (previous.empty()) return removed;
    std::optional<lock::ToolTable> tool;
    try {
        auto read = lock::read_tool_table(previous, lock_path.string());
        if (read) tool = std::move(*read);
    } catch (const Error&) {
    }
    if (!tool) return removed;
    std::set<std::string> keep;
    for (const auto& f : kept)
        keep.insert(f.path.filename().string());
    for (const auto& line : tool->builds) {
        const auto f = kv::split_fields(line);
        if (f.size() != 3 || !pep::is_valid_name(f[0])) continue;
        const std::string file(f[1]);
        if (keep.count(file) || file != build_lock_name(env, pep::canonicalize_name(f[0])))
            continue;
        const fs::path path = lock_path.parent_path() / file;
        std::error_code ec;
        if (!fs::is_regular_file(fs::symlink_status(path, ec))) continue;
        try {
            if (to_hex(sha256(read_input_file(path))) != f[2]) continue;  // changed by hand: kept
        } catch (const Error&) {
            continue;
        }
        if (fs::remove(path, ec)) removed.push_back(file);
    }
    return removed;
}

}  // namespace envbox::ops
