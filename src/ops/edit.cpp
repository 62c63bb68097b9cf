#include "envbox/ops/edit.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <functional>
#include <set>

#include "cuda_guard.hpp"
#include "envbox/lock/manifest_edit.hpp"
#include "envbox/lock/project_metadata.hpp"
#include "envbox/lock/pylock.hpp"
#include "envbox/pep/name.hpp"
#include "envbox/pep/requirement.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/text.hpp"
#include "init_from.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {
namespace {

// The files an edit may change, as they were before it.
struct Snapshot {
    fs::path manifest, lock;
    fs::path target;  // what the manifest's path names, symlinks resolved: read and written
    std::string manifest_text;
    std::optional<std::string> lock_text;  // nullopt: there was no lock
    mode_t manifest_mode = 0644;
};

Snapshot take_snapshot(const Context& ctx, const std::string& env) {
    check_env_name(env);
    ctx.project().required();
    Snapshot s;
    s.manifest = ctx.project().manifest(env);
    s.lock = ctx.project().lock(env);
    std::error_code ec;
    if (!fs::exists(s.manifest, ec))
        throw Error(ErrorCode::invalid_input, "no manifest " + s.manifest.string() + " (" +
                                                  known_environments(ctx.project_root, env) +
                                                  "; `envbox init " + env + "` writes one)");
    // A manifest that is a symlink (shared between projects) is edited where it points: a
    // rename over the link would replace it with a copy.
    s.target = fs::canonical(s.manifest, ec);
    if (ec) throw sys_error("resolving " + s.manifest.string(), ec);
    s.manifest_text = read_manifest_file(s.target);
    struct stat st {};
    if (::stat(s.target.c_str(), &st) == 0) s.manifest_mode = st.st_mode & 07777;
    if (fs::exists(s.lock, ec)) s.lock_text = read_input_file(s.lock);
    return s;
}

// Puts the manifest and the lock back as `s` has them, and says what it did. The manifest only
// while it still holds `written` (what this edit wrote): a file someone changed meanwhile is
// theirs. Never throws: it runs while another error is on its way out.
std::string restore(const Snapshot& s, const std::string& written) {
    std::string said;
    try {
        if (read_manifest_file(s.target) == written) {
            if (written != s.manifest_text)
                write_file_atomic(s.target, s.manifest_text, s.manifest_mode);
            said = s.manifest.filename().string() + " is as it was";
        } else {
            said = s.manifest.filename().string() + " was changed meanwhile and is left as it is";
        }
        std::error_code ec;
        const bool exists = fs::exists(s.lock, ec);
        if (s.lock_text && (!exists || read_input_file(s.lock) != *s.lock_text))
            write_file_atomic(s.lock, *s.lock_text);
        else if (!s.lock_text && exists)
            fs::remove(s.lock, ec);
        said += s.lock_text ? ", and its lock too" : ", and it has no lock again";
    } catch (const std::exception& e) {
        said += std::string("; putting the files back failed: ") + e.what();
    }
    return said;
}

using Edit = std::function<std::string(const Snapshot&, EditResult&)>;
// What to write once the edit is locked (given the text written and the result so far); the
// same text: nothing more.
using AfterLock = std::function<std::string(const Snapshot&, const std::string&, EditResult&)>;

// Edit (in memory: a refusal leaves every file as it was), write the manifest, lock (and when
// `after_lock` changes the text, write and lock again), create; what fails after the write
// puts the files back.
EditResult apply_edit(const Context& ctx, const LockOptions& lock_options, bool sync,
                      const std::string& doing, const Edit& edit,
                      const AfterLock& after_lock = {}) {
    const std::string& env = lock_options.env;
    const Snapshot s = take_snapshot(ctx, env);
    EditResult r;
    r.manifest = s.manifest;
    std::string text = edit(s, r);
    r.manifest_changed = text != s.manifest_text;
    if (r.manifest_changed) write_file_atomic(s.target, text, s.manifest_mode, Durability::fsync);
    try {
        r.lock = lock(ctx, lock_options);
        if (after_lock) {
            std::string refined = after_lock(s, text, r);
            if (refined != text) {
                write_file_atomic(s.target, refined, s.manifest_mode, Durability::fsync);
                text = std::move(refined);
                r.manifest_changed = text != s.manifest_text;
                // The same versions (the lock prefers its own): only its record of the
                // manifest changes. The changes to report are the first lock's.
                LockResult again = lock(ctx, lock_options);
                again.changes = std::move(r.lock.changes);
                again.target_notes = std::move(r.lock.target_notes);
                again.changed = again.changed || r.lock.changed;
                again.requests += r.lock.requests;
                again.cache_hits += r.lock.cache_hits;
                again.seconds += r.lock.seconds;
                r.lock = std::move(again);
            }
        }
        if (sync) {
            CreateOptions create_options;
            create_options.env = env;
            create_options.offline = lock_options.offline;
            create_options.locked = true;  // just locked: create must not lock again
            r.create = create(ctx, create_options);
        }
    } catch (Error& e) {
        e.add_context(doing + " (" + restore(s, text) + ")");
        throw;
    } catch (...) {
        restore(s, text);
        throw;
    }
    return r;
}

std::string joined(const std::vector<std::string>& words) {
    std::string out;
    for (const auto& w : words)
        out += (out.empty() ? "" : ", ") + w;
    return out;
}

// A bare name gets the version the lock chose as its lower bound, as `uv add` writes it
// (the public version: PEP 440 allows no local label in `>=`), so a later lock never goes
// below what was added; a requirement with a specifier, a URL, or already in the manifest
// as written stays as typed.
std::string with_lower_bounds(const Context& ctx, const AddOptions& opt,
                              const std::vector<pep::Requirement>& parsed, const Snapshot& s,
                              const std::string& text, EditResult& r) {
    const std::string source = s.manifest.string();
    auto lock = lock::Pylock::parse(read_input_file(r.lock.lock_path), r.lock.lock_path.string());
    if (!lock) throw lock.error();
    const auto project = read_project_file(ctx.project_root);
    std::string t = text;
    for (std::size_t i = 0; i < parsed.size(); ++i) {
        const pep::Requirement& req = parsed[i];
        const std::string typed = trimmed(opt.requirements[i]);
        std::string* listed = nullptr;  // its entry in what the edit reports
        for (auto* list : {&r.added, &r.replaced})
            if (auto it = std::find(list->begin(), list->end(), typed); it != list->end())
                listed = &*it;
        if (!req.specifier.empty() || req.url || !listed) continue;
        // The lowest version any target locked (a lock of several may differ by target).
        std::optional<pep::Version> lowest;
        const std::string name = req.canonical_name();
        for (const auto& p : lock->packages)
            if (p.name == name && p.version && (!lowest || *p.version < *lowest))
                lowest = p.version;
        if (!lowest) continue;  // its marker holds on no target
        pep::Requirement bounded = req;
        auto spec = pep::SpecifierSet::parse(">=" + lowest->public_str());
        if (!spec) continue;
        bounded.specifier = std::move(*spec);
        auto e = lock::add_requirement(t, source, bounded.str(), project ? &*project : nullptr);
        if (!e) throw e.error();
        t = std::move(e->text);
        *listed = bounded.str();
    }
    return t;
}

}  // namespace

