#include "envbox/index/simple.hpp"

#include <cctype>
#include <nlohmann/json.hpp>

#include "envbox/index/url.hpp"
#include "envbox/pep/filename.hpp"

namespace envbox::index {
namespace {

char lower(char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

void append_utf8(std::string& out, unsigned long cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xc0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xe0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
        out += static_cast<char>(0xf0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    }
}

struct Tag {
    std::string name;  // lowercase
    std::vector<std::pair<std::string, std::optional<std::string>>>
        attrs;  // lowercase name → raw value
    bool closing = false;

    std::optional<std::string_view> attr(std::string_view n) const {
        for (const auto& [k, v] : attrs)
            if (k == n)
                return v ? std::optional<std::string_view>(*v)
                         : std::optional<std::string_view>("");
        return std::nullopt;
    }
    bool has(std::string_view n) const {
        for (const auto& [k, v] : attrs)
            if (k == n) return true;
        return false;
    }
    bool has_value(std::string_view n) const {
        for (const auto& [k, v] : attrs)
            if (k == n) return v.has_value();
        return false;
    }
};

// Reads the tag starting at html[i] == '<'; advances i past '>'.
std::optional<Tag> read_tag(std::string_view html, std::size_t& i) {
    std::size_t j = i + 1;
    Tag t;
    if (j < html.size() && html[j] == '/') {
        t.closing = true;
        ++j;
    }
    std::size_t start = j;
    while (j < html.size() && (std::isalnum(static_cast<unsigned char>(html[j])) || html[j] == '!'))
        ++j;
    for (std::size_t k = start; k < j; ++k)
        t.name += lower(html[k]);
    for (;;) {
        while (j < html.size() && std::isspace(static_cast<unsigned char>(html[j])))
            ++j;
        if (j >= html.size()) return std::nullopt;
        if (html[j] == '>') {
            i = j + 1;
            return t;
        }
        if (html[j] == '/') {
            ++j;
            continue;
        }
        std::size_t ns = j;
        while (j < html.size() && !std::isspace(static_cast<unsigned char>(html[j])) &&
               html[j] != '=' && html[j] != '>' && html[j] != '/')
            ++j;
        std::string name;
        for (std::size_t k = ns; k < j; ++k)
            name += lower(html[k]);
        while (j < html.size() && std::isspace(static_cast<unsigned char>(html[j])))
            ++j;
        std::optional<std::string> value;
        if (j < html.size() && html[j] == '=') {
            ++j;
            while (j < html.size() && std::isspace(static_cast<unsigned char>(html[j])))
                ++j;
            if (j < html.size() && (html[j] == '"' || html[j] == '\'')) {
                char q = html[j++];
                std::size_t vs = j;
                while (j < html.size() && html[j] != q)
                    ++j;
                value = std::string(html.substr(vs, j - vs));
                if (j < html.size()) ++j;
            } else {
                std::size_t vs = j;
                while (j < html.size() && !std::isspace(static_cast<unsigned char>(html[j])) &&
                       html[j] != '>')
                    ++j;
                value = std::string(html.substr(vs, j - vs));
            }
        }
        if (!name.empty()) t.attrs.emplace_back(std::move(name), std::move(value));
    }
}

bool starts_with_nocase(std::string_view s, std::string_view prefix) {
    if (s.size() < prefix.size()) return false;
    for (std::size_t i = 0; i < prefix.size(); ++i)
        if (lower(s[i]) != prefix[i]) return false;
    return true;
}

bool is_http_url(std::string_view url) {
    return starts_with_nocase(url, "http://") || starts_with_nocase(url, "https://");
}

// A remote page links only to http(s): a `file:` (or any other) link would make envbox read
// local files a server chose. Only a `file:` index may name local files.
std::optional<Error> refuse_foreign_scheme(const IndexFile& f, std::string_view page_url) {
    if (!is_http_url(page_url) || is_http_url(f.url)) return std::nullopt;
    auto colon = f.url.find(':');
    return Error(
        ErrorCode::network,
        "index page " + redact_url(page_url) + " links to a " +
            (colon == std::string::npos ? std::string("non-http") : f.url.substr(0, colon)) +
            " URL (" + f.filename + "); a remote index may only link to http(s) files");
}

// The file a link names, or nullopt for a link that is no URL libcurl can read (nothing to fetch).
std::optional<IndexFile> file_from_url(std::string_view url, std::string_view page_url) {
    auto absolute = resolve_url(page_url, url);
    if (!absolute) return std::nullopt;
    IndexFile f;
    if (auto h = url_hash(*absolute)) f.hashes[h->first] = h->second;
    f.url = absolute->substr(0, absolute->find('#'));
    f.filename = pep::filename_from_url(f.url);
    return f;
}

}  // namespace

bool is_known_hash(std::string_view a) {
    for (std::string_view k : {"md5", "sha1", "sha224", "sha256", "sha384", "sha512", "blake2b",
                               "blake2s", "sha3_224", "sha3_256", "sha3_384", "sha3_512"})
        if (a == k) return true;
    return false;
}

std::optional<std::pair<std::string, std::string>> url_hash(std::string_view url) {
    auto hash = url.find('#');
    if (hash == std::string_view::npos) return std::nullopt;
    std::string_view frag = url.substr(hash + 1);
    while (!frag.empty()) {
        auto amp = frag.find('&');
        std::string_view pair = frag.substr(0, amp);
        frag.remove_prefix(amp == std::string_view::npos ? frag.size() : amp + 1);
        auto eq = pair.find('=');
        if (eq == std::string_view::npos) continue;
        std::string_view name = pair.substr(0, eq);
        if (name == "sha1" || name == "sha224" || name == "sha384" || name == "sha256" ||
            name == "sha512" || name == "md5")
            return std::make_pair(std::string(name), std::string(pair.substr(eq + 1)));
    }
    return std::nullopt;
}

std::string html_unescape(std::string_view s) {
    static const std::pair<std::string_view, std::string_view> named[] = {
        {"amp", "&"},   {"lt", "<"},   {"gt", ">"},
        {"quot", "\""}, {"apos", "'"}, {"nbsp", "\xc2\xa0"}};
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '&') {
            out += s[i];
            continue;
        }
        // A reference is short: the semicolon is looked for in the next few characters only, so
        // a value of a million '&' decodes in linear time.
        auto semi = s.substr(i, 12).find(';');
        if (semi != std::string_view::npos) semi += i;
        if (semi == std::string_view::npos || semi - i > 10) {
            // HTML5's legacy references without the semicolon (`&lt 1`).
            bool legacy = false;
            for (const auto& [n, v] : named)
                if (n != "apos" && n != "nbsp" && s.substr(i + 1, n.size()) == n) {
                    out += v;
                    i += n.size();
                    legacy = true;
                    break;
                }
            if (!legacy) out += s[i];
            continue;
        }
        std::string_view ent = s.substr(i + 1, semi - i - 1);
        bool done = false;
        if (!ent.empty() && ent[0] == '#') {
            unsigned long cp = 0;
            bool hex = ent.size() > 1 && (ent[1] == 'x' || ent[1] == 'X');
            std::string digits(ent.substr(hex ? 2 : 1));
            if (!digits.empty()) {
                try {
                    cp = std::stoul(digits, nullptr, hex ? 16 : 10);
                    // Not a Unicode scalar value: U+FFFD, as HTML5 decodes it.
                    if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0) cp = 0xfffd;
                    append_utf8(out, cp);
                    done = true;
                } catch (const std::exception&) {
                }
            }
        } else {
            for (const auto& [n, v] : named)
                if (ent == n) {
                    out += v;
                    done = true;
                }
        }
        if (done)
            i = semi;
        else
            out += s[i];
    }
    return out;
}

