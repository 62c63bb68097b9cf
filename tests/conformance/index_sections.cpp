// Conformance rows for the simple repository API (simple_index.json): anchor attributes,
// metadata attributes, hash fragments and a PEP 691 JSON page.

#include "conformance/suite.hpp"
#include "envbox/index/simple.hpp"

namespace conformance {

using namespace envbox;

namespace {

json metadata_json(const index::IndexFile& f) {
    if (!f.has_metadata) return nullptr;
    json hashes = f.metadata_hashes.empty() ? json(nullptr) : json(f.metadata_hashes);
    return json{{"hashes", hashes}};
}

}  // namespace

void index_sections(Suite& s) {
    const json data = s.load("simple_index.json");
    s.rows(data, "html_anchor_attributes", [&](const json& r, std::string& why) {
        auto page = index::parse_html_page(r["anchor_html"].get<std::string>(),
                                           "https://example.com/simple/pkg/");
        if (!page || page->files.size() != 1) return why = "no link parsed", false;
        const auto& f = page->files[0];
        std::string attr = r["attribute"].get<std::string>();
        json got;
        if (attr == "requires_python")
            got = f.requires_python ? json(*f.requires_python) : json(nullptr);
        else if (attr == "yanked_reason")
            got = f.yanked_reason ? json(*f.yanked_reason) : json(nullptr);
        else if (attr == "metadata_file") {
            got = metadata_json(f);
            if (r.contains("file_hashes") && json(f.hashes) != r["file_hashes"])
                return why = "file hashes " + json(f.hashes).dump(), false;
        } else {
            return why = "unknown attribute " + attr, false;
        }
        why = got.dump();
        return got == r["expected"];
    });
    s.rows(data, "html_metadata_attribute", [&](const json& r, std::string& why) {
        std::optional<std::string> value;
        if (!r["data_dist_info_metadata"].is_null())
            value = r["data_dist_info_metadata"].get<std::string>();
        auto m = index::parse_metadata_attribute(value ? std::optional<std::string_view>(*value)
                                                       : std::nullopt);
        json got = m ? json{{"hashes", m->empty() ? json(nullptr) : json(*m)}} : json(nullptr);
        why = got.dump();
        return got == r["expected"];
    });
    s.rows(data, "url_hash_fragment", [&](const json& r, std::string& why) {
        auto h = index::url_hash(r["url"].get<std::string>());
        json got = h ? json{{"name", h->first}, {"value", h->second}} : json(nullptr);
        why = got.dump();
        return got == r["expected"];
    });
    // json_page is one object: one row per expected link, plus the metadata URL.
    s.section = "json_page";
    s.index = 0;
    const json& jp = data["sections"]["json_page"];
    auto page = index::parse_json_page(jp["page"].dump(), jp["page_url"].get<std::string>());
    const json& expected = jp["expected_links"];
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const json& e = expected[i];
        bool ok = page && i < page->files.size();
        std::string why = ok ? "" : "missing link";
        if (ok) {
            const auto& f = page->files[i];
            json got{
                {"url", f.url},
                {"requires_python", f.requires_python ? json(*f.requires_python) : json(nullptr)},
                {"yanked_reason", f.yanked_reason ? json(*f.yanked_reason) : json(nullptr)},
                {"hashes", f.hashes},
                {"metadata_file", metadata_json(f)}};
            ok = got == e;
            why = got.dump();
        }
        s.record(ok, e, why);
        ++s.index;
    }
    bool meta_ok = page && page->files.size() > 2 &&
                   page->files[2].url + ".metadata" ==
                       jp["expected_metadata_url_of_link_2"].get<std::string>();
    s.record(meta_ok, jp["expected_metadata_url_of_link_2"], "metadata url");
}

}  // namespace conformance