namespace {

// What `-e PATH[extras]` adds: the folder's `[project] name` with the extras, and the folder as
// the manifest names it (relative to manifests/).
struct EditableAdd {
    std::string requirement, name, path;
};

std::vector<EditableAdd> editable_adds(const Context& ctx, const AddOptions& opt) {
    std::vector<EditableAdd> out;
    const fs::path manifests = ctx.project().manifest(opt.env).parent_path();
    for (const auto& e : opt.editables) {
        const fs::path pyproject = e.path / "pyproject.toml";
        std::error_code ec;
        if (!fs::is_regular_file(fs::symlink_status(pyproject, ec)))
            throw Error(ErrorCode::usage, "-e " + e.path.string() + ": no pyproject.toml there");
        auto meta = lock::read_project_metadata(read_input_file(pyproject), pyproject.string());
        if (!meta) throw meta.error();
        auto req = pep::Requirement::parse(meta->name + e.extras);
        if (!req)
            throw Error(ErrorCode::usage,
                        "-e " + e.path.string() + e.extras + ": " + req.error().message());
        const fs::path canonical = fs::weakly_canonical(e.path);
        std::string rel =
            canonical.lexically_relative(fs::weakly_canonical(manifests)).generic_string();
        out.push_back({req->str(), meta->name, rel.empty() ? "." : rel});
    }
    return out;
}

// `add -r FILE…`: `given` with each file's requirements and editable folders added; what the
// files say that `add` does not apply is a note.
AddOptions with_files(const Context& ctx, const AddOptions& given,
                      std::vector<EditableAdd>& editables) {
    AddOptions opt = given;
    const fs::path manifests = ctx.project().manifest(opt.env).parent_path();
    for (const auto& file : given.requirement_files) {
        const Imported im = import_requirements(file, manifests);
        opt.requirements.insert(opt.requirements.end(), im.requirements.begin(),
                                im.requirements.end());
        for (const auto& e : im.editables)
            editables.push_back({e.requirement, e.name, e.path});
        for (const auto& what : im.untranslated)
            ctx.progress->note("not applied: " + what);
        if (im.index_url || !im.extra_indexes.empty() || !im.constraints.empty())
            ctx.progress->note("not applied: " + file.string() +
                               "'s indexes and constraints (the manifest's [[index]] and "
                               "constraints say those)");
    }
    return opt;
}

}  // namespace

