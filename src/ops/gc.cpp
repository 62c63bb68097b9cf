// `envbox gc`: old generations pruned per environment, idle build environments removed, then the
// store swept of what no remaining generation links (contract in
// include/envbox/ops/generations.hpp).
#include <sys/stat.h>

#include <optional>
#include <set>

#include "envbox/env/generation.hpp"
#include "envbox/ops/generations.hpp"
#include "envbox/store/home.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/own_tree.hpp"
#include "envbox/util/unique_fd.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {

namespace {

// Bytes of regular files under `dir` that no other directory links (st_nlink == 1).
std::uint64_t unique_bytes(const fs::path& dir) {
    std::uint64_t n = 0;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(
             dir, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        struct stat st {};
        if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1)
            n += static_cast<std::uint64_t>(st.st_size);
    }
    return n;
}

// Every gen-N directory of every environment: what a scan for runtime roots looks for.
std::vector<fs::path> all_generation_dirs(const fs::path& envs) {
    std::vector<fs::path> out;
    for (const auto& e : environment_dirs(envs.parent_path()))
        for (const auto& g : env::list_generations(e.path))
            out.push_back(g.path);
    return out;
}

// Step 1 of gc for one environment, under its lock (skipped, as busy, when another envbox
// holds it): its generations beyond the newest `keep`, never the current one or one a process
// uses. `roots` is the one scan of /proc, made when a first generation is to go.
void prune_environment(const store::Home& home, const EnvDir& dir, const GcOptions& opt,
                       GcResult& result, std::set<fs::path>& removed,
                       std::optional<env::RuntimeRoots>& roots) {
    const std::string label = dir.project_key + " " + dir.env;
    auto lock = FileLock::try_lock(home.env_lock(dir.project_key, dir.env));
    if (!lock.held()) {
        result.busy.push_back(label);
        return;
    }
    auto current = env::current_generation(dir.path);
    auto gens = env::list_generations(dir.path);
    std::set<int> pinned;
    try {
        for (const auto& p : env::read_pins(dir.path))
            pinned.insert(p.number);
    } catch (const Error& e) {
        // Pins that do not read might name any generation: this environment keeps them all,
        // the others are collected as usual, and the sweep still runs.
        result.kept.push_back(label + ": every generation (its pins do not read)");
        result.unreadable_pins.push_back(e.message());
        return;
    }
    int kept = 0;
    for (auto it = gens.rbegin(); it != gens.rend(); ++it) {
        const bool is_current = current && current->number == it->number;
        const bool is_pinned = it->complete && pinned.count(it->number) > 0;
        // Pinned generations are kept besides the newest `keep`, never counted among them.
        const bool by_count = it->complete && !is_pinned && kept < opt.keep;
        if (it->complete && !is_pinned && (by_count || is_current)) ++kept;
        if (is_pinned || (is_current && !by_count))
            result.kept.push_back(label + " " + env::generation_dir_name(it->number) + ": " +
                                  (is_pinned && is_current ? "current, pinned"
                                   : is_pinned             ? "pinned"
                                                           : "current"));
        if (by_count || is_current || is_pinned) continue;
        const std::string name = label + " " + env::generation_dir_name(it->number);
        // The claim is held until the tree is gone: a job starting now waits, then sees the
        // generation removed and runs in the current one.
        env::GenerationClaim claim(it->path);
        if (!claim.claimed()) {
            result.in_use.push_back(name + ": in use by a running `envbox run` job");
            continue;
        }
        if (!roots) roots.emplace(all_generation_dirs(home.envs()));
        if (auto who = roots->user_of(it->path)) {
            result.in_use.push_back(name + ": in use by " + *who);
            continue;
        }
        result.generations_removed.push_back(name + (it->complete ? "" : " (incomplete)"));
        result.bytes_freed += unique_bytes(it->path);
        removed.insert(it->path);
        if (!opt.dry_run) env::remove_generation(it->path);
    }
}

