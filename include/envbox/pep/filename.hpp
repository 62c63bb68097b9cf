#pragma once
/// Distribution file names: wheels (`{name}-{ver}(-{build})?-{py}-{abi}-{plat}.whl`) and sdists
/// (`{name}-{ver}.tar.gz` / `.zip`), and the file name at the end of a URL.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envbox/pep/tags.hpp"
#include "envbox/pep/version.hpp"
#include "envbox/util/error.hpp"

namespace envbox::pep {

/// A wheel build tag: leading digits, then the rest; absent sorts below any present one.
struct BuildTag {
    std::uint64_t number = 0;
    std::string rest;
    auto operator<=>(const BuildTag&) const = default;
};

/// The most tags a wheel file name's compressed tag set may expand to. Real wheels name a few
/// (`py2.py3-none-any`, numpy's two manylinux platforms, a dozen at most); the product of three
/// dotted sets in a name from a lock or an index page could otherwise be billions, and every
/// file of a page or a lock keeps its tags.
inline constexpr std::int64_t kMaxWheelTags = 256;

/// A parsed wheel file name.
struct WheelFilename {
    std::string filename;        ///< as given
    std::string name;            ///< distribution part as written (`some_PACKAGE`)
    std::string canonical_name;  ///< normalised (`some-package`)
    std::string version_text;    ///< as written
    Version version;
    std::optional<BuildTag> build;
    std::string tag_text;   ///< compressed `py-abi-plat` as written
    std::vector<Tag> tags;  ///< expanded, sorted

    /// Parses a wheel file name (not a URL: see `filename_from_url`). Readers accept `.` and
    /// uppercase in the name part (older files), and non-ASCII letters. A tag set expanding to
    /// more than kMaxWheelTags tags is invalid.
    static Result<WheelFilename> parse(std::string_view filename);
};

/// A parsed sdist file name.
struct SdistFilename {
    std::string name;
    std::string canonical_name;
    Version version;
    static Result<SdistFilename> parse(std::string_view filename);
};

/// Decodes `%XX` escapes (`%2B` → `+`); malformed escapes are kept as written.
std::string percent_decode(std::string_view s);

/// The last path segment of a URL or path, without query or fragment, percent-decoded
/// (`…/torch-2.9.0%2Bcu128-cp312-….whl#sha256=…` → `torch-2.9.0+cu128-cp312-….whl`).
std::string filename_from_url(std::string_view url);

}  // namespace envbox::pep
