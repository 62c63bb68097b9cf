#include "resolve/solver.hpp"

#include <algorithm>
#include <map>

#include "resolve/report.hpp"

namespace envbox::resolve {

Solver::Solver(PackageSource& source, const Options& options) : source_(source), options_(options) {
    Package root;
    root.list = std::make_shared<std::vector<Candidate>>(
        std::vector<Candidate>{Candidate{pep::Version::parse("0").value(), false, {}}});
    packages_.push_back(std::move(root));
    by_name_[""] = kRoot;
    incompats_of_.emplace_back();
    acc_.resize(1);
    decided_.resize(1);
}

Result<std::vector<Pinned>> Solver::solve(const std::vector<pep::Requirement>& root) {
    root_requirements_ = root;
    // The root must be selected.
    add_incompat(given({Term{kRoot, false, VersionSet::one(1, 0)}}, Kind::root));
    PackageId next = kRoot;
    try {
        for (;;) {
            propagate(next);
            // After a cut (forget_assumptions), what the kept assignments imply is derived
            // again from every package, not only the one chosen.
            while (repropagate_) {
                repropagate_ = false;
                for (std::size_t p = 0; p < packages_.size() && !repropagate_; ++p)
                    if (acc_[p]) propagate(static_cast<PackageId>(p));
            }
            auto chosen = most_constrained() ? (spend(1, nullptr), choose()) : std::nullopt;
            if (!chosen) break;
            next = *chosen;
        }
    } catch (const Error& e) {
        return e;
    }
    std::map<std::string, Pinned> out;
    const std::vector<bool> required = required_packages();
    for (std::size_t p = 1; p < packages_.size(); ++p) {
        auto d = decided_[p];
        if (!d || !required[p]) continue;
        const Package& pkg = packages_[p];
        auto& pin = out[pkg.base];
        pin.name = pkg.base;
        pin.version = pkg.candidates()[*d].version;
        if (!pkg.extra.empty()) pin.extras.insert(pkg.extra);
    }
    // The edges: each dependency incompatibility of a decided version (`a[x]` → `a` is not one).
    for (const Incompat& inc : incompats_) {
        if (inc.kind != Kind::dependency || inc.terms.empty() || inc.dep < 0 ||
            inc.terms.front().pkg == kRoot)
            continue;
        const auto from = static_cast<std::size_t>(inc.terms.front().pkg);
        const auto d = decided_[from];
        if (!d || !inc.terms.front().set.has(*d)) continue;
        const std::string& dep = packages_[static_cast<std::size_t>(inc.dep)].base;
        if (dep != packages_[from].base && out.count(dep))
            out[packages_[from].base].dependencies.insert(dep);
    }
    std::vector<Pinned> result;
    for (auto& [_, p] : out)
        result.push_back(std::move(p));
    return result;
}

std::vector<bool> Solver::required_packages() const {
    std::vector<bool> reached(packages_.size(), false);
    reached[kRoot] = true;
    for (bool grew = true; grew;) {
        grew = false;
        for (const Incompat& inc : incompats_) {
            if (inc.kind != Kind::dependency || inc.terms.empty() || inc.dep < 0) continue;
            const auto from = static_cast<std::size_t>(inc.terms.front().pkg);
            const auto dep = static_cast<std::size_t>(inc.dep);
            const auto d = decided_[from];
            if (reached[dep] || !reached[from] || !d || !inc.terms.front().set.has(*d) ||
                !decided_[dep])
                continue;
            reached[dep] = grew = true;
        }
    }
    return reached;
}

// ---- incompatibilities and the partial solution ----------------------------------------------

void Solver::spend(std::size_t steps, const Incompat* added) {
    steps_ += steps;
    if (added)
        for (const auto& t : added->terms)
            set_bytes_ += t.set.w.size() * sizeof(std::uint64_t);
    if (steps_ > options_.max_steps)
        throw Error(ErrorCode::invalid_input,
                    "resolution gave up after " + std::to_string(options_.max_steps) +
                        " steps (decisions and conflicts) without finding versions that fit "
                        "together or proving that none do; pin the versions of the packages "
                        "it backtracks over (ENVBOX_RESOLVE_DEBUG=1 traces them) and lock "
                        "again, or set ENVBOX_RESOLVE_MAX_STEPS to search further");
    if (set_bytes_ > options_.max_set_bytes)
        throw Error(ErrorCode::invalid_input,
                    "resolution gave up: its incompatibilities hold more than " +
                        (options_.max_set_bytes % (std::size_t{1} << 30) == 0
                             ? std::to_string(options_.max_set_bytes >> 30) + " GiB"
                         : options_.max_set_bytes >= (1u << 20)
                             ? std::to_string(options_.max_set_bytes >> 20) + " MiB"
                             : std::to_string(options_.max_set_bytes) + " bytes") +
                        " of version sets (" + std::to_string(packages_.size()) +
                        " packages and extras, " + std::to_string(incompats_.size()) +
                        " incompatibilities); an index with this many versions and "
                        "dependencies is refused");
}

int Solver::add_incompat(Incompat inc) {
    spend(0, &inc);
    int id = static_cast<int>(incompats_.size());
    for (const auto& t : inc.terms)
        incompats_of_[static_cast<std::size_t>(t.pkg)].push_back(id);
    for (const auto& base : inc.assumes)
        assumers_[base].push_back(id);
    incompats_.push_back(std::move(inc));
    return id;
}

int Solver::add_dependency_incompat(PackageId from, std::size_t v, PackageId dep,
                                    const VersionSet& set, std::string text) {
    Incompat inc;
    inc.kind = Kind::dependency;
    inc.text = std::move(text);
    inc.dep = dep;
    inc.terms.push_back(Term{from, true, VersionSet::one(package_at(from).candidates().size(), v)});
    if (!set.empty()) inc.terms.push_back(Term{dep, false, set});
    return add_incompat(std::move(inc));
}

Term Solver::accumulated(PackageId p) const {
    const auto& a = acc_[static_cast<std::size_t>(p)];
    return a ? *a : Term{p, false, VersionSet::none(package_at(p).candidates().size())};
}

void Solver::assign(Term t, int cause) {
    auto& a = acc_[static_cast<std::size_t>(t.pkg)];
    a = a ? intersect(*a, t) : t;
    if (cause < 0) {
        ++level_;
        for (std::size_t i = 0; i < t.set.n; ++i)
            if (t.set.has(i)) decided_[static_cast<std::size_t>(t.pkg)] = i;
    }
    assignments_.push_back({std::move(t), level_, cause});
}

void Solver::backtrack(int level) {
    while (!assignments_.empty() && assignments_.back().level > level)
        assignments_.pop_back();
    level_ = level;
    recompute();
}

void Solver::truncate(std::size_t keep) {
    repropagate_ = true;
    assignments_.resize(keep);
    level_ = keep ? assignments_.back().level : 0;
    recompute();
}

void Solver::recompute() {
    for (auto& a : acc_)
        a.reset();
    for (auto& d : decided_)
        d.reset();
    for (const auto& a : assignments_) {
        auto& acc = acc_[static_cast<std::size_t>(a.term.pkg)];
        acc = acc ? intersect(*acc, a.term) : a.term;
        if (a.decision())
            for (std::size_t i = 0; i < a.term.set.n; ++i)
                if (a.term.set.has(i)) decided_[static_cast<std::size_t>(a.term.pkg)] = i;
    }
}

// ---- unit propagation ------------------------------------------------------------------------

Solver::Relation Solver::relation(const Incompat& inc, const Term** unsatisfied) const {
    Relation r = Relation::satisfied;
    for (const auto& t : inc.terms) {
        Term acc = accumulated(t.pkg);
        if (subset(acc, t)) continue;
        if (disjoint(acc, t)) return Relation::contradicted;
        if (r == Relation::almost) return Relation::inconclusive;
        r = Relation::almost;
        *unsatisfied = &t;
    }
    return r;
}

void Solver::propagate(PackageId start) {
    std::vector<PackageId> changed{start};
    while (!changed.empty()) {
        PackageId p = changed.back();
        changed.pop_back();
        const auto& ids = incompats_of_[static_cast<std::size_t>(p)];
        int conflict = -1;
        for (std::size_t k = ids.size(); k-- > 0;) {
            int id = incompats_of_[static_cast<std::size_t>(p)][k];
            if (incompat_at(id).set_aside) continue;
            const Term* unsat = nullptr;
            Relation rel = relation(incompat_at(id), &unsat);
            if (rel == Relation::satisfied) {
                conflict = id;
                break;
            }
            if (rel == Relation::almost) {
                Term derived = unsat->negate();
                PackageId q = derived.pkg;
                assign(std::move(derived), id);
                if (std::find(changed.begin(), changed.end(), q) == changed.end())
                    changed.push_back(q);
            }
        }
        if (conflict >= 0) {
            auto [culprit, root_cause] = resolve_conflict(conflict);
            changed.assign(1, culprit);
            const Incompat& rc = incompat_at(root_cause);
            for (const auto& t : rc.terms)
                if (t.pkg == culprit) assign(t.negate(), root_cause);
        }
    }
}

// ---- conflict resolution ---------------------------------------------------------------------

bool Solver::terminal(const Incompat& inc) const {
    return inc.terms.empty() ||
           (inc.terms.size() == 1 && inc.terms[0].pkg == kRoot && inc.terms[0].positive);
}

namespace {

const Term& term_of(const Incompat& inc, PackageId p) {
    for (const auto& t : inc.terms)
        if (t.pkg == p) return t;
    throw Error(ErrorCode::generic, "resolver: term missing");
}

}  // namespace

Solver::Satisfier Solver::find_satisfier(const Incompat& inc, int incompat_id) const {
    // The satisfier: the earliest assignment by which the incompatibility is satisfied.
    std::map<PackageId, std::optional<Term>> acc;
    std::map<PackageId, int> satisfied_at;
    for (const auto& t : inc.terms)
        acc[t.pkg] = std::nullopt;
    for (std::size_t i = 0; i < assignments_.size() && satisfied_at.size() < inc.terms.size();
         ++i) {
        const auto& a = assignments_[i];
        auto it = acc.find(a.term.pkg);
        if (it == acc.end() || satisfied_at.count(a.term.pkg)) continue;
        it->second = it->second ? intersect(*it->second, a.term) : a.term;
        if (subset(*it->second, term_of(inc, a.term.pkg)))
            satisfied_at[a.term.pkg] = static_cast<int>(i);
    }
    // A term never satisfied by an assignment is satisfied by the empty solution
    // (a negative term on an unassigned package): it does not constrain the search.
    Satisfier s;
    for (const auto& [p, i] : satisfied_at)
        if (i > s.index) s.index = i, s.pkg = p;
    if (s.index < 0)
        throw Error(ErrorCode::invalid_input,
                    explain(packages_, incompats_, incompat_id, options_.prerelease));
    const Assignment& sat = assignments_[static_cast<std::size_t>(s.index)];

    // The previous satisfier: with the satisfier in place, the earliest assignment by
    // which the incompatibility is satisfied.
    int previous = -1;
    for (const auto& [p, i] : satisfied_at)
        if (p != s.pkg) previous = std::max(previous, i);
    const Term& t = term_of(inc, s.pkg);
    if (!subset(sat.term, t)) {
        std::optional<Term> a;
        for (int i = 0; i < s.index; ++i) {
            const auto& as = assignments_[static_cast<std::size_t>(i)];
            if (as.term.pkg != s.pkg) continue;
            a = a ? intersect(*a, as.term) : as.term;
            if (subset(intersect(*a, sat.term), t)) {
                previous = std::max(previous, i);
                break;
            }
        }
    }
    s.previous_level =
        previous < 0 ? 1 : std::max(1, assignments_[static_cast<std::size_t>(previous)].level);
    return s;
}

Incompat Solver::derive(const Incompat& inc, int incompat_id, const Assignment& sat,
                        PackageId on) const {
    // Resolution with the satisfier's cause.
    const Incompat& cause = incompat_at(sat.cause);
    std::map<PackageId, Term> merged;
    for (const auto& t : inc.terms)
        if (t.pkg != on) merged.emplace(t.pkg, t);
    for (const auto& t : cause.terms) {
        if (t.pkg == on) continue;
        auto [it, fresh] = merged.emplace(t.pkg, t);
        if (!fresh) it->second = intersect(it->second, t);
    }
    std::optional<Term> own;
    for (const auto& t : cause.terms)
        if (t.pkg == on) own = unite(term_of(inc, on), t);
    Incompat prior;
    prior.kind = Kind::derived;
    prior.cause1 = incompat_id;
    prior.cause2 = sat.cause;
    prior.assumes = inc.assumes;
    for (const auto& base : cause.assumes)
        if (std::find(prior.assumes.begin(), prior.assumes.end(), base) == prior.assumes.end())
            prior.assumes.push_back(base);
    for (auto& [p, t] : merged)
        if (!t.is_any()) prior.terms.push_back(t);
    if (own && !own->is_any()) prior.terms.push_back(*own);
    return prior;
}

std::pair<PackageId, int> Solver::resolve_conflict(int incompat_id) {
    bool changed = false;
    for (;;) {
        const Incompat inc = incompat_at(incompat_id);
        trace_conflict(inc, incompat_id);
        if (terminal(inc))
            throw Error(ErrorCode::invalid_input,
                        explain(packages_, incompats_, incompat_id, options_.prerelease));
        const Satisfier s = find_satisfier(inc, incompat_id);
        const Assignment sat = assignments_[static_cast<std::size_t>(s.index)];
        if (sat.decision() || s.previous_level != sat.level) {
            if (changed) incompat_id = add_incompat(incompat_at(incompat_id));
            backtrack(std::min(s.previous_level, level_));
            return {s.pkg, incompat_id};
        }
        // Registered with its packages (incompats_of_) only when it is kept, above.
        incompats_.push_back(derive(inc, incompat_id, sat, s.pkg));
        spend(1, &incompats_.back());
        incompat_id = static_cast<int>(incompats_.size()) - 1;
        changed = true;
    }
}

void Solver::trace_conflict(const Incompat& inc, int incompat_id) const {
    if (!options_.trace) return;
    std::string t;
    for (const auto& x : inc.terms)
        t += " {" + describe_term(packages_, x) + "}";
    options_.trace("conflict " + std::to_string(incompat_id) + ":" + t + " (level " +
                   std::to_string(level_) + ", " + std::to_string(assignments_.size()) +
                   " assignments)");
}

std::optional<Prerelease> prerelease_named(std::string_view text) {
    for (auto p : {Prerelease::if_necessary_or_explicit, Prerelease::allow, Prerelease::disallow,
                   Prerelease::explicit_, Prerelease::if_necessary})
        if (prerelease_name(p) == text) return p;
    return std::nullopt;
}

std::string_view prerelease_name(Prerelease policy) {
    switch (policy) {
        case Prerelease::allow:
            return "allow";
        case Prerelease::disallow:
            return "disallow";
        case Prerelease::explicit_:
            return "explicit";
        case Prerelease::if_necessary:
            return "if-necessary";
        case Prerelease::if_necessary_or_explicit:
            break;
    }
    return "if-necessary-or-explicit";
}

Result<std::vector<Pinned>> resolve(const std::vector<pep::Requirement>& root,
                                    PackageSource& source, const Options& options) {
    Solver solver(source, options);
    return solver.solve(root);
}

}  // namespace envbox::resolve
