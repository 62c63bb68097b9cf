#pragma once
/// One PEP 751 lock for several targets (x86_64 and aarch64): the per-target resolutions merged
/// into the entries `write_pylock` writes. A package every target locks at one version is one
/// entry without a marker, listing each target's wheel; where targets disagree (a package only
/// some need, or another version), each version is an entry whose `marker` holds on exactly the
/// targets that chose it. So PEP 751's install-time selection (`select`) picks, on each target,
/// exactly what that target's own resolution chose. Pure: no I/O.

#include <string>
#include <vector>

#include "envbox/lock/writer.hpp"

namespace envbox::lock {

/// One target's resolution, as the lock will hold it.
struct TargetPackages {
    std::string name;  ///< the target's name in messages ("manylinux_2_28_aarch64")
    /// A marker true on this target and false on every other of the lock
    /// ("platform_machine == 'aarch64'"): the targets of one lock differ in it.
    std::string marker;
    /// Its packages, one wheel each (or an archive), names unique.
    std::vector<LockedPackage> packages;
};

/// A package the targets did not lock alike.
struct Divergence {
    std::string name;  ///< normalised
    /// Per target, in the order given: the version it locked, "" where it needs no such package.
    std::vector<std::string> versions;
};

struct MergedPackages {
    std::vector<LockedPackage> packages;  ///< unsorted; the writer sorts
    std::vector<Divergence> divergences;  ///< sorted by name
};

/// Merges the targets' packages. Entries of one version: wheels of every target that chose it
/// (a file two targets share, once), the union of their dependencies, the index of the first;
/// `marker` absent when every target chose that version, else the chosen targets' markers
/// joined by `or` (in the order given). With one target the packages come back as they are.
MergedPackages merge_targets(const std::vector<TargetPackages>& targets);

}  // namespace envbox::lock
