// `create`'s last steps: the next generation's record, building it, switching `current`, and the
// project's .envbox/ENV link (contracts in create_steps.hpp).

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <set>
#include <string_view>

#include "create_steps.hpp"
#include "envbox/env/known_good.hpp"
#include "envbox/env/venv.hpp"
#include "envbox/pep/name.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/json.hpp"
#include "envbox/util/own_tree.hpp"

namespace fs = std::filesystem;

namespace envbox::ops::create_steps {

std::string direct_url_json(const install::Item& item, const fs::path& lock_dir) {
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

env::Generation next_generation(const fs::path& edir, const std::string& digest,
                                const fs::path& lock_path, const install::Target& target,
                                const CreateOptions& opt) {
    env::Generation gen;
    gen.number = next_generation_number(edir);
    gen.path = edir / env::generation_dir_name(gen.number);
    gen.created = env::utc_timestamp();
    gen.lock_digest = digest;
    gen.lock_source = lock_path.string();
    gen.python = target.interpreter->executable.string();
    gen.python_version = target.interpreter->full_version;
    gen.platform = target.platform;
    gen.environment = opt.env;
    gen.link_mode = link_mode_name(opt.link_mode);
    return gen;
}

std::vector<env::InstallRequest> install_requests(const std::vector<install::Item>& items,
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
        if (item.direct || item.local)
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

std::optional<std::string> link_project_dir(const fs::path& project_root, const std::string& env,
                                            const fs::path& edir) {
    const fs::path link_dir = project_root / ".envbox";
    // `.envbox` may come with the repository: a committed link there is refused, and every
    // name below is made relative to the folder's own descriptor (the link rule).
    UniqueFd dir;
    try {
        dir = make_own_dir(project_root, ".envbox");
    } catch (const Error& e) {
        return "cannot create " + link_dir.string() + ": " + e.what();
    }
    struct stat st {};
    if (::fstatat(dir.get(), ".gitignore", &st, AT_SYMLINK_NOFOLLOW) != 0) {
        const std::string tmp = ".gitignore.tmp." + std::to_string(::getpid());
        UniqueFd f(::openat(dir.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
        const bool ok = f && write_all_fd(f.get(), "*\n", 2) &&
                        ::renameat(dir.get(), tmp.c_str(), dir.get(), ".gitignore") == 0;
        if (!ok) {
            std::string why =
                "cannot write " + (link_dir / ".gitignore").string() + ": " + std::strerror(errno);
            ::unlinkat(dir.get(), tmp.c_str(), 0);
            return why;
        }
    }
    const std::string tmp = "." + env + ".tmp";
    ::unlinkat(dir.get(), tmp.c_str(), 0);
    if (::symlinkat((edir / "current").c_str(), dir.get(), tmp.c_str()) != 0 ||
        ::renameat(dir.get(), tmp.c_str(), dir.get(), env.c_str()) != 0) {
        std::string why = "cannot link " + (link_dir / env).string() + ": " + std::strerror(errno);
        ::unlinkat(dir.get(), tmp.c_str(), 0);
        return why;
    }
    return std::nullopt;
}

}  // namespace envbox::ops::create_steps
