#pragma once
/// PEP 508 dependency specifiers: `name[extras] (versionspec | @ url) ; marker`.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envbox/pep/marker.hpp"
#include "envbox/pep/specifier.hpp"
#include "envbox/util/error.hpp"

namespace envbox::pep {

/// A parsed requirement.
struct Requirement {
    std::string name;                 ///< as written (compare with `canonical_name()`)
    std::vector<std::string> extras;  ///< as written, sorted, duplicates removed
    SpecifierSet specifier;
    std::optional<std::string> url;  ///< direct reference (`name @ url`)
    std::optional<Marker> marker;

    /// Parses one requirement; errors show the input with a caret under the fault.
    static Result<Requirement> parse(std::string_view text);

    std::string canonical_name() const;
    /// Extras normalised per PEP 685.
    std::vector<std::string> canonical_extras() const;

    /// Canonical text (`name[a,b]<3,>=2; python_version >= "3.9"`).
    std::string str() const;
    /// Equal in meaning: same canonical name, extras, specifiers, URL and marker.
    bool operator==(const Requirement& other) const;
};

}  // namespace envbox::pep
