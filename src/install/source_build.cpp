// Source builds: each package a lock installs from its sdist, a folder or a git commit is built
// once, in a build environment made from the PEP 751 lock the main lock names for it, and kept
// in the store under a key of every input (install/built.hpp); contracts in source_build.hpp.
#include "envbox/install/source_build.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <random>
#include <set>

#include "envbox/env/build.hpp"
#include "envbox/install/build.hpp"
#include "envbox/install/built.hpp"
#include "envbox/install/generation.hpp"
#include "envbox/install/git.hpp"
#include "envbox/install/local.hpp"
#include "envbox/install/sdist.hpp"
#include "envbox/pep/digest.hpp"
#include "envbox/pep/filename.hpp"
#include "envbox/pep/name.hpp"
#include "envbox/store/home.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/kv.hpp"
#include "envbox/util/own_tree.hpp"
#include "envbox/util/printable.hpp"
#include "envbox/util/sha256.hpp"

namespace fs = std::filesystem;

namespace envbox::install {
namespace {

struct BuildEntry {
    std::string file, sha256;
};

// `[tool.envbox] builds`, checked: "NAME FILE SHA256", FILE a plain file name beside the lock.
std::map<std::string, BuildEntry> build_entries(const lock::LockFile& lock) {
    std::map<std::string, BuildEntry> out;
    if (!lock.tool) return out;
    for (const auto& line : lock.tool->builds) {
        const auto f = kv::split_fields(line);
        const bool plain = f.size() == 3 && f[1].find('/') == std::string_view::npos &&
                           f[1] != "." && f[1] != ".." && !f[1].empty();
        if (!plain || !pep::is_valid_name(f[0]) || !pep::is_sha256_hex(f[2]))
            throw Error(ErrorCode::invalid_input,
                        lock.path.string() + ": [tool.envbox] builds entry '" + printable(line) +
                            "' is not NAME FILE SHA256 (FILE: a lock beside this one)");
        out[pep::canonicalize_name(f[0])] = {std::string(f[1]), std::string(f[2])};
    }
    return out;
}

// The build lock of `entry`, read and checked against the digest the main lock records.
lock::LockFile read_build_lock(const lock::LockFile& lock, const BuildEntry& entry) {
    auto read = lock::read_lock_file(lock.path.parent_path() / entry.file);
    if (!read) throw read.error();
    if (to_hex(sha256(read->text)) != entry.sha256)
        throw Error(ErrorCode::integrity,
                    read->path.string() + " is not the build lock " + lock.path.string() +
                        " names (its sha256 differs): lock again, or put back the file");
    return std::move(*read);
}

// The machine a build runs on, for its key and its build environment: this machine's
// architecture and C library as the interpreter reports them. Not the target's platform tag:
// an environment created from a manifest (manylinux_2_28) and one from its lock alone (this
// machine's tag) build the same wheel here.
std::string build_host(const Target& target) {
    const env::Interpreter& i = *target.interpreter;
    return "linux " + target.machine() + (i.glibc.empty() ? " libc unknown" : " glibc " + i.glibc) +
           (i.abiflags.empty() ? "" : " abiflags " + i.abiflags);
}

// "NAME VERSION SHA256" of each runtime wheel a build sees, sorted: its part of the key.
std::vector<std::string> runtime_key(const std::vector<Item>& runtime) {
    std::vector<std::string> out;
    for (const auto& item : runtime)
        out.push_back(item.package->name + " " +
                      (item.package->version ? item.package->version->str() : "-") + " " +
                      item.sha256);
    std::sort(out.begin(), out.end());
    return out;
}

// A build environment, held shared while a build uses it (gc removes only one nobody holds).
struct BuildEnv {
    fs::path path;  ///< its generation
    FileLock in_use;
};

// The build environment of `build_lock` for `target`, with the `runtime` wheels over the build
// lock's (a package of both is the runtime's): made once per build lock, runtime, interpreter
// and platform in the home's cache (a generation like any environment's), then reused. Made
// under its lock held exclusively, then held shared for the build (gc may remove it between:
// then it is made again).
// shape: where builds run, the store and target, the two sets of wheels, how to fetch them.
BuildEnv build_environment(const BuildSite& site, store::Store& store, const Target& target,
                           const lock::LockFile& build_lock, const std::vector<Item>& runtime,
                           const FetchPlan& plan) {
    std::string inputs = build_lock.text + "\n--target " + target.interpreter->executable.string() +
                         " " + target.python_full_version + " " + build_host(target);
    std::set<std::string> runtime_names;
    for (const auto& line : runtime_key(runtime))
        inputs += "\n--runtime " + line;
    for (const auto& item : runtime)
        runtime_names.insert(item.package->name);
    const std::string digest = to_hex(sha256(inputs));
    const store::Home home(site.home);
    const fs::path edir = home.cache() / "build-envs" / digest.substr(0, 32);
    make_own_dir_at_path(site.home, home.locks());  // a first `lock` in a new home builds too
    const fs::path lock_path = home.locks() / ("build-env-" + digest.substr(0, 32) + ".lock");
    const auto current = [&]() -> std::optional<fs::path> {
        if (auto cur = env::current_generation(edir); cur && cur->lock_digest == digest)
            return cur->path;
        return std::nullopt;
    };
    for (;;) {
        {
            FileLock held(lock_path);
            make_own_dir_at_path(site.home, edir);
            if (!current()) {
                std::vector<Item> items;
                for (auto& item : select_items(build_lock.pylock, target, build_lock.path))
                    if (!runtime_names.count(item.package->name)) items.push_back(std::move(item));
                items.insert(items.end(), runtime.begin(), runtime.end());
                FetchPlan p = plan;
                p.lock_dir = build_lock.path.parent_path();
                p.bytecode = {};  // a build environment runs its backend once: no bytecode
                fetch_into_store(store, items, p, *site.progress);
                env::Generation gen = next_generation(edir, "build", digest, build_lock.path,
                                                      target, LinkMode::hardlink);
                env::build_generation(store, *target.interpreter, gen, edir,
                                      install_requests(items, nullptr, gen),
                                      {"build environment " + build_lock.path.filename().string(),
                                       build_lock.text, LinkMode::hardlink, site.jobs});
            }
        }
        FileLock in_use = FileLock::shared(lock_path);
        if (auto path = current()) return {*path, std::move(in_use)};
    }
}

// What the backend made must be the locked package, for the target.
void check_built(const SdistToBuild& sdist, const fs::path& wheel, const Target& target) {
    auto w = pep::WheelFilename::parse(wheel.filename().string());
    const std::string what =
        "building " + sdist.filename + ": the backend made " + wheel.filename().string() + ", ";
    if (!w || w->canonical_name != sdist.name)
        throw Error(ErrorCode::integrity, what + "not a wheel of " + sdist.name);
    if (sdist.version && w->version != *sdist.version)
        throw Error(ErrorCode::integrity,
                    what + "not version " + sdist.version->str() + " the lock names");
    if (!target.tags.best_rank(w->tags))
        throw Error(ErrorCode::invalid_input,
                    what + "whose tags " + w->tag_text + " do not run on " + target.platform);
}

// What the build of `sdist` sees of the environment's own wheels: the items of its
// `dependencies` and, through the lock's `dependencies`, theirs (for this target). A named
// package the lock does not install here, or one itself built from an sdist, is refused.
std::vector<Item> runtime_items(const std::vector<Item>& items, const SdistToBuild& sdist,
                                const fs::path& lock_path, const std::string& platform) {
    std::map<std::string, const Item*> by_name;
    for (const auto& item : items)
        by_name[item.package->name] = &item;
    std::vector<std::string> todo = sdist.settings.dependencies;
    for (const auto& d : todo)
        if (!by_name.count(d))
            throw Error(ErrorCode::invalid_input, lock_path.string() + ": the build of " +
                                                      sdist.name + " sees " + d + " ([build." +
                                                      sdist.name +
                                                      "] dependencies), which the lock does not "
                                                      "install on " +
                                                      platform);
    std::set<std::string> seen(todo.begin(), todo.end());
    std::vector<Item> out;
    while (!todo.empty()) {
        const Item& item = *by_name.at(todo.back());
        todo.pop_back();
        if (item.sdist || item.local)
            throw Error(ErrorCode::invalid_input, lock_path.string() + ": the build of " +
                                                      sdist.name + " sees " + item.package->name +
                                                      ", which is built from source too; a build "
                                                      "sees only the lock's wheels");
        out.push_back(item);
        for (const auto& d :
             item.package->dependencies.value_or(std::vector<lock::DependencyRef>{}))
            if (by_name.count(d.name) && d.name != sdist.name && seen.insert(d.name).second)
                todo.push_back(d.name);
    }
    return out;
}

// The wheel an artifact carried for `sdist`, checked as a build's output is, its key as a key.
BuiltRecord received_build(const SdistToBuild& sdist, const Target& target, const FetchPlan& plan) {
    const BuiltRecord* sent = nullptr;
    const std::string key = sdist.local ? "local " + sdist.name : sdist.sha256;
    if (plan.received)
        if (auto it = plan.received->builds.find(key); it != plan.received->builds.end())
            sent = &it->second;
    if (!sent)
        throw Error(ErrorCode::integrity,
                    sdist.name +
                        " is built from its sdist, and no built wheel came with what was "
                        "received: create it from its lock where builds may run");
    const BuiltRecord& built = *sent;
    if (built.filename.find('/') != std::string::npos)
        throw Error(ErrorCode::integrity, "the wheel received for " + sdist.filename +
                                              " is named '" + printable(built.filename) + "'");
    check_built(sdist, built.filename, target);
    if (!is_build_key_text(built.key_text, sdist.local ? built_from(built.key_text) : sdist.sha256))
        throw Error(ErrorCode::integrity, "the build key received with " + built.filename +
                                              " does not read as the key of a build of " +
                                              sdist.filename);
    return built;
}

void adopt(Item& item, const BuiltRecord& built) {
    item.sha256 = built.wheel_sha256;
    item.filename = built.filename;
}

}  // namespace

std::set<std::string> buildable_packages(const lock::LockFile& lock) {
    std::set<std::string> out;
    for (const auto& [name, entry] : build_entries(lock))
        out.insert(name);
    return out;
}

std::string work_folder_name(const std::string& prefix, const std::string& sha256) {
    static std::atomic<unsigned> serial{0};
    std::random_device random;
    char tail[9];
    std::snprintf(tail, sizeof tail, "%08x", random() ^ serial++);
    return prefix + "-" + sha256.substr(0, 16) + "-" + std::to_string(::getpid()) + "-" + tail;
}

// shape: where builds run, the store and target, what to build, in which environment.
BuiltRecord build_sdist(const BuildSite& site, store::Store& store, const Target& target,
                        const SdistToBuild& sdist, const lock::LockFile& build_lock,
                        const std::string& build_sha, const FetchPlan& plan) {
    BuildKey key;
    key.sdist_sha256 = sdist.sha256;
    key.build_env = build_sha;
    key.python = "cpython " + target.python_full_version;
    key.platform = build_host(target);
    for (const auto& [name, value] : sdist.settings.variables)
        if (!sdist.settings.speed_variables.count(name)) key.variables[name] = value;
    key.runtime = runtime_key(sdist.runtime);
    // A received environment installs what it received: a node never builds, nor asks its
    // compilers (its toolchain is not the one that built).
    if (plan.received) return received_build(sdist, target, plan);
    key.toolchain = toolchain(sdist.settings.variables, site.home);
    if (auto built = find_built_wheel(store, key)) return *built;
    const BuildEnv env = build_environment(site, store, target, build_lock, sdist.runtime, plan);
    const fs::path python = env.path / "bin" / "python";
    const store::Home home(site.home);
    BuildRequest r;
    make_own_dir_at_path(site.home, home.tmp());
    std::optional<RemoveOwnTree> archive;  // a git commit's tree, as an sdist
    if (sdist.vcs) {
        const std::string prefix = sdist.name + "-" + sdist.vcs->commit_id.substr(0, 12);
        archive.emplace(home.tmp(), home.tmp() / work_folder_name("git", sdist.sha256));
        fs::create_directory(archive->path);
        r.sdist = archive->path / (prefix + ".tar.gz");
        const auto trusted = site.git_credential_urls.find(sdist.name);
        const std::string url = sdist.vcs->url.value_or("");
        const bool send = trusted != site.git_credential_urls.end() && trusted->second == url;
        git_archive(site.git.access(sdist.name, plan.offline, send ? url : ""), url,
                    sdist.vcs->commit_id, sdist.vcs->subdirectory, prefix, r.sdist);
    } else if (sdist.tree.empty()) {
        r.sdist =
            locate_sdist(sdist.request, plan.lock_dir, plan.downloads, plan.http, plan.offline);
    }
    r.tree = sdist.tree;
    r.tree_skip = sdist.tree_skip;
    r.editable = sdist.editable;
    r.sdist_name = sdist.vcs ? r.sdist.filename().string() : sdist.filename;
    r.work = home.tmp() / work_folder_name("build", sdist.sha256);
    r.python = python;
    r.variables = sdist.settings.variables;
    r.read_only = site.home;
    site.progress->phase("Building " + sdist.filename, 0);
    const BuiltWheel built = build_wheel(r);  // a failure keeps its log
    check_built(sdist, built.wheel, target);
    BuiltRecord record = store_built_wheel(store, key, built.wheel);
    remove_own_tree(home.tmp(), r.work);
    return record;
}

void prepare_local_items(std::vector<Item>& items, const lock::LockFile& lock,
                         const fs::path& manifests,
                         const std::map<std::string, BuiltRecord>* received) {
    for (auto& item : items) {
        if (!item.local) continue;
        const auto& v = item.package->vcs;
        if (v)  // a lock is hostile input, a received one too
            if (auto bad = vcs_problem(v->type, v->url.value_or(""), v->commit_id, v->subdirectory))
                throw Error(ErrorCode::invalid_input,
                            lock.path.string() + ":" + std::to_string(item.package->line) + ": " +
                                item.package->name + "'s [packages.vcs]: " + *bad);
        if (received) {  // a node installs the wheel that came with the artifact: no tree here
            // Its digest is that wheel's, so a new build of the same lock is a new generation.
            const auto sent = received->find("local " + item.package->name);
            item.sha256 = sent == received->end() ? "none" : sent->second.wheel_sha256;
            item.filename = item.package->name;
            item.editable = false;  // a regular wheel of the tree, built where it was pushed
            continue;
        }
        if (v) {
            item.sha256 = to_hex(sha256("git\n" + *v->url + "\n" + v->commit_id + "\n" +
                                        v->subdirectory.value_or("")));
            item.filename = item.package->name;
            continue;
        }
        item.tree = locked_tree(lock.path.parent_path(), item.package->directory->path,
                                manifests.parent_path(), item.package->name);
        item.sha256 =
            item.editable ? editable_digest(item.tree) : tree_digest(item.tree, manifests);
        item.filename = item.package->name;
    }
}

// shape: where builds run, the store and target, the items and their lock, how to fetch.
std::vector<BuiltRecord> build_sdists(const BuildSite& site, store::Store& store,
                                      std::vector<Item>& items, const Target& target,
                                      const lock::LockFile& lock, const fs::path& manifests,
                                      const FetchPlan& plan) {
    std::vector<BuiltRecord> received;
    const std::map<std::string, BuildEntry> entries = build_entries(lock);
    auto settings = lock::read_build_settings(
        lock.tool ? lock.tool->build_settings : std::vector<std::string>{}, lock.path.string());
    if (!settings) throw settings.error();
    for (auto& item : items) {
        if (!item.sdist && !item.local) continue;
        SdistToBuild sdist;
        sdist.name = item.package->name;
        sdist.version = item.package->version;
        sdist.filename = !item.local ? item.filename
                         : item.package->vcs
                             ? item.package->name + " (" + item.package->vcs->url.value_or("") +
                                   " " + item.package->vcs->commit_id.substr(0, 12) + ")"
                             : item.package->name + " (" + item.tree.string() + ")";
        sdist.sha256 = item.sha256;
        sdist.request = artifact_request(item, plan.indexes);
        sdist.vcs = item.package->vcs ? &*item.package->vcs : nullptr;
        sdist.local = item.local;
        if (item.local && !sdist.vcs) {
            sdist.tree = item.tree;
            sdist.tree_skip = manifests;
            sdist.editable = item.editable;
        }
        if (auto it = settings->find(item.package->name); it != settings->end())
            sdist.settings = it->second;
        if (plan.received) {  // a node installs what it received, and needs no build lock
            received.push_back(received_build(sdist, target, plan));
            adopt(item, received.back());
            continue;
        }
        const BuildEntry& entry = entries.at(item.package->name);
        const lock::LockFile build_lock = read_build_lock(lock, entry);
        sdist.runtime = runtime_items(items, sdist, lock.path, target.platform);
        adopt(item, build_sdist(site, store, target, sdist, build_lock, entry.sha256, plan));
    }
    return received;
}

}  // namespace envbox::install
