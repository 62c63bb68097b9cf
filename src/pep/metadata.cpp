#include "envbox/pep/metadata.hpp"

#include "envbox/pep/name.hpp"
#include "pep/text.hpp"

namespace envbox::pep {

std::vector<std::pair<std::string, std::string>> parse_headers(std::string_view text) {
    std::vector<std::pair<std::string, std::string>> out;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t eol = text.find('\n', pos);
        std::string_view line = text.substr(pos, eol == std::string_view::npos ? eol : eol - pos);
        pos = eol == std::string_view::npos ? text.size() : eol + 1;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty()) break;  // end of headers; the body follows
        if ((line[0] == ' ' || line[0] == '\t') && !out.empty()) {
            out.back().second += "\n";
            out.back().second += strip_ascii_space(line);
            continue;
        }
        std::size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;  // not a header: ignored, as email does
        out.emplace_back(std::string(strip_ascii_space(line.substr(0, colon))),
                         std::string(strip_ascii_space(line.substr(colon + 1))));
    }
    return out;
}

std::vector<std::string> CoreMetadata::get_all(std::string_view key) const {
    std::vector<std::string> out;
    const std::string want = ascii_lower(key);
    for (const auto& [k, v] : headers)
        if (ascii_lower(k) == want) out.push_back(v);
    return out;
}

Result<CoreMetadata> CoreMetadata::parse(std::string_view text) {
    CoreMetadata md;
    md.headers = parse_headers(text);
    auto bad = [](std::string why) {
        return Error(ErrorCode::invalid_input, "invalid core metadata: " + std::move(why));
    };
    auto one = [&](std::string_view key) -> std::optional<std::string> {
        auto all = md.get_all(key);
        if (all.empty()) return std::nullopt;
        return all.front();
    };

    auto mv = one("Metadata-Version");
    if (!mv) return bad("missing Metadata-Version");
    md.metadata_version = *mv;
    if (mv->empty() || (mv->front() != '1' && mv->front() != '2') ||
        (mv->size() > 1 && (*mv)[1] != '.'))
        return bad("unsupported Metadata-Version " + *mv);

    auto name = one("Name");
    if (!name || !is_valid_name(*name)) return bad("missing or invalid Name");
    md.name = *name;

    auto version = one("Version");
    if (!version) return bad("missing Version");
    auto v = Version::try_parse(*version);
    if (!v) return bad("Version '" + *version + "' is not PEP 440");
    md.version = std::move(*v);

    if (auto rp = one("Requires-Python")) {
        auto set = SpecifierSet::parse(*rp);
        if (!set) return bad("Requires-Python: " + set.error().message());
        md.requires_python = std::move(*set);
    }
    // A lock records at most lock::kMaxDependencies (4096) per package; real packages list a
    // few hundred at most, and each one is a page to fetch.
    constexpr std::size_t kMaxRequiresDist = 4096;
    const std::vector<std::string> requires_dist = md.get_all("Requires-Dist");
    if (requires_dist.size() > kMaxRequiresDist)
        return bad("more than " + std::to_string(kMaxRequiresDist) + " Requires-Dist fields");
    for (const auto& line : requires_dist) {
        auto req = Requirement::parse(line);
        if (!req) return bad("Requires-Dist '" + line + "': " + req.error().message());
        md.requires_dist.push_back(std::move(*req));
    }
    for (const auto& extra : md.get_all("Provides-Extra"))
        md.provides_extra.push_back(canonicalize_name(extra));
    return md;
}

}  // namespace envbox::pep
