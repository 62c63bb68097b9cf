#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "envbox/index/http.hpp"
#include "envbox/pep/name.hpp"
#include "resolve/solver.hpp"

// Decisions (uv's `pubgrub/priority.rs` and `candidate_selector.rs`): which package is decided
// next, which of its versions, and the incompatibilities its dependencies add.

namespace envbox::resolve {
namespace {

// PEP 592: an exact pin (`==V` without `.*`, or `===V`) may select a yanked version, and only
// when every usable version it matches is yanked (as pip reads it): those versions of `set`.
std::optional<VersionSet> yanked_pin(const Package& p, const pep::SpecifierSet& spec,
                                     const VersionSet& set) {
    const bool exact = std::any_of(
        spec.specifiers().begin(), spec.specifiers().end(), [](const pep::Specifier& s) {
            return (s.op() == pep::Operator::equal && !s.is_wildcard()) ||
                   s.op() == pep::Operator::arbitrary;
        });
    if (!exact) return std::nullopt;
    VersionSet yanked = VersionSet::none(p.candidates().size());
    for (std::size_t i = 0; i < p.candidates().size(); ++i) {
        const Candidate& c = p.candidates()[i];
        if (!set.has(i) || !c.unusable.empty()) continue;
        if (!c.yanked) return std::nullopt;
        yanked.set(i);
    }
    return yanked;
}

}  // namespace

PackageId Solver::package(const std::string& base, const std::string& extra) {
    std::string name = extra.empty() ? base : base + "[" + extra + "]";
    if (auto it = by_name_.find(name); it != by_name_.end()) return it->second;
    Package p;
    p.name = name;
    p.base = base;
    p.extra = extra;
    if (!extra.empty()) {
        const Package& of = package_at(package(base, ""));
        p.list = of.list;
        p.direct = of.direct;
        p.origin = of.origin;
    } else if (auto d = options_.direct.find(base); d != options_.direct.end()) {
        // A direct reference: its wheel's version is the only candidate; no index is asked.
        p.direct = &d->second;
        p.list = std::make_shared<std::vector<Candidate>>(
            std::vector<Candidate>{Candidate{d->second.version, false, {}}});
    } else {
        p.list = std::make_shared<std::vector<Candidate>>(source_.versions(base));
        p.origin = source_.origin(base);
        std::sort(p.list->begin(), p.list->end(),
                  [](const Candidate& a, const Candidate& b) { return a.version < b.version; });
    }
    PackageId id = static_cast<PackageId>(packages_.size());
    packages_.push_back(std::move(p));
    by_name_[name] = id;
    incompats_of_.emplace_back();
    acc_.resize(packages_.size());
    decided_.resize(packages_.size());
    // Versions that cannot be installed on the target, grouped by reason. Each group is a set
    // of every candidate's bits, and a page can give each of its versions a reason of its own
    // (a `data-requires-python` each): past kMaxReasons groups the rest share one.
    constexpr std::size_t kMaxReasons = 64;
    std::map<std::string, VersionSet> unusable;
    std::optional<VersionSet> others;
    const auto& cands = package_at(id).candidates();
    for (std::size_t i = 0; i < cands.size(); ++i) {
        if (cands[i].unusable.empty()) continue;
        auto it = unusable.find(cands[i].unusable);
        if (it == unusable.end() && unusable.size() < kMaxReasons)
            it = unusable.try_emplace(cands[i].unusable, VersionSet::none(cands.size())).first;
        if (it != unusable.end()) {
            it->second.set(i);
        } else {
            if (!others) others = VersionSet::none(cands.size());
            others->set(i);
        }
    }
    for (auto& [reason, set] : unusable)
        add_incompat(given({Term{id, true, set}}, Kind::unavailable, reason));
    if (others)
        add_incompat(given({Term{id, true, *others}}, Kind::unavailable,
                           "cannot be installed on the target, each for a reason of its own "
                           "(past " +
                               std::to_string(kMaxReasons) + " reasons they are not listed)"));
    return id;
}

VersionSet Solver::versions_matching(PackageId id, const pep::SpecifierSet& spec) const {
    return VersionSet::matching(
        package_at(id).candidates(), spec,
        [](const Candidate& c) -> const pep::Version& { return c.version; });
}

std::optional<PackageId> Solver::most_constrained() const {
    // Undecided packages that must be selected; the most constrained first.
    PackageId best = -1;
    std::size_t best_count = 0;
    for (std::size_t p = 0; p < packages_.size(); ++p) {
        const auto& a = acc_[p];
        if (!a || !a->positive || decided_[p]) continue;
        std::size_t c = a->set.count();
        if (best < 0 || c < best_count) best = static_cast<PackageId>(p), best_count = c;
    }
    if (best < 0) return std::nullopt;
    return best;
}

std::optional<PackageId> Solver::choose() {
    auto chosen = most_constrained();
    if (!chosen) return std::nullopt;
    const PackageId best = *chosen;
    const Package& pkg = package_at(best);
    const VersionSet allowed = acc_[static_cast<std::size_t>(best)]->set;
    auto pick = pick_version(best, allowed);
    if (!pick) {
        Incompat none = given({Term{best, true, allowed}}, Kind::no_versions);
        if (held_back_by_policy(pkg, allowed)) none.assumes.push_back(pkg.base);
        add_incompat(std::move(none));
        return best;
    }
    std::size_t v = *pick;
    // Dependencies of best==v.
    std::vector<int> added;
    if (!pkg.extra.empty()) {  // a[x]==v depends on a==v
        PackageId base = package(pkg.base, "");
        added.push_back(add_dependency_incompat(
            best, v, base, VersionSet::one(package_at(base).candidates().size(), v),
            pkg.base + "==" + pkg.candidates()[v].version.str()));
    }
    auto reqs = requirements_of(best, v);
    if (!reqs) return best;
    // Ask for every dependency's versions at once, so a networked source fetches them in
    // parallel while the solver works through them one by one.
    std::vector<std::string> names;
    for (const auto& r : *reqs)
        if (!options_.direct.count(pep::canonicalize_name(r.name)))
            names.push_back(pep::canonicalize_name(r.name));
    source_.prefetch_versions(names);
    for (const auto& r : *reqs)
        add_requirement(best, v, r, added);
    // Decide, unless one of the new incompatibilities already rules the version out:
    // then propagation from this package derives that instead.
    for (int id : added) {
        bool satisfied = true;
        for (const auto& t : incompat_at(id).terms)
            if (t.pkg != best && !subset(accumulated(t.pkg), t)) satisfied = false;
        if (satisfied) return best;
    }
    assign(Term{best, true, VersionSet::one(pkg.candidates().size(), v)}, -1);
    return best;
}

std::vector<pep::Requirement> Solver::overridden(std::vector<pep::Requirement> reqs) const {
    if (options_.overrides.empty() && options_.constraints.empty()) return reqs;
    std::vector<pep::Requirement> out;
    std::set<std::string> replaced;  // each package's overrides once per list
    for (auto& r : reqs) {
        const std::string name = pep::canonicalize_name(r.name);
        if (auto o = options_.overrides.find(name); o != options_.overrides.end()) {
            if (replaced.insert(name).second)
                out.insert(out.end(), o->second.begin(), o->second.end());
            continue;
        }
        auto c = options_.constraints.find(name);
        if (c != options_.constraints.end() && !r.url) {
            std::string spec = r.specifier.str();
            for (const auto& k : c->second) {
                if (k.marker) {
                    auto holds =
                        k.marker->evaluate(options_.environment, pep::MarkerContext::metadata);
                    if (!holds || !*holds) continue;
                }
                spec += (spec.empty() ? "" : ",") + k.specifier.str();
            }
            if (auto narrowed = pep::SpecifierSet::parse(spec)) r.specifier = std::move(*narrowed);
        }
        out.push_back(std::move(r));
    }
    return out;
}

std::optional<std::vector<pep::Requirement>> Solver::requirements_of(PackageId id, std::size_t v) {
    if (id == kRoot) return overridden(root_requirements_);
    const Package& pkg = package_at(id);
    Dependencies deps = pkg.direct ? pkg.direct->dependencies
                                   : source_.dependencies(pkg.base, pkg.candidates()[v].version);
    if (!deps.unusable.empty()) {
        prefetch_below(id, v);
        rule_out(id, v, deps.unusable);
        return std::nullopt;
    }
    return overridden(std::move(deps.requires_dist));
}

// The versions the solver will try next once `v` is ruled out: where pages carry no
// Requires-Python, a run of newer releases is often excluded one metadata file at a time,
// so the next few are fetched side by side rather than one after another.
void Solver::prefetch_below(PackageId id, std::size_t v) {
    const Package& pkg = package_at(id);
    const auto& allowed = acc_[static_cast<std::size_t>(id)];
    std::vector<std::pair<std::string, pep::Version>> next;
    for (std::size_t i = v; i-- > 0 && next.size() < 4;)
        if ((!allowed || allowed->set.has(i) == allowed->positive) &&
            pkg.candidates()[i].unusable.empty() && !pkg.candidates()[i].yanked)
            next.emplace_back(pkg.base, pkg.candidates()[i].version);
    source_.prefetch(next);
}

// A version found unusable only once its metadata was read: an incompatibility like those
// `package` adds for unusable candidates, so propagation derives "not v" (or a conflict) and
// the explanation gives the reason. Every package of the same base (its extras) shares it.
PackageId Solver::rule_out(PackageId id, std::size_t v, const std::string& reason) {
    Package& of = package_at(id);
    Candidate& c = (*of.list)[v];  // the list every package of this base shares
    if (!c.unusable.empty()) return id;
    c.unusable = reason;
    // One release fewer: its pre-releases may now be all there is (the policies that read it).
    if (!c.version.is_prerelease() && (options_.prerelease == Prerelease::if_necessary ||
                                       options_.prerelease == Prerelease::if_necessary_or_explicit))
        forget_assumptions(of.base);
    for (std::size_t p = 1; p < packages_.size(); ++p) {
        const Package& pkg = packages_[p];
        if (pkg.list != of.list) continue;
        add_incompat(given(
            {Term{static_cast<PackageId>(p), true, VersionSet::one(pkg.candidates().size(), v)}},
            Kind::unavailable, reason));
    }
    return id;
}

void Solver::add_requirement(PackageId from, std::size_t v, const pep::Requirement& r,
                             std::vector<int>& added) {
    const Package& pkg = package_at(from);
    if (r.marker) {
        pep::MarkerEnvironment env = options_.environment;
        env.set("extra", pkg.extra);
        auto ok = r.marker->evaluate(env, pep::MarkerContext::metadata);
        if (!ok || !*ok) return;
    }
    std::string base = pep::canonicalize_name(r.name);
    // A URL requirement is the user's direct reference, or a dependency's naming the same one;
    // any other URL is refused (an index may not be replaced by a dependency's choice).
    if (r.url) {
        auto d = options_.direct.find(base);
        if (d == options_.direct.end() || d->second.url != *r.url)
            throw Error(ErrorCode::invalid_input,
                        (from == kRoot ? std::string("a requirement")
                                       : pkg.name + " " + pkg.candidates()[v].version.str()) +
                            " asks for " + r.name + " from a URL (" + index::redact_url(*r.url) +
                            ")" +
                            (d == options_.direct.end()
                                 ? "; envbox locks packages from indexes and from the "
                                   "manifest's own direct references"
                                 : ", but the manifest's direct reference for it is " +
                                       index::redact_url(d->second.url)));
    }
    std::vector<std::string> extras{""};
    for (const auto& e : r.extras)
        extras.push_back(pep::canonicalize_name(e));
    // A specifier that names a pre-release opts its package into pre-releases wherever it
    // comes from, the user's requirements or a dependency's metadata (SGLang's
    // `cuda-tile==1.6.0rc5`), as pip reads PEP 440 and uv does since 0.12.
    const bool names_prerelease = std::any_of(
        r.specifier.specifiers().begin(), r.specifier.specifiers().end(),
        [](const pep::Specifier& s) { return s.version() && s.version()->is_prerelease(); });
    if (names_prerelease) {
        Package& bp = package_at(package(base, ""));
        if (from == kRoot) {
            bp.explicit_prerelease = true;
        } else {
            const std::pair<PackageId, std::size_t> by{from, v};
            if (std::find(bp.prerelease_named_by.begin(), bp.prerelease_named_by.end(), by) ==
                bp.prerelease_named_by.end())
                bp.prerelease_named_by.push_back(by);
            forget_assumptions(base);
        }
    }
    for (const auto& extra : extras) {
        PackageId d = package(base, extra);
        Package& dp = package_at(d);
        VersionSet set = versions_matching(d, r.specifier);
        if (from == kRoot)  // the first exact pin of the user's gives it (a bound beside keeps it)
            if (auto yanked = yanked_pin(dp, r.specifier, set))
                dp.yanked_pinned = std::move(yanked);
        std::string text = r.name + (extra.empty() ? "" : "[" + extra + "]") +
                           (r.url ? " @ " + index::redact_url(*r.url) : r.specifier.str());
        added.push_back(add_dependency_incompat(from, v, d, set, std::move(text)));
    }
}

bool Solver::prereleases_allowed(const Package& p) const {
    // Only pre-releases among the versions that can be installed (a yanked one counts, as pip
    // counts it; one without a wheel for the target or for another Python does not).
    const bool only = std::all_of(
        p.candidates().begin(), p.candidates().end(),
        [](const Candidate& c) { return !c.unusable.empty() || c.version.is_prerelease(); });
    // Named by the user, or by a version decided now (not one the solver tried and left), on
    // the package or any of its extras.
    const Package& b = p.extra.empty() ? p : package_at(by_name_.at(p.base));
    const bool named = b.explicit_prerelease ||
                       std::any_of(b.prerelease_named_by.begin(), b.prerelease_named_by.end(),
                                   [&](const auto& by) { return decided_[by.first] == by.second; });
    switch (options_.prerelease) {
        case Prerelease::allow:
            return true;
        case Prerelease::disallow:
            return false;
        case Prerelease::explicit_:
            return named;
        case Prerelease::if_necessary:
            return only;
        case Prerelease::if_necessary_or_explicit:
            break;
    }
    return named || only;
}

bool Solver::held_back_by_policy(const Package& p, const VersionSet& allowed) const {
    if (options_.prerelease == Prerelease::allow || options_.prerelease == Prerelease::disallow ||
        prereleases_allowed(p))
        return false;
    const auto& cands = p.candidates();
    for (std::size_t i = 0; i < cands.size(); ++i)
        if (allowed.has(i) && cands[i].unusable.empty() && cands[i].version.is_prerelease())
            return true;
    return false;
}

void Solver::forget_assumptions(const std::string& base) {
    auto them = assumers_.find(base);
    if (them == assumers_.end()) return;
    bool any = false;
    for (int id : them->second)
        if (!incompats_[static_cast<std::size_t>(id)].set_aside)
            incompats_[static_cast<std::size_t>(id)].set_aside = any = true;
    assumers_.erase(them);
    if (!any) return;
    // What they derived goes too: the partial solution is cut back to before the first
    // assignment one of them caused (later assignments may rest on it); propagation derives
    // again what still holds.
    for (std::size_t i = 0; i < assignments_.size(); ++i)
        if (const int cause = assignments_[i].cause; cause >= 0 && incompat_at(cause).set_aside) {
            truncate(i);
            return;
        }
}

std::optional<std::size_t> Solver::pick_version(PackageId id, const VersionSet& allowed) const {
    const Package& p = package_at(id);
    const auto& cands = p.candidates();
    auto usable = [&](std::size_t i) {
        if (!allowed.has(i) || !cands[i].unusable.empty()) return false;
        if (cands[i].yanked && !(p.yanked_pinned && p.yanked_pinned->has(i))) return false;
        return true;
    };
    // A locked version is kept only where the pre-release policy would choose it now.
    const bool prereleases = prereleases_allowed(p);
    if (auto pref = options_.preferences.find(p.base); pref != options_.preferences.end())
        for (std::size_t i = cands.size(); i-- > 0;)
            if (usable(i) && cands[i].version == pref->second &&
                (prereleases || !cands[i].version.is_prerelease()))
                return i;
    for (std::size_t i = cands.size(); i-- > 0;)
        if (usable(i) && (prereleases || !cands[i].version.is_prerelease())) return i;
    return std::nullopt;
}

}  // namespace envbox::resolve
