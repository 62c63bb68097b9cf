#include "envbox/lock/merge.hpp"

#include <map>

namespace envbox::lock {
namespace {

// Every version one package has across the targets: version → the targets (positions) that
// locked it and their entries.
struct VersionGroup {
    std::vector<std::size_t> targets;
    std::vector<const LockedPackage*> entries;
};

// The entry for one version group: the first target's, with every target's wheels and edges.
LockedPackage merged_entry(const VersionGroup& group, const std::vector<TargetPackages>& targets) {
    LockedPackage out = *group.entries.front();
    out.wheels.clear();
    if (out.dependencies) out.dependencies->clear();
    for (const LockedPackage* e : group.entries) {
        if (!out.sdist && e->sdist) out.sdist = e->sdist;  // a target with no wheel builds it
        for (const auto& w : e->wheels) {
            bool known = false;
            for (const auto& have : out.wheels)
                known = known || (have.filename == w.filename && have.sha256 == w.sha256);
            if (!known) out.wheels.push_back(w);
        }
        if (e->dependencies && out.dependencies)
            out.dependencies->insert(out.dependencies->end(), e->dependencies->begin(),
                                     e->dependencies->end());
        else
            out.dependencies.reset();  // one target without edges: the graph is incomplete
    }
    if (group.targets.size() < targets.size()) {
        std::string marker;
        for (std::size_t t : group.targets)
            marker += (marker.empty() ? "" : " or ") + targets[t].marker;
        out.marker = marker;
    }
    return out;
}

}  // namespace

MergedPackages merge_targets(const std::vector<TargetPackages>& targets) {
    MergedPackages out;
    if (targets.size() == 1) {
        out.packages = targets.front().packages;
        return out;
    }
    // name → version → group, both sorted, so the result does not depend on input order.
    std::map<std::string, std::map<std::string, VersionGroup>> names;
    for (std::size_t t = 0; t < targets.size(); ++t)
        for (const auto& p : targets[t].packages) {
            VersionGroup& g = names[p.name][p.version];
            g.targets.push_back(t);
            g.entries.push_back(&p);
        }
    for (const auto& [name, versions] : names) {
        std::size_t locked_on = 0;
        for (const auto& [version, group] : versions) {
            out.packages.push_back(merged_entry(group, targets));
            locked_on += group.targets.size();
        }
        if (versions.size() == 1 && locked_on == targets.size()) continue;
        Divergence d{name, std::vector<std::string>(targets.size())};
        for (const auto& [version, group] : versions)
            for (std::size_t t : group.targets)
                d.versions[t] = version;
        out.divergences.push_back(std::move(d));
    }
    return out;
}

}  // namespace envbox::lock
