#include "envbox/ops/diff.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "envbox/env/cuda.hpp"
#include "envbox/env/generation.hpp"
#include "envbox/install/target.hpp"
#include "envbox/lock/pylock.hpp"
#include "envbox/pep/filename.hpp"
#include "envbox/store/home.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/process.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {
namespace {

// The entry of one package with `wheel` (null: none), its installed size when the store has it.
LockView::Entry entry_of(const lock::Package& p, const lock::FileRef* wheel,
                         const std::optional<store::Store>& store) {
    LockView::Entry e;
    e.name = p.name;
    e.version = p.version ? p.version->str() : "";
    // A git source's version is its commit as much as its number: a moved branch is a change.
    if (p.vcs) e.version += (e.version.empty() ? "" : " ") + ("@" + p.vcs->commit_id.substr(0, 12));
    e.index = p.index.value_or("");
    if (wheel) {
        e.filename = wheel->filename();
        e.sha256 = wheel->sha256().value_or("");
        e.size = wheel->size;
        if (store)
            if (auto sha = wheel->sha256())
                if (auto files = store->load_wheel(*sha)) e.installed = files->total_size();
    }
    return e;
}

LockView view_of(const std::string& text, const std::string& label, const fs::path& home,
                 const std::string& target = "") {
    auto file = lock::parse_lock_file(label, text);
    if (!file) throw file.error();
    const lock::Pylock* lock = &file->pylock;
    LockView v;
    v.label = label;
    std::optional<store::Store> store;
    std::error_code ec;
    if (fs::exists(store::Home(home).store(), ec)) store.emplace(home);
    if (!target.empty()) {  // what that target installs
        const install::Target t = install::lock_target(*file, target);
        lock::SelectTarget select_target;
        select_target.environment = t.markers;
        select_target.tags = &t.tags;
        auto chosen = lock::select(*lock, select_target);
        if (!chosen) throw Error(chosen.error()).add_context("reading " + label + " for " + target);
        for (const auto& s : *chosen)
            v.packages.push_back(entry_of(*s.package, s.file, store));
    } else {
        std::map<std::string, int> count;
        for (const auto& p : lock->packages)
            ++count[p.name];
        for (const auto& p : lock->packages) {
            v.packages.push_back(
                entry_of(p, p.wheels.empty() ? nullptr : &p.wheels.front(), store));
            // Targets that differ hold a name twice: each entry is its own line of the diff.
            if (count[p.name] > 1 && p.marker)
                v.packages.back().name += " [" + p.marker->str() + "]";
        }
    }
    std::sort(v.packages.begin(), v.packages.end(),
              [](const auto& x, const auto& y) { return x.name < y.name; });
    return v;
}

// What differs between two wheel file names of one version: its tags (cp311 → cp312), its build
// tag, or else the name as a whole.
std::string wheel_detail(const std::string& before, const std::string& after) {
    auto a = pep::WheelFilename::parse(before), b = pep::WheelFilename::parse(after);
    if (a && b) {
        if (a->tag_text != b->tag_text) return "tags " + a->tag_text + " → " + b->tag_text;
        auto build = [](const std::optional<pep::BuildTag>& t) {
            return t ? std::to_string(t->number) + t->rest : std::string("none");
        };
        if (a->build != b->build) return "build tag " + build(a->build) + " → " + build(b->build);
    }
    return "file " + before + " → " + after;
}

}  // namespace

std::string cuda_line(const std::string& name, const std::string& version) {
    auto v = pep::Version::try_parse(version);
    if (!v) return "";
    auto l = env::cuda_line_of(name, *v);
    return l ? l->str() : "";
}

LockView load_side(const Context& ctx, const std::string& spec, bool current_generation,
                   const std::string& target) {
    std::error_code ec;
    const auto at_sign = spec.find('@');
    const bool git_rev = at_sign != std::string::npos &&
                         spec.substr(0, at_sign).find('/') == std::string::npos &&
                         !fs::exists(spec, ec);  // ENV@origin/main is a revision, not a path
    if (!git_rev && (spec.find('/') != std::string::npos || spec.ends_with(".toml"))) {
        if (!fs::exists(spec, ec)) throw Error(ErrorCode::usage, "no lock file " + spec);
        return view_of(read_input_file(spec), spec, ctx.home, target);
    }
    if (auto at = spec.find('@'); at != std::string::npos) {
        std::string env = spec.substr(0, at), rev = spec.substr(at + 1);
        check_env_name(env);
        if (ctx.project_root.empty())
            throw Error(ErrorCode::usage, spec + ": no project here to read git history from");
        // A revision, never an option: `ENV@--output=FILE` would make git write FILE.
        if (rev.empty() || rev.front() == '-' || rev.find(':') != std::string::npos ||
            rev.find('\0') != std::string::npos)
            throw Error(ErrorCode::usage, spec + ": '" + rev + "' is not a git revision");
        auto r = run_capture({"git", "-C", ctx.project_root.string(), "show", "--end-of-options",
                              rev + ":" + Project::lock_name(env)});
        if (r.status != 0)
            throw Error(ErrorCode::usage,
                        "cannot read " + Project::lock_name(env) + " at " + rev + ": " + r.err);
        return view_of(r.out, spec, ctx.home, target);
    }
    if (auto hash = spec.find('#'); hash != std::string::npos) {
        std::string env = spec.substr(0, hash);
        check_env_name(env);
        fs::path gen =
            env_dir(ctx, env) / env::generation_dir_name(std::atoi(spec.c_str() + hash + 1));
        const auto text = env::read_generation_lock(gen);
        if (!text)
            throw Error(ErrorCode::usage,
                        spec + ": no such generation (see `envbox history " + env + "`)");
        return view_of(*text, spec, ctx.home, target);
    }
    check_env_name(spec);
    if (current_generation) {
        require_known_environment(ctx, spec);
        auto gen = env::current_generation(env_dir(ctx, spec));
        if (!gen)
            throw Error(
                ErrorCode::generic,
                "environment '" + spec + "' has not been created" +
                    (ctx.project_root.empty() ? std::string()
                                              : " for project " + ctx.project_root.string()) +
                    "; run `envbox create " + spec + "` first, or name two locks");
        const auto text = env::read_generation_lock(gen->path);
        if (!text)
            throw Error(ErrorCode::integrity, "generation " + std::to_string(gen->number) + " of " +
                                                  spec + " has no lock");
        return view_of(*text, spec + "#" + std::to_string(gen->number), ctx.home, target);
    }
    fs::path lock = ctx.project().lock(spec);
    if (ctx.project_root.empty() || !fs::exists(lock, ec))
        throw Error(ErrorCode::usage, "no lock for " + spec);
    return view_of(read_input_file(lock), (fs::path("manifests") / lock.filename()).string(),
                   ctx.home, target);
}

