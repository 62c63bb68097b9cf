#include "envbox/pep/requirement.hpp"

#include <algorithm>

#include "envbox/pep/name.hpp"

namespace envbox::pep {

std::string Requirement::canonical_name() const {
    return canonicalize_name(name);
}

std::vector<std::string> Requirement::canonical_extras() const {
    std::vector<std::string> out;
    for (const auto& e : extras)
        out.push_back(canonicalize_name(e));
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

std::string Requirement::str() const {
    std::string out = name;
    if (!extras.empty()) {
        out += '[';
        for (std::size_t k = 0; k < extras.size(); ++k) {
            if (k) out += ',';
            out += extras[k];
        }
        out += ']';
    }
    out += specifier.str();
    if (url) {
        out += " @ " + *url;
        if (marker) out += ' ';  // a URL must be followed by a space before `;`
    }
    if (marker) out += "; " + marker->str();
    return out;
}

bool Requirement::operator==(const Requirement& other) const {
    return canonical_name() == other.canonical_name() &&
           canonical_extras() == other.canonical_extras() && specifier == other.specifier &&
           url == other.url && marker == other.marker;
}

}  // namespace envbox::pep
