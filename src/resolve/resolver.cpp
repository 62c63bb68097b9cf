#include "envbox/resolve/resolver.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <sstream>
#include <unordered_map>

#include "envbox/index/http.hpp"
#include "envbox/pep/name.hpp"

namespace envbox::resolve {
namespace {

using PkgId = int;
constexpr PkgId kRoot = 0;

// A subset of one package's candidate versions (index i = i-th candidate, ascending).
struct VSet {
    std::vector<std::uint64_t> w;
    std::size_t n = 0;

    static VSet none(std::size_t n) {
        return VSet{std::vector<std::uint64_t>((n + 63) / 64, 0), n};
    }
    static VSet all(std::size_t n) {
        VSet s = none(n);
        for (std::size_t i = 0; i < n; ++i)
            s.set(i);
        return s;
    }
    static VSet one(std::size_t n, std::size_t i) {
        VSet s = none(n);
        s.set(i);
        return s;
    }
    void set(std::size_t i) { w[i / 64] |= std::uint64_t{1} << (i % 64); }
    bool has(std::size_t i) const { return (w[i / 64] >> (i % 64)) & 1; }
    bool empty() const {
        return std::all_of(w.begin(), w.end(), [](std::uint64_t x) { return x == 0; });
    }
    std::size_t count() const {
        std::size_t c = 0;
        for (auto x : w)
            c += static_cast<std::size_t>(__builtin_popcountll(x));
        return c;
    }
    VSet operator&(const VSet& o) const {
        VSet r = *this;
        for (std::size_t i = 0; i < w.size(); ++i)
            r.w[i] &= o.w[i];
        return r;
    }
    VSet operator|(const VSet& o) const {
        VSet r = *this;
        for (std::size_t i = 0; i < w.size(); ++i)
            r.w[i] |= o.w[i];
        return r;
    }
    VSet minus(const VSet& o) const {
        VSet r = *this;
        for (std::size_t i = 0; i < w.size(); ++i)
            r.w[i] &= ~o.w[i];
        return r;
    }
    bool subset_of(const VSet& o) const {
        for (std::size_t i = 0; i < w.size(); ++i)
            if (w[i] & ~o.w[i]) return false;
        return true;
    }
    bool operator==(const VSet& o) const { return w == o.w; }
};

// A term: "the package is selected with a version in `set`" (positive), or "it is not selected
// with a version in `set`" (negative: absent, or another version).
struct Term {
    PkgId pkg = 0;
    bool positive = true;
    VSet set;

    Term negate() const { return {pkg, !positive, set}; }
    bool is_any() const { return !positive && set.empty(); }
};

Term intersect(const Term& a, const Term& b) {
    if (a.positive && b.positive) return {a.pkg, true, a.set & b.set};
    if (a.positive) return {a.pkg, true, a.set.minus(b.set)};
    if (b.positive) return {a.pkg, true, b.set.minus(a.set)};
    return {a.pkg, false, a.set | b.set};
}
Term unite(const Term& a, const Term& b) {
    return intersect(a.negate(), b.negate()).negate();
}

// Every solution allowed by `a` is allowed by `b`.
bool subset(const Term& a, const Term& b) {
    if (a.positive && b.positive) return a.set.subset_of(b.set);
    if (a.positive) return (a.set & b.set).empty();
    if (b.positive) return false;
    return b.set.subset_of(a.set);
}
bool disjoint(const Term& a, const Term& b) {
    if (a.positive && b.positive) return (a.set & b.set).empty();
    if (a.positive) return a.set.subset_of(b.set);
    if (b.positive) return b.set.subset_of(a.set);
    return false;
}

enum class Kind { root, no_versions, unavailable, dependency, derived };

struct Incompat {
    std::vector<Term> terms;
    Kind kind = Kind::derived;
    int cause1 = -1, cause2 = -1;
    std::string text;  // dependency: the requirement as written; unavailable: the reason
    int dep = -1;      // dependency: the package depended on (its term is dropped when no
                       // version matches, as "depends on nothing possible" = "cannot be used")
};

struct Assignment {
    Term term;
    int level = 0;
    int cause = -1;  // incompatibility id; -1 for a decision
    bool decision() const { return cause < 0; }
};

struct Package {
    std::string name;                         // "a", "a[x]", or "" for the root
    std::string base;                         // "a"
    std::string extra;                        // "x"
    std::vector<Candidate> candidates;        // ascending
    bool explicit_prerelease = false;         // some requirement names a pre-release
    std::optional<std::size_t> pinned_exact;  // `==V` from the root: V may be yanked
};

class Solver {
  public:
    Solver(PackageSource& source, const Options& options) : source_(source), options_(options) {
        Package root;
        root.candidates.push_back(Candidate{pep::Version::parse("0").value(), false, {}});
        packages_.push_back(std::move(root));
        by_name_[""] = kRoot;
        incompats_of_.emplace_back();
        acc_.resize(1);
        decided_.resize(1);
    }

