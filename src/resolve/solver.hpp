#pragma once
// The PubGrub solver's state, private to the resolver. solver.cpp holds the loop (unit
// propagation, conflict resolution, backtracking), decisions.cpp which package and version come
// next and what choosing it adds, report.cpp the explanation of a failure.

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "envbox/resolve/range.hpp"
#include "envbox/resolve/resolver.hpp"

namespace envbox::resolve {

inline constexpr PackageId kRoot = 0;

enum class Kind { root, no_versions, unavailable, dependency, derived };

struct Incompat {
    std::vector<Term> terms;
    Kind kind = Kind::derived;
    int cause1 = -1, cause2 = -1;
    std::string text;  // dependency: the requirement as written; unavailable: the reason
    int dep = -1;      // dependency: the package depended on (its term is dropped when no
                       // version matches, as "depends on nothing possible" = "cannot be used")
    // The packages whose pre-releases this holds only while nothing names one: a no_versions
    // the pre-release policy caused, and whatever is derived from it. Set aside (no longer
    // propagated) once a requirement names one, or a release is ruled out (forget_assumptions).
    std::vector<std::string> assumes;
    bool set_aside = false;
};

/// An incompatibility given, not derived (root, no_versions, unavailable).
inline Incompat given(std::vector<Term> terms, Kind kind, std::string text = {}) {
    Incompat inc;
    inc.terms = std::move(terms);
    inc.kind = kind;
    inc.text = std::move(text);
    return inc;
}

struct Assignment {
    Term term;
    int level = 0;
    int cause = -1;  // incompatibility id; -1 for a decision
    bool decision() const { return cause < 0; }
};

struct Package {
    std::string name;   // "a", "a[x]", or "" for the root
    std::string base;   // "a"
    std::string extra;  // "x"
    // Ascending; one list for a package and all its extras (`a[x]` has `a`'s versions), so a
    // requirement's extras cost no copy of them.
    std::shared_ptr<std::vector<Candidate>> list;
    // Kept on the package without extras, for all of them (`a[x]==V` is `a==V`):
    bool explicit_prerelease = false;  // a root requirement names a pre-release
    // The versions (package, candidate) whose requirement on this package names a pre-release:
    // it may have one while any of them is decided, as pip's merged specifier would allow.
    std::vector<std::pair<PackageId, std::size_t>> prerelease_named_by;
    // An exact pin from the root (`==V` without `.*`, or `===V`) whose every usable match is
    // yanked: those may be chosen (PEP 592), and no other yanked version.
    std::optional<VersionSet> yanked_pinned;
    const DirectPackage* direct = nullptr;  // fixed by `name @ URL`: its only candidate
    Origin origin;                          // PackageSource::origin, for messages

    const std::vector<Candidate>& candidates() const { return *list; }
};

class Solver {
  public:
    Solver(PackageSource& source, const Options& options);
    Result<std::vector<Pinned>> solve(const std::vector<pep::Requirement>& root);

  private:
    PackageSource& source_;
    const Options& options_;
    std::vector<pep::Requirement> root_requirements_;
    std::deque<Package> packages_;  // a deque: references stay valid as packages are added
    std::unordered_map<std::string, PackageId> by_name_;
    std::vector<Incompat> incompats_;
    std::vector<std::vector<int>> incompats_of_;  // per package
    // The incompatibilities that assume a package gets no pre-release, by its base name.
    std::unordered_map<std::string, std::vector<int>> assumers_;
    bool repropagate_ = false;  // forget_assumptions cut the partial solution: propagate again
    std::vector<Assignment> assignments_;
    std::vector<std::optional<Term>> acc_;  // per package: intersection of its assignments
    std::vector<std::optional<std::size_t>> decided_;
    int level_ = 0;
    // The budget (Options::max_steps, max_set_bytes): decisions and derivations taken, and
    // the bytes of version sets the incompatibilities hold.
    std::size_t steps_ = 0;
    std::size_t set_bytes_ = 0;
    void spend(std::size_t steps, const Incompat* added);

    Package& package_at(PackageId id) { return packages_[static_cast<std::size_t>(id)]; }
    const Package& package_at(PackageId id) const {
        return packages_[static_cast<std::size_t>(id)];
    }
    const Incompat& incompat_at(int id) const { return incompats_[static_cast<std::size_t>(id)]; }

    // ---- solver.cpp: incompatibilities, the partial solution, propagation ----------------
    /// The decided packages the root reaches through the dependencies of decided versions (a
    /// package decided before a cut of the partial solution may be required by nothing).
    std::vector<bool> required_packages() const;
    int add_incompat(Incompat inc);
    int add_dependency_incompat(PackageId from, std::size_t v, PackageId dep, const VersionSet& set,
                                std::string text);
    Term accumulated(PackageId p) const;
    void assign(Term t, int cause);
    void backtrack(int level);
    /// Keeps the first `keep` assignments (back to the middle of a decision level).
    void truncate(std::size_t keep);
    /// acc_ and decided_ from the assignments.
    void recompute();
    enum class Relation { satisfied, almost, contradicted, inconclusive };
    Relation relation(const Incompat& inc, const Term** unsatisfied) const;
    void propagate(PackageId start);
    bool terminal(const Incompat& inc) const;
    /// The earliest assignment that satisfies `inc` (its package), and the previous
    /// satisfier's decision level; throws the explanation when nothing assigned satisfies it.
    struct Satisfier {
        int index = -1;
        PackageId pkg = -1;
        int previous_level = 1;
    };
    Satisfier find_satisfier(const Incompat& inc, int incompat_id) const;
    /// The incompatibility derived from `inc` and the cause of its satisfier (`sat`, on `on`).
    Incompat derive(const Incompat& inc, int incompat_id, const Assignment& sat,
                    PackageId on) const;
    std::pair<PackageId, int> resolve_conflict(int incompat_id);
    void trace_conflict(const Incompat& inc, int incompat_id) const;

    // ---- decisions.cpp: packages, versions and the dependencies a decision adds ------------
    PackageId package(const std::string& base, const std::string& extra);
    VersionSet versions_matching(PackageId id, const pep::SpecifierSet& spec) const;
    std::optional<PackageId> choose();
    std::optional<PackageId> most_constrained() const;
    /// The requirements of id==v, or nothing when its metadata rules it out (then `v` is).
    std::optional<std::vector<pep::Requirement>> requirements_of(PackageId id, std::size_t v);
    void prefetch_below(PackageId id, std::size_t v);
    PackageId rule_out(PackageId id, std::size_t v, const std::string& reason);
    void add_requirement(PackageId from, std::size_t v, const pep::Requirement& r,
                         std::vector<int>& added);
    std::optional<std::size_t> pick_version(PackageId id, const VersionSet& allowed) const;
    /// `reqs` with Options::overrides and Options::constraints applied.
    std::vector<pep::Requirement> overridden(std::vector<pep::Requirement> reqs) const;
    /// Whether `p` may be given a pre-release under the policy (Options::prerelease).
    bool prereleases_allowed(const Package& p) const;
    /// Whether `allowed` holds a usable pre-release of `p` that only the policy keeps out, and
    /// naming one (or losing a release) could let in.
    bool held_back_by_policy(const Package& p, const VersionSet& allowed) const;
    /// Sets aside what was learnt assuming `base` gets no pre-release.
    void forget_assumptions(const std::string& base);
};

}  // namespace envbox::resolve
