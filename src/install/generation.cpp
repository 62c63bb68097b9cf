// A new generation's record and its install requests (contracts in install/generation.hpp).

#include "envbox/install/generation.hpp"

#include <algorithm>
#include <set>
#include <string_view>

#include "envbox/env/known_good.hpp"
#include "envbox/index/url.hpp"
#include "envbox/pep/name.hpp"
#include "envbox/util/json.hpp"
#include "envbox/util/own_tree.hpp"

namespace fs = std::filesystem;

namespace envbox::install {

std::string direct_url_json(const Item& item, const fs::path& lock_dir) {
    if (const auto& v = item.package->vcs; item.local && v) {  // PEP 610's VCS URL
        Json vcs = {{"commit_id", v->commit_id}, {"vcs", "git"}};
        if (v->requested_revision) vcs["requested_revision"] = *v->requested_revision;
        Json out = {{"url", v->url.value_or("")}, {"vcs_info", vcs}};
        if (v->subdirectory) out["subdirectory"] = *v->subdirectory;
        return json_line(out);
    }
    if (item.local)  // PEP 610's local directory, as pip records `pip install [-e] DIR`
        return json_line(
            Json{{"dir_info", item.editable ? Json{{"editable", true}} : Json::object()},
                 {"url", "file://" + item.tree.string()}});
    const lock::FileRef& f = *item.file;
    // PEP 610: the recorded URL carries no credentials, and is absolute.
    fs::path local(f.path ? *f.path : item.filename);
    if (local.is_relative() && !lock_dir.empty()) local = lock_dir / local;
    std::string url =
        f.url ? index::strip_userinfo(*f.url) : "file://" + local.lexically_normal().string();
    Json hashes = {{"sha256", item.sha256}};
    Json archive_info = {{"hash", "sha256=" + item.sha256}, {"hashes", hashes}};
    return json_line(Json{{"archive_info", archive_info}, {"url", url}});
}

int next_generation_number(const fs::path& edir) {
    int number = 1;
    for (const auto& g : env::list_generations(edir)) {
        number = std::max(number, g.number + 1);
        if (!g.complete) remove_own_tree(edir, g.path);
    }
    return number;
}

// shape: the environment's folder and name, and what the generation records.
env::Generation next_generation(const fs::path& edir, const std::string& env,
                                const std::string& digest, const fs::path& lock_path,
                                const Target& target, LinkMode link_mode) {
    env::Generation gen;
    gen.number = next_generation_number(edir);
    gen.path = edir / env::generation_dir_name(gen.number);
    gen.created = env::utc_timestamp();
    gen.lock_digest = digest;
    gen.lock_source = lock_path.string();
    gen.python = target.interpreter->executable.string();
    gen.python_version = target.interpreter->full_version;
    gen.platform = target.platform;
    gen.environment = env;
    gen.link_mode = link_mode_name(link_mode);
    return gen;
}

std::vector<env::InstallRequest> install_requests(const std::vector<Item>& items,
                                                  const lock::Manifest* manifest,
                                                  env::Generation& gen) {
    std::set<std::string> roots;
    if (manifest)
        for (const auto& r : manifest->requirements)
            roots.insert(pep::canonicalize_name(r.name));
    std::set<std::string_view> preferred;
    if (manifest)
        for (const auto& p : manifest->install_prefer)
            preferred.insert(p.name);
    std::vector<env::InstallRequest> requests;
    for (const auto& item : items) {
        env::InstallRequest r;
        r.wheel = &*item.wheel;
        r.requested = !manifest || roots.count(item.package->name) > 0;
        // A folder received as a wheel (no tree on this machine) records no direct URL.
        if (item.direct || (item.local && (item.package->vcs || !item.tree.empty())))
            r.direct_url = direct_url_json(item, fs::path(gen.lock_source).parent_path());
        r.preferred = preferred.count(item.package->name) > 0;
        for (const auto& b : item.bytecode)
            if (b.list) r.bytecode.push_back(&*b.list);
        requests.push_back(r);
        gen.packages.push_back({item.package->name, item.wheel->version, item.sha256, item.filename,
                                r.requested, r.direct_url.value_or("")});
        gen.packages.back().preferred = r.preferred;
    }
    return requests;
}

}  // namespace envbox::install
