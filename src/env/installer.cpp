// The plan half of the installer: every destination, RECORD and overlap decided from the
// wheels' file lists, before anything is written (install_apply.cpp writes the plan).
#include "envbox/env/installer.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "envbox/pep/name.hpp"
#include "envbox/pep/wheel.hpp"
#include "envbox/store/bytecode.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/sha256.hpp"

namespace fs = std::filesystem;

namespace envbox::env {
namespace {

// One file to put into the environment.
struct Placement {
    std::string rel;                           // relative to the environment root
    const store::WheelFile* object = nullptr;  // link this object, or
    std::string content;                       // write this
    bool executable = false;
    std::size_t wheel = 0;    // index into requests
    std::string record_path;  // as RECORD lists it: relative to the .dist-info's parent
    bool record = false;      // the wheel's RECORD, written once overlaps are decided
    bool bytecode = false;    // a .pyc: placed, not listed in RECORD
    std::size_t source = 0;   // a .pyc's source placement, whose fate it shares
};

std::string hex_to_record_b64(const std::string& hex) {
    auto nibble = [](char c) {
        return static_cast<std::uint8_t>(c <= '9' ? c - '0' : c - 'a' + 10);
    };
    Sha256Digest d{};
    for (std::size_t i = 0; i < d.size(); ++i)
        d[i] = static_cast<std::uint8_t>(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
    return to_record_b64(d);
}

// setuptools' wrappers for entry point EP (EP, EP.exe, EP-script.py, EP.pya) are skipped in
// favour of the launcher, as pip does.
bool is_entry_point_wrapper(std::string_view file_name, const std::set<std::string>& names) {
    auto strip = [&](std::string_view suffix) -> std::optional<std::string_view> {
        if (file_name.size() < suffix.size()) return std::nullopt;
        std::string tail(file_name.substr(file_name.size() - suffix.size()));
        for (auto& c : tail)
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (tail != suffix) return std::nullopt;
        return file_name.substr(0, file_name.size() - suffix.size());
    };
    std::string_view match = file_name;
    if (auto m = strip(".exe"))
        match = *m;
    else if (auto m2 = strip("-script.py"))
        match = *m2;
    else if (auto m3 = strip(".pya"))
        match = *m3;
    return names.count(std::string(match)) > 0;
}

// The spec names it `{name}-{version}.data/`; pip (and so the wheels in the wild that rely on
// it) takes any top-level `*.data/` directory, and so does envbox. "" when `path` is in none.
std::string data_dir_of(const std::string& path) {
    auto slash = path.find('/');
    if (slash == std::string::npos) return {};
    std::string top = path.substr(0, slash);
    return top.size() > 5 && top.ends_with(".data") ? top + "/" : std::string();
}

class Planner {
  public:
    Planner(const store::Store& store, const Interpreter& in, const VenvLayout& layout)
        : store_(store), in_(in), layout_(layout) {}

    std::vector<Placement> placements;
    std::vector<std::string> wheel_labels;
    std::vector<std::string> dist_info_prefix;  // "lib/…/site-packages/x-1.dist-info/" per wheel
    std::vector<std::vector<std::size_t>> of_wheel;  // placements of each wheel, RECORD last

    /// Plans one wheel: its members through the install scheme, its entry-point launchers,
    /// then what envbox adds to its .dist-info, RECORD last.
    void plan(const InstallRequest& req, std::size_t index) {
        const store::WheelFiles& w = *req.wheel;
        wheel_labels.push_back(w.name + " " + w.version + " (" + w.filename + ")");
        const fs::path root_dir = w.root_is_purelib ? layout_.purelib : layout_.platlib;
        Wheel cur{w, index, rel_of(root_dir), of_wheel.emplace_back()};
        // Entry points decide which .data scripts are setuptools wrappers.
        const std::vector<pep::EntryPoint> entries = entry_points_of(w);
        std::set<std::string> entry_names;
        for (const auto& e : entries)
            entry_names.insert(e.name);
        const std::string record = w.dist_info + "/RECORD";
        for (const auto& f : w.files)
            if (f.path != record && !pep::in_pycache(f.path)) plan_member(cur, f, entry_names);
        for (const store::WheelBytecode* b : req.bytecode)
            plan_bytecode(cur, *b);
        for (const auto& e : pep::scripts_for_target(entries, in_.major, in_.minor)) {
            if (pep::script_name_escapes(e.name))
                throw Error(ErrorCode::integrity,
                            w.filename + ": entry point '" + e.name +
                                "' would be written outside the scripts directory");
            add(cur, under(layout_.scripts, e.name), nullptr,
                pep::launcher_script(e, layout_.python.string()), true);
        }
        plan_dist_info(cur, req);
    }

    /// Writes each wheel's RECORD (paths relative to the site-packages directory holding the
    /// .dist-info) over its placements that `listed` keeps.
    void write_records(const std::vector<char>& listed) {
        for (const auto& mine : of_wheel) {
            Placement& record = placements[mine.back()];
            std::vector<std::string> rows;
            rows.reserve(mine.size());
            for (std::size_t k = 0; k + 1 < mine.size(); ++k) {
                const Placement& p = placements[mine[k]];
                if (!listed[mine[k]] || p.bytecode) continue;
                std::string row = pep::csv_field(p.record_path);
                if (p.object) {
                    row += ",sha256=" + hex_to_record_b64(p.object->digest) + "," +
                           std::to_string(p.object->size);
                } else {
                    row += ",sha256=" + to_record_b64(sha256(p.content)) + "," +
                           std::to_string(p.content.size());
                }
                rows.push_back(std::move(row));
            }
            rows.push_back(pep::csv_field(record.record_path) + ",,");
            std::sort(rows.begin(), rows.end());
            std::size_t total = 0;
            for (const auto& r : rows)
                total += r.size() + 1;
            record.content.reserve(total);
            for (const auto& r : rows)
                record.content.append(r).push_back('\n');
        }
    }

  private:
    // The wheel being planned.
    struct Wheel {
        const store::WheelFiles& w;
        std::size_t index;               // into the requests
        std::string root_rel;            // its root (purelib or platlib), relative to the env
        std::vector<std::size_t>& mine;  // its placements
        // Where each member that went into site-packages lands (member path → rel).
        std::unordered_map<std::string_view, std::size_t> in_site{};
    };

    // The `.pyc` of each source of `b`, in the `__pycache__` beside where the source lands. A
    // list whose source is not that member (or not one placed in site-packages) is damaged.
    void plan_bytecode(Wheel& cur, const store::WheelBytecode& b) {
        for (const auto& f : b.files) {
            auto at = cur.in_site.find(f.source);
            if (at == cur.in_site.end() || placements[at->second].object->digest != f.source_digest)
                throw Error(ErrorCode::integrity,
                            "the store's bytecode list " + b.key.name() + " of " + cur.w.filename +
                                " names " + f.source + ", which is not that module of the wheel");
            const std::string& rel = placements[at->second].rel;
            const auto slash = rel.rfind('/');
            std::string pyc = rel.substr(0, slash + 1) + "__pycache__/" +
                              b.key.pyc_name(std::string_view(rel).substr(slash + 1));
            add(cur, std::move(pyc), &f.pyc, {}, false);
            placements.back().bytecode = true;
            placements.back().source = at->second;
        }
    }

    std::vector<pep::EntryPoint> entry_points_of(const store::WheelFiles& w) const {
        const auto* ep = w.find(w.dist_info + "/entry_points.txt");
        if (!ep) return {};
        auto parsed =
            pep::parse_entry_points(read_file(store_.object_path(ep->digest, ep->executable)));
        if (!parsed)
            throw Error(ErrorCode::integrity, w.filename + ": " + parsed.error().message());
        return std::move(*parsed);
    }

    // One archive member: under the wheel's root, or through its .data directory's scheme key.
    void plan_member(Wheel& cur, const store::WheelFile& f,
                     const std::set<std::string>& entry_names) {
        const store::WheelFiles& w = cur.w;
        const std::string data_dir = data_dir_of(f.path);
        if (data_dir.empty()) {
            if (!(f.path.size() > w.dist_info.size() && f.path[w.dist_info.size()] == '/' &&
                  f.path.starts_with(w.dist_info)))
                cur.in_site[f.path] = placements.size();
            add(cur, cur.root_rel + "/" + f.path, &f, {}, f.executable, f.path);
            return;
        }
        std::string_view rest = std::string_view(f.path).substr(data_dir.size());
        auto slash = rest.find('/');
        if (slash == std::string_view::npos)
            throw Error(ErrorCode::integrity,
                        w.filename + ": stray file '" + f.path + "' in " + data_dir);
        std::string key(rest.substr(0, slash));
        std::string_view sub = rest.substr(slash + 1);
        if (key == "purelib" || key == "platlib") cur.in_site[f.path] = placements.size();
        if (key == "purelib")
            add(cur, under(layout_.purelib, sub), &f, {}, f.executable);
        else if (key == "platlib")
            add(cur, under(layout_.platlib, sub), &f, {}, f.executable);
        else if (key == "headers")
            add(cur, under(layout_.headers_base / w.name, sub), &f, {}, f.executable);
        else if (key == "data")
            add(cur, under(layout_.data, sub), &f, {}, f.executable);
        else if (key == "scripts") {
            if (is_entry_point_wrapper(fs::path(std::string(sub)).filename().string(), entry_names))
                return;
            std::string text = read_file(store_.object_path(f.digest, f.executable));
            std::string rewritten = pep::rewrite_shebang(text, layout_.python.string());
            add(cur, under(layout_.scripts, sub), nullptr, std::move(rewritten), true);
        } else {
            throw Error(ErrorCode::integrity,
                        w.filename + ": unknown .data directory '" + key +
                            "' (expected purelib, platlib, scripts, headers or data)");
        }
    }

    // INSTALLER, REQUESTED, direct_url.json, and the RECORD placeholder `write_records` fills.
    void plan_dist_info(Wheel& cur, const InstallRequest& req) {
        const std::string& di = cur.w.dist_info;
        const std::string dist_info = cur.root_rel + "/" + di;
        add(cur, dist_info + "/INSTALLER", nullptr, "envbox\n", false, di + "/INSTALLER");
        if (req.requested)
            add(cur, dist_info + "/REQUESTED", nullptr, "", false, di + "/REQUESTED");
        if (req.direct_url)
            add(cur, dist_info + "/direct_url.json", nullptr, *req.direct_url, false,
                di + "/direct_url.json");
        dist_info_prefix.push_back(dist_info + "/");
        add(cur, dist_info + "/RECORD", nullptr, {}, false, di + "/RECORD");
        placements.back().record = true;
    }

    // `record_path`: as RECORD lists it; by default relative to the wheel's root, so
    // `../../../bin/x` for scripts.
    void add(Wheel& cur, std::string rel, const store::WheelFile* object, std::string content,
             bool executable, std::string record_path = {}) {
        cur.mine.push_back(placements.size());
        if (record_path.empty()) record_path = record_path_of(cur.root_rel, rel);
        placements.push_back({std::move(rel), object, std::move(content), executable, cur.index,
                              std::move(record_path)});
    }

    static std::string record_path_of(const std::string& root_rel, const std::string& rel) {
        if (rel.size() > root_rel.size() && rel.compare(0, root_rel.size(), root_rel) == 0 &&
            rel[root_rel.size()] == '/')
            return rel.substr(root_rel.size() + 1);
        return fs::path(rel).lexically_relative(root_rel).generic_string();
    }

    // `sub` under the environment directory `dir`, relative to the environment root.
    std::string under(const fs::path& dir, std::string_view sub) const {
        std::string base = rel_of(dir);
        while (!base.empty() && base.back() == '/')
            base.pop_back();
        return base.empty() || base == "." ? std::string(sub) : base + "/" + std::string(sub);
    }

    std::string rel_of(const fs::path& p) const {
        const std::string& root = layout_.root.native();
        const std::string& full = p.native();
        if (full.size() > root.size() && full.compare(0, root.size(), root) == 0 &&
            full[root.size()] == '/')
            return full.substr(root.size() + 1);
        return p.lexically_relative(layout_.root).generic_string();
    }
    const store::Store& store_;
    const Interpreter& in_;
    const VenvLayout& layout_;
};

// Which placements are written and which RECORDs list them, once every path claimed by
// several wheels is decided (plan_install's contract in installer.hpp).
struct Overlaps {
    std::vector<char> placed;  // 1: written into the environment
    std::vector<char> listed;  // 1: in its wheel's RECORD
    std::vector<std::string> notes;
    std::unordered_map<std::string_view, std::size_t> first;  // each path → its first claimant
};

// What a claimant installs at its path: the content's sha256 and the exec bit.
std::string content_key(const Placement& p) {
    return (p.object ? p.object->digest : to_hex(sha256(p.content))) + (p.executable ? "+x" : "");
}

[[noreturn]] void refuse_overlap(const std::string& rel, const std::string& a, const std::string& b,
                                 const std::string& why, const std::string& hint = {}) {
    throw Error(ErrorCode::conflict, "file " + rel + " is installed by two wheels " + why + ": " +
                                         a + " and " + b + hint);
}

using WonPaths =
    std::map<std::pair<std::size_t, std::size_t>, std::size_t>;  // (winner, loser wheel) → paths

// Decides one path that the placements `g` (in request order) all claim: which one is written
// and which RECORDs list it. Throws the conflicts no preference settles.
void decide_path(const Planner& planner, const std::vector<InstallRequest>& requests,
                 const std::vector<std::size_t>& g, Overlaps& out, WonPaths& won) {
    const auto& ps = planner.placements;
    const auto& label = planner.wheel_labels;
    const std::string& rel = ps[g[0]].rel;
    std::vector<std::string> keys;  // empty for a RECORD, whose content is not known yet
    for (std::size_t k = 0; k < g.size(); ++k) {
        const Placement& p = ps[g[k]];
        for (std::size_t j = 0; j < k; ++j)
            if (ps[g[j]].wheel == p.wheel)
                throw Error(ErrorCode::conflict,
                            "file " + rel + " is claimed by one wheel twice: " + label[p.wheel]);
        keys.push_back(p.record ? std::string() : content_key(p));
    }
    auto differing = [&](std::size_t k) {  // a claimant whose content differs from g[k]'s
        for (std::size_t j = 0; j < g.size(); ++j)
            if (j != k && (keys[j] != keys[k] || keys[j].empty())) return j;
        return k;
    };
    for (std::size_t k = 1; k < g.size(); ++k)
        out.placed[g[k]] = 0;  // the first places it
    if (std::all_of(keys.begin(), keys.end(),
                    [&](const auto& key) { return !key.empty() && key == keys[0]; }))
        return;
    // A wheel's own metadata is never given to another wheel.
    for (std::size_t k = 0; k < g.size(); ++k)
        if (ps[g[k]].record || rel.starts_with(planner.dist_info_prefix[ps[g[k]].wheel]))
            refuse_overlap(rel, label[ps[g[k]].wheel], label[ps[g[differing(k)]].wheel],
                           "with different content",
                           " (the path is in the first one's .dist-info)");
    std::optional<std::size_t> winner;
    for (std::size_t k = 0; k < g.size(); ++k) {
        if (!requests[ps[g[k]].wheel].preferred) continue;
        if (winner && keys[*winner] != keys[k])
            refuse_overlap(rel, label[ps[g[*winner]].wheel], label[ps[g[k]].wheel],
                           "with different content, and [install] prefer names both");
        if (!winner) winner = k;
    }
    if (!winner) {
        const std::size_t other = differing(0);
        const bool only_mode = keys[0].substr(0, 64) == keys[other].substr(0, 64);
        refuse_overlap(
            rel, label[ps[g[0]].wheel], label[ps[g[other]].wheel],
            only_mode ? "with different modes" : "with different content",
            "; to install one of them over the other, name it in the manifest's [install] prefer "
            "(prefer = [\"" +
                pep::canonicalize_name(requests[ps[g[0]].wheel].wheel->name) + "\"])");
    }
    for (std::size_t k = 0; k < g.size(); ++k) {
        out.placed[g[k]] = k == *winner;
        out.listed[g[k]] = keys[k] == keys[*winner];
        if (!out.listed[g[k]]) ++won[{ps[g[*winner]].wheel, ps[g[k]].wheel}];
    }
}

Overlaps decide_overlaps(const Planner& planner, const std::vector<InstallRequest>& requests) {
    const auto& ps = planner.placements;
    Overlaps out{std::vector<char>(ps.size(), 1), std::vector<char>(ps.size(), 1), {}, {}};
    // The claimants of each path claimed more than once, keyed by the first; such paths are
    // rare, so the map of paths is the only cost every file pays.
    out.first.reserve(ps.size());
    std::map<std::size_t, std::vector<std::size_t>> groups;
    for (std::size_t i = 0; i < ps.size(); ++i) {
        if (ps[i].bytecode) continue;  // decided by its source, below
        auto [it, fresh] = out.first.emplace(ps[i].rel, i);
        if (fresh) continue;
        auto& g = groups[it->second];
        if (g.empty()) g.push_back(it->second);
        g.push_back(i);
    }
    WonPaths won;
    for (const auto& [_, g] : groups)
        decide_path(planner, requests, g, out, won);
    // A .pyc is placed exactly where its own source is: the source that won a path brings its
    // own bytecode (or none, when it did not compile), never another wheel's.
    for (std::size_t i = 0; i < ps.size(); ++i)
        if (ps[i].bytecode) out.placed[i] = out.placed[ps[i].source];
    for (const auto& [pair, n] : won)
        out.notes.push_back(planner.wheel_labels[pair.first] + " wins " + std::to_string(n) +
                            (n == 1 ? " path" : " paths") + " over " +
                            planner.wheel_labels[pair.second] + " ([install] prefer)");
    return out;
}

}  // namespace

InstallPlan plan_install(const store::Store& store, const Interpreter& in, const VenvLayout& layout,
                         const std::vector<InstallRequest>& requests) {
    Planner planner(store, in, layout);
    for (std::size_t i = 0; i < requests.size(); ++i) {
        try {
            planner.plan(requests[i], i);
        } catch (Error& e) {
            e.add_context("planning the installation of " + requests[i].wheel->filename);
            throw;
        }
    }
    // Everything is decided from the plan, without asking the filesystem.
    Overlaps overlaps = decide_overlaps(planner, requests);
    planner.write_records(overlaps.listed);
    InstallPlan plan;
    // Directories shared by several wheels are merged; a file that is a directory in another
    // wheel is a conflict.
    const auto& ps = planner.placements;
    for (std::size_t i = 0; i < ps.size(); ++i) {
        if (!overlaps.placed[i]) continue;
        const std::string& rel = ps[i].rel;
        for (auto slash = rel.rfind('/'); slash != std::string::npos && slash > 0;
             slash = rel.rfind('/', slash - 1))
            if (!plan.dirs.insert(rel.substr(0, slash)).second)
                break;  // its parents are in already
    }
    for (const auto& d : plan.dirs)
        if (auto it = overlaps.first.find(d); it != overlaps.first.end())
            throw Error(ErrorCode::conflict, d + " is a file in " +
                                                 planner.wheel_labels[ps[it->second].wheel] +
                                                 " and a directory in another wheel");
    overlaps.first.clear();  // its keys view the paths moved below

    plan.notes = std::move(overlaps.notes);
    plan.wheel_labels = std::move(planner.wheel_labels);
    for (const auto& w : requests) {
        const fs::path root_dir = w.wheel->root_is_purelib ? layout.purelib : layout.platlib;
        plan.dist_info_dirs.push_back(
            (root_dir / w.wheel->dist_info).lexically_relative(layout.root).generic_string());
    }
    plan.files.reserve(ps.size());
    for (std::size_t i = 0; i < ps.size(); ++i) {
        if (!overlaps.placed[i]) continue;
        auto& p = planner.placements[i];
        plan.files.push_back(
            {std::move(p.rel), p.object, std::move(p.content), p.executable, p.wheel, p.bytecode});
    }
    return plan;
}

// shape: plan_install's four inputs, then apply_install's three (how to link).
InstallReport install_wheels(const store::Store& store, const Interpreter& in,
                             const VenvLayout& layout, const std::vector<InstallRequest>& requests,
                             LinkMode mode, unsigned jobs, const LinkOps& ops) {
    InstallReport r =
        apply_install(store, layout, plan_install(store, in, layout, requests), mode, jobs, ops);
    r.packages = requests.size();
    return r;
}

}  // namespace envbox::env
