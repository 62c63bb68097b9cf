// What push and pack send of the team's own code: each folder or git commit as the wheel its
// build made here, with where it came from (contracts in fleet_steps.hpp).
#include <algorithm>

#include "envbox/install/git.hpp"
#include "envbox/install/local.hpp"
#include "envbox/install/transaction.hpp"
#include "envbox/ops/generations.hpp"
#include "envbox/store/home.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/kv.hpp"
#include "fleet_steps.hpp"
#include "settings.hpp"

namespace fs = std::filesystem;

namespace envbox::ops::fleet {
namespace {

// The project a generation's lock belongs to: the context's, else the lock's folder's parent.
fs::path project_of(const Context& ctx, const fs::path& lock_path) {
    return ctx.project_root.empty() ? lock_path.parent_path().parent_path() : ctx.project_root;
}

// Where the wheel of local package `p` (built from `built_from`) came from, sent with it: the
// git source and commit, or the folder and the commit of the checkout it is part of. A folder
// that changed since the build, or a checkout with changes not committed, is refused: what is
// shipped is a reviewed commit's code.
std::string source_provenance(const Context& ctx, const std::string& env, const lock::Package& p,
                              const std::string& built_from, const fs::path& lock_path) {
    if (p.vcs)
        return "git " + p.vcs->url.value_or("") + " " + p.vcs->commit_id + " " +
               p.vcs->subdirectory.value_or("-");
    const fs::path root = project_of(ctx, lock_path);
    const fs::path manifests = root / "manifests";
    const fs::path tree = install::locked_tree(manifests, p.directory->path, root, p.name);
    if (install::tree_digest(tree, manifests) != built_from)
        throw Error(ErrorCode::invalid_input, p.name + " (" + tree.string() + ") changed since " +
                                                  env + " was built from it: `envbox create " +
                                                  env + "`, then push again");
    const std::string state =
        install::git_tree_state(git_settings(ctx).access(p.name, true), tree, manifests);
    if (state.ends_with(" dirty"))
        throw Error(ErrorCode::invalid_input,
                    p.name + " (" + tree.string() +
                        ") has changes that are not committed (`git "
                        "status`): commit them so that what is shipped is a commit's code, then "
                        "`envbox create " +
                        env + "` and push again");
    return "directory " + p.directory->path + " " + state;
}

}  // namespace

std::vector<resolve::IndexConfig> project_indexes(const Context& ctx, const std::string& env) {
    if (ctx.project_root.empty()) return {};
    const fs::path m = ctx.project().manifest(env);
    std::error_code ec;
    if (!fs::exists(m, ec)) return {};
    return index_configs(read_manifest(m), m, ctx.settings);
}

std::map<std::string, const lock::Package*> local_packages(const lock::Pylock& pylock) {
    std::map<std::string, const lock::Package*> out;
    for (const auto& p : pylock.packages)
        if (p.directory || p.vcs) out[p.name] = &p;
    return out;
}

std::map<std::string, install::ShippedWheel> shipped_editables(
    const Context& ctx, const std::string& env, const env::Generation& gen,
    const std::string& lock_text, const std::map<std::string, const lock::Package*>& local) {
    if (std::none_of(local.begin(), local.end(), [](const auto& l) {
            return l.second->directory && l.second->directory->editable;
        }))
        return {};
    // The generation's lock where it was made: its build locks are beside it.
    auto lock = lock::parse_lock_file(gen.lock_source, lock_text);
    if (!lock) throw lock.error();
    const store::Home home(ctx.home);
    const install::Target target = install::target_of_interpreter(
        env::probe_interpreter(gen.python, home.interpreters()), gen.platform, env);
    install::TransactionOptions o;
    o.site = {ctx.home, ctx.progress, ctx.jobs, git_settings(ctx), {}};
    o.http = http_options(ctx, false);
    o.indexes = project_indexes(ctx, env);
    o.manifests = project_of(ctx, gen.lock_source) / "manifests";
    install::Transaction transaction(*lock, target, std::move(o));
    make_own_dir_at_path(ctx.home, home.locks());  // held as create holds it: gc waits
    const FileLock held = FileLock::shared(store_lock_path(ctx));
    store::Store store(ctx.home);
    return transaction.build_editables(store);
}

// shape: the context, the environment and its package, the store's records, the lock, the wheel.
void sent_as_built(const Context& ctx, const std::string& env, const lock::Package& p,
                   const std::map<std::string, install::BuiltRecord>& built,
                   const fs::path& lock_path, BundleWheel& w) {
    const auto record = built.find(w.sha256);
    if (record == built.end())
        throw Error(ErrorCode::integrity,
                    env + " installs " + w.filename + ", built from " + w.name +
                        "'s source, and the store keeps no record of that build: create " + env +
                        " again (`envbox create " + env + " --force`)");
    w.built_from = install::built_from(record->second.key_text);
    w.build_key = record->second.key_text + "source " +
                  kv::percent_encode(source_provenance(ctx, env, p, w.built_from, lock_path)) +
                  "\n";
}

}  // namespace envbox::ops::fleet
