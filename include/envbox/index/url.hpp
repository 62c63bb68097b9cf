#pragma once
/// URLs as the index layer handles them, all parsed by libcurl's own URL parser (`CURLU`), so
/// what is compared, joined and redacted is what libcurl connects to: the origin credentials
/// belong to, the form a URL takes in a message or a lock (userinfo redacted or stripped), and
/// RFC 3986 reference resolution of an index page's links.

#include <optional>
#include <string>
#include <string_view>

namespace envbox::index {

/// `scheme://host:port` of an absolute http(s) URL, lowercased, the port always written
/// (`https://pypi.org:443`); empty for anything else. Userinfo is not part of it.
std::string url_origin(std::string_view url);

/// `url` with any userinfo (`user:password@`) replaced by `***@`: the only form of a URL that
/// goes into a message, a log line or a lock.
std::string redact_url(std::string_view url);

/// `url` without its userinfo (`https://user:pw@host/x` → `https://host/x`).
std::string strip_userinfo(std::string_view url);

/// `ref` resolved against the absolute URL `base` (RFC 3986 section 5.2: `../`, `//host/x`,
/// `?q`, `#frag`, an absolute URL of any scheme libcurl parses), by `CURLU` with no decoding:
/// percent-escapes stay as written; libcurl writes a blank or a non-ASCII byte of a path as a
/// percent-escape, lowercases the scheme and removes dot segments. The base's userinfo is kept
/// for a reference on its host (it is the caller's to redact). nullopt when libcurl cannot read
/// `base` or `ref` as a URL (a control character, `mailto:x`, a URL over libcurl's length
/// limit): such a link names nothing envbox could fetch.
std::optional<std::string> resolve_url(std::string_view base, std::string_view ref);

/// `url`, a file an index at `from` serves, as the index at `to` would serve it: the longest
/// leading part of `from` (whole path segments, never less than its origin) that `url` lies
/// under is replaced by `to` shortened by as many segments (`http://m/pypi/simple` →
/// `https://pypi.org/simple` takes `http://m/pypi/packages/x.whl` to
/// `https://pypi.org/packages/x.whl`). A mirror and its canonical index share their layout below
/// that part; `url` is returned as it is when it lies elsewhere (another host: a CDN) or `to` has
/// fewer segments to give. Compared as written (no decoding); `from` and `to` have no trailing
/// slash.
std::string rebase_url(const std::string& url, const std::string& from, const std::string& to);

}  // namespace envbox::index