// Step 1 of gc: every environment's old generations. `removed` gets the path of each
// generation removed (or, in a dry run, that would be). A link where a project's or an
// environment's folder should be stops gc before anything is removed (environment_dirs).
void prune_generations(const Context& ctx, const GcOptions& opt, GcResult& result,
                       std::set<fs::path>& removed) {
    const store::Home home(ctx.home);
    std::optional<env::RuntimeRoots> roots;
    for (const auto& dir : environment_dirs(ctx.home))
        prune_environment(home, dir, opt, result, removed, roots);
}

// The wheels the generations that exist now link, less those step 1 removed (a dry run leaves
// them on disk; they are matched by their exact path): the roots of the store's sweep.
// The roots of the store: every wheel a kept generation links, and each of its bytecode lists
// ("<wheel sha256>/<key>") for the keys the generation was compiled for.
struct Roots {
    std::set<std::string> wheels, bytecode;
};

Roots live_roots(const fs::path& envs, const std::set<fs::path>& removed) {
    Roots live;
    for (const auto& e : environment_dirs(envs.parent_path()))
        for (const auto& g : env::list_generations(e.path)) {
            if (removed.count(g.path)) continue;
            // A record that cannot be read may not name every wheel its generation
            // links: sweeping on its word could delete a live environment's files.
            if (!g.damaged.empty())
                throw Error(ErrorCode::integrity,
                            "the record of " + g.path.string() + " cannot be read (" + g.damaged +
                                "), so the store was not swept (generations were pruned); "
                                "remove that generation or rebuild it with `envbox create`, "
                                "then run gc again");
            for (const auto& p : g.packages) {
                live.wheels.insert(p.wheel_sha256);
                for (const auto& key : g.bytecode)
                    live.bytecode.insert(p.wheel_sha256 + "/" + key);
            }
        }
    return live;
}

// Step 1b of gc: the build environments (cache/build-envs) no build holds (a build holds its
// environment's lock shared; install/source_build.cpp), never following a link planted there.
void remove_build_environments(const Context& ctx, const GcOptions& opt, GcResult& result) {
    const store::Home home(ctx.home);
    const fs::path dir = home.cache() / "build-envs";
    UniqueFd fd = open_own_dir_at_path(ctx.home, dir);
    if (!fd) return;
    for (const auto& e : list_own_dir(fd.get(), dir)) {
        std::optional<FileLock> held;
        if (e.type == OwnEntry::Type::folder) {
            held.emplace(FileLock::try_lock(home.locks() / ("build-env-" + e.name + ".lock")));
            if (!held->held()) continue;
        }
        result.build_environments_removed++;
        if (!opt.dry_run) result.bytes_freed += remove_own_entry(fd.get(), e.name, dir);
    }
}

// Step 2 of gc: the store sweep, exclusive, so no create is between ingesting and linking. The
// live set is computed under the lock.
void sweep_store(const Context& ctx, const GcOptions& opt, const std::set<fs::path>& removed,
                 GcResult& result) {
    FileLock store_lock(store_lock_path(ctx));
    store::Store store(ctx.home);
    Roots roots = live_roots(store.layout().envs(), removed);
    const store::SweepResult swept =
        store.sweep(roots.wheels, {opt.dry_run, std::move(roots.bytecode)});
    result.wheels_removed += swept.wheels_removed;
    result.bytecode_removed += swept.bytecode_removed;
    result.objects_removed += swept.objects_removed;
    result.temporary_removed += swept.temporary_removed;
    result.bytes_freed += swept.bytes_freed;
}

}  // namespace

GcResult gc(const Context& ctx, const GcOptions& opt) {
    if (opt.keep < 1) throw Error(ErrorCode::usage, "--keep must be at least 1");
    GcResult result;
    std::error_code ec;
    fs::create_directories(store::Home(ctx.home).locks(), ec);
    std::set<fs::path> removed;
    prune_generations(ctx, opt, result, removed);
    remove_build_environments(ctx, opt, result);
    sweep_store(ctx, opt, removed, result);
    return result;
}

}  // namespace envbox::ops