std::string join_url(std::string_view base, std::string_view ref) {
    return resolve_url(base, ref).value_or(std::string(ref));
}

std::optional<std::map<std::string, std::string>> parse_metadata_attribute(
    std::optional<std::string_view> value) {
    if (!value) return std::nullopt;
    std::map<std::string, std::string> hashes;
    auto eq = value->find('=');
    if (eq != std::string_view::npos) {
        std::string algo(value->substr(0, eq));
        if (is_known_hash(algo)) hashes[algo] = std::string(value->substr(eq + 1));
    }
    return hashes;
}

Result<ProjectPage> parse_html_page(std::string_view html, std::string_view page_url) {
    ProjectPage page;
    std::string base(page_url);
    for (std::size_t i = 0; i < html.size();) {
        auto lt = html.find('<', i);
        if (lt == std::string_view::npos) break;
        i = lt;
        if (html.substr(i, 4) == "<!--") {
            auto end = html.find("-->", i + 4);
            i = end == std::string_view::npos ? html.size() : end + 3;
            continue;
        }
        auto tag = read_tag(html, i);
        if (!tag) break;
        if (tag->closing) continue;
        if (tag->name == "base") {
            if (auto href = tag->attr("href"))
                base = resolve_url(page_url, html_unescape(*href)).value_or(base);
            continue;
        }
        if (tag->name != "a") continue;
        auto href = tag->attr("href");
        if (!href || href->empty()) continue;
        auto file = file_from_url(html_unescape(*href), base);
        if (!file) continue;
        IndexFile& f = *file;
        if (auto refused = refuse_foreign_scheme(f, page_url)) return *refused;
        if (tag->has_value("data-requires-python")) {
            std::string rp = html_unescape(*tag->attr("data-requires-python"));
            if (!rp.empty()) f.requires_python = rp;
        }
        if (tag->has("data-yanked")) {
            f.yanked = true;
            if (tag->has_value("data-yanked"))
                f.yanked_reason = html_unescape(*tag->attr("data-yanked"));
        }
        std::optional<std::string_view> meta = tag->attr("data-core-metadata");
        if (!meta) meta = tag->attr("data-dist-info-metadata");
        if (auto m = parse_metadata_attribute(meta)) {
            f.has_metadata = true;
            f.metadata_hashes = *m;
        }
        page.files.push_back(std::move(f));
    }
    return page;
}