EditResult add(const Context& ctx, const AddOptions& given) {
    std::vector<EditableAdd> editables = editable_adds(ctx, given);
    const AddOptions opt = with_files(ctx, given, editables);
    if (opt.requirements.empty() && editables.empty())
        throw Error(ErrorCode::usage,
                    "envbox add: give at least one requirement (or -e PATH, -r FILE)");
    // Every requirement is checked before the first edit, so a bad one changes nothing.
    std::vector<pep::Requirement> parsed;
    for (const auto& text : opt.requirements) {
        auto req = pep::Requirement::parse(trimmed(text));
        if (!req)
            throw Error(ErrorCode::usage,
                        "invalid requirement '" + text + "': " + req.error().message());
        parsed.push_back(std::move(*req));
    }
    auto edit = [&](const Snapshot& s, EditResult& r) {
        const std::string source = s.manifest.string();
        const auto project = read_project_file(ctx.project_root);
        const lock::ProjectFile* shared = project ? &*project : nullptr;
        std::string t = s.manifest_text;
        for (const auto& text : opt.requirements) {
            auto e = lock::add_requirement(t, source, text, shared);
            if (!e) throw e.error();
            if (e->change == lock::RequirementChange::added) r.added.push_back(trimmed(text));
            if (e->change == lock::RequirementChange::replaced) r.replaced.push_back(trimmed(text));
            t = std::move(e->text);
        }
        for (const auto& e : editables) {
            auto added = lock::add_requirement(t, source, e.requirement, shared);
            if (!added) throw added.error();
            if (added->change != lock::RequirementChange::kept) r.added.push_back(e.requirement);
            auto pinned = lock::pin_local_source(added->text, source, e.name, e.path, true, shared);
            if (!pinned) throw pinned.error();
            t = std::move(*pinned);
        }
        if (opt.index)
            for (const auto& req : parsed) {
                auto e = lock::pin_source(t, source, req.name, *opt.index, shared);
                if (!e) throw e.error();
                if (*e != t) r.pinned.push_back(req.name);
                t = std::move(*e);
            }
        return t;
    };
    auto bound = [&](const Snapshot& s, const std::string& text, EditResult& r) {
        return with_lower_bounds(ctx, opt, parsed, s, text, r);
    };
    LockOptions lock_options;
    lock_options.env = opt.env;
    lock_options.offline = opt.offline;
    lock_options.allow_cuda_change = opt.allow_cuda_change;
    lock_options.retry = "envbox add " + opt.env;
    for (const auto& r : opt.requirements)
        lock_options.retry += " " + shell_word(r);
    for (const auto& e : opt.editables)
        lock_options.retry += " -e " + shell_word(e.path.string() + e.extras);
    for (const auto& f : opt.requirement_files)
        lock_options.retry += " -r " + shell_word(f.string());
    if (opt.index) lock_options.retry += " --index " + shell_word(*opt.index);
    if (!opt.sync) lock_options.retry += " --no-sync";
    return apply_edit(ctx, lock_options, opt.sync,
                      "adding " + joined(opt.requirements) +
                          (editables.empty() ? ""
                                             : (opt.requirements.empty() ? "" : " ") +
                                                   std::string("-e ") + editables.front().name) +
                          " to " + opt.env,
                      edit, bound);
}

EditResult remove(const Context& ctx, const RemoveOptions& opt) {
    if (opt.names.empty()) throw Error(ErrorCode::usage, "envbox remove: give at least one name");
    std::vector<std::string> names;  // each once, as first given
    std::set<std::string> seen;
    for (const auto& n : opt.names) {
        const std::string name = trimmed(n);
        if (!pep::is_valid_name(name))
            throw Error(ErrorCode::usage, "invalid package name '" + n + "'");
        if (seen.insert(pep::canonicalize_name(name)).second) names.push_back(name);
    }
    auto edit = [&](const Snapshot& s, EditResult& r) {
        const auto project = read_project_file(ctx.project_root);
        std::string t = s.manifest_text;
        for (const auto& name : names) {
            auto e = lock::remove_requirement(t, s.manifest.string(), name,
                                              project ? &*project : nullptr);
            if (!e) throw e.error();
            r.removed.push_back(name);
            t = std::move(*e);
        }
        return t;
    };
    LockOptions lock_options;
    lock_options.env = opt.env;
    lock_options.offline = opt.offline;
    lock_options.allow_cuda_change = opt.allow_cuda_change;
    lock_options.retry = "envbox remove " + opt.env;
    for (const auto& n : names)
        lock_options.retry += " " + shell_word(n);
    if (!opt.sync) lock_options.retry += " --no-sync";
    return apply_edit(ctx, lock_options, opt.sync, "removing " + joined(names) + " from " + opt.env,
                      edit);
}

}  // namespace envbox::ops
