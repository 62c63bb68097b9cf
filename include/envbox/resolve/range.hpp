#pragma once
/// The solver's version-set algebra (uv keeps it in `pubgrub/range.rs`). A set is exact: a
/// subset of the versions the source offers for one package, held as a bitset over their
/// indexes (ascending), so intersection, union and complement are bit operations. PEP 440's
/// corner cases (local versions under `==`, `!=1.*`, pre-releases) are decided once, by
/// `SpecifierSet::contains`, when `VersionSet::matching` builds a set. Pure, no I/O.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "envbox/pep/specifier.hpp"
#include "envbox/pep/version.hpp"

namespace envbox::resolve {

/// A package (or a package with one extra) as the solver numbers them; 0 is the root.
using PackageId = int;

/// A subset of one package's candidate versions: bit i is the i-th candidate, ascending. Sets
/// combined with each other must be of the same package (the same `n`).
struct VersionSet {
    std::vector<std::uint64_t> w;
    std::size_t n = 0;  ///< how many candidates the package has

    static VersionSet none(std::size_t n) {
        return VersionSet{std::vector<std::uint64_t>((n + 63) / 64, 0), n};
    }
    static VersionSet all(std::size_t n) {
        VersionSet s = none(n);
        for (std::size_t i = 0; i < n; ++i)
            s.set(i);
        return s;
    }
    static VersionSet one(std::size_t n, std::size_t i) {
        VersionSet s = none(n);
        s.set(i);
        return s;
    }
    /// The candidates `spec` admits (pre-releases included: whether one may be chosen is the
    /// solver's decision, not the set's); `version_of(c)` is candidate c's version.
    template <class Candidates, class VersionOf>
    static VersionSet matching(const Candidates& candidates, const pep::SpecifierSet& spec,
                               VersionOf version_of) {
        VersionSet s = none(candidates.size());
        for (std::size_t i = 0; i < candidates.size(); ++i)
            if (spec.contains(version_of(candidates[i]), true)) s.set(i);
        return s;
    }
    static VersionSet matching(const std::vector<pep::Version>& versions,
                               const pep::SpecifierSet& spec) {
        return matching(versions, spec,
                        [](const pep::Version& v) -> const pep::Version& { return v; });
    }

    void set(std::size_t i) { w[i / 64] |= std::uint64_t{1} << (i % 64); }
    bool has(std::size_t i) const { return (w[i / 64] >> (i % 64)) & 1; }
    bool empty() const {
        return std::all_of(w.begin(), w.end(), [](std::uint64_t x) { return x == 0; });
    }
    std::size_t count() const;
    VersionSet operator&(const VersionSet& o) const;
    VersionSet operator|(const VersionSet& o) const;
    /// The candidates in this set and not in `o`.
    VersionSet minus(const VersionSet& o) const;
    /// Every candidate not in this set.
    VersionSet complement() const { return all(n).minus(*this); }
    bool subset_of(const VersionSet& o) const;
    bool operator==(const VersionSet& o) const { return w == o.w; }
};

/// A term: "the package is selected with a version in `set`" (positive), or "it is not selected
/// with a version in `set`" (negative: absent, or another version).
struct Term {
    PackageId pkg = 0;
    bool positive = true;
    VersionSet set;

    Term negate() const { return {pkg, !positive, set}; }
    /// The negative term of the empty set: allows every solution.
    bool is_any() const { return !positive && set.empty(); }
};

/// The solutions both terms allow (terms of the same package).
Term intersect(const Term& a, const Term& b);
/// The solutions either term allows.
Term unite(const Term& a, const Term& b);
/// Every solution allowed by `a` is allowed by `b`.
bool subset(const Term& a, const Term& b);
/// No solution is allowed by both.
bool disjoint(const Term& a, const Term& b);

}  // namespace envbox::resolve
