#include "envbox/ops/lock_agreement.hpp"

#include "envbox/env/generation.hpp"
#include "envbox/lock/lock_file.hpp"
#include "envbox/ops/lock.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {
namespace {

// The lock a generation was built from; nullopt when it cannot be read.
std::optional<std::string> built_lock(const env::Generation& g) {
    try {
        return env::read_generation_lock(g.path);  // never through a link planted there
    } catch (const Error&) {
        return std::nullopt;
    }
}

// Whether `g` was built from the project's lock file, not from `create --lock FILE`. A record
// without a lock-source predates it and was.
bool from_project_lock(const env::Generation& g, const fs::path& lock_path) {
    if (g.lock_source.empty()) return true;
    const fs::path source(g.lock_source);
    if (source.lexically_normal() == lock_path.lexically_normal()) return true;
    std::error_code ec;  // the same file by another name (a symlinked project)
    return fs::equivalent(source, lock_path, ec) && !ec;
}

std::string gen(int n) {
    return "generation " + std::to_string(n);
}

}  // namespace

std::string LockAgreement::lock_name() const {
    return Project::lock_name(env);
}

std::string LockAgreement::summary() const {
    if (!disagrees()) return {};
    std::string s =
        gen(*current) + " is current" + (rolled_back ? " (rolled back)" : "") + "; " + lock_name();
    if (!lock_exists) return s + " does not exist";
    if (lock_generation) return s + " is " + gen(*lock_generation) + "'s lock";
    return s + (rolled_back ? " is no generation's lock" : " has not been created yet");
}

std::vector<std::string> LockAgreement::remedies() const {
    if (!disagrees()) return {};
    const std::string n = std::to_string(*current);
    std::vector<std::string> out;
    out.push_back("revert the lock in git so that it is " + gen(*current) +
                  "'s again (`git checkout REV -- " + lock_name() +
                  "`, or `git revert` the commit that changed it)");
    out.push_back("`envbox rollback " + env + " --to " + n + " --write-lock` writes " +
                  gen(*current) + "'s lock into " + lock_name() + " for you to commit");
    if (lock_generation)
        out.push_back("`envbox rollback " + env + " --to " + std::to_string(*lock_generation) +
                      "` switches to " + gen(*lock_generation) + ", built from the file's lock");
    else if (lock_exists)
        out.push_back("`envbox create " + env + "` builds the file's lock");
    return out;
}

LockAgreement lock_agreement(const fs::path& project_root, const fs::path& dir,
                             const std::string& env, const std::string* lock_text) {
    LockAgreement a;
    a.env = env;
    auto current = env::current_generation(dir);
    if (current) a.current = current->number;
    std::error_code ec;
    // No project, or one that is gone (`list --all`): nothing to compare with.
    if (project_root.empty() || !current ||
        !fs::is_directory(Project{project_root}.manifests(), ec))
        return a;
    a.lock_path = Project{project_root}.lock(env);
    a.lock_exists = fs::is_regular_file(a.lock_path, ec);
    std::optional<std::string> text;
    if (a.lock_exists && lock_text) {
        text = *lock_text;
    } else if (a.lock_exists) {
        try {
            text = read_input_file(a.lock_path);
        } catch (const Error&) {
            a.lock_exists = false;  // unreadable: the command that reads it says why
        }
    }
    a.other_source = !from_project_lock(*current, a.lock_path);
    if (!a.other_source) {
        a.agrees = text && built_lock(*current) == text;
        if (a.agrees) return a;  // the fast path: two reads
    }
    for (const auto& g : env::list_generations(dir)) {
        if (!g.complete) continue;
        if (g.number > current->number) a.rolled_back = true;
        // Sizes first: a run that keeps a rollback reads no lock of another size.
        if (text && g.number != current->number &&
            fs::file_size(g.path / ".envbox" / "pylock.toml", ec) == text->size() && !ec &&
            built_lock(g) == text)
            a.lock_generation = g.number;
        if (a.other_source && from_project_lock(g, a.lock_path)) a.project_generation = g.number;
    }
    return a;
}

LockAgreement lock_agreement(const Context& ctx, const std::string& env) {
    return lock_agreement(ctx.project_root, env_dir(ctx, env), env);
}

WrittenLock write_generation_lock(const Context& ctx, const std::string& env, int number) {
    if (ctx.project_root.empty())
        throw Error(ErrorCode::usage,
                    "--write-lock: no project here (no manifests/ directory in this directory or "
                    "above) to write the lock of " +
                        env + " into");
    const fs::path dir = env_dir(ctx, env);
    std::optional<env::Generation> g;
    for (auto& candidate : env::list_generations(dir))
        if (candidate.number == number) g = std::move(candidate);
    if (!g || !g->complete)
        throw Error(ErrorCode::generic, gen(number) + " of " + env +
                                            (g ? " is incomplete" : " does not exist") +
                                            "; there is no lock of it to write");
    const auto lock = env::read_generation_lock(g->path);
    if (!lock)
        throw Error(ErrorCode::integrity, gen(number) + " of " + env + " has no lock (" +
                                              (g->path / ".envbox" / "pylock.toml").string() +
                                              " is missing)");
    const std::string& text = *lock;
    WrittenLock w;
    w.generation = number;
    w.path = ctx.project().lock(env);
    std::error_code ec;
    w.changed = !fs::is_regular_file(w.path, ec) || read_input_file(w.path) != text;
    if (w.changed) write_file_atomic(w.path, text, 0644, Durability::fsync);
    const fs::path manifest = ctx.project().manifest(env);
    if (fs::exists(manifest, ec)) {
        try {
            auto written = lock::parse_lock_file(w.path, text);
            if (written && written->tool && written->tool->manifest_digest)
                w.manifest_stale = lock_staleness(manifest, *written);
        } catch (const Error& e) {
            w.manifest_stale.push_back(e.message());
        }
    }
    return w;
}

}  // namespace envbox::ops
