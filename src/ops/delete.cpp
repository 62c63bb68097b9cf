#include "envbox/ops/delete.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "envbox/env/generation.hpp"
#include "envbox/env/known_good.hpp"
#include "envbox/ops/generations.hpp"
#include "envbox/store/home.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/own_tree.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {
namespace {

// `p`, inside the home, without following a link below it (the link rule, docs/SECURITY.md).
void remove_tree(const fs::path& home, const fs::path& p, DeleteResult& r) {
    if (remove_own_tree(home, p)) r.removed.push_back(p);
}

// The project's `.envbox/ENV` when it is envbox's link (a file the user put there stays). A
// `.envbox` that is itself a link is refused, never looked into.
void remove_project_link(const Context& ctx, const std::string& env, DeleteResult& r) {
    if (ctx.project_root.empty()) return;
    UniqueFd dir = open_own_dir(ctx.project_root, ".envbox");
    if (!dir) return;
    const fs::path link = ctx.project_root / ".envbox" / env;
    struct stat st {};
    if (::fstatat(dir.get(), env.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(st.st_mode))
        return;
    if (::unlinkat(dir.get(), env.c_str(), 0) != 0 && errno != ENOENT)
        throw Error(ErrorCode::generic,
                    "cannot remove " + link.string() + ": " + std::strerror(errno));
    r.removed.push_back(link);
}

// Claims every generation of `gens` (the claims are held until the trees are gone: a job
// starting meanwhile waits, then finds no generation). Users are listed in `r.in_use`.
std::vector<std::unique_ptr<env::GenerationClaim>> claim_all(
    const std::vector<env::Generation>& gens, DeleteResult& r) {
    std::vector<std::unique_ptr<env::GenerationClaim>> claims;
    std::vector<fs::path> paths;
    for (const auto& g : gens)
        paths.push_back(g.path);
    std::optional<env::RuntimeRoots> roots;
    for (const auto& g : gens) {
        const std::string name = env::generation_dir_name(g.number);
        claims.push_back(std::make_unique<env::GenerationClaim>(g.path));
        if (!claims.back()->claimed()) {
            r.in_use.push_back(name + ": in use by a running `envbox run` job");
            continue;
        }
        if (!roots) roots.emplace(paths);
        if (auto who = roots->user_of(g.path)) r.in_use.push_back(name + ": in use by " + *who);
    }
    return claims;
}

}  // namespace

DeleteResult delete_environment(const Context& ctx, const DeleteOptions& opt) {
    check_env_name(opt.env);
    const fs::path edir = env_dir(ctx, opt.env);
    const store::Home home(ctx.home);
    const fs::path caches = home.compile_cache(project_key(ctx), opt.env);
    const fs::path lock_path = env_lock_path(ctx, opt.env);
    require_no_link_below(ctx.home, caches);
    std::error_code ec;
    if (!fs::exists(caches, ec)) require_known_environment(ctx, opt.env);
    if (!fs::exists(edir, ec) && !fs::exists(caches, ec))
        throw Error(ErrorCode::generic,
                    "environment '" + opt.env + "' has not been created" +
                        (ctx.project_root.empty() ? std::string()
                                                  : " for project " + ctx.project_root.string()) +
                        "; there is nothing to delete");
    fs::create_directories(home.locks(), ec);
    DeleteResult r;
    {
        FileLock lock(lock_path,
                      [&] { ctx.progress->note("waiting for another envbox using " + opt.env); });
        auto gens = env::list_generations(edir);
        // Pins go with the environment: counted for the summary, never a reason to keep it (an
        // unreadable pins file, or a link planted there, is removed like the rest).
        try {
            for (const auto& p : env::read_pins(edir))
                if (std::any_of(gens.begin(), gens.end(),
                                [&](const env::Generation& g) { return g.number == p.number; }))
                    r.pins.push_back(p.number);
        } catch (const Error&) {
        }
        auto claims = claim_all(gens, r);
        if (!r.in_use.empty() && !opt.force) {
            std::string msg = "environment '" + opt.env + "' is in use, nothing was deleted:";
            for (const auto& u : r.in_use)
                msg += "\n  " + u;
            throw Error(ErrorCode::generic,
                        msg + "\nstop those processes, or pass --force to delete it anyway");
        }
        // `current` first: from here on the environment reads as never created.
        if (::unlink((edir / "current").c_str()) != 0 && errno != ENOENT)
            throw Error(ErrorCode::generic, "cannot remove " + (edir / "current").string() + ": " +
                                                std::strerror(errno));
        for (const auto& g : gens) {
            env::remove_generation(g.path);
            r.generations.push_back(env::generation_dir_name(g.number));
        }
        remove_tree(ctx.home, edir, r);
        remove_project_link(ctx, opt.env, r);
        remove_tree(ctx.home, caches, r);
        // The (empty) lock file stays: unlinking it while a create waits on it would let that
        // create and a newer one, which opens a fresh file, build side by side. A create that
        // was waiting finds the environment gone and builds it afresh.
    }
    return r;
}

}  // namespace envbox::ops
