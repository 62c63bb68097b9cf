#include "lock_inputs.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "envbox/index/url.hpp"
#include "envbox/install/git.hpp"
#include "envbox/install/local.hpp"
#include "envbox/lock/lock_file.hpp"
#include "envbox/lock/writer.hpp"
#include "envbox/ops/context.hpp"
#include "envbox/ops/lock.hpp"
#include "envbox/pep/name.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {
namespace {

std::string index_line(const lock::IndexSpec& i) {
    std::string line = i.name + " " + i.url + (i.explicit_ ? " explicit" : "");
    // Only when given, so locks written before the setting existed stay up to date.
    for (std::size_t k = 0; k < i.ignore_error_codes.size(); ++k)
        line += (k ? "," : " ignore-error-codes=") + std::to_string(i.ignore_error_codes[k]);
    if (!i.exclude_newer) line += " exclude-newer=false";
    return line;
}

std::string source_line(const std::string& package, const std::string& index) {
    return package + " = " + index;
}

// Where the manifest's index and source lines come from: the project's envbox.toml gives
// `shared` (those the manifest does not give itself).
struct Origins {
    bool project = false;  // the project has an envbox.toml
    std::set<std::string> shared;

    std::string of_added(const std::string& line) const {
        return shared.count(line) ? "envbox.toml" : "the manifest";
    }
    std::string of_removed() const {
        return project ? "the manifest or envbox.toml" : "the manifest";
    }
};

Origins origins_of(const fs::path& manifest_path) {
    Origins o;
    const auto project = read_project_file(manifest_path.parent_path().parent_path());
    if (!project) return o;
    o.project = true;
    std::set<std::string> own;  // the manifest's own lines (none when it cannot stand alone)
    if (auto alone =
            lock::Manifest::parse(read_manifest_file(manifest_path), manifest_path.string())) {
        Inputs in = inputs_of(*alone);
        own.insert(in.indexes.begin(), in.indexes.end());
        own.insert(in.sources.begin(), in.sources.end());
    }
    for (const auto& i : project->indexes)
        if (!own.count(index_line(i))) o.shared.insert(index_line(i));
    for (const auto& [pkg, ix] : project->sources)
        if (!own.count(source_line(pkg, ix))) o.shared.insert(source_line(pkg, ix));
    return o;
}

void diff_lists(const char* what, const std::vector<std::string>& locked,
                const std::vector<std::string>& now, const Origins& origins,
                std::vector<std::string>& reasons) {
    std::set<std::string> a(locked.begin(), locked.end()), b(now.begin(), now.end());
    for (const auto& x : b)
        if (!a.count(x))
            reasons.push_back(std::string(what) + " added or changed in " + origins.of_added(x) +
                              ": " + index::redact_url(x));
    for (const auto& x : a)
        if (!b.count(x))
            reasons.push_back(std::string(what) + " no longer in " + origins.of_removed() + ": " +
                              x);
}

// The first field of a `local` line: its package.
std::string local_name(const std::string& line) {
    return line.substr(0, line.find(' '));
}

// The pyproject.toml of a `local` line's tree (its PATH is relative to the lock's folder).
std::string local_pyproject(const fs::path& manifest_path, const std::string& line) {
    const auto from = line.find(' ') + 1;
    const std::string rel = line.substr(from, line.find(' ', from) - from);
    return (manifest_path.parent_path() / rel / "pyproject.toml").lexically_normal().string();
}

// How the local source trees differ from those the lock was resolved with, by package.
void local_changes(const std::vector<std::string>& locked, const std::vector<std::string>& now,
                   const fs::path& manifest_path, std::vector<std::string>& reasons) {
    std::map<std::string, std::string> a, b;
    for (const auto& l : locked)
        a[local_name(l)] = l;
    for (const auto& l : now)
        b[local_name(l)] = l;
    for (const auto& [name, line] : b) {
        const auto was = a.find(name);
        const auto fields = [](const std::string& l) { return l.substr(0, l.rfind(' ')); };
        if (was == a.end())
            reasons.push_back("local source added: " + fields(line));
        else if (fields(was->second) != fields(line))
            reasons.push_back("local source " + name + " changed: the lock has '" +
                              fields(was->second) + "', the manifest '" + fields(line) + "'");
        else if (was->second != line)
            reasons.push_back(name +
                              "'s pyproject.toml changed its dependencies, extras, version "
                              "or requires-python since the lock was written (" +
                              local_pyproject(manifest_path, line) + ")");
    }
    for (const auto& [name, line] : a)
        if (!b.count(name)) reasons.push_back("local source no longer in the manifest: " + name);
}

}  // namespace

