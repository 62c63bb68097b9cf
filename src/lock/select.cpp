#include <map>

#include "envbox/lock/pylock.hpp"
#include "envbox/pep/name.hpp"

namespace envbox::lock {
namespace {

Error select_error(std::string msg) {
    return Error(ErrorCode::invalid_input, std::move(msg));
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
    if (lock.requires_python && !lock.requires_python->contains(python_version, true))
        return select_error("python_full_version '" + full->second +
                            "' in provided environment does not satisfy the Python version "
                            "requirement '" +
                            lock.requires_python->str() + "'");

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
            return select_error("python_full_version '" + full->second +
                                "' in provided environment does not satisfy the Python version "
                                "requirement '" +
                                p.requires_python->str() + "' for " + where);
        if (auto it = chosen.find(p.name); it != chosen.end())
            return select_error("Multiple packages with the name '" + p.name +
                                "' are selected at packages[" + std::to_string(k) +
                                "] and packages[" + std::to_string(it->second) + "]");
        chosen.emplace(p.name, k);

        Selection s{&p, k, Selection::Kind::wheel, nullptr};
        if (p.vcs) {
            s.kind = Selection::Kind::vcs;
        } else if (p.directory) {
            s.kind = Selection::Kind::directory;
        } else if (p.archive) {
            s.kind = Selection::Kind::archive;
            s.file = &*p.archive;
        } else {
            // Best-ranked compatible wheel, from the file names alone; ties go to the higher
            // build tag.
            const WheelRef* best = nullptr;
            std::size_t best_rank = 0;
            if (target.tags)
                for (const auto& w : p.wheels) {
                    auto rank = target.tags->best_rank(w.parsed.tags);
                    if (!rank) continue;
                    if (!best || *rank < best_rank ||
                        (*rank == best_rank && w.parsed.build > best->parsed.build)) {
                        best = &w;
                        best_rank = *rank;
                    }
                }
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
        out.push_back(s);
    }
    return out;
}

}  // namespace envbox::lock
