#include <map>
#include <optional>

#include "envbox/lock/pylock.hpp"
#include "envbox/pep/name.hpp"

namespace envbox::lock {
namespace {

Error select_error(std::string msg) {
    return Error(ErrorCode::invalid_input, std::move(msg));
}

// The error of a `requires-python` that the target's Python (as the environment spells it) does
// not satisfy; `suffix` names the package, or is empty for the lock's own requirement.
Error python_mismatch(const std::string& full_version, const pep::SpecifierSet& requirement,
                      const std::string& suffix) {
    return select_error("python_full_version '" + full_version +
                        "' in provided environment does not satisfy the Python version "
                        "requirement '" +
                        requirement.str() + "'" + suffix);
}

// The lock-level checks: one of the lock's `environments` markers holds for the target, and its
// `requires-python` admits the target's Python. Nullopt when the lock applies.
std::optional<Error> refuse_lock_for_target(const Pylock& lock, const SelectTarget& target,
                                            const std::string& full_version,
                                            const pep::Candidate& python) {
    if (lock.environments) {
        bool any = false;
        for (const auto& m : *lock.environments) {
            auto r = m.evaluate(target.environment, pep::MarkerContext::lock_file);
            if (!r) return r.error();
            any = any || *r;
        }
        if (!any)
            return select_error(
                "Provided environment does not satisfy any of the environments specified in the "
                "lock file");
    }
    if (lock.requires_python && !lock.requires_python->contains(python, true))
        return python_mismatch(full_version, *lock.requires_python, "");
    return std::nullopt;
}

// The environment package markers are evaluated in: the target's, with the caller's extras (by
// default none) and dependency groups (by default the lock's `default-groups`).
pep::MarkerEnvironment marker_environment(const Pylock& lock, const SelectTarget& target) {
    pep::MarkerEnvironment env = target.environment;
    env.extras = target.extras.value_or(std::set<std::string>{});
    if (target.dependency_groups) {
        env.dependency_groups = target.dependency_groups;
    } else {
        env.dependency_groups =
            std::set<std::string>(lock.default_groups.begin(), lock.default_groups.end());
    }
    // Names given by the caller compare normalised, as the markers' literals do.
    for (auto* set : {&*env.extras, &*env.dependency_groups}) {
        std::set<std::string> normalised;
        for (const auto& n : *set)
            normalised.insert(pep::canonicalize_name(n));
        *set = std::move(normalised);
    }
    return env;
}

// The best-ranked compatible wheel of `p`, from the file names alone; ties go to the higher
// build tag. Null when none is compatible (or there are no tags).
const WheelRef* best_wheel(const Package& p, const pep::TargetTags* tags) {
    const WheelRef* best = nullptr;
    std::size_t best_rank = 0;
    if (tags)
        for (const auto& w : p.wheels) {
            auto rank = tags->best_rank(w.parsed.tags);
            if (!rank) continue;
            if (!best || *rank < best_rank ||
                (*rank == best_rank && w.parsed.build > best->parsed.build)) {
                best = &w;
                best_rank = *rank;
            }
        }
    return best;
}

// What to install the selected package `p` (at packages[k]) from: its VCS source, directory or
// archive, else the best wheel, else (or when preferred) its sdist.
Result<Selection> choose_artifact(const Package& p, std::size_t k, const SelectTarget& target,
                                  const std::string& where) {
    Selection s{&p, k, Selection::Kind::wheel, nullptr};
    if (p.vcs) {
        s.kind = Selection::Kind::vcs;
    } else if (p.directory) {
        s.kind = Selection::Kind::directory;
    } else if (p.archive) {
        s.kind = Selection::Kind::archive;
        s.file = &*p.archive;
    } else {
        const WheelRef* best = best_wheel(p, target.tags);
        const bool want_sdist = p.sdist && target.prefer_sdist && target.prefer_sdist(p);
        if (best && !want_sdist) {
            s.file = best;
        } else if (p.sdist) {
            s.kind = Selection::Kind::sdist;
            s.file = &*p.sdist;
        } else {
            return select_error("No wheel found matching the provided tags for " + where +
                                ", and no sdist available as a fallback");
        }
    }
    return s;
}

}  // namespace

Result<std::vector<Selection>> select(const Pylock& lock, const SelectTarget& target) {
    const auto& values = target.environment.values;
    auto full = values.find("python_full_version");
    if (full == values.end())
        return select_error("the target environment does not define python_full_version");
    std::string python = full->second;
    if (!python.empty() && python.back() == '+') python += "local";  // unreleased CPython build
    auto python_version = pep::Candidate::from_text(python);
    if (auto refused = refuse_lock_for_target(lock, target, full->second, python_version))
        return *refused;

    const pep::MarkerEnvironment env = marker_environment(lock, target);
    std::vector<Selection> out;
    std::map<std::string, std::size_t> chosen;  // name → index in packages
    for (std::size_t k = 0; k < lock.packages.size(); ++k) {
        const Package& p = lock.packages[k];
        const std::string where = "package '" + p.name + "' at packages[" + std::to_string(k) + "]";
        if (p.marker) {
            auto r = p.marker->evaluate(env, pep::MarkerContext::lock_file);
            if (!r) return Error(r.error()).add_context("selecting " + where);
            if (!*r) continue;
        }
        if (p.requires_python && !p.requires_python->contains(python_version, true))
            return python_mismatch(full->second, *p.requires_python, " for " + where);
        if (auto it = chosen.find(p.name); it != chosen.end())
            return select_error("Multiple packages with the name '" + p.name +
                                "' are selected at packages[" + std::to_string(k) +
                                "] and packages[" + std::to_string(it->second) + "]");
        chosen.emplace(p.name, k);
        auto s = choose_artifact(p, k, target, where);
        if (!s) return s.error();
        out.push_back(*s);
    }
    return out;
}

Result<Pylock> for_target(const Pylock& lock, const pep::MarkerEnvironment& environment) {
    SelectTarget target;
    target.environment = environment;
    const pep::MarkerEnvironment env = marker_environment(lock, target);
    Pylock out = lock;
    out.environments.reset();
    out.packages.clear();
    std::vector<std::optional<std::size_t>> renumbered(lock.packages.size());
    for (std::size_t k = 0; k < lock.packages.size(); ++k) {
        const Package& p = lock.packages[k];
        if (p.marker) {
            auto r = p.marker->evaluate(env, pep::MarkerContext::lock_file);
            if (!r) return r.error();
            if (!*r) continue;
        }
        renumbered[k] = out.packages.size();
        out.packages.push_back(p);
    }
    for (auto& p : out.packages) {
        if (!p.dependencies) continue;
        std::vector<DependencyRef> kept;
        for (auto d : *p.dependencies) {
            std::vector<std::size_t> positions;
            for (std::size_t old : d.packages)
                if (renumbered[old]) positions.push_back(*renumbered[old]);
            if (positions.empty()) continue;
            d.packages = std::move(positions);
            kept.push_back(std::move(d));
        }
        p.dependencies = std::move(kept);
    }
    return out;
}

}  // namespace envbox::lock