    Result<std::vector<Pinned>> solve(const std::vector<pep::Requirement>& root) {
        root_requirements_ = root;
        // The root must be selected.
        add_incompat({{Term{kRoot, false, VSet::one(1, 0)}}, Kind::root, -1, -1, ""});
        PkgId next = kRoot;
        try {
            for (;;) {
                propagate(next);
                auto chosen = choose();
                if (!chosen) break;
                next = *chosen;
            }
        } catch (const Error& e) {
            return e;
        }
        std::map<std::string, Pinned> out;
        for (std::size_t p = 1; p < packages_.size(); ++p) {
            auto d = decided_[p];
            if (!d) continue;
            const Package& pkg = packages_[p];
            auto& pin = out[pkg.base];
            pin.name = pkg.base;
            pin.version = pkg.candidates[*d].version;
            if (!pkg.extra.empty()) pin.extras.insert(pkg.extra);
        }
        std::vector<Pinned> result;
        for (auto& [_, p] : out)
            result.push_back(std::move(p));
        return result;
    }

  private:
    PackageSource& source_;
    const Options& options_;
    std::vector<pep::Requirement> root_requirements_;
    std::deque<Package> packages_;  // a deque: references stay valid as packages are added
    std::unordered_map<std::string, PkgId> by_name_;
    std::vector<Incompat> incompats_;
    std::vector<std::vector<int>> incompats_of_;  // per package
    std::vector<Assignment> assignments_;
    std::vector<std::optional<Term>> acc_;  // per package: intersection of its assignments
    std::vector<std::optional<std::size_t>> decided_;
    int level_ = 0;
    bool debug_ = std::getenv("ENVBOX_RESOLVE_DEBUG") != nullptr;

    // ---- packages ---------------------------------------------------------------------------

    PkgId package(const std::string& base, const std::string& extra) {
        std::string name = extra.empty() ? base : base + "[" + extra + "]";
        if (auto it = by_name_.find(name); it != by_name_.end()) return it->second;
        Package p;
        p.name = name;
        p.base = base;
        p.extra = extra;
        if (extra.empty()) {
            p.candidates = source_.versions(base);
            std::sort(p.candidates.begin(), p.candidates.end(),
                      [](const Candidate& a, const Candidate& b) { return a.version < b.version; });
        } else {
            p.candidates = packages_[package(base, "")].candidates;
        }
        PkgId id = static_cast<PkgId>(packages_.size());
        packages_.push_back(std::move(p));
        by_name_[name] = id;
        incompats_of_.emplace_back();
        acc_.resize(packages_.size());
        decided_.resize(packages_.size());
        // Versions that cannot be installed on the target, grouped by reason.
        std::map<std::string, VSet> unusable;
        const auto& cands = packages_[id].candidates;
        for (std::size_t i = 0; i < cands.size(); ++i)
            if (!cands[i].unusable.empty()) {
                auto [it, _] = unusable.try_emplace(cands[i].unusable, VSet::none(cands.size()));
                it->second.set(i);
            }
        for (auto& [reason, set] : unusable)
            add_incompat({{Term{id, true, set}}, Kind::unavailable, -1, -1, reason});
        return id;
    }

    VSet versions_matching(PkgId id, const pep::SpecifierSet& spec) {
        const auto& cands = packages_[id].candidates;
        VSet s = VSet::none(cands.size());
        for (std::size_t i = 0; i < cands.size(); ++i)
            if (spec.contains(cands[i].version, true)) s.set(i);
        return s;
    }

    // ---- incompatibilities and the partial solution --------------------------------------

    int add_incompat(Incompat inc) {
        int id = static_cast<int>(incompats_.size());
        for (const auto& t : inc.terms)
            incompats_of_[static_cast<std::size_t>(t.pkg)].push_back(id);
        incompats_.push_back(std::move(inc));
        return id;
    }