resolve::Prerelease prerelease_policy(const std::string& setting) {
    return resolve::prerelease_named(setting).value_or(resolve::Prerelease{});
}

Inputs inputs_of(const lock::Manifest& m, const fs::path& manifest_path) {
    Inputs in;
    if (!manifest_path.empty())
        for (const auto& [name, local] : install::local_projects(m, manifest_path))
            in.local.push_back(local.input_line());
    for (const auto& r : m.requirements)
        in.requirements.push_back(r.str());
    std::sort(in.requirements.begin(), in.requirements.end());
    for (const auto& i : m.indexes)
        in.indexes.push_back(index_line(i));
    for (const auto& [pkg, ix] : m.sources)
        in.sources.push_back(source_line(pkg, ix));
    in.python = m.python;
    for (const auto& p : m.platforms)
        in.platform += (in.platform.empty() ? "" : ", ") + p;
    if (in.platform.empty()) in.platform = m.platform;
    in.cuda = m.cuda.value_or("");
    in.prerelease = m.prerelease.value_or("");
    in.exclude_newer = m.exclude_newer.value_or("");
    for (const auto& o : m.overrides.value_or(std::vector<pep::Requirement>{}))
        in.overrides.push_back(o.str());
    for (const auto& c : m.constraints.value_or(std::vector<pep::Requirement>{}))
        in.constraints.push_back(c.str());
    if (m.build) in.builds.push_back("* " + *m.build);
    for (const auto& [name, b] : m.package_builds) {
        if (b.build) in.builds.push_back(name + " " + *b.build);
        for (const auto& line : lock::build_settings_lines(name, b))
            in.builds.push_back(line);
        for (const auto& r : b.requires_dist.value_or(std::vector<pep::Requirement>{}))
            in.builds.push_back(name + " requires-dist " + r.str());
    }
    std::sort(in.builds.begin(), in.builds.end());
    std::sort(in.overrides.begin(), in.overrides.end());
    std::sort(in.constraints.begin(), in.constraints.end());
    return in;
}

// Reads the lock being replaced: its versions are preferred, except with --upgrade or for the
// packages --upgrade-package names; a name --upgrade-package gives that neither the old lock nor
// the manifest knows is a usage error (it would otherwise upgrade nothing, silently).
Previous read_previous(const LockOptions& opt, const lock::Manifest& m,
                       const fs::path& manifest_path, const fs::path& lock_path,
                       const std::optional<lock::LockFile>& old) {
    Previous prev;
    std::set<std::string>
        known;  // what --upgrade-package may name: locked packages and requirements
    for (const auto& r : m.requirements)
        known.insert(pep::canonicalize_name(r.name));
    std::set<std::string> skip;
    for (const auto& p : opt.upgrade_packages)
        skip.insert(pep::canonicalize_name(p));
    if (old) {
        prev.text = old->text;
        for (const auto& p : old->pylock.packages) {
            known.insert(p.name);
            if (!opt.upgrade && p.version && !skip.count(p.name))
                prev.preferences[p.name] = *p.version;
            // A git source asked for as before keeps its commit until it is upgraded.
            const auto source = m.local_sources.find(p.name);
            if (!opt.upgrade && !skip.count(p.name) && p.vcs && source != m.local_sources.end() &&
                p.vcs->url == source->second.git &&
                p.vcs->requested_revision == source->second.rev &&
                p.vcs->subdirectory == source->second.subdirectory &&
                install::is_commit_id(p.vcs->commit_id))
                prev.commits[p.name] = p.vcs->commit_id;
        }
    }
    for (const auto& p : opt.upgrade_packages)
        if (!known.count(pep::canonicalize_name(p)))
            throw Error(ErrorCode::usage, "--upgrade-package " + p +
                                              ": no package of that name is in " +
                                              lock_path.filename().string() + " or required by " +
                                              manifest_path.filename().string());
    return prev;
}

