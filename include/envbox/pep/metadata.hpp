#pragma once
/// Core metadata (`METADATA`, `PKG-INFO`; spec "Core metadata specifications", versions 1.0–2.4).
/// Pure: parses text already read.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "envbox/pep/requirement.hpp"
#include "envbox/pep/specifier.hpp"
#include "envbox/pep/version.hpp"
#include "envbox/util/error.hpp"

namespace envbox::pep {

/// The fields envbox uses, plus every header as written.
struct CoreMetadata {
    std::string metadata_version;  ///< `Metadata-Version` as written ("2.1")
    std::string name;              ///< as written
    Version version;
    std::vector<Requirement> requires_dist;
    std::optional<SpecifierSet> requires_python;
    std::vector<std::string> provides_extra;  ///< normalised (PEP 685)
    /// Every header in order, continuation lines joined with "\n" (RFC 822 folding).
    std::vector<std::pair<std::string, std::string>> headers;

    /// Parses the header block (the body after the first blank line is the description and is
    /// skipped). Header names are case-insensitive. Requires `Metadata-Version` 1.x or 2.x,
    /// `Name` and a PEP 440 `Version`; a bad `Requires-Dist` or `Requires-Python` is an error
    /// naming the line.
    static Result<CoreMetadata> parse(std::string_view text);

    /// All values of header `name` (case-insensitive), in order.
    std::vector<std::string> get_all(std::string_view name) const;
};

/// Parses RFC 822-style headers (`Key: value` lines, continuation lines starting with space or
/// tab) up to the first blank line; also used for a wheel's `WHEEL` file.
std::vector<std::pair<std::string, std::string>> parse_headers(std::string_view text);

}  // namespace envbox::pep