    int add_dependency_incompat(PkgId from, std::size_t v, PkgId dep, const VSet& set,
                                std::string text) {
        Incompat inc;
        inc.kind = Kind::dependency;
        inc.text = std::move(text);
        inc.dep = dep;
        inc.terms.push_back(Term{
            from, true, VSet::one(packages_[static_cast<std::size_t>(from)].candidates.size(), v)});
        if (!set.empty()) inc.terms.push_back(Term{dep, false, set});
        return add_incompat(std::move(inc));
    }

    Term accumulated(PkgId p) const {
        const auto& a = acc_[static_cast<std::size_t>(p)];
        return a ? *a
                 : Term{p, false,
                        VSet::none(packages_[static_cast<std::size_t>(p)].candidates.size())};
    }

    void assign(Term t, int cause) {
        auto& a = acc_[static_cast<std::size_t>(t.pkg)];
        a = a ? intersect(*a, t) : t;
        if (cause < 0) {
            ++level_;
            for (std::size_t i = 0; i < t.set.n; ++i)
                if (t.set.has(i)) decided_[static_cast<std::size_t>(t.pkg)] = i;
        }
        assignments_.push_back({std::move(t), level_, cause});
    }

    void backtrack(int level) {
        while (!assignments_.empty() && assignments_.back().level > level)
            assignments_.pop_back();
        level_ = level;
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

    enum class Relation { satisfied, almost, contradicted, inconclusive };

    Relation relation(const Incompat& inc, const Term** unsatisfied) const {
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

    void propagate(PkgId start) {
        std::vector<PkgId> changed{start};
        while (!changed.empty()) {
            PkgId p = changed.back();
            changed.pop_back();
            const auto& ids = incompats_of_[static_cast<std::size_t>(p)];
            int conflict = -1;
            for (std::size_t k = ids.size(); k-- > 0;) {
                int id = incompats_of_[static_cast<std::size_t>(p)][k];
                const Term* unsat = nullptr;
                Relation rel = relation(incompats_[static_cast<std::size_t>(id)], &unsat);
                if (rel == Relation::satisfied) {
                    conflict = id;
                    break;
                }
                if (rel == Relation::almost) {
                    Term derived = unsat->negate();
                    PkgId q = derived.pkg;
                    assign(std::move(derived), id);
                    if (std::find(changed.begin(), changed.end(), q) == changed.end())
                        changed.push_back(q);
                }
            }
            if (conflict >= 0) {
                auto [pkg, root_cause] = resolve_conflict(conflict);
                changed.assign(1, pkg);
                const Incompat& rc = incompats_[static_cast<std::size_t>(root_cause)];
                for (const auto& t : rc.terms)
                    if (t.pkg == pkg) assign(t.negate(), root_cause);
            }
        }
    }

    bool terminal(const Incompat& inc) const {
        return inc.terms.empty() ||
               (inc.terms.size() == 1 && inc.terms[0].pkg == kRoot && inc.terms[0].positive);
    }

    std::pair<PkgId, int> resolve_conflict(int incompat_id) {
        bool changed = false;
        for (;;) {
            const Incompat inc = incompats_[static_cast<std::size_t>(incompat_id)];
            if (debug_) {
                std::string t;
                for (const auto& x : inc.terms)
                    t += " {" + describe_term(x) + "}";
                std::fprintf(stderr, "conflict %d:%s (level %d, %zu assignments)\n", incompat_id,
                             t.c_str(), level_, assignments_.size());
            }
            if (terminal(inc)) throw Error(ErrorCode::invalid_input, explain(incompat_id));

            // The satisfier: the earliest assignment by which the incompatibility is satisfied.
            std::map<PkgId, std::optional<Term>> acc;
            std::map<PkgId, int> satisfied_at;
            for (const auto& t : inc.terms)
                acc[t.pkg] = std::nullopt;
            auto term_of = [&](PkgId p) -> const Term& {
                for (const auto& t : inc.terms)
                    if (t.pkg == p) return t;
                throw Error(ErrorCode::generic, "resolver: term missing");
            };
            for (std::size_t i = 0;
                 i < assignments_.size() && satisfied_at.size() < inc.terms.size(); ++i) {
                const auto& a = assignments_[i];
                auto it = acc.find(a.term.pkg);
                if (it == acc.end() || satisfied_at.count(a.term.pkg)) continue;
                it->second = it->second ? intersect(*it->second, a.term) : a.term;
                if (subset(*it->second, term_of(a.term.pkg)))
                    satisfied_at[a.term.pkg] = static_cast<int>(i);
            }
            // A term never satisfied by an assignment is satisfied by the empty solution
            // (a negative term on an unassigned package): it does not constrain the search.
            int satisfier = -1;
            PkgId sat_pkg = -1;
            for (const auto& [p, i] : satisfied_at)
                if (i > satisfier) satisfier = i, sat_pkg = p;
            if (satisfier < 0) throw Error(ErrorCode::invalid_input, explain(incompat_id));
            const Assignment sat = assignments_[static_cast<std::size_t>(satisfier)];

            // The previous satisfier: with the satisfier in place, the earliest assignment by
            // which the incompatibility is satisfied.
            int previous = -1;
            for (const auto& [p, i] : satisfied_at)
                if (p != sat_pkg) previous = std::max(previous, i);
            {
                std::optional<Term> a;
                const Term& t = term_of(sat_pkg);
                if (!subset(sat.term, t)) {
                    for (int i = 0; i < satisfier; ++i) {
                        const auto& as = assignments_[static_cast<std::size_t>(i)];
                        if (as.term.pkg != sat_pkg) continue;
                        a = a ? intersect(*a, as.term) : as.term;
                        if (subset(intersect(*a, sat.term), t)) {
                            previous = std::max(previous, i);
                            break;
                        }
                    }
                }
            }
            int previous_level =
                previous < 0 ? 1
                             : std::max(1, assignments_[static_cast<std::size_t>(previous)].level);
            if (previous < 0) previous_level = 1;

            if (sat.decision() || previous_level != sat.level) {
                if (changed)
                    incompat_id = add_incompat(incompats_[static_cast<std::size_t>(incompat_id)]);
                backtrack(std::min(previous_level, level_));
                return {sat_pkg, incompat_id};
            }
            // Resolution with the satisfier's cause.
            const Incompat& cause = incompats_[static_cast<std::size_t>(sat.cause)];
            std::map<PkgId, Term> merged;
            for (const auto& t : inc.terms)
                if (t.pkg != sat_pkg) merged.emplace(t.pkg, t);
            for (const auto& t : cause.terms) {
                if (t.pkg == sat_pkg) continue;
                auto [it, fresh] = merged.emplace(t.pkg, t);
                if (!fresh) it->second = intersect(it->second, t);
            }
            std::optional<Term> own;
            for (const auto& t : cause.terms)
                if (t.pkg == sat_pkg) own = unite(term_of(sat_pkg), t);
            Incompat prior;
            prior.kind = Kind::derived;
            prior.cause1 = incompat_id;
            prior.cause2 = sat.cause;
            for (auto& [p, t] : merged)
                if (!t.is_any()) prior.terms.push_back(t);
            if (own && !own->is_any()) prior.terms.push_back(*own);
            incompats_.push_back(std::move(prior));  // registered with packages once it is kept
            incompat_id = static_cast<int>(incompats_.size()) - 1;
            // Not yet in incompats_of_: add_incompat re-adds a copy when it is kept above.
            changed = true;
            incompats_[static_cast<std::size_t>(incompat_id)].kind = Kind::derived;
        }
    }

    // ---- decisions ---------------------------------------------------------------------------

    std::optional<PkgId> choose() {
        // Undecided packages that must be selected; the most constrained first.
        PkgId best = -1;
        std::size_t best_count = 0;
        std::vector<std::string> wanted;
        for (std::size_t p = 0; p < packages_.size(); ++p) {
            const auto& a = acc_[p];
            if (!a || !a->positive || decided_[p]) continue;
            std::size_t c = a->set.count();
            if (best < 0 || c < best_count) best = static_cast<PkgId>(p), best_count = c;
        }
        if (best < 0) return std::nullopt;
        const Package& pkg = packages_[static_cast<std::size_t>(best)];
        const VSet& allowed = acc_[static_cast<std::size_t>(best)]->set;
        auto pick = pick_version(best, allowed);
        if (!pick) {
            add_incompat({{Term{best, true, allowed}}, Kind::no_versions, -1, -1, ""});
            return best;
        }
        std::size_t v = *pick;
        // Dependencies of best==v.
        std::vector<int> added;
        if (!pkg.extra.empty()) {  // a[x]==v depends on a==v
            PkgId base = package(pkg.base, "");
            added.push_back(add_dependency_incompat(
                best, v, base,
                VSet::one(packages_[static_cast<std::size_t>(base)].candidates.size(), v),
                pkg.base + "==" + pkg.candidates[v].version.str()));
        }
        std::vector<pep::Requirement> reqs;
        if (best == kRoot) {
            reqs = root_requirements_;
        } else {
            Dependencies deps = source_.dependencies(pkg.base, pkg.candidates[v].version);
            if (!deps.unusable.empty()) {
                prefetch_below(best, v);
                return rule_out(best, v, deps.unusable);
            }
            reqs = std::move(deps.requires_dist);
        }
        // Ask for every dependency's versions at once, so a networked source fetches them in
        // parallel while the solver works through them one by one.
        std::vector<std::string> names;
        for (const auto& r : reqs)
            names.push_back(pep::canonicalize_name(r.name));
        source_.prefetch_versions(names);
        for (const auto& r : reqs)
            add_requirement(best, v, r, added);
        // Decide, unless one of the new incompatibilities already rules the version out:
        // then propagation from this package derives that instead.
        for (int id : added) {
            bool satisfied = true;
            for (const auto& t : incompats_[static_cast<std::size_t>(id)].terms)
                if (t.pkg != best && !subset(accumulated(t.pkg), t)) satisfied = false;
            if (satisfied) return best;
        }
        assign(Term{best, true, VSet::one(pkg.candidates.size(), v)}, -1);
        return best;
    }

    // The versions the solver will try next once `v` is ruled out: where pages carry no
    // Requires-Python, a run of newer releases is often excluded one metadata file at a time,
    // so the next few are fetched side by side rather than one after another.
    void prefetch_below(PkgId id, std::size_t v) {
        const Package& pkg = packages_[static_cast<std::size_t>(id)];
        const auto& allowed = acc_[static_cast<std::size_t>(id)];
        std::vector<std::pair<std::string, pep::Version>> next;
        for (std::size_t i = v; i-- > 0 && next.size() < 4;)
            if ((!allowed || allowed->set.has(i) == allowed->positive) &&
                pkg.candidates[i].unusable.empty() && !pkg.candidates[i].yanked)
                next.emplace_back(pkg.base, pkg.candidates[i].version);
        source_.prefetch(next);
    }

    // A version found unusable only once its metadata was read: an incompatibility like those
    // `package` adds for unusable candidates, so propagation derives "not v" (or a conflict) and
    // the explanation gives the reason. Every package of the same base (its extras) shares it.
    PkgId rule_out(PkgId id, std::size_t v, const std::string& reason) {
        const std::string base = packages_[static_cast<std::size_t>(id)].base;
        const pep::Version version = packages_[static_cast<std::size_t>(id)].candidates[v].version;
        for (std::size_t p = 1; p < packages_.size(); ++p) {
            Package& pkg = packages_[p];
            if (pkg.base != base || v >= pkg.candidates.size() ||
                !(pkg.candidates[v].version == version))
                continue;
            if (!pkg.candidates[v].unusable.empty()) continue;
            pkg.candidates[v].unusable = reason;
            add_incompat({{Term{static_cast<PkgId>(p), true, VSet::one(pkg.candidates.size(), v)}},
                          Kind::unavailable,
                          -1,
                          -1,
                          reason});
        }
        return id;
    }

    void add_requirement(PkgId from, std::size_t v, const pep::Requirement& r,
                         std::vector<int>& added) {
        const Package& pkg = packages_[static_cast<std::size_t>(from)];
        if (r.marker) {
            pep::MarkerEnvironment env = options_.environment;
            env.set("extra", pkg.extra);
            auto ok = r.marker->evaluate(env, pep::MarkerContext::metadata);
            if (!ok || !*ok) return;
        }
        if (r.url)
            throw Error(ErrorCode::invalid_input,
                        (from == kRoot ? std::string("a requirement")
                                       : pkg.name + " " + pkg.candidates[v].version.str()) +
                            " asks for " + r.name + " from a URL (" + index::redact_url(*r.url) +
                            "); envbox locks packages from indexes");
        std::string base = pep::canonicalize_name(r.name);
        std::vector<std::string> extras{""};
        for (const auto& e : r.extras)
            extras.push_back(pep::canonicalize_name(e));
        for (const auto& extra : extras) {
            PkgId d = package(base, extra);
            Package& dp = packages_[static_cast<std::size_t>(d)];
            // Only the user's own requirements opt a package into pre-releases (uv's rule): a
            // dependency's `==2.0b1` does not.
            if (from == kRoot)
                for (const auto& s : r.specifier.specifiers())
                    if (s.version() && s.version()->is_prerelease()) dp.explicit_prerelease = true;
            VSet set = versions_matching(d, r.specifier);
            if (from == kRoot)
                for (const auto& s : r.specifier.specifiers())
                    if (s.op() == pep::Operator::equal && r.specifier.specifiers().size() == 1)
                        for (std::size_t i = 0; i < dp.candidates.size(); ++i)
                            if (set.has(i)) dp.pinned_exact = i;
            std::string text =
                r.name + (extra.empty() ? "" : "[" + extra + "]") + r.specifier.str();
            added.push_back(add_dependency_incompat(from, v, d, set, std::move(text)));
        }
    }

    std::optional<std::size_t> pick_version(PkgId id, const VSet& allowed) {
        const Package& p = packages_[static_cast<std::size_t>(id)];
        const auto& cands = p.candidates;
        auto usable = [&](std::size_t i) {
            if (!allowed.has(i) || !cands[i].unusable.empty()) return false;
            if (cands[i].yanked && p.pinned_exact != i) return false;
            return true;
        };
        if (auto pref = options_.preferences.find(p.base); pref != options_.preferences.end())
            for (std::size_t i = cands.size(); i-- > 0;)
                if (usable(i) && cands[i].version == pref->second) return i;
        // Pre-releases (uv's "if necessary or explicit"): when asked for everywhere, when a
        // requirement on this package names a pre-release, or when the package has nothing but
        // pre-releases.
        bool only_prereleases = std::all_of(cands.begin(), cands.end(), [](const Candidate& c) {
            return c.version.is_prerelease();
        });
        bool prereleases = options_.allow_prereleases || p.explicit_prerelease || only_prereleases;
        for (std::size_t i = cands.size(); i-- > 0;)
            if (usable(i) && (prereleases || !cands[i].version.is_prerelease())) return i;
        return std::nullopt;
    }

    // ---- explanations ------------------------------------------------------------------------

    std::string describe_set(PkgId id, const VSet& s) const {
        const Package& p = packages_[static_cast<std::size_t>(id)];
        const auto& c = p.candidates;
        std::size_t n = s.count();
        if (c.empty()) return p.name;
        if (n == c.size()) return p.name;
        if (n == 1)
            for (std::size_t i = 0; i < c.size(); ++i)
                if (s.has(i)) return p.name + "==" + c[i].version.str();
        std::size_t lo = c.size(), hi = 0;
        for (std::size_t i = 0; i < c.size(); ++i)
            if (s.has(i)) lo = std::min(lo, i), hi = i;
        bool contiguous = n == hi - lo + 1;
        if (contiguous && n > 0) {
            if (lo == 0) return p.name + "<=" + c[hi].version.str();
            if (hi == c.size() - 1) return p.name + ">=" + c[lo].version.str();
            return p.name + ">=" + c[lo].version.str() + ",<=" + c[hi].version.str();
        }
        std::string out = p.name + " (one of ";
        std::size_t shown = 0;
        for (std::size_t i = 0; i < c.size() && shown < 6; ++i)
            if (s.has(i)) out += (shown++ ? ", " : "") + c[i].version.str();
        if (n > shown) out += ", …";
        return out + ")";
    }

    std::string describe_term(const Term& t) const {
        if (t.pkg == kRoot) return "the requirements";
        return t.positive ? describe_set(t.pkg, t.set) : "not " + describe_set(t.pkg, t.set);
    }

    std::string describe(const Incompat& inc) const {
        switch (inc.kind) {
            case Kind::root:
                return "the requirements must be satisfied";
            case Kind::no_versions: {
                const Term& t = inc.terms[0];
                const Package& p = packages_[static_cast<std::size_t>(t.pkg)];
                if (p.candidates.empty()) return p.name + " was not found on any index";
                bool only_pre = true;
                for (std::size_t i = 0; i < p.candidates.size(); ++i)
                    if (t.set.has(i) && !p.candidates[i].version.is_prerelease()) only_pre = false;
                if (only_pre && !t.set.empty())
                    return "only pre-releases of " + describe_set(t.pkg, t.set) +
                           " exist, and pre-releases are used only when asked for (e.g. " + p.name +
                           ">=" + p.candidates.back().version.str() + ")";
                return "no usable version of " + describe_set(t.pkg, t.set) + " exists";
            }
            case Kind::unavailable:
                return describe_set(inc.terms[0].pkg, inc.terms[0].set) + " " + inc.text;
            case Kind::dependency: {
                const Term& from = inc.terms[0];
                const Package& tp = packages_[static_cast<std::size_t>(inc.dep)];
                std::string target = inc.text;
                if (tp.candidates.empty())
                    target += " (not found on any index)";
                else if (inc.terms.size() == 1)
                    target += " (no version of " + tp.name + " matches)";
                if (from.pkg == kRoot) return "you require " + target;
                return describe_set(from.pkg, from.set) + " depends on " + target;
            }
            case Kind::derived:
                break;
        }
        std::vector<const Term*> pos, neg;
        for (const auto& t : inc.terms)
            (t.positive ? pos : neg).push_back(&t);
        bool root = std::any_of(inc.terms.begin(), inc.terms.end(),
                                [](const Term& t) { return t.pkg == kRoot; });
        if (inc.terms.empty() || (root && inc.terms.size() == 1))
            return "the requirements are unsatisfiable";
        if (root && pos.size() == 1 && neg.size() == 1)
            return "you require " + describe_set(neg[0]->pkg, neg[0]->set);
        if (root && pos.size() == 2) {
            const Term* other = pos[0]->pkg == kRoot ? pos[1] : pos[0];
            return "the requirements rule out " + describe_set(other->pkg, other->set);
        }
        if (pos.size() == 1 && neg.empty())
            return describe_set(pos[0]->pkg, pos[0]->set) + " cannot be used";
        if (pos.size() == 1 && neg.size() == 1)
            return describe_set(pos[0]->pkg, pos[0]->set) + " depends on " +
                   describe_set(neg[0]->pkg, neg[0]->set);
        if (neg.empty()) {
            std::string out;
            for (std::size_t i = 0; i < pos.size(); ++i)
                out += (i == 0                ? ""
                        : i + 1 == pos.size() ? " and "
                                              : ", ") +
                       describe_set(pos[i]->pkg, pos[i]->set);
            return out + " are incompatible";
        }
        std::string out;
        for (std::size_t i = 0; i < inc.terms.size(); ++i)
            out += (i ? " and " : "") + describe_term(inc.terms[i]);
        return out + " are incompatible";
    }

    std::string explain(int terminal_id) const {
        // Post-order over the derivation graph; a derived incompatibility used twice gets a
        // number so later lines can refer to it.
        std::map<int, int> uses;
        std::function<void(int)> count = [&](int id) {
            if (uses[id]++ > 0) return;
            const Incompat& inc = incompats_[static_cast<std::size_t>(id)];
            if (inc.kind == Kind::derived) {
                count(inc.cause1);
                count(inc.cause2);
            }
        };
        count(terminal_id);
        std::map<int, int> numbered;
        std::vector<std::string> lines;
        std::function<std::string(int)> visit = [&](int id) -> std::string {
            const Incompat& inc = incompats_[static_cast<std::size_t>(id)];
            if (inc.kind != Kind::derived) return describe(inc);
            if (auto it = numbered.find(id); it != numbered.end())
                return describe(inc) + " (" + std::to_string(it->second) + ")";
            std::string a = visit(inc.cause1);
            std::string b = visit(inc.cause2);
            std::string conclusion =
                id == terminal_id ? "the requirements are unsatisfiable" : describe(inc);
            std::string line = "Because " + a + " and " + b + ", " + conclusion + ".";
            if (uses[id] > 1) {
                int n = static_cast<int>(numbered.size()) + 1;
                numbered[id] = n;
                line += " (" + std::to_string(n) + ")";
            }
            lines.push_back(line);
            return conclusion;
        };
        std::string last = visit(terminal_id);
        if (lines.empty())
            lines.push_back("Because " + last + ", the requirements are unsatisfiable.");
        std::string out = "no solution:";
        for (const auto& l : lines)
            out += "\n  " + l;
        return out;
    }
};

}  // namespace

Result<std::vector<Pinned>> resolve(const std::vector<pep::Requirement>& root,
                                    PackageSource& source, const Options& options) {
    Solver solver(source, options);
    return solver.solve(root);
}

}  // namespace envbox::resolve
