#include "envbox/index/http_cache.hpp"

#include <cstdlib>

#include "envbox/index/http.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/kv.hpp"
#include "envbox/util/sha256.hpp"

namespace fs = std::filesystem;

namespace envbox::index {
namespace {

constexpr std::string_view kCacheHeader = "envbox-http-cache 1";

// A header line holds at most a response's headers (an ETag of kMaxHeaderBytes) or a URL.
constexpr kv::Limits kCacheLimits{.max_line_bytes = 2 * kMaxHeaderBytes, .max_lines = 64};

}  // namespace

fs::path cache_entry_path(const fs::path& cache_dir, std::string_view url,
                          const std::vector<std::string>& headers) {
    std::string key = std::string(url) + "\n";
    for (const auto& h : headers)
        key += h + "\n";
    return cache_dir / to_hex(sha256(key));
}

std::string serialise_cached_page(const CachedPage& c) {
    kv::Writer w(kCacheHeader, ' ', "the cached page of " + redact_url(c.url));
    w.add("url", c.url)
        .add("etag", c.etag)
        .add("last-modified", c.last_modified)
        .add("content-type", c.content_type)
        .add("effective-url", c.effective_url)
        .add("stored-at", std::to_string(c.stored_at))
        .add("max-age", std::to_string(c.max_age))
        .blank()
        .raw(c.body);
    return std::move(w).take();
}

std::optional<CachedPage> parse_cached_page(std::string_view text, const std::string& what) {
    kv::Reader r(text, what, ' ', kCacheLimits);
    auto head = r.next();
    if (!head || head->text != kCacheHeader) return std::nullopt;
    CachedPage c;
    for (;;) {
        auto l = r.next();
        if (!l) return std::nullopt;  // no blank line: not an entry envbox wrote
        if (l->text.empty()) break;
        if (!l->has_separator) continue;
        std::string v(l->value);
        if (l->key == "url")
            c.url = v;
        else if (l->key == "etag")
            c.etag = v;
        else if (l->key == "last-modified")
            c.last_modified = v;
        else if (l->key == "content-type")
            c.content_type = v;
        else if (l->key == "effective-url")
            c.effective_url = v;
        else if (l->key == "stored-at")
            c.stored_at = std::atoll(v.c_str());
        else if (l->key == "max-age")
            c.max_age = std::atoll(v.c_str());
    }
    c.body = std::string(r.rest());
    return c;
}

std::optional<CachedPage> read_cached_page(const fs::path& p) {
    std::error_code ec;
    if (!fs::exists(p, ec)) return std::nullopt;
    try {
        return parse_cached_page(read_file(p), p.string());
    } catch (const Error&) {
        return std::nullopt;  // unreadable or over the bounds: a miss
    }
}

void write_cached_page(const fs::path& p, const CachedPage& c) {
    try {
        std::string text = serialise_cached_page(c);
        std::error_code ec;
        fs::create_directories(p.parent_path(), ec);
        write_file_atomic(p, text, 0644, Durability::none);
    } catch (const Error&) {
        // a cache that cannot be written only costs a request next time
    }
}

long long max_age_of(std::string_view cache_control) {
    if (cache_control.find("no-store") != std::string_view::npos ||
        cache_control.find("no-cache") != std::string_view::npos)
        return 0;
    auto pos = cache_control.find("max-age=");
    if (pos == std::string_view::npos) return 0;
    return std::atoll(std::string(cache_control.substr(pos + 8)).c_str());
}

bool is_fresh(const CachedPage& page, long long now) {
    return page.max_age > 0 && now - page.stored_at < page.max_age;
}

}  // namespace envbox::index
