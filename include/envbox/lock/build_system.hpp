#pragma once
/// A source tree's `[build-system]` (PEP 517, PEP 518): what a build needs and which backend
/// builds it. The table is hostile input from an sdist: every value is checked for its type,
/// each requirement must be a PEP 508 requirement, and `backend-path` entries must stay inside
/// the tree.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envbox/pep/requirement.hpp"
#include "envbox/util/error.hpp"

namespace envbox::lock {

struct BuildSystem {
    std::vector<pep::Requirement> requires_;  ///< `requires`
    /// `build-backend`: `module` or `module:object.attr`; with neither `build-backend` nor a
    /// `[build-system]` table, setuptools' legacy backend (`setuptools.build_meta:__legacy__`)
    /// and `setuptools>=40.8.0` as PEP 517 says and pip does.
    std::string backend;
    std::vector<std::string> backend_path;  ///< `backend-path`: folders of the tree, relative
    bool legacy = false;                    ///< no `build-backend`: the setuptools fallback
};

/// The build system of the tree whose `pyproject.toml` reads `text` (none: the file is absent),
/// `source` naming it in errors (SOURCE:LINE). Refuses (invalid_input) a `requires` that is not
/// an array of PEP 508 strings, a backend that is not `module[:object]` of Python identifiers,
/// and a `backend-path` entry that is absolute or climbs out with `..`.
Result<BuildSystem> read_build_system(const std::optional<std::string>& text,
                                      std::string_view source);

}  // namespace envbox::lock
