#include "envbox/pep/filename.hpp"

#include "envbox/pep/name.hpp"
#include "pep/text.hpp"

namespace envbox::pep {
namespace {

Error invalid_wheel(std::string_view filename, std::string_view why) {
    return Error(
        ErrorCode::invalid_input,
        "invalid wheel file name '" + quoted_for_error(filename) + "': " + std::string(why));
}

// The name part of a wheel: word characters (any non-ASCII byte counts as a letter, as
// Python's Unicode `\w` would) and `.`; `__` is an unescaped `-` and so invalid.
bool is_wheel_name_part(std::string_view s) {
    if (s.empty() || s.find("__") != std::string_view::npos) return false;
    for (char c : s) {
        auto u = static_cast<unsigned char>(c);
        if (!(is_ascii_alnum(c) || c == '_' || c == '.' || u >= 0x80)) return false;
    }
    return true;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    c = lower(c);
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

}  // namespace

Result<WheelFilename> WheelFilename::parse(std::string_view filename) {
    constexpr std::string_view ext = ".whl";
    if (filename.size() <= ext.size() || filename.substr(filename.size() - ext.size()) != ext)
        return invalid_wheel(filename, "must end with .whl");
    std::string_view stem = filename.substr(0, filename.size() - ext.size());
    std::vector<std::string_view> parts;
    for (std::size_t start = 0;;) {
        std::size_t dash = stem.find('-', start);
        parts.push_back(stem.substr(start, dash == std::string_view::npos ? dash : dash - start));
        if (dash == std::string_view::npos) break;
        start = dash + 1;
    }
    if (parts.size() != 5 && parts.size() != 6)
        return invalid_wheel(filename, "expected name-version[-build]-python-abi-platform");

    WheelFilename w;
    w.filename = std::string(filename);
    w.name = std::string(parts[0]);
    if (!is_wheel_name_part(parts[0])) return invalid_wheel(filename, "bad project name");
    w.canonical_name = canonicalize_name(parts[0]);
    w.version_text = std::string(parts[1]);
    auto v = Version::try_parse(parts[1]);
    if (!v) return invalid_wheel(filename, "bad version '" + w.version_text + "'");
    w.version = std::move(*v);
    if (parts.size() == 6) {
        std::string_view b = parts[2];
        std::size_t i = 0;
        BuildTag tag;
        if (!parse_u64(b, i, tag.number))
            return invalid_wheel(filename, "build tag must start with a digit");
        tag.rest = std::string(b.substr(i));
        w.build = std::move(tag);
    }
    const std::size_t t = parts.size() - 3;
    w.tag_text =
        std::string(parts[t]) + "-" + std::string(parts[t + 1]) + "-" + std::string(parts[t + 2]);
    TagParseOptions bounded;
    bounded.limit = kMaxWheelTags;
    auto tags = parse_tag(w.tag_text, bounded);
    if (!tags) return invalid_wheel(filename, tags.error().message());
    w.tags = std::move(*tags);
    return w;
}

Result<SdistFilename> SdistFilename::parse(std::string_view filename) {
    std::string_view stem;
    for (std::string_view ext : {std::string_view(".tar.gz"), std::string_view(".zip")})
        if (filename.size() > ext.size() && filename.substr(filename.size() - ext.size()) == ext)
            stem = filename.substr(0, filename.size() - ext.size());
    auto bad = [&](std::string_view why) {
        return Error(ErrorCode::invalid_input, "invalid sdist file name '" + std::string(filename) +
                                                   "': " + std::string(why));
    };
    if (stem.empty()) return bad("must end with .tar.gz or .zip");
    std::size_t dash = stem.rfind('-');
    if (dash == std::string_view::npos) return bad("expected name-version");
    SdistFilename s;
    s.name = std::string(stem.substr(0, dash));
    if (!is_valid_name(s.name)) return bad("bad project name");
    s.canonical_name = canonicalize_name(s.name);
    auto v = Version::try_parse(stem.substr(dash + 1));
    if (!v) return bad("bad version");
    s.version = std::move(*v);
    return s;
}

std::string percent_decode(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size()) {
            int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
            if (hi >= 0 && lo >= 0) {
                out += static_cast<char>(hi * 16 + lo);
                i += 2;
                continue;
            }
        }
        out += s[i];
    }
    return out;
}

std::string filename_from_url(std::string_view url) {
    std::size_t end = url.find_first_of("?#");
    if (end != std::string_view::npos) url = url.substr(0, end);
    std::size_t slash = url.find_last_of("/\\");
    if (slash != std::string_view::npos) url = url.substr(slash + 1);
    return percent_decode(url);
}

}  // namespace envbox::pep