Freshness freshness(const fs::path& manifest_path, const fs::path& lock_path) {
    Freshness f;
    std::error_code ec;
    if (!fs::exists(lock_path, ec)) {
        f.state = Freshness::State::missing;
        f.reasons = {"there is no lock file " + lock_path.string()};
        return f;
    }
    auto read = lock::read_lock_file(lock_path);
    // A lock that does not parse is no lock envbox wrote: the command that uses it says why.
    if (read) f.lock = std::move(*read);
    if (!f.lock || !f.lock->tool || !f.lock->tool->manifest_digest) {
        f.state = Freshness::State::foreign;
        return f;
    }
    f.reasons = lock_staleness(manifest_path, *f.lock);
    if (!f.reasons.empty()) f.state = Freshness::State::stale;
    return f;
}

Error locked_refusal(const std::string& env, const std::vector<std::string>& reasons,
                     const std::string& also) {
    std::string msg = "--locked: the lock of " + env + " needs updating:";
    for (const auto& r : reasons)
        msg += "\n  " + r;
    return Error(ErrorCode::invalid_input,
                 msg + "\nrun `envbox lock " + env + "`" + (also.empty() ? "" : ", or " + also));
}

std::vector<std::string> lock_staleness(const fs::path& manifest_path, const lock::LockFile& lock) {
    if (!lock.tool || !lock.tool->manifest_digest)
        return {lock.path.string() +
                " was not written by `envbox lock` (it has no [tool.envbox] table)"};
    const lock::ToolTable& was = *lock.tool;
    Inputs now = inputs_of(read_manifest(manifest_path), manifest_path);
    if (*was.manifest_digest == now.digest()) return {};
    std::vector<std::string> reasons;
    const Origins origins = origins_of(manifest_path);
    diff_lists("requirement", was.requirements, now.requirements, Origins{}, reasons);
    diff_lists("index", was.indexes, now.indexes, origins, reasons);
    diff_lists("source pin", was.sources, now.sources, origins, reasons);
    diff_lists("override", was.overrides, now.overrides, origins, reasons);
    diff_lists("constraint", was.constraints, now.constraints, origins, reasons);
    local_changes(was.local, now.local, manifest_path, reasons);
    // A lock of several targets records them as `platforms`, one as `platform`.
    std::string platform = was.platform;
    for (const auto& p : was.platforms)
        platform += (platform.empty() ? "" : ", ") + p;
    const std::string policy(resolve::prerelease_name(prerelease_policy(now.prerelease)));
    // A lock from before the prerelease setting was locked with the default.
    const std::string was_policy =
        was.prerelease.empty() ? std::string(resolve::prerelease_name({})) : was.prerelease;
    for (const auto& [key, locked, value] :
         {std::tuple<const char*, const std::string&, const std::string&>{"python", was.python,
                                                                          now.python},
          {"platform", platform, now.platform},
          {"cuda", was.cuda, now.cuda},
          {"prerelease", was_policy, policy}})
        if (locked != value)
            reasons.push_back(std::string(key) + " changed: the lock has '" + locked +
                              "', the manifest '" + value + "'");
    if (was.exclude_newer != now.exclude_newer)
        reasons.push_back("exclude-newer changed: the lock has " +
                          (was.exclude_newer.empty() ? "none" : "'" + was.exclude_newer + "'") +
                          ", the manifest " +
                          (now.exclude_newer.empty() ? "none" : "'" + now.exclude_newer + "'"));
    if (reasons.empty())
        reasons.push_back(origins.of_removed() + " changed since the lock was written");
    return reasons;
}

}  // namespace envbox::ops
