#include "envbox/ops/inspect.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <unordered_map>

#include "envbox/env/known_good.hpp"
#include "envbox/install/built.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/own_tree.hpp"
#include "envbox/util/sha256.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {

namespace {

// The project root recorded in `envs/<key>/project`, or empty.
std::string project_root_of(const fs::path& project_dir) {
    std::error_code ec;
    if (!fs::is_regular_file(fs::symlink_status(project_dir / "project", ec))) return {};
    std::string root = read_file(project_dir / "project");
    while (!root.empty() && root.back() == '\n')
        root.pop_back();
    return root;
}

// The pinned generations of `gens`, by number.
std::vector<int> pinned_of(const fs::path& env_dir, const std::vector<env::Generation>& gens) {
    std::vector<int> out;
    for (const auto& p : env::read_pins(env_dir))
        if (std::any_of(gens.begin(), gens.end(),
                        [&](const env::Generation& g) { return g.number == p.number; }))
            out.push_back(p.number);
    return out;
}

}  // namespace

std::vector<EnvSummary> list_environments(const Context& ctx, bool all) {
    std::vector<EnvSummary> out;
    const std::string mine = ctx.project_root.empty() ? "" : project_key(ctx);
    for (const auto& e : environment_dirs(ctx.home)) {
        if (!all && !mine.empty() && e.project_key != mine) continue;
        EnvSummary s;
        s.project = project_root_of(e.path.parent_path());
        s.name = e.env;
        auto gens = env::list_generations(e.path);
        s.generations = gens.size();
        s.pinned = pinned_of(e.path, gens);
        if (auto cur = env::current_generation(e.path)) {
            s.current = cur->number;
            s.packages = cur->packages.size();
            s.python_version = cur->python_version;
        }
        s.lock = lock_agreement(s.project, e.path, e.env);
        out.push_back(std::move(s));
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
        return std::tie(a.project, a.name) < std::tie(b.project, b.name);
    });
    return out;
}

std::map<std::string, std::vector<std::string>> generations_linking(
    const Context& ctx, const std::set<std::string>& digests) {
    std::map<std::string, std::vector<std::string>> out;
    if (digests.empty()) return out;
    store::Store store(ctx.home);
    std::unordered_map<std::string, std::vector<std::string>>
        wheel_hits;  // wheel sha → digests it holds
    auto hits_of = [&](const std::string& wheel_sha) -> const std::vector<std::string>& {
        auto [it, fresh] = wheel_hits.try_emplace(wheel_sha);
        if (fresh)
            if (auto w = store.load_wheel(wheel_sha))
                for (const auto& f : w->files)
                    if (digests.count(f.digest)) it->second.push_back(f.digest);
        return it->second;
    };
    for (const auto& e : environment_dirs(ctx.home)) {
        std::string root = project_root_of(e.path.parent_path());
        if (root.empty()) root = e.project_key;
        for (const auto& g : env::list_generations(e.path)) {
            if (!g.complete) continue;
            std::set<std::string> found;
            for (const auto& p : g.packages)
                for (const auto& d : hits_of(p.wheel_sha256))
                    found.insert(d);
            for (const auto& d : found)
                out[d].push_back(e.env + " generation " + std::to_string(g.number) + " (" + root +
                                 ")");
        }
    }
    for (auto& [d, list] : out)
        std::sort(list.begin(), list.end());
    return out;
}

EnvDetails show_environment(const Context& ctx, const std::string& env) {
    require_known_environment(ctx, env);
    EnvDetails d;
    d.name = env;
    d.path = env_dir(ctx, env);
    std::error_code ec;
    if (!fs::is_directory(d.path, ec))
        throw Error(ErrorCode::generic,
                    "environment '" + env + "' does not exist; run `envbox create " + env + "`");
    d.generations = env::list_generations(d.path);
    d.current = env::current_generation(d.path);
    d.lock = lock_agreement(ctx, env);
    d.pinned = pinned_of(d.path, d.generations);
    d.compile_cache = store::Home(ctx.home).compile_cache(project_key(ctx), env);
    d.compile_cache_bytes = tally_own_files(ctx.home, d.compile_cache).bytes;
    if (!d.current) return d;
    const auto records = install::built_records(store::Store(ctx.home));
    for (const auto& p : d.current->packages)
        if (auto it = records.find(p.wheel_sha256); it != records.end())
            d.built[p.name] = to_hex(sha256(it->second.key_text));
    // A file whose inode has one link beyond the store's (or none: a generated file) is unique
    // to this generation; anything with more links is shared with another generation, of this
    // environment or another.
    std::uint64_t entries = 0;
    for (auto it = fs::recursive_directory_iterator(d.current->path, ec);
         !ec && it != fs::recursive_directory_iterator() && ++entries <= kMaxTallyEntries;
         it.increment(ec)) {
        struct stat st {};
        if (::lstat(it->path().c_str(), &st) != 0) continue;
        if (S_ISDIR(st.st_mode) && it.depth() + 1 >= static_cast<int>(kMaxTallyDepth))
            it.disable_recursion_pending();
        if (!S_ISREG(st.st_mode)) continue;
        d.files++;
        auto size = static_cast<std::uint64_t>(st.st_size);
        d.bytes += size;
        if (st.st_nlink <= 2) d.unique_bytes += size;
        if (it->path().extension() == ".pyc" &&
            it->path().parent_path().filename() == "__pycache__") {
            d.bytecode_files++;
            d.bytecode_bytes += size;
            if (st.st_nlink > 2) d.bytecode_shared_bytes += size;
        }
    }
    return d;
}

}  // namespace envbox::ops
