#include "envbox/ops/lock.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <set>

#include "cuda_guard.hpp"
#include "envbox/env/cuda.hpp"
#include "envbox/index/http.hpp"
#include "envbox/install/direct.hpp"
#include "envbox/install/local.hpp"
#include "envbox/install/target.hpp"
#include "envbox/lock/manifest.hpp"
#include "envbox/lock/merge.hpp"
#include "envbox/lock/pylock.hpp"
#include "envbox/lock/writer.hpp"
#include "envbox/ops/diff.hpp"
#include "envbox/pep/name.hpp"
#include "envbox/resolve/index_source.hpp"
#include "envbox/resolve/resolver.hpp"
#include "envbox/resolve/targets.hpp"
#include "envbox/store/home.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/parallel.hpp"
#include "envbox/util/sha256.hpp"
#include "envbox/util/stopwatch.hpp"
#include "envbox/util/time.hpp"
#include "lock_build.hpp"
#include "lock_inputs.hpp"
#include "settings.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {

namespace {

// What `lock` keeps from the lock it replaces.
// The number of packages of the lock `fresh` read when it is up to date with the manifest
// (envbox wrote it and `lock_staleness` finds nothing); nullopt when it must be resolved.
std::optional<std::size_t> up_to_date_packages(const Freshness& fresh) {
    if (fresh.state != Freshness::State::fresh || !fresh.lock) return std::nullopt;
    // A lock written before envbox recorded dependency edges is resolved again for them.
    if (!fresh.lock->pylock.has_dependency_graph()) return std::nullopt;
    if (!build_locks_intact(*fresh.lock)) return std::nullopt;  // a build lock went or changed
    return fresh.lock->pylock.packages.size();
}

// What a lock must hold of its pins beyond the resolver's answer: [install].prefer names
// packages of the lock (a misspelt name would settle nothing), and one CUDA line per lock, the
// manifest's when it declares one (unless --allow-mixed-cuda).
void check_pins(const std::vector<resolve::Pinned>& pins, const lock::Manifest& m,
                const LockOptions& opt, const fs::path& manifest_path, const fs::path& project_root,
                const fs::path& lock_path) {
    std::vector<std::string> names;
    for (const auto& pin : pins)
        names.push_back(pin.name);
    if (auto e = m.check_prefer(names, manifest_path.string())) throw *e;
    std::vector<env::CudaPackage> cuda;
    for (const auto& pin : pins)
        if (auto line = env::cuda_line_of(pin.name, pin.version))
            cuda.push_back({pin.name, pin.version.str(), *line});
    auto why = env::cuda_incoherence(cuda, m.cuda);
    if (!why || opt.allow_mixed_cuda) return;
    // What envbox is for comes first: the other line's stack in an environment of its own.
    std::optional<env::CudaLine> declared;
    if (m.cuda) declared = env::CudaLine{std::atoi(m.cuda->c_str()), std::nullopt};
    const env::CudaLine other = declared       ? other_cuda_line(declared, m)
                                : cuda.empty() ? env::CudaLine{13, 0}
                                               : other_cuda_line(cuda.front().line, m);
    throw Error(ErrorCode::invalid_input,
                *why + "\nrefusing to write " + lock_path.string() +
                    "\nan environment runs one CUDA line: put the CUDA " + other.str() +
                    " packages in an environment of their own:\n  " +
                    separate_environment_command(opt.env, m, project_root, other) +
                    "\nor pin the packages to one line, or lock with --allow-mixed-cuda if "
                    "mixing is really meant");
}

// A target of the lock being written as install sees it (its tags and machine) and the direct
// wheels checked for it (what the lock records of them).
struct LockTarget {
    install::Target target;
    std::map<std::string, install::DirectWheel> direct;
    std::map<std::string, install::LocalProject> local;  ///< the manifest's local trees
};

// The targets, and at the same positions, what the resolver makes of each.
struct LockTargets {
    std::vector<LockTarget> plan;
    std::vector<resolve::TargetResolution> resolved;
};

// One target's packages as the lock holds them: each package's wheel as the target's source
// chose it (or its direct wheel), its edges on that target; `upload_times`: with each wheel's
// upload-time.
lock::TargetPackages target_packages(const LockTarget& lt, resolve::TargetResolution& t,
                                     bool upload_times) {
    lock::TargetPackages out;
    out.name = lt.target.platform;
    out.marker = install::target_marker(lt.target);
    const std::vector<resolve::Pinned>& pins = t.pins;
    // A digest or size the index did not give costs a request (a HEAD, or the whole wheel):
    // those run side by side, not one after another.
    out.packages.resize(pins.size());
    parallel_for(pins.size(), 16, [&](std::size_t i) {
        const resolve::Pinned& pin = pins[i];
        lock::LockedPackage& p = out.packages[i];
        p.name = pin.name;
        p.version = pin.version.str();
        if (auto l = lt.local.find(pin.name); l != lt.local.end()) {
            const install::LocalProject& lp = l->second;
            if (lp.git.empty())
                p.directory = lock::LockedDirectory{lp.lock_path, lp.editable};
            else
                p.vcs = lock::LockedVcs{lp.git, lp.commit, lp.rev, lp.subdirectory};
            const auto& v = l->second.metadata.version;  // a dynamic one is not written
            p.version = v ? v->str() : "";
        } else if (auto d = lt.direct.find(pin.name); d != lt.direct.end()) {
            p.archive = d->second.archive;  // a direct reference: no index
        } else {
            auto chosen = t.index->locked(pin.name, pin.version);  // never a mirror's URL
            auto [digest, size] = t.index->digest_and_size(pin.name, pin.version);
            p.index = chosen.index_url;
            lock::LockedWheel w;
            w.filename = chosen.file.filename;
            // A lock is committed: a URL's userinfo (a page's own token) is never written.
            w.url = index::strip_userinfo(chosen.file.url);
            w.sha256 = digest;
            w.size = size;
            // PEP 751's upload-time, as UTC, where exclude-newer chose by it (not otherwise: a
            // lock's bytes, and so its environment's generation, stay those of its packages).
            if (const auto& at = chosen.file.upload_time; upload_times && at && at->size() <= 64)
                if (auto when = parse_rfc3339(*at)) w.upload_time = format_rfc3339(*when);
            if (chosen.sdist)
                p.sdist = std::move(w);  // built where it is installed
            else
                p.wheels.push_back(std::move(w));
        }
        p.dependencies.emplace();
        for (const auto& dep : pin.dependencies)
            for (const auto& other : pins)
                if (other.name == dep) p.dependencies->push_back({dep, other.version.str()});
    });
    return out;
}

// The lock document of every target's resolution, merged (lock/merge.hpp: one entry where
// targets agree, markers where they differ), with `environments` naming the targets and
// [tool.envbox] recording the manifest's inputs. `divergences` gets where targets differ.
lock::LockDocument lock_document(LockTargets& targets, const lock::Manifest& m,
                                 const LockOptions& opt,
                                 std::vector<lock::Divergence>& divergences) {
    lock::LockDocument doc;
    std::vector<lock::TargetPackages> each;
    const std::vector<LockTarget>& plan = targets.plan;
    for (std::size_t i = 0; i < plan.size(); ++i) {
        const std::string machine = plan[i].target.machine();
        doc.environments.push_back(
            "python_version == '" + m.python + "' and sys_platform == 'linux'" +
            (machine.empty() ? "" : " and platform_machine == '" + machine + "'"));
        each.push_back(target_packages(plan[i], targets.resolved[i], m.exclude_newer.has_value()));
    }
    doc.requires_python = "==" + m.python + ".*";
    lock::MergedPackages merged = lock::merge_targets(each);
    doc.packages = std::move(merged.packages);
    divergences = std::move(merged.divergences);
    Inputs inputs = inputs_of(m);
    for (const auto& [name, local] : plan.front().local)
        inputs.local.push_back(local.input_line());
    if (!inputs.local.empty()) doc.tool_lists["local"] = inputs.local;
    doc.tool["manifest-digest"] = inputs.digest();
    doc.tool["python"] = inputs.python;
    if (m.platforms.size() > 1)
        doc.tool_lists["platforms"] = m.platforms;
    else
        doc.tool["platform"] = inputs.platform;
    doc.tool["cuda"] = inputs.cuda;
    doc.tool["prerelease"] = resolve::prerelease_name(prerelease_policy(inputs.prerelease));
    if (!inputs.exclude_newer.empty()) doc.tool["exclude-newer"] = inputs.exclude_newer;
    if (opt.allow_mixed_cuda) doc.tool["allow-mixed-cuda"] = "true";
    doc.tool_lists["requirements"] = inputs.requirements;
    doc.tool_lists["indexes"] = inputs.indexes;
    doc.tool_lists["sources"] = inputs.sources;
    if (!inputs.overrides.empty()) doc.tool_lists["overrides"] = inputs.overrides;
    if (!inputs.constraints.empty()) doc.tool_lists["constraints"] = inputs.constraints;
    return doc;
}

// What `lock` reports as changed, by `diff`'s comparison of the two locks; an old lock that no
// longer reads (edited by hand) counts as none, so every package shows as added.
std::vector<VersionChange> changes_between(const std::string& before, const std::string& after,
                                           const fs::path& lock_path) {
    LockView old;
    try {
        if (!before.empty()) old = lock_view(before, lock_path.string());
    } catch (const Error&) {
    }
    return version_changes(diff(old, lock_view(after, lock_path.string())));
}

// `lock --check`: why the lock is stale (`--target`: or why it does not cover that platform).
void check_lock(LockResult& result, const LockOptions& opt, const fs::path& manifest_path) {
    std::optional<lock::LockFile> file;
    std::error_code ec;
    if (fs::exists(result.lock_path, ec)) {
        auto read = lock::read_lock_file(result.lock_path);
        if (!read) throw read.error();
        file = std::move(*read);
    }
    if (!opt.target.empty()) {
        const lock::Manifest m = read_manifest(manifest_path);
        auto named = install::platform_named(m.platforms, opt.target);
        if (!named)
            throw Error(ErrorCode::usage, "--target " + opt.target + ": " + manifest_path.string() +
                                              " names no such platform");
        if (file) try {
                install::lock_target(*file, *named);
            } catch (const Error&) {
                result.reasons.push_back(result.lock_path.string() + " does not cover " + *named);
            }
    }
    if (!file)
        result.reasons.push_back("there is no lock file " + result.lock_path.string());
    else
        for (auto& why : lock_staleness(manifest_path, *file))
            result.reasons.push_back(std::move(why));
    result.stale = !result.reasons.empty();
}

// One resolution per target of the manifest; several must differ by machine, since the lock's
// markers tell them apart by `platform_machine`.
std::vector<LockTarget> manifest_targets(const lock::Manifest& m, const fs::path& manifest_path) {
    std::vector<LockTarget> targets;
    for (install::Target& t : install::targets_of_manifest(m))
        targets.push_back(LockTarget{std::move(t), {}, {}});
    if (targets.size() > 1)
        for (const auto& t : targets)
            if (t.target.machine().empty())
                throw Error(ErrorCode::invalid_input,
                            manifest_path.string() +
                                ": a lock of several platforms tells them "
                                "apart by machine, and " +
                                t.target.platform + " is neither x86_64 nor aarch64");
    return targets;
}

// The solver's options from the manifest's settings and the old lock's versions.
resolve::Options resolution_options(const Context& ctx, const lock::Manifest& m,
                                    Previous& previous) {
    resolve::Options ropt;
    ropt.preferences = std::move(previous.preferences);
    ropt.prerelease = prerelease_policy(m.prerelease.value_or(""));
    for (const auto& o : m.overrides.value_or(std::vector<pep::Requirement>{}))
        ropt.overrides[pep::canonicalize_name(o.name)].push_back(o);
    for (const auto& c : m.constraints.value_or(std::vector<pep::Requirement>{}))
        ropt.constraints[pep::canonicalize_name(c.name)].push_back(c);
    if (ctx.settings.resolve_debug)
        ropt.trace = [&ctx](std::string_view line) { ctx.progress->trace(std::string(line)); };
    ropt.max_steps = resolve_max_steps(ctx.settings);
    return ropt;
}

// Each target's direct references and its view of the indexes (pages and pure wheels'
// METADATA fetched once for every target).
// shape: the targets to fill, the lock's context, manifest and client, and what builds and git
// sources need.
void open_sources(LockTargets& targets, const Context& ctx, const lock::Manifest& m,
                  const fs::path& manifest_path, index::HttpClient& http,
                  LockBuilds* builds = nullptr, const install::GitLocking* git = nullptr) {
    const std::vector<resolve::IndexConfig> indexes = index_configs(m, manifest_path, ctx.settings);
    // Direct references alone need no index (their own dependencies will ask for one).
    if (indexes.empty() &&
        std::any_of(m.requirements.begin(), m.requirements.end(), [&](const pep::Requirement& r) {
            return !r.url && !m.local_sources.count(r.canonical_name());
        }))
        throw Error(ErrorCode::invalid_input,
                    manifest_path.string() + " names no [[index]] to lock against");
    if (std::any_of(m.requirements.begin(), m.requirements.end(),
                    [](const pep::Requirement& r) { return r.url.has_value(); }))
        ctx.progress->phase("Reading direct references", 0);
    auto shared = targets.plan.size() > 1 ? std::make_shared<resolve::SharedFetches>() : nullptr;
    targets.resolved.clear();
    const auto local = install::local_projects(m, manifest_path, git);
    if (builds)
        for (const auto& [name, project] : local)
            builds->local(project);
    for (auto& lt : targets.plan) {
        resolve::TargetResolution& t = targets.resolved.emplace_back();
        t.platform = lt.target.platform;
        t.markers = lt.target.markers;
        lt.direct =
            install::direct_wheels(m, manifest_path, lt.target, http, store::Home(ctx.home));
        for (const auto& [name, wheel] : lt.direct)
            t.direct[name] = wheel.package;
        lt.local = local;
        for (const auto& [name, project] : local)
            t.direct[name] = project.package;
        t.index = std::make_unique<resolve::IndexSource>(http, indexes, m.sources, lt.target.tags,
                                                         lt.target.python_full_version,
                                                         store::Home(ctx.home), shared);
        if (m.exclude_newer) t.index->exclude_newer(parse_rfc3339(*m.exclude_newer).value());
        if (builds) t.index->allow_builds(builds->hooks());
        t.source = t.index.get();
    }
}

// The sources go before the HTTP client, however the lock ends (a failed resolution included):
// their destructors wait for prefetches still in flight, which only its loop completes.
struct ReleaseSources {
    std::vector<resolve::TargetResolution>& targets;
    ~ReleaseSources() {
        for (auto& t : targets) {
            t.source = nullptr;
            t.index.reset();
        }
    }
};

// The PEP 751 text of a build environment's lock: `requires` resolved for the manifest's
// targets from its indexes, wheels only (a build environment is never built itself).
// `previous`: the build lock's text before, whose versions are preferred (one that does not
// parse prefers nothing).
// shape: the lock's context and manifest, its client, and the build's requirements and past.
std::string build_lock_text(const Context& ctx, const lock::Manifest& m,
                            const fs::path& manifest_path, index::HttpClient& http,
                            const std::vector<pep::Requirement>& requires_,
                            const std::optional<std::string>& previous) {
    lock::Manifest bm = m;
    bm.requirements = requires_;
    bm.build = "never";
    bm.package_builds.clear();
    bm.local_sources.clear();
    bm.overrides.reset();
    bm.constraints.reset();
    LockTargets targets{manifest_targets(bm, manifest_path), {}};
    const ReleaseSources release{targets.resolved};
    open_sources(targets, ctx, bm, manifest_path, http);
    resolve::Options ropt;
    ropt.max_steps = resolve_max_steps(ctx.settings);
    if (previous)
        if (auto before = lock::Pylock::parse(*previous, "the previous build lock"))
            for (const auto& p : before->packages)
                if (p.version) ropt.preferences[p.name] = *p.version;
    resolve::resolve_targets(targets.resolved, bm.requirements, ropt, "build", bm.python);
    for (auto& t : targets.resolved)
        t.index->stop_prefetching();
    std::vector<lock::Divergence> divergences;
    return lock::write_pylock(lock_document(targets, bm, LockOptions{}, divergences));
}

// The merged document, checked (CUDA line), written when it changed (with the build locks of
// its sdists), and reported.
// shape: the result to fill, the resolution, and the inputs each part of the lock comes from.
void write_lock(LockResult& result, LockTargets& targets, const Context& ctx,
                const lock::Manifest& m, const LockOptions& opt, const std::string& previous,
                const LockBuilds& builds) {
    std::vector<lock::Divergence> divergences;
    lock::LockDocument doc = lock_document(targets, m, opt, divergences);
    const std::vector<LockBuilds::File> build_locks = builds.files(doc.packages, result.lock_path);
    for (const auto& f : build_locks) {
        doc.tool_lists["builds"].push_back(f.entry);
        for (const auto& line : f.settings)
            doc.tool_lists["build-settings"].push_back(line);
    }
    result.cuda_change = check_cuda_line(opt, m, previous, doc, ctx.project_root, result.lock_path);
    std::vector<std::string> diverging;
    for (const auto& d : divergences)
        diverging.push_back(d.name);
    result.target_notes = resolve::divergence_notes(diverging, targets.resolved);
    for (const auto& note : result.target_notes)
        ctx.progress->note("targets differ: " + note);
    for (const auto& line : result.older)
        ctx.progress->note(line);
    std::string text = lock::write_pylock(doc);
    for (const auto& f : build_locks)  // after every check, before the lock that names them
        write_file_atomic(f.path, f.text, 0644, Durability::fsync);
    result.changed = text != previous;
    if (result.changed) {
        write_file_atomic(result.lock_path, text, 0644, Durability::fsync);
        // A move this machine made on purpose: its create of these bytes needs no flag again.
        if (result.cuda_change) approve_cuda_move(ctx.home, env_dir(ctx, opt.env), text);
        result.changes = changes_between(previous, text, result.lock_path);
        for (const auto& gone :
             remove_stale_build_locks(previous, result.lock_path, opt.env, build_locks))
            ctx.progress->note("removed " + gone + ": the lock builds nothing from it now");
    }
    result.packages = doc.packages.size();
}

}  // namespace

