#pragma once
/// Direct references of a manifest's requirements (PEP 508 `name @ URL`): what envbox accepts,
/// read without I/O. A reference is a wheel, by an `http(s)://` URL, a `file://` URL or a path
/// (relative ones from the manifest's directory), optionally with a `#sha256=…` fragment the
/// wheel must match. Refused, each with the package named: sdists (`.tar.gz`, `.zip`, …), VCS
/// (`git+…`) and directory references (envbox never builds), other schemes, credentials in the
/// URL (they would be committed with the manifest and the lock), and a wheel file name that is
/// not one of the requirement's project.

#include <optional>
#include <string>
#include <string_view>

#include "envbox/pep/filename.hpp"
#include "envbox/pep/requirement.hpp"
#include "envbox/util/error.hpp"

namespace envbox::lock {

struct DirectReference {
    enum class Kind {
        http,      ///< `http://` or `https://`: fetched
        file_url,  ///< `file:///abs/path.whl`: read in place
        path,      ///< `./wheels/x.whl`, `wheels/x.whl`, `/abs/x.whl`: read in place
    };
    Kind kind = Kind::http;
    /// The URL without its fragment (http, file_url), or the path as written (path).
    std::string location;
    std::string filename;               ///< the wheel's file name, percent-decoded
    pep::WheelFilename wheel;           ///< `filename` parsed; its project is the requirement's
    std::optional<std::string> sha256;  ///< from `#sha256=`, lowercase hex (64 digits)

    /// Reads the direct reference of `requirement` (which must have a `url`). Errors
    /// (invalid_input) name the package and say what to give instead: a wheel URL, or a
    /// find-links directory (a `file://` `[[index]]` holding the wheel).
    static Result<DirectReference> parse(const pep::Requirement& requirement);
};

}  // namespace envbox::lock
