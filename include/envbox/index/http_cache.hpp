#pragma once
/// The HTTP client's on-disk cache of index pages (`store::Home::http_cache()`): one file per
/// request, named by the sha256 of its URL and header lines, holding a `kv` header block
/// (`envbox-http-cache 1`, then `url`, `etag`, `last-modified`, `content-type`,
/// `effective-url`, `stored-at`, `max-age` lines), a blank line, and the body as it came.
/// A page is fresh for `max-age` seconds after `stored-at` (answered without a request), then
/// revalidated with If-None-Match / If-Modified-Since (a 304 refreshes `stored-at`).
/// Best effort both ways: a damaged entry reads as none, and one that cannot be written only
/// costs a request next time.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace envbox::index {

/// One cached page.
struct CachedPage {
    std::string url, etag, last_modified, content_type, effective_url;
    long long stored_at = 0;  ///< seconds since the epoch
    long long max_age = 0;    ///< Cache-Control max-age; 0: revalidate every time
    std::string body;
};

/// The cache file of a request for `url` with these header lines.
std::filesystem::path cache_entry_path(const std::filesystem::path& cache_dir, std::string_view url,
                                       const std::vector<std::string>& headers);

/// The entry's bytes, exactly as envbox has always written them.
std::string serialise_cached_page(const CachedPage& page);

/// Reads what `serialise_cached_page` wrote; nullopt for anything else (another header, no
/// blank line, a header line over the bounds). Unknown keys and lines without a blank are
/// ignored; a number that does not parse reads as 0. `what` names the file in errors.
std::optional<CachedPage> parse_cached_page(std::string_view text, const std::string& what);

/// The entry at `path`; nullopt when there is none or it is damaged.
std::optional<CachedPage> read_cached_page(const std::filesystem::path& path);

/// Writes the entry atomically; a failure (read-only cache, a value with a line break) is
/// ignored.
void write_cached_page(const std::filesystem::path& path, const CachedPage& page);

/// Seconds a Cache-Control value lets a page be used unrevalidated: its `max-age`, 0 with
/// `no-store` / `no-cache` or none.
long long max_age_of(std::string_view cache_control);

/// True when `page` may be answered without a request at `now` (seconds since the epoch).
bool is_fresh(const CachedPage& page, long long now);

}  // namespace envbox::index
