#pragma once
/// PubGrub version solving (Weizenbaum's algorithm, as in pubgrub-rs and uv) over a package
/// source, for one *target* environment. Version sets are exact (range.hpp): every set is a
/// subset of the versions the source offers for that package, so intersections, unions and
/// complements are bit operations and PEP 440's corner cases (local versions, pre-releases,
/// `!=1.*`) are decided once, by `SpecifierSet::contains`, when a set is built.
///
/// src/resolve: range.cpp the version-set algebra, solver.cpp the PubGrub loop (propagation,
/// conflict resolution, backtracking), decisions.cpp which package and version come next,
/// report.cpp the explanation of a failure.

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "envbox/pep/marker.hpp"
#include "envbox/pep/requirement.hpp"
#include "envbox/pep/specifier.hpp"
#include "envbox/pep/version.hpp"
#include "envbox/util/error.hpp"

namespace envbox::resolve {

/// One version of a package as the source offers it.
struct Candidate {
    pep::Version version;
    bool yanked = false;
    /// Why this version cannot be installed on the target, if it cannot ("requires Python
    /// >=3.13", "has no wheel for cp312-manylinux_2_28_x86_64", …); empty when it can.
    std::string unusable;
};

/// What the solver needs of one version's core metadata.
struct Dependencies {
    std::vector<pep::Requirement> requires_dist;
    std::set<std::string> provides_extra;  ///< normalised
    /// Why the version cannot be installed on the target, learnt only from its metadata (a
    /// `Requires-Python` the index page did not carry); empty when it can. The solver treats
    /// it as it treats `Candidate::unusable`: the version is ruled out, the solver backtracks to
    /// another, and a failure explains it.
    std::string unusable;
};

/// Where a package's versions come from, as a failure explains it.
struct Origin {
    std::string where;    ///< "index main", or for a package no index has "indexes main, pypi"
    bool pinned = false;  ///< `[sources]` pins the package to that index
};

/// Where versions and metadata come from (an index client, a test's in-memory world).
class PackageSource {
  public:
    virtual ~PackageSource() = default;
    /// Every version of `name` (normalised), any order; empty when the package does not exist.
    virtual std::vector<Candidate> versions(const std::string& name) = 0;
    /// Requires-Dist and Provides-Extra of `name==version`.
    virtual Dependencies dependencies(const std::string& name, const pep::Version& version) = 0;
    /// A hint that these will be asked for soon; a networked source fetches them in parallel.
    virtual void prefetch(const std::vector<std::pair<std::string, pep::Version>>& wanted) {
        (void)wanted;
    }
    virtual void prefetch_versions(const std::vector<std::string>& names) { (void)names; }
    /// Where the versions of `name` come from, for messages; empty when the source has
    /// nothing to say. Called after `versions`.
    virtual Origin origin(const std::string& name) {
        (void)name;
        return {};
    }
};

/// A package fixed by a direct reference of the user's (`name @ URL`): the one version the
/// solver may choose for it, whatever any index offers (no index is asked for it), with the
/// metadata read from the wheel itself.
struct DirectPackage {
    std::string url;  ///< the reference as the requirement gives it
    pep::Version version;
    Dependencies dependencies;
};

/// When a pre-release may be chosen, with uv's names and meanings. "Explicit" is a
/// requirement on the package whose specifier names a pre-release (`==1.6.0rc5`, `>=4.0.0b13`),
/// the user's or a dependency's, as pip (and uv since 0.12) read PEP 440.
enum class Prerelease {
    if_necessary_or_explicit,  ///< explicit, or the package has nothing but pre-releases
    allow,                     ///< every package
    disallow,                  ///< none
    explicit_,                 ///< explicit only
    if_necessary,              ///< only a package that has nothing but pre-releases
};

/// The policy named `text` (`"if-necessary-or-explicit"`, `"allow"`, …); nothing for another.
std::optional<Prerelease> prerelease_named(std::string_view text);
/// The name of `policy`, as a manifest writes it.
std::string_view prerelease_name(Prerelease policy);

struct Options {
    pep::MarkerEnvironment environment;  ///< the target's markers (python_full_version, …)
    Prerelease prerelease = Prerelease::if_necessary_or_explicit;
    /// uv's override-dependencies, by normalised name: every requirement on such a package,
    /// whoever declares it (the user's included), is replaced by these (their markers then
    /// decide, as any requirement's).
    std::map<std::string, std::vector<pep::Requirement>> overrides;
    /// uv's constraint-dependencies, by normalised name: every requirement on such a package is
    /// narrowed by these specifiers (those whose markers hold on the target); a package nothing
    /// requires gets nothing.
    std::map<std::string, std::vector<pep::Requirement>> constraints;
    /// Versions to keep when they still satisfy everything (the current lock).
    std::map<std::string, pep::Version> preferences;
    /// Called with one line (no newline) for each conflict the solver resolves, for debugging
    /// a slow or surprising resolution; null: nothing is traced.
    std::function<void(std::string_view)> trace;
    /// Packages fixed by direct references (normalised name → its wheel). A requirement
    /// `name @ URL` must name one of these with the same URL; a dependency's own URL
    /// requirement is accepted only when it is the user's reference for that package.
    std::map<std::string, DirectPackage> direct;
    static constexpr std::size_t kMaxSteps = 20000;
    static constexpr std::size_t kMaxSetBytes = std::size_t{1} << 30;
    /// The budget of one resolution: a hostile index can pose a search that takes hours, or
    /// one whose incompatibilities outgrow memory (a package of a million versions, each with
    /// thousands of dependencies). Past either limit the resolution fails (invalid_input),
    /// saying which. A step is a decision or a derivation of conflict resolution; a decision
    /// reads one version's metadata (and the page of each package it brings in, once), so an
    /// index that fails every version one at a time is given up on after kMaxSteps of them
    /// (about 17 minutes at 50 ms a file). The PyTorch-shaped world of bench/lock_bench.py
    /// (about 200 packages) takes 171 steps and 5 KB of sets (pip's limit is 200 000 rounds;
    /// uv has none). `lock` takes the steps from ENVBOX_RESOLVE_MAX_STEPS when set, and shares
    /// the bytes between the targets it resolves side by side.
    std::size_t max_steps = kMaxSteps;
    std::size_t max_set_bytes = kMaxSetBytes;  ///< of the version sets incompatibilities hold
};

struct Pinned {
    std::string name;  ///< normalised
    pep::Version version;
    std::set<std::string> extras;  ///< extras some requirement asked for
    /// The pinned packages its requirements bring in on the target (markers evaluated, with
    /// the extras asked of it; an extra's requirements count as the package's own): normalised
    /// names, each once. The edges `envbox tree` reads from the lock.
    std::set<std::string> dependencies;
};

/// Resolves `root` for the target. On failure the error (invalid_input) carries an explanation
/// derived from PubGrub's incompatibilities, in terms of the user's requirements.
Result<std::vector<Pinned>> resolve(const std::vector<pep::Requirement>& root,
                                    PackageSource& source, const Options& options);

}  // namespace envbox::resolve