// The pipeline: --check, or keep an up-to-date lock, or read the manifest and the old lock →
// its `Target`s → resolve each against the manifest's indexes (resolve/targets.cpp) → check each
// target's pins → merge them into one document and write it.
LockResult lock(const Context& ctx, const LockOptions& opt) {
    const Stopwatch started;
    check_env_name(opt.env);
    ctx.project().required();
    LockResult result;
    const fs::path manifest_path = ctx.project().manifest(opt.env);
    result.lock_path = ctx.project().lock(opt.env);
    if (!opt.target.empty() && !opt.check)
        throw Error(ErrorCode::usage,
                    "--target goes with --check (a lock is for every platform "
                    "of its manifest)");
    if (opt.check) {
        check_lock(result, opt, manifest_path);
        return result;
    }
    // An up-to-date lock is kept as it is, without asking any index (as `uv lock` does);
    // --upgrade or --upgrade-package re-resolve.
    Freshness fresh = freshness(manifest_path, result.lock_path);
    if (!opt.upgrade && opt.upgrade_packages.empty())
        if (auto n = up_to_date_packages(fresh)) {
            result.packages = *n;
            result.up_to_date = true;
            result.seconds = started.total();
            return result;
        }
    const lock::Manifest m = read_manifest(manifest_path);
    // Committed with the lock: the environments follow the project when it moves.
    if (ensure_project_identity(ctx.project_root))
        ctx.progress->note("wrote manifests/.envbox-project (the project's identity: commit it)");
    LockTargets targets{manifest_targets(m, manifest_path), {}};
    Previous previous = read_previous(opt, m, manifest_path, result.lock_path, fresh.lock);
    const resolve::Options ropt = resolution_options(ctx, m, previous);
    // One client for every target: its connections, and the home's page and metadata caches,
    // are shared; each target has its own source, since its tags decide a version's wheel.
    index::HttpClient http(http_options(ctx, opt.offline));
    LockBuilds builds(ctx, m, manifest_path, opt.env, opt.offline,
                      [&](const std::vector<pep::Requirement>& requires_,
                          const std::optional<std::string>& before) {
                          return build_lock_text(ctx, m, manifest_path, http, requires_,
                                                 opt.upgrade ? std::nullopt : before);
                      });
    const ReleaseSources release_sources{targets.resolved};
    install::GitLocking git{[&, settings = git_settings(ctx)](const std::string& name) {
                                const auto s = m.local_sources.find(name);
                                return settings.access(
                                    name, opt.offline,
                                    s == m.local_sources.end() ? "" : s->second.git);
                            },
                            previous.commits};
    open_sources(targets, ctx, m, manifest_path, http, &builds, &git);
    ctx.progress->phase("Resolving", 0);
    try {
        resolve::resolve_targets(targets.resolved, m.requirements, ropt, opt.env, m.python);
        result.older = resolve::older_than_newest(targets.resolved, m.requirements, ropt, opt.env,
                                                  opt.explain_all);
    } catch (const Error& e) {
        throw with_separate_environment_hint(e, opt.env, m, ctx.project_root);
    }
    for (auto& t : targets.resolved) {
        t.index->stop_prefetching();
        try {
            check_pins(t.pins, m, opt, manifest_path, ctx.project_root, result.lock_path);
        } catch (Error& e) {
            if (targets.resolved.size() > 1) e.add_context("on " + t.platform);
            throw;
        }
    }
    write_lock(result, targets, ctx, m, opt, previous.text, builds);
    result.requests = http.stats().requests;
    result.cache_hits = http.stats().cache_hits;
    result.peak_in_flight = http.stats().peak_in_flight;
    result.seconds = started.total();
    return result;
}

}  // namespace envbox::ops
