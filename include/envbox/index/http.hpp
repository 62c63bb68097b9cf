#pragma once
/// The HTTP client of the index layer (libcurl): concurrent requests from any thread, all run by
/// one libcurl multi handle on one event-loop thread over pooled connections (keep-alive, HTTP/2
/// streams multiplexed where offered), downloads resumed with Range requests, retries with
/// exponential backoff and jitter on 5xx, 429 (Retry-After honoured), resets and timeouts; TLS
/// always verified (system CAs, `HttpOptions::ca_file`, or a per-request CA bundle); credentials
/// from
/// ~/.netrc or given explicitly, only to the origin they belong to (never to another host, on a
/// redirect or a link, and never over http once a request is https: https requests follow only
/// https redirects), and never from a URL's userinfo (refused); every body bounded (`max_bytes`);
/// and an on-disk cache of pages revalidated with ETag / Last-Modified (fresh within Cache-Control
/// max-age without a request).
///
/// Files: http.cpp runs transfers (the event loop, one request's steps), retry.hpp decides on
/// retries, http_cache.hpp is the page cache, url.hpp the origin and redaction rules.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envbox/index/url.hpp"
#include "envbox/util/sha256.hpp"

namespace envbox::index {

/// A download's sha256, taken from its bytes as they reach the file, so the file need not be
/// read again. It covers the file only when `whole` and `hashed` is the file's size: a part
/// file left by an earlier run and resumed is not hashed here (the caller hashes the file).
struct DownloadHash {
    Sha256 hash;
    std::uint64_t hashed = 0;  ///< bytes of the file, from its start, fed to `hash`
    bool whole = true;         ///< false once a write did not follow the bytes hashed
    /// `len` bytes written at file offset `at`: a write at 0 starts over (the part was emptied).
    void wrote(std::uint64_t at, const char* data, std::size_t len);
};

struct HttpRequest {
    /// Never with userinfo (`user:password@`): such a URL is refused (network, naming it
    /// redacted) before anything is sent or read from the cache, and a redirect to one fails.
    /// Credentials go in `username` / `password` / `authorization`, or ~/.netrc.
    std::string url;
    std::vector<std::string> headers;    ///< "Accept: …"
    std::optional<std::string> ca_file;  ///< CA bundle for this host
    std::optional<std::string> username, password;
    bool cache = false;  ///< use and fill the page cache
    std::optional<std::string> range =
        std::nullopt;  ///< "bytes=-65536", "bytes=100-199" (never cached)
    /// `download` only: called with each chunk's size as it reaches the file (any thread).
    std::function<void(std::uint64_t)> on_bytes = {};
    /// `download` only: fed the body's bytes as they reach the file (one request at a time).
    DownloadHash* hash = nullptr;
    /// `get` only: a HEAD (status and headers, no body, never cached), for a file's size.
    bool head = false;
    /// The origin (`url_origin` of the index's URL) that `username` / `password` belong to.
    /// They are attached only when this request's URL has exactly that origin (scheme, host and
    /// port), never to a host a page links to; ~/.netrc (matched by host by libcurl) is read for
    /// https requests, and for plain http only on that origin. Empty: no explicit credentials.
    std::string credential_origin = {};
    /// The most body bytes accepted, counted after Content-Encoding is decoded (0: the
    /// default, `kMaxPageBytes` in memory, `kMaxDownloadBytes` into a file). A download past
    /// it stops at the first byte over (integrity, exit 5: "larger than <max_bytes_what> N");
    /// an in-memory body past it is a network error (exit 4) naming the URL and the limit. A
    /// range request's 206 may carry no more than the range's length.
    std::uint64_t max_bytes = 0;
    std::string max_bytes_what = {};  ///< "the lock's size", for the download's message
    /// The method: empty is GET (a HEAD with `head`); "PUT", "POST", "PATCH" or "DELETE" for a
    /// registry's uploads (never cached). Such a request sends `body`, or with `upload_file`
    /// set, that file's `upload_length` bytes from `upload_offset` (read with pread, so a retry
    /// sends the same bytes again and a multi-GB file is never held in memory).
    std::string method = {};
    std::string body = {};
    std::filesystem::path upload_file = {};
    std::uint64_t upload_offset = 0, upload_length = 0;
    /// false: a redirect is returned as it is (its `location` in `HttpResponse::headers`), for a
    /// caller that follows it itself (a registry's blob redirect, followed without credentials).
    bool follow_redirects = true;
    /// An `Authorization` header value ("Bearer …", "Basic …"), sent by the same rule as
    /// `username` / `password`: only when the URL has exactly `credential_origin`.
    std::string authorization = {};
};

/// Limits on what a server may send (docs/indexes.md): an index page or any other body held in
/// memory, a PEP 658 metadata file, a download whose size nothing states, a response's headers.
inline constexpr std::uint64_t kMaxPageBytes = 64ull << 20;
inline constexpr std::uint64_t kMaxMetadataBytes = 16ull << 20;
inline constexpr std::uint64_t kMaxDownloadBytes = 16ull << 30;
inline constexpr std::uint64_t kMaxHeaderBytes = 1ull << 20;

struct HttpResponse {
    long status = 0;
    std::string body;
    std::string content_type;
    std::string effective_url;  ///< after redirects
    bool from_cache = false;
    std::string content_range = {};  ///< "bytes 100-199/5000" on a 206
    std::optional<std::uint64_t> content_length =
        std::nullopt;  ///< the Content-Length header, when sent
    /// A range request answered 200 (the whole file) with more than `max_bytes`: the transfer
    /// was stopped and `body` is empty; the caller downloads the file to disk instead.
    bool too_large = false;
    /// The final response's headers, names lowercased, the last value of each.
    std::map<std::string, std::string> headers = {};
};

struct HttpStats {
    std::atomic<std::uint64_t> requests{0};    ///< sent over the network
    std::atomic<std::uint64_t> cache_hits{0};  ///< answered from the cache (fresh or 304)
    std::atomic<std::uint64_t> bytes{0};
    std::atomic<int> in_flight{0};
    std::atomic<int> peak_in_flight{0};
};

/// The CA bundle to verify TLS with when nothing names one: the first that exists of the
/// locations Linux distributions use (Debian/Ubuntu, Fedora/RHEL, openSUSE, Alpine), so a
/// portable envbox verifies TLS on any of them. Empty: libcurl's default.
std::string default_ca_bundle();

/// What a client is set up with; the cli fills it from the command line and the environment.
struct HttpOptions {
    std::filesystem::path cache_dir;  ///< cached pages (`store::Home::http_cache()`)
    bool offline = false;             ///< answer only from the cache
    /// Seconds a connection may take, and a transfer may stall (under 1 KiB/s), before the
    /// attempt fails and is retried (the cli: `ENVBOX_HTTP_TIMEOUT` when a positive number).
    long timeout_s = 30;
    /// The CA bundle for requests that name none (the cli: `SSL_CERT_FILE` when set and not
    /// empty). Empty: `default_ca_bundle()`.
    std::string ca_file = {};
};

class HttpClient {
  public:
    explicit HttpClient(HttpOptions options);
    ~HttpClient();
    HttpClient(const HttpClient&) = delete;
    HttpClient& operator=(const HttpClient&) = delete;

    /// GET. Throws `Error` (network, exit 4) after retries are exhausted, naming the URL and the
    /// status or curl error; a 4xx other than 408/429 is returned, not thrown.
    HttpResponse get(const HttpRequest& request);

    /// GET into a file (no cache): for wheels and metadata files. Streams into
    /// `<destination>.part`, renamed into place when complete. `resumable`: a part left by a
    /// failed attempt (of this run or an earlier one) is kept and continued with a Range request
    /// (a server that answers 200 instead sends the whole file again), and a lock file keeps
    /// two processes from writing the same part; without it the part goes on failure. With
    /// `follow_redirects` false, any answer but 200 (a redirect, a 401) is returned, not thrown.
    HttpResponse download(const HttpRequest& request, const std::filesystem::path& destination,
                          bool resumable = false);

    const HttpStats& stats() const { return stats_; }

  private:
    /// One GET with retries; the body goes to `fd` when it is >= 0 (no cache then).
    HttpResponse transfer(const HttpRequest& request, int fd);

    struct Shared;

    std::unique_ptr<Shared> shared_;
    HttpOptions options_;
    HttpStats stats_;
};

}  // namespace envbox::index
