#include "envbox/index/url.hpp"

#include <curl/curl.h>

#include <cctype>
#include <memory>
#include <utility>

namespace envbox::index {
namespace {

struct UrlDeleter {
    void operator()(CURLU* u) const { curl_url_cleanup(u); }
};
using Url = std::unique_ptr<CURLU, UrlDeleter>;

struct CurlString {
    char* p = nullptr;
    ~CurlString() { curl_free(p); }
};

// A reference or base as written in a page: blanks allowed (libcurl escapes them), any scheme.
constexpr unsigned int kParseFlags = CURLU_NON_SUPPORT_SCHEME | CURLU_ALLOW_SPACE;

// [start, end) of the userinfo and its '@' in `url`, when it has one.
std::optional<std::pair<std::size_t, std::size_t>> userinfo_span(std::string_view url) {
    auto scheme = url.find("://");
    if (scheme == std::string_view::npos) return std::nullopt;
    std::size_t start = scheme + 3;
    auto end = url.find_first_of("/?#", start);
    std::string_view authority =
        url.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    auto at = authority.rfind('@');
    if (at == std::string_view::npos) return std::nullopt;
    return std::make_pair(start, start + at + 1);
}

}  // namespace

std::string url_origin(std::string_view url) {
    // Parsed by libcurl's own URL parser, so the origin compared is the one it connects to.
    Url u(curl_url());
    if (curl_url_set(u.get(), CURLUPART_URL, std::string(url).c_str(), 0) != CURLUE_OK) return {};
    CurlString scheme, host, port;
    if (curl_url_get(u.get(), CURLUPART_SCHEME, &scheme.p, 0) != CURLUE_OK ||
        curl_url_get(u.get(), CURLUPART_HOST, &host.p, 0) != CURLUE_OK ||
        curl_url_get(u.get(), CURLUPART_PORT, &port.p, CURLU_DEFAULT_PORT) != CURLUE_OK)
        return {};
    std::string sch = scheme.p, h = host.p;
    for (auto* t : {&sch, &h})
        for (auto& ch : *t)
            ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (sch != "http" && sch != "https") return {};
    return sch + "://" + h + ":" + port.p;
}

std::string redact_url(std::string_view url) {
    auto span = userinfo_span(url);
    if (!span) return std::string(url);
    return std::string(url.substr(0, span->first)) + "***@" + std::string(url.substr(span->second));
}

std::string strip_userinfo(std::string_view url) {
    auto span = userinfo_span(url);
    if (!span) return std::string(url);
    return std::string(url.substr(0, span->first)) + std::string(url.substr(span->second));
}

std::optional<std::string> resolve_url(std::string_view base, std::string_view ref) {
    // An empty reference or a fragment alone is the base document (RFC 3986 5.2.2: the base's
    // path and query, the reference's fragment); libcurl 7.88 drops the base's last segment and
    // query there, so these two forms are resolved here.
    // A NUL would end the C string libcurl is given: what it parsed would not be the link.
    if (base.find('\0') != std::string_view::npos || ref.find('\0') != std::string_view::npos)
        return std::nullopt;
    if (ref.empty() || ref.front() == '#') {
        if (base.find("://") == std::string_view::npos) return std::nullopt;
        return std::string(base.substr(0, base.find('#'))) + std::string(ref);
    }
    Url u(curl_url());
    if (!u ||
        curl_url_set(u.get(), CURLUPART_URL, std::string(base).c_str(), kParseFlags) != CURLUE_OK)
        return std::nullopt;
    // With a base set, libcurl resolves a relative reference against it and takes an absolute
    // one as it is (RFC 3986 5.2, dot segments removed).
    if (curl_url_set(u.get(), CURLUPART_URL, std::string(ref).c_str(), kParseFlags) != CURLUE_OK)
        return std::nullopt;
    CurlString out;
    if (curl_url_get(u.get(), CURLUPART_URL, &out.p, 0) != CURLUE_OK) return std::nullopt;
    return std::string(out.p);
}

namespace {

// Where the path of `url` starts (after `scheme://authority`); npos without "://".
std::size_t path_start(const std::string& url) {
    const auto scheme = url.find("://");
    if (scheme == std::string::npos) return std::string::npos;
    const auto slash = url.find('/', scheme + 3);
    return slash == std::string::npos ? url.size() : slash;
}

}  // namespace

std::string rebase_url(const std::string& url, const std::string& from, const std::string& to) {
    std::string base = from, target = to;
    const std::size_t base_root = path_start(from), target_root = path_start(to);
    if (base_root == std::string::npos || target_root == std::string::npos) return url;
    for (;;) {
        if (url.size() > base.size() && url.compare(0, base.size(), base) == 0 &&
            url[base.size()] == '/')
            return target + url.substr(base.size());
        const auto cut = base.rfind('/'), target_cut = target.rfind('/');
        if (cut == std::string::npos || cut < base_root || target_cut == std::string::npos ||
            target_cut < target_root)
            return url;
        base.resize(cut);
        target.resize(target_cut);
    }
}

}  // namespace envbox::index
