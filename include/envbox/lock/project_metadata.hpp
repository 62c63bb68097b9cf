#pragma once
/// A source tree's `[project]` table (PEP 621, core metadata 2.x as pyproject.toml spells it):
/// the name, version and dependencies `lock` resolves a local package with, read without a build.
/// Hostile input like any tree's: every value checked for its type, every requirement PEP 508.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "envbox/pep/requirement.hpp"
#include "envbox/pep/version.hpp"
#include "envbox/util/error.hpp"

namespace envbox::lock {

struct ProjectMetadata {
    std::string name;                     ///< as written
    std::optional<pep::Version> version;  ///< none when `dynamic` names it
    std::set<std::string> dynamic;        ///< `dynamic`, lowercased
    std::vector<pep::Requirement> dependencies;
    /// `optional-dependencies`: extra (normalised, PEP 685) → its requirements.
    std::map<std::string, std::vector<pep::Requirement>> optional_dependencies;
    std::optional<std::string> requires_python;

    /// Whether the dependencies are given here (neither `dependencies` nor
    /// `optional-dependencies` is dynamic).
    bool static_dependencies() const;
    /// Core metadata's Requires-Dist: the dependencies, then each extra's with `extra == "X"`
    /// joined to its marker.
    std::vector<pep::Requirement> requires_dist() const;
    /// The lines that decide a resolution (name, version, requires-python, every requirement,
    /// sorted), for a lock's record of what it was resolved from.
    std::string resolution_text() const;
};

/// The `[project]` table of the pyproject.toml text `text` (`source` names it in errors,
/// SOURCE:LINE). Refuses (invalid_input) a tree without `[project]` or its `name`, an invalid
/// name or version, a version neither given nor `dynamic`, and a requirement that is not PEP 508.
Result<ProjectMetadata> read_project_metadata(std::string_view text, std::string_view source);

/// The requirements of the PEP 735 dependency groups `groups` (normalised names) of the
/// pyproject.toml text `text`: each group's strings and, through `{include-group = "…"}`, its
/// included groups' (each once; a cycle, an unknown group, a value of another shape or a string
/// that is not PEP 508 is an invalid_input error naming SOURCE and the group).
Result<std::vector<pep::Requirement>> read_dependency_groups(
    std::string_view text, std::string_view source, const std::vector<std::string>& groups);

}  // namespace envbox::lock
