#include "envbox/resolve/targets.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include "envbox/pep/name.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/parallel.hpp"

namespace envbox::resolve {
namespace {

const Pinned* pin_of(const TargetResolution& t, const std::string& name) {
    for (const auto& p : t.pins)
        if (p.name == name) return &p;
    return nullptr;
}

// Resolves the targets at positions `which`, side by side, each with `preferences`; a
// failure is thrown once every run has returned.
void resolve_some(std::vector<TargetResolution>& targets, const std::vector<std::size_t>& which,
                  const std::vector<pep::Requirement>& root, const Options& options,
                  const std::string& env, const std::string& python) {
    std::vector<std::optional<Error>> failed(which.size());
    parallel_for(which.size(), static_cast<unsigned>(which.size()), [&](std::size_t i) {
        TargetResolution& t = targets[which[i]];
        Options o = options;
        // The targets resolve side by side: the memory budget is the lock's, shared out.
        o.max_set_bytes = options.max_set_bytes / which.size();
        o.environment = t.markers;
        for (const auto& [name, package] : t.direct)
            o.direct[name] = package;
        auto pins = resolve(root, *t.source, o);
        if (pins)
            t.pins = std::move(*pins);
        else
            failed[i] = pins.error();
    });
    for (std::size_t i = 0; i < which.size(); ++i)
        if (failed[i]) {
            Error e = *failed[i];
            e.add_context("locking " + env + " for CPython " + python + " on " +
                          targets[which[i]].platform);
            throw e;
        }
}

// The highest version of `name` usable on every target of `on` (not yanked, a wheel for the
// target, its Python admitted), a pre-release only when one of them chose one.
std::optional<pep::Version> common_version(std::vector<TargetResolution>& targets,
                                           const std::vector<std::size_t>& on,
                                           const std::string& name) {
    bool prerelease = false;
    for (std::size_t t : on)
        prerelease = prerelease || pin_of(targets[t], name)->version.is_prerelease();
    std::optional<std::vector<pep::Version>> common;
    for (std::size_t t : on) {
        std::vector<pep::Version> usable;
        for (const auto& c : targets[t].source->versions(name))
            if (c.unusable.empty() && !c.yanked && (prerelease || !c.version.is_prerelease()))
                if (!common ||
                    std::find(common->begin(), common->end(), c.version) != common->end())
                    usable.push_back(c.version);
        common = std::move(usable);
    }
    std::optional<pep::Version> best;
    for (const auto& v : common.value_or(std::vector<pep::Version>{}))
        if (!best || *best < v) best = v;
    return best;
}

}  // namespace

void resolve_targets(std::vector<TargetResolution>& targets,
                     const std::vector<pep::Requirement>& root, const Options& options,
                     const std::string& env, const std::string& python) {
    std::vector<std::size_t> all;
    for (std::size_t t = 0; t < targets.size(); ++t)
        all.push_back(t);
    resolve_some(targets, all, root, options, env, python);
    if (targets.size() < 2) return;

    // name → the targets that lock it (a direct wheel is one file: never a disagreement).
    std::map<std::string, std::vector<std::size_t>> locked_on;
    for (std::size_t t = 0; t < targets.size(); ++t)
        for (const auto& p : targets[t].pins)
            if (!targets[t].direct.count(p.name)) locked_on[p.name].push_back(t);
    Options again = options;
    std::set<std::size_t> rerun;
    for (const auto& [name, on] : locked_on) {
        std::set<std::string> versions;
        for (std::size_t t : on)
            versions.insert(pin_of(targets[t], name)->version.str());
        if (versions.size() < 2) continue;
        auto v = common_version(targets, on, name);
        if (!v) continue;
        again.preferences[name] = *v;
        for (std::size_t t : on)
            if (!(pin_of(targets[t], name)->version == *v)) rerun.insert(t);
    }
    if (rerun.empty()) return;
    resolve_some(targets, std::vector<std::size_t>(rerun.begin(), rerun.end()), root, again, env,
                 python);
}

std::vector<std::string> divergence_notes(const std::vector<std::string>& diverging,
                                          std::vector<TargetResolution>& targets) {
    std::vector<std::string> notes;
    for (const auto& name : diverging) {
        std::string line = name + ":";
        std::vector<std::string> without;
        const pep::Version* newest = nullptr;
        for (std::size_t t = 0; t < targets.size(); ++t) {
            const Pinned* pin = pin_of(targets[t], name);
            if (!pin) {
                without.push_back(targets[t].platform);
                continue;
            }
            line += (line.back() == ':' ? " " : ", ") + pin->version.str() + " on " +
                    targets[t].platform;
            if (!newest || *newest < pin->version) newest = &pin->version;
        }
        std::vector<std::string> why;
        for (std::size_t t = 0; t < targets.size(); ++t) {
            const Pinned* pin = pin_of(targets[t], name);
            if (!pin || pin->version == *newest) continue;
            std::string reason = "its index has no " + newest->str();
            for (const auto& c : targets[t].source->versions(name))
                if (c.version == *newest)
                    reason = !c.unusable.empty() ? newest->str() + " " + c.unusable
                             : c.yanked          ? newest->str() + " is yanked"
                                        : "its requirements there rule out " + newest->str();
            why.push_back(targets[t].platform + ": " + reason);
        }
        if (!without.empty()) {
            std::string none;
            for (const auto& w : without)
                none += (none.empty() ? "" : ", ") + w;
            why.push_back("nothing requires it on " + none);
        }
        std::string reasons;
        for (const auto& w : why)
            reasons += (reasons.empty() ? "" : "; ") + w;
        notes.push_back(line + " (" + reasons + ")");
    }
    return notes;
}

namespace {

// The newest version of `name` that `pin` could have been: usable on the target, not yanked,
// a pre-release only when the pin is one or every pre-release is allowed.
std::optional<pep::Version> newest_offered(PackageSource& source, const std::string& name,
                                           const Pinned& pin, const Options& options) {
    const bool pre = pin.version.is_prerelease() || options.prerelease == Prerelease::allow;
    std::optional<pep::Version> best;
    for (const auto& c : source.versions(name))
        if (c.unusable.empty() && !c.yanked && (pre || !c.version.is_prerelease()) &&
            (!best || *best < c.version))
            best = c.version;
    return best;
}

// What the notes may cost: a second resolution each, for at most this many packages of one
// lock, each given at most this many steps (the world of bench/lock_bench.py takes 171).
constexpr std::size_t kWhyNotResolutions = 8;
constexpr std::size_t kWhyNotSteps = 2000;

// Why `name==newest` is not in the lock: the first lines of the solver's explanation of a
// resolution that requires it too, on one line.
std::string why_not(TargetResolution& t, const std::vector<pep::Requirement>& root,
                    const Options& options, const std::string& name, const pep::Version& newest) {
    std::vector<pep::Requirement> with = root;
    auto exact = pep::Requirement::parse(name + "==" + newest.str());
    if (!exact) return "";
    with.push_back(std::move(*exact));
    Options o = options;
    o.trace = nullptr;
    o.preferences.erase(name);
    o.max_steps = std::min<std::size_t>(o.max_steps, kWhyNotSteps);
    auto pins = resolve(with, *t.source, o);
    if (pins) return "";  // it resolves after all (the old lock's other versions held it back)
    // The first step of the explanation says it: "Because sglang==0.5.12 depends on …,
    // sglang==0.5.12 cannot be used."
    // Only a real explanation: an index that failed, the offline cache missing a page or a
    // search given up on says nothing about the version.
    std::string out, text = pins.error().message();
    const auto first = text.find("Because ");
    if (first == std::string::npos) return "";
    const auto next = text.find("Because ", first + 8);
    text = text.substr(first, next == std::string::npos ? std::string::npos : next - first);
    for (char c : text)
        if (!(std::isspace(static_cast<unsigned char>(c)) && (out.empty() || out.back() == ' ')))
            out += std::isspace(static_cast<unsigned char>(c)) ? ' ' : c;
    while (!out.empty() && out.back() == ' ')
        out.pop_back();
    constexpr std::size_t kMax = 400;
    if (out.size() > kMax) out = out.substr(0, kMax) + "…";
    return out;
}

}  // namespace

std::vector<std::string> older_than_newest(std::vector<TargetResolution>& targets,
                                           const std::vector<pep::Requirement>& root,
                                           const Options& options, const std::string& env,
                                           bool everything) {
    std::set<std::string> asked;
    for (const auto& r : root)
        if (!r.url) asked.insert(pep::canonicalize_name(r.name));
    std::vector<std::string> lines;
    std::set<std::string> said;
    std::size_t explained = 0;  // second resolutions run, at most kWhyNotResolutions
    for (auto& t : targets)
        for (const auto& pin : t.pins) {
            if ((!everything && !asked.count(pin.name)) || t.direct.count(pin.name)) continue;
            auto newest = newest_offered(*t.source, pin.name, pin, options);
            if (!newest || !(pin.version < *newest)) continue;
            std::string line =
                pin.name + " " + pin.version.str() + " locked, not " + newest->str() + ": ";
            auto kept = options.preferences.find(pin.name);
            if (kept != options.preferences.end() && kept->second == pin.version) {
                line += "kept from the lock (`envbox lock " + env + " --upgrade-package " +
                        pin.name + "` takes the newest)";
            } else {
                std::string why = explained++ < kWhyNotResolutions
                                      ? why_not(t, root, options, pin.name, *newest)
                                      : "";
                line += why.empty() ? "the requirements or another locked version hold it back "
                                      "(`envbox lock " +
                                          env + " --upgrade` resolves everything afresh)"
                                    : why;
            }
            if (targets.size() > 1) line += " (on " + t.platform + ")";
            if (said.insert(line).second) lines.push_back(std::move(line));
        }
    return lines;
}

}  // namespace envbox::resolve