std::pair<LockView, LockView> load_sides(const Context& ctx, const std::string& a,
                                         const std::string& target) {
    const auto at = a.find('@'), hash = a.find('#');
    // As `load_side` reads it: a '/' outside a revision, or a .toml name, is a lock path.
    const bool path =
        (a.find('/') != std::string::npos &&
         (at == std::string::npos || a.substr(0, at).find('/') != std::string::npos)) ||
        a.ends_with(".toml");
    if (path)
        throw Error(ErrorCode::usage,
                    "envbox diff " + a + ": a lock file needs a second lock to compare with");
    if (at != std::string::npos)
        return {load_side(ctx, a, false, target), load_side(ctx, a.substr(0, at), false, target)};
    if (hash != std::string::npos)
        return {load_side(ctx, a, false, target), load_side(ctx, a.substr(0, hash), true, target)};
    return {load_side(ctx, a, true, target), load_side(ctx, a, false, target)};
}

Diff diff(const LockView& a, const LockView& b) {
    Diff d;
    d.a = a.label;
    d.b = b.label;
    std::map<std::string, const LockView::Entry*> before, after;
    for (const auto& e : a.packages)
        before[e.name] = &e;
    for (const auto& e : b.packages)
        after[e.name] = &e;
    std::int64_t installed = 0;
    bool installed_known = true;
    auto sz = [](const std::optional<std::uint64_t>& s) {
        return static_cast<std::int64_t>(s.value_or(0));
    };
    std::set<std::string> names;
    for (const auto& [n, _] : before)
        names.insert(n);
    for (const auto& [n, _] : after)
        names.insert(n);
    for (const auto& n : names) {
        const auto* x = before.count(n) ? before[n] : nullptr;
        const auto* y = after.count(n) ? after[n] : nullptr;
        DiffEntry e;
        e.name = n;
        if (x) {
            e.before = x->version, e.index_before = x->index,
            e.cuda_before = cuda_line(n, x->version);
            e.wheel_before = x->filename, e.sha256_before = x->sha256;
        }
        if (y) {
            e.after = y->version, e.index_after = y->index, e.cuda_after = cuda_line(n, y->version);
            e.wheel_after = y->filename, e.sha256_after = y->sha256;
        }
        e.download_delta = (y ? sz(y->size) : 0) - (x ? sz(x->size) : 0);
        bool known = (!x || x->installed) && (!y || y->installed);
        if (known) e.installed_delta = (y ? sz(y->installed) : 0) - (x ? sz(x->installed) : 0);
        if (!x)
            e.kind = DiffEntry::Kind::added;
        else if (!y)
            e.kind = DiffEntry::Kind::removed;
        else if (x->version != y->version) {
            auto vx = pep::Version::try_parse(x->version), vy = pep::Version::try_parse(y->version);
            e.kind =
                vx && vy && *vy < *vx ? DiffEntry::Kind::downgraded : DiffEntry::Kind::upgraded;
            // Same public version, another local label (+cu128 → +cu130): not an upgrade.
            if (vx && vy && vx->public_str() == vy->public_str())
                e.kind = DiffEntry::Kind::local_label;
        } else if (x->index != y->index) {
            e.kind = DiffEntry::Kind::index_changed;
        } else if (x->filename != y->filename) {
            e.kind = DiffEntry::Kind::wheel_changed;
            e.detail = wheel_detail(x->filename, y->filename);
        } else if (x->sha256 != y->sha256) {
            // The same file name with other bytes: a re-upload.
            e.kind = DiffEntry::Kind::rebuilt;
            e.detail =
                std::string("same version, new sha256") + (x->size != y->size ? " and size" : "");
        } else {
            d.unchanged++;
            continue;
        }
        d.download_delta += e.download_delta;
        if (e.installed_delta)
            installed += *e.installed_delta;
        else
            installed_known = false;
        d.entries.push_back(std::move(e));
    }
    if (installed_known) d.installed_delta = installed;
    return d;
}

LockView lock_view(const std::string& text, const std::string& label) {
    return view_of(text, label, fs::path());
}

std::vector<VersionChange> version_changes(const Diff& d) {
    std::vector<VersionChange> out;
    for (const auto& e : d.entries)
        if (e.before != e.after) out.push_back({e.name, e.before, e.after});
    return out;
}

}  // namespace envbox::ops
