#pragma once
/// The simple repository API: PEP 503 HTML and PEP 691 JSON project pages, with PEP 592
/// (yanked), PEP 658/714 (metadata files) and hash fragments. Pure: parses text already fetched.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envbox/index/url.hpp"
#include "envbox/util/error.hpp"

namespace envbox::index {

/// One file a project page lists.
struct IndexFile {
    std::string filename;                       ///< percent-decoded
    std::string url;                            ///< absolute, without the fragment
    std::map<std::string, std::string> hashes;  ///< algorithm → hex digest
    std::optional<std::string> requires_python;
    bool yanked = false;
    std::optional<std::string> yanked_reason;
    bool has_metadata = false;  ///< `<url>.metadata` exists (PEP 658/714)
    std::map<std::string, std::string> metadata_hashes;
    std::optional<std::uint64_t> size;
    std::optional<std::string> upload_time;
};

struct ProjectPage {
    std::vector<IndexFile> files;
};

/// Hash algorithms hashlib guarantees, the ones a fragment or a JSON page may name.
bool is_known_hash(std::string_view algorithm);

/// `#sha256=…` (among `&`-separated pairs) of a URL: {algorithm, value}.
std::optional<std::pair<std::string, std::string>> url_hash(std::string_view url);

/// Decodes HTML character references (`&gt;`, `&#62;`, `&#x3e;`, `&amp;`, …), once, in
/// linear time (a reference is at most 10 characters; a code point that is no Unicode scalar
/// value becomes U+FFFD).
std::string html_unescape(std::string_view s);

/// Resolves `ref` against `base` (RFC 3986 reference resolution, as browsers and pip do):
/// `resolve_url`, or `ref` as it is when libcurl cannot read it as a URL.
std::string join_url(std::string_view base, std::string_view ref);

/// A PEP 503 page: every `<a href>`, with `data-requires-python` (unescaped), `data-yanked`,
/// `data-core-metadata` / `data-dist-info-metadata`; `<base href>` honoured. A page whose URL
/// is http(s) may link only to http(s) files: any other scheme (`file:`) is an error naming
/// the page (code network); only a `file:` index may link to local files. A link libcurl cannot
/// read as a URL (`resolve_url` gives nullopt: `mailto:`, a control character) names nothing to
/// fetch and is skipped. Linear in the page.
Result<ProjectPage> parse_html_page(std::string_view html, std::string_view page_url);

/// A PEP 691 JSON page (`application/vnd.pypi.simple.v1+json`), with the same rule on schemes.
Result<ProjectPage> parse_json_page(std::string_view json, std::string_view page_url);

/// The metadata attribute of one anchor as PEP 714 reads it: absent → nullopt; present →
/// hashes (empty when the value is `true`, empty, or names an unknown algorithm).
std::optional<std::map<std::string, std::string>> parse_metadata_attribute(
    std::optional<std::string_view> value);

}  // namespace envbox::index
