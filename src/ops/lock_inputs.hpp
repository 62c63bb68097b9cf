#pragma once
// What a lock depends on in its manifest (`Inputs`, recorded in the lock's [tool.envbox]) and
// how a lock is found stale against it (`lock_staleness`, ops/lock.hpp).

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "envbox/lock/lock_file.hpp"
#include "envbox/lock/manifest.hpp"
#include "envbox/ops/lock.hpp"
#include "envbox/resolve/resolver.hpp"
#include "envbox/util/sha256.hpp"

namespace envbox::ops {

// What a lock depends on in its manifest; recorded in [tool.envbox] and compared by --check.
struct Inputs {
    std::vector<std::string> requirements, indexes, sources;
    std::string python, platform, cuda;
    std::string prerelease;  // the manifest's setting, "" when it has none (the default)
    std::vector<std::string> overrides, constraints;  // as written, sorted
    std::string exclude_newer;                        // UTC RFC 3339, "" when unset
    std::vector<std::string> builds;                  // "* allow", "NAME never": where set, sorted
    std::vector<std::string> local;  // install::LocalProject::input_line of each, sorted

    std::string digest() const {
        std::string all = "python " + python + "\nplatform " + platform + "\ncuda " + cuda + "\n";
        // Only when set, so locks written before the setting existed stay up to date.
        if (!prerelease.empty()) all += "prerelease " + prerelease + "\n";
        if (!exclude_newer.empty()) all += "exclude-newer " + exclude_newer + "\n";
        for (const auto& b : builds)
            all += "build " + b + "\n";
        for (const auto& o : overrides)
            all += "override " + o + "\n";
        for (const auto& c : constraints)
            all += "constraint " + c + "\n";
        for (const auto& r : requirements)
            all += "requirement " + r + "\n";
        for (const auto& i : indexes)
            all += "index " + i + "\n";
        for (const auto& s : sources)
            all += "source " + s + "\n";
        for (const auto& l : local)  // none in a lock from before local sources
            all += "local " + l + "\n";
        return to_hex(sha256(all));
    }
};

/// The lock being replaced, as `lock` uses it.
struct Previous {
    std::string text;  ///< its bytes ("" when there is none): unchanged bytes are not rewritten
    std::map<std::string, pep::Version> preferences;  ///< locked versions to keep
    std::map<std::string, std::string> commits;       ///< git sources' commits to keep
};

/// Reads the lock being replaced (`old`): its versions (and git commits) are preferred, except
/// with --upgrade or for the packages --upgrade-package names; a name --upgrade-package gives
/// that neither the old lock nor the manifest knows is a usage error (it would otherwise upgrade
/// nothing, silently).
Previous read_previous(const LockOptions& opt, const lock::Manifest& m,
                       const std::filesystem::path& manifest_path,
                       const std::filesystem::path& lock_path,
                       const std::optional<lock::LockFile>& old);

/// The policy a manifest's `prerelease` names (validated by its parser); "" is the default.
resolve::Prerelease prerelease_policy(const std::string& setting);

/// The inputs of `m`, each list sorted as the lock records it. `local` is filled only with
/// `manifest_path` (it reads each local tree's pyproject.toml: install::local_projects).
Inputs inputs_of(const lock::Manifest& m, const std::filesystem::path& manifest_path = {});

}  // namespace envbox::ops
