#include "envbox/lock/direct_reference.hpp"

#include <array>
#include <cctype>
#include <optional>

#include "envbox/pep/digest.hpp"
#include "envbox/pep/name.hpp"

namespace envbox::lock {
namespace {

constexpr std::string_view kInstead =
    "; give the URL or path of a wheel (.whl) built for the target, or put the wheel in a "
    "find-links directory (an [[index]] with url = \"file:///that/directory\")";

Error refused(const pep::Requirement& r, const std::string& what) {
    return Error(ErrorCode::invalid_input,
                 r.name + " @ " + r.url.value_or("") + ": " + what + std::string(kInstead));
}

// The scheme of `s` ("https", "git+https"), lowercased; empty when `s` is a path.
std::string scheme_of(std::string_view s) {
    if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return "";
    for (std::size_t i = 1; i < s.size(); ++i) {
        const char c = s[i];
        if (c == ':') {
            std::string out(s.substr(0, i));
            for (auto& ch : out)
                ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
            return out;
        }
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.')
            return "";
    }
    return "";
}

bool is_sdist_name(std::string_view name) {
    static constexpr std::array<std::string_view, 7> kSuffixes = {
        ".tar.gz", ".tgz", ".zip", ".tar.bz2", ".tar.xz", ".tar", ".tar.zst"};
    std::string lower(name);
    for (auto& ch : lower)
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    for (auto s : kSuffixes)
        if (lower.ends_with(s)) return true;
    return false;
}

// The host part of an http(s) or file URL: present for http(s), local for file:, and never
// with credentials.
std::optional<Error> check_authority(const pep::Requirement& r, const DirectReference& ref,
                                     const std::string& scheme) {
    using Kind = DirectReference::Kind;
    const auto start = ref.location.find("://");
    if (start == std::string::npos)
        return refused(r, "a " + scheme + " URL needs '//' after its scheme");
    const auto end = ref.location.find_first_of("/?", start + 3);
    const std::string authority = ref.location.substr(
        start + 3, end == std::string::npos ? std::string::npos : end - start - 3);
    // Credentials would be committed with the manifest and copied into the lock.
    if (authority.find('@') != std::string::npos)
        return Error(ErrorCode::invalid_input,
                     r.name +
                         ": the URL of its direct reference has credentials in it; "
                         "serve the wheel without them, or put it in an [[index]] "
                         "whose credentials come from the environment or ~/.netrc");
    if (ref.kind == Kind::http && authority.empty()) return refused(r, "the URL names no host");
    if (ref.kind == Kind::file_url && !authority.empty() && authority != "localhost")
        return refused(r, "a file:// URL must name a local path (file:///path)");
    return std::nullopt;
}

// `#sha256=…` into `ref.sha256`; other keys (`egg=`, `subdirectory=`, other digests) have no
// meaning for a wheel envbox checks by sha256, and are refused rather than silently ignored.
std::optional<Error> read_fragment(const pep::Requirement& r, const std::string& url,
                                   const std::string& fragment, DirectReference& ref) {
    std::size_t at = 0;
    while (!fragment.empty() && at <= fragment.size()) {
        std::size_t amp = fragment.find('&', at);
        std::string part =
            fragment.substr(at, amp == std::string::npos ? std::string::npos : amp - at);
        at = amp == std::string::npos ? fragment.size() + 1 : amp + 1;
        if (part.empty()) continue;
        auto eq = part.find('=');
        std::string key = pep::ascii_lower(part.substr(0, eq));
        std::string value = eq == std::string::npos ? "" : pep::ascii_lower(part.substr(eq + 1));
        if (key != "sha256")
            return Error(ErrorCode::invalid_input,
                         r.name + " @ " + url + ": the fragment '#" + part +
                             "' is not supported (give the wheel's digest as #sha256=…)");
        if (!pep::is_sha256_hex(value))
            return Error(ErrorCode::invalid_input,
                         r.name + " @ " + url + ": '#sha256=' takes 64 hexadecimal digits");
        if (ref.sha256 && *ref.sha256 != value)
            return Error(ErrorCode::invalid_input,
                         r.name + " @ " + url + ": two different #sha256= values");
        ref.sha256 = value;
    }
    return std::nullopt;
}

}  // namespace

Result<DirectReference> DirectReference::parse(const pep::Requirement& r) {
    const std::string url = r.url.value_or("");
    DirectReference ref;
    const std::string scheme = scheme_of(url);
    if (scheme.find('+') != std::string::npos || scheme == "git" || scheme == "hg" ||
        scheme == "svn" || scheme == "bzr")
        return refused(r,
                       "a VCS reference is not supported (envbox installs wheels and "
                       "never builds a checkout)");
    if (scheme == "https" || scheme == "http")
        ref.kind = Kind::http;
    else if (scheme == "file")
        ref.kind = Kind::file_url;
    else if (scheme.empty())
        ref.kind = Kind::path;
    else
        return refused(r, "the scheme '" + scheme +
                              ":' is not supported (only http://, https://, file:// and paths)");

    std::string fragment;
    ref.location = url;
    if (auto hash = url.find('#'); hash != std::string::npos) {
        fragment = url.substr(hash + 1);
        ref.location = url.substr(0, hash);
    }
    if (ref.kind != Kind::path)
        if (auto bad = check_authority(r, ref, scheme)) return *bad;
    if (auto bad = read_fragment(r, url, fragment, ref)) return *bad;

    ref.filename = pep::filename_from_url(ref.location);
    const bool dir = ref.location.ends_with("/") || ref.filename.empty() || ref.filename == "." ||
                     ref.filename == "..";
    if (is_sdist_name(ref.filename))
        return refused(
            r, "'" + ref.filename + "' is a source distribution, and envbox installs wheels only");
    if (dir)
        return refused(r,
                       "a directory reference is not supported (envbox installs wheels and "
                       "never builds a project)");
    if (!ref.filename.ends_with(".whl"))
        return refused(r, "'" + ref.filename +
                              "' is not a wheel (a directory reference or another kind of "
                              "file is not supported)");
    auto wheel = pep::WheelFilename::parse(ref.filename);
    if (!wheel)
        return refused(r, "'" + ref.filename + "' is not a valid wheel file name (" +
                              wheel.error().message() + ")");
    if (wheel->canonical_name != pep::canonicalize_name(r.name))
        return Error(ErrorCode::invalid_input,
                     r.name + " @ " + url + ": the wheel '" + ref.filename + "' is of project '" +
                         wheel->canonical_name + "', not '" + pep::canonicalize_name(r.name) + "'");
    ref.wheel = std::move(*wheel);
    return ref;
}

}  // namespace envbox::lock
