#pragma once
/// A lock over several targets: each target resolved by its own PubGrub run over its own
/// `IndexSource` (its tags decide which wheel a version has), all sharing the one HttpClient
/// and the home's caches, side by side; then one version preferred where targets disagreed.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "envbox/pep/marker.hpp"
#include "envbox/pep/requirement.hpp"
#include "envbox/resolve/index_source.hpp"
#include "envbox/resolve/resolver.hpp"

namespace envbox::resolve {

/// One target of a lock being written.
struct TargetResolution {
    std::string platform;                ///< the target's platform tag: what messages call it
    pep::MarkerEnvironment markers;      ///< what the target's requirements are evaluated in
    std::unique_ptr<IndexSource> index;  ///< this target's view of the indexes
    /// What the solver asks (`index`, or a test's world); never null for `resolve_targets`.
    PackageSource* source = nullptr;
    /// The manifest's direct references, checked for this target: one file each, never a
    /// disagreement between targets.
    std::map<std::string, DirectPackage> direct;
    std::vector<Pinned> pins;  ///< set by `resolve_targets`
};

/// Resolves `root` for every target side by side (`options` with each target's markers and
/// direct packages). Where targets chose different versions of a package that some version
/// usable on each of them satisfies, the targets off it resolve again preferring the highest
/// such version, so a lock holds one version wherever one exists. Throws the first target's
/// failure, with "locking ENV for CPython X.Y on PLATFORM" as context.
void resolve_targets(std::vector<TargetResolution>& targets,
                     const std::vector<pep::Requirement>& root, const Options& options,
                     const std::string& env, const std::string& python);

/// One line per package of `diverging` (where the merged lock differs between targets), saying
/// where targets differ and why: the version each target locked, and for a target below the
/// newest, what its index says of the newest ("has no wheel for the target (…)"), or that its
/// requirements rule it out; for a package some targets lack, that nothing requires it there.
std::vector<std::string> divergence_notes(const std::vector<std::string>& diverging,
                                          std::vector<TargetResolution>& targets);

/// No silent old versions: for each of the user's requirements (`root`) whose locked version
/// is not the newest its target's indexes offer (usable there, not yanked, a pre-release only
/// where the policy would take one), one line saying why: kept from the old lock
/// (`options.preferences`, with the command that upgrades it), or what rules the newest out
/// (the solver's own explanation of a resolution that also requires `name==newest`, for at
/// most 8 packages, each in at most 2000 steps; past them, or when the second resolution fails
/// for another reason than a conflict, a general sentence).
/// `everything`: for every locked package, not only the user's (lock -v).
std::vector<std::string> older_than_newest(std::vector<TargetResolution>& targets,
                                           const std::vector<pep::Requirement>& root,
                                           const Options& options, const std::string& env,
                                           bool everything);

}  // namespace envbox::resolve