Result<ProjectPage> parse_json_page(std::string_view text, std::string_view page_url) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const std::exception& e) {
        return Error(ErrorCode::network, std::string("invalid JSON project page ") +
                                             redact_url(page_url) + ": " + e.what());
    }
    ProjectPage page;
    if (!j.is_object() || !j.contains("files") || !j["files"].is_array())
        return Error(ErrorCode::network,
                     "JSON project page " + redact_url(page_url) + " has no files list");
    for (const auto& jf : j["files"]) {
        if (!jf.is_object() || !jf.contains("url") || !jf["url"].is_string()) continue;
        auto file = file_from_url(jf["url"].get<std::string>(), page_url);
        if (!file) continue;
        IndexFile& f = *file;
        if (auto refused = refuse_foreign_scheme(f, page_url)) return *refused;
        if (jf.contains("filename") && jf["filename"].is_string())
            f.filename = jf["filename"].get<std::string>();
        if (jf.contains("hashes") && jf["hashes"].is_object())
            for (const auto& [k, v] : jf["hashes"].items())
                if (v.is_string()) f.hashes[k] = v.get<std::string>();
        if (jf.contains("requires-python") && jf["requires-python"].is_string())
            f.requires_python = jf["requires-python"].get<std::string>();
        if (jf.contains("yanked")) {
            const auto& y = jf["yanked"];
            if (y.is_boolean())
                f.yanked = y.get<bool>();
            else if (y.is_string())
                f.yanked = true, f.yanked_reason = y.get<std::string>();
        }
        const nlohmann::json* meta = nullptr;
        if (jf.contains("core-metadata"))
            meta = &jf["core-metadata"];
        else if (jf.contains("dist-info-metadata"))
            meta = &jf["dist-info-metadata"];
        if (meta) {
            if (meta->is_boolean())
                f.has_metadata = meta->get<bool>();
            else if (meta->is_object()) {
                f.has_metadata = true;
                for (const auto& [k, v] : meta->items())
                    if (v.is_string()) f.metadata_hashes[k] = v.get<std::string>();
            }
        }
        if (jf.contains("size") && jf["size"].is_number_unsigned())
            f.size = jf["size"].get<std::uint64_t>();
        if (jf.contains("upload-time") && jf["upload-time"].is_string())
            f.upload_time = jf["upload-time"].get<std::string>();
        page.files.push_back(std::move(f));
    }
    return page;
}

}  // namespace envbox::index
