#include "envbox/index/http.hpp"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <thread>

#include "envbox/index/http_cache.hpp"
#include "envbox/index/retry.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/unique_fd.hpp"
#include "index/http_body.hpp"
#include "index/http_loop.hpp"

namespace fs = std::filesystem;

// One request's steps, in order: the cache (`http_cache`), the plan, and per attempt the
// request setup, redirect policy and credentials by origin, the transfer on the client's loop
// (`http_loop`), the body caps (`http_body`), the retry decision (`retry`), and the answer
// (a 304 revalidating the cached page).

namespace envbox::index {
namespace {

// What a request needs for every attempt, worked out once.
struct Plan {
    std::string shown;  // the URL as messages name it (userinfo redacted)
    bool https = false;
    bool own_origin = false;  // the URL is on the origin the request's credentials belong to
    std::uint64_t max_bytes = 0;
    std::optional<std::uint64_t> range_length;  // of a range request
    std::vector<std::string> headers;           // the request's, and revalidation's
    long timeout_s = 30;
    std::string ca_file;  // when the request names none
};

Plan plan_request(const HttpRequest& req, int fd, const std::optional<CachedPage>& cached,
                  const HttpOptions& options) {
    Plan p;
    p.shown = redact_url(req.url);
    std::string scheme = req.url.substr(0, 8);
    for (auto& ch : scheme)
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    p.https = scheme == "https://";
    p.own_origin = !req.credential_origin.empty() && url_origin(req.url) == req.credential_origin;
    p.max_bytes = req.max_bytes ? req.max_bytes : fd >= 0 ? kMaxDownloadBytes : kMaxPageBytes;
    if (req.range) p.range_length = range_length(*req.range);
    p.headers = req.headers;
    // Cache revalidation: the server answers 304 when the cached page is still current.
    if (cached && !cached->etag.empty()) p.headers.push_back("If-None-Match: " + cached->etag);
    if (cached && !cached->last_modified.empty())
        p.headers.push_back("If-Modified-Since: " + cached->last_modified);
    p.timeout_s = options.timeout_s;
    p.ca_file = options.ca_file;
    return p;
}

void rewind_part(int fd, const std::string& shown) {
    // Emptied, and written from its start again (not at the old end, which leaves a hole).
    if (::ftruncate(fd, 0) != 0 || ::lseek(fd, 0, SEEK_SET) != 0)
        throw Error(ErrorCode::generic,
                    "cannot rewind the download of " + shown + ": " + std::strerror(errno));
}

// A fresh attempt's state. A download keeps whatever an earlier attempt (or an earlier run)
// wrote and asks for the rest; a part already past the size cannot be the file: start over.
void start_attempt(Collected& got, const HttpRequest& req, const Plan& plan, int fd,
                   int upload_fd) {
    got = Collected{};
    got.fd = fd;
    if (upload_fd >= 0) {
        got.upload.fd = upload_fd;
        got.upload.offset = req.upload_offset;
        got.upload.length = req.upload_length;
    } else {
        got.upload.memory = &req.body;
    }
    got.on_bytes = &req.on_bytes;
    got.hash = req.hash;
    got.max_bytes = plan.max_bytes;
    got.range_length = plan.range_length;
    if (fd < 0) return;
    off_t end = ::lseek(fd, 0, SEEK_END);
    if (end < 0)
        throw Error(ErrorCode::generic,
                    "cannot read the download of " + plan.shown + ": " + std::strerror(errno));
    got.offset = static_cast<std::uint64_t>(end);
    if (got.offset > plan.max_bytes) {
        rewind_part(fd, plan.shown);
        got.offset = 0;
    }
}

// One libcurl easy handle and what it points into, released together.
struct Easy {
    CURL* c = curl_easy_init();
    curl_slist* headers = nullptr;
    char errbuf[CURL_ERROR_SIZE] = {0};
    Easy() = default;
    Easy(const Easy&) = delete;
    Easy& operator=(const Easy&) = delete;
    ~Easy() {
        curl_easy_cleanup(c);
        curl_slist_free_all(headers);
    }
};

// A method with a body (PUT, POST, PATCH) sends it through `on_upload` with its length stated
// (no chunked encoding, no `Expect: 100-continue` round trip); DELETE sends none.
void set_method(Easy& e, const HttpRequest& req, Collected& got) {
    CURL* c = e.c;
    if (req.method == "DELETE") {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "DELETE");
        return;
    }
    const std::uint64_t length = got.upload.memory ? got.upload.memory->size() : got.upload.length;
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(length));
    curl_easy_setopt(c, CURLOPT_READFUNCTION, on_upload);
    curl_easy_setopt(c, CURLOPT_READDATA, &got.upload);
    curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, on_upload_seek);
    curl_easy_setopt(c, CURLOPT_SEEKDATA, &got.upload);
    if (req.method != "PUT") curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req.method.c_str());
    e.headers = curl_slist_append(e.headers, "Expect:");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, e.headers);
}

// Request setup: the URL and headers (a Range for a range request or for the rest of a part),
// the body and header callbacks into `got`, timeouts, encoding and HTTP version.
void set_request(Easy& e, const HttpRequest& req, const Plan& plan, Collected& got, CURLSH* share) {
    CURL* c = e.c;
    got.easy = c;
    for (const auto& h : plan.headers)
        e.headers = curl_slist_append(e.headers, h.c_str());
    if (plan.own_origin && !req.authorization.empty())
        e.headers = curl_slist_append(e.headers, ("Authorization: " + req.authorization).c_str());
    if (req.range) {
        std::string r = req.range->starts_with("bytes=") ? req.range->substr(6) : *req.range;
        e.headers = curl_slist_append(e.headers, ("Range: bytes=" + r).c_str());
    } else if (got.offset > 0) {
        e.headers = curl_slist_append(e.headers,
                                      ("Range: bytes=" + std::to_string(got.offset) + "-").c_str());
    }
    curl_easy_setopt(c, CURLOPT_URL, req.url.c_str());
    curl_easy_setopt(c, CURLOPT_SHARE, share);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, e.headers);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &got);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &got);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, plan.timeout_s);
    // A transfer that moves less than 1 KiB/s for that long has stalled: retried.
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, plan.timeout_s);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, e.errbuf);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "envbox/" ENVBOX_VERSION);
    // A HEAD is asked for the file's own length, which an encoding would change.
    if (req.head)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    else
        curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
    if (!req.method.empty() && req.method != "GET") set_method(e, req, got);
    curl_easy_setopt(c, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS);
    // Rather a stream on a live HTTP/2 connection than a new one. Only over TLS, where ALPN can
    // offer HTTP/2: over plain http every connection is HTTP/1.1, and waiting would run all
    // requests to one host one after another.
    if (plan.https) curl_easy_setopt(c, CURLOPT_PIPEWAIT, 1L);
}

// Redirects are followed (10 at most), but credentials stay with the first host and an https
// request never continues over http (a redirect to http is refused), and a redirect to a URL
// with userinfo fails (libcurl would send it as Basic auth). A request that follows its
// redirects itself gets the 3xx.
void set_redirect_policy(CURL* c, const HttpRequest& req, const Plan& plan) {
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, req.follow_redirects ? 1L : 0L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(c, CURLOPT_UNRESTRICTED_AUTH, 0L);
    curl_easy_setopt(c, CURLOPT_DISALLOW_USERNAME_IN_URL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, plan.https ? "https" : "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, plan.https ? "https" : "http,https");
}

// Credentials by origin: explicit ones only to the origin they belong to; ~/.netrc entries name
// a host, not a scheme, so they are read for https, and for plain http only on the origin of a
// plain-http index the user configured. TLS is verified against the request's CA bundle or
// the client's.
void set_credentials(CURL* c, const HttpRequest& req, const Plan& plan) {
    curl_easy_setopt(c, CURLOPT_NETRC,
                     static_cast<long>(plan.https || plan.own_origin ? CURL_NETRC_OPTIONAL
                                                                     : CURL_NETRC_IGNORED));
    if (plan.own_origin && req.username)
        curl_easy_setopt(c, CURLOPT_USERNAME, req.username->c_str());
    if (plan.own_origin && req.password)
        curl_easy_setopt(c, CURLOPT_PASSWORD, req.password->c_str());
    if (req.ca_file)
        curl_easy_setopt(c, CURLOPT_CAINFO, req.ca_file->c_str());
    else if (!plan.ca_file.empty())
        curl_easy_setopt(c, CURLOPT_CAINFO, plan.ca_file.c_str());
}

// What the attempt came back with, for the retry decision.
AttemptResult result_of(CURLcode rc, const Easy& e, long status, const Collected& got) {
    AttemptResult r;
    r.curl_code = rc;
    if (rc != CURLE_OK)
        r.curl_error =
            std::string(curl_easy_strerror(rc)) + (e.errbuf[0] ? std::string(": ") + e.errbuf : "");
    // OpenSSL's words for a server that answered a TLS hello in plain HTTP.
    if (rc == CURLE_SSL_CONNECT_ERROR &&
        r.curl_error.find("wrong version number") != std::string::npos)
        r.curl_error +=
            " (the server answered in plain HTTP: give its URL as http://, or "
            "--plain-http for a registry)";
    r.status = status;
    if (got.fd >= 0) r.resumed_from = got.offset;
    if (auto it = got.headers.find("content-range"); it != got.headers.end())
        r.content_range = it->second;
    if (auto it = got.headers.find("retry-after"); it != got.headers.end())
        r.retry_after = it->second;
    return r;
}

// Body caps: a failed write, headers or a body past their limits end the request (no retry).
// A range request answered with the whole file, too big to hold, is returned `too_large`.
std::optional<HttpResponse> check_body(const HttpRequest& req, const Plan& plan,
                                       const Collected& got, int fd) {
    if (got.write_failed) {
        // A full disk: the part holds the space the user needs back, and is dropped.
        if ((got.write_errno == ENOSPC || got.write_errno == EDQUOT) && fd >= 0)
            (void)!::ftruncate(fd, 0);
        throw Error(ErrorCode::generic, "cannot write the download of " + plan.shown + ": " +
                                            std::strerror(got.write_errno));
    }
    if (got.headers_over)
        throw Error(ErrorCode::network, plan.shown + " sent more than " +
                                            describe_bytes(kMaxHeaderBytes) + " of headers");
    if (!got.over_limit) return std::nullopt;
    if (fd >= 0) {
        // Nothing past the size is kept, nor the part before it: it cannot be the file.
        (void)!::ftruncate(fd, 0);
        if (!req.max_bytes_what.empty())
            throw Error(ErrorCode::integrity,
                        plan.shown + " is larger than " + req.max_bytes_what + " " +
                            std::to_string(plan.max_bytes) +
                            " (stopped at the first byte past it; the partial file was removed)");
        throw Error(ErrorCode::network,
                    plan.shown + " is larger than " + describe_bytes(plan.max_bytes) +
                        ", the limit for a download of unknown size (stopped there)");
    }
    if (got.status == 206 && got.range_length)
        throw Error(ErrorCode::network, plan.shown + " answered a request for " +
                                            std::to_string(*got.range_length) +
                                            " bytes with more than that");
    if (req.range && got.status == 200) {
        // Ranges ignored, and the whole file is too big to hold: the caller downloads it.
        HttpResponse resp;
        resp.status = 200;
        resp.too_large = true;
        resp.effective_url = req.url;
        return resp;
    }
    throw Error(
        ErrorCode::network,
        plan.shown + " sent more than " + describe_bytes(plan.max_bytes) + " (the limit for " +
            (req.max_bytes_what.empty() ? std::string("an index page") : req.max_bytes_what) +
            "); stopped there");
}

HttpResponse from_cache(CachedPage&& page) {
    return {200, std::move(page.body), page.content_type, page.effective_url, true};
}

std::string header_or_empty(const Collected& got, const std::string& name) {
    auto it = got.headers.find(name);
    return it == got.headers.end() ? std::string() : it->second;
}

// The page cache's side of one request: the entry's path, what it held, and the time now.
struct CacheSlot {
    fs::path path;
    std::optional<CachedPage> cached;
    long long now = 0;
};

// One attempt's answer: its status, the URL it came from after redirects, and the file its
// body went to (-1: none).
struct Answer {
    long status = 0;
    std::string effective_url;
    int fd = -1;
};

// The answer, once no retry is due: a 304 refreshes and returns the cached page; a 200 to a
// cacheable request is stored for next time.
HttpResponse accept_response(const HttpRequest& req, Collected& got, Answer answer, CacheSlot& slot,
                             HttpStats& stats) {
    long status = answer.status;
    const int fd = answer.fd;
    std::string effective_url = std::move(answer.effective_url);
    std::optional<CachedPage>& cached = slot.cached;
    const fs::path& cache_path = slot.path;
    const long long now = slot.now;
    stats.bytes += got.body.size() + got.written;
    if (fd >= 0 && status == 206 && !req.range) status = 200;  // resumed: the file is whole
    if (status == 304 && cached) {
        stats.cache_hits++;
        cached->stored_at = now;
        if (auto it = got.headers.find("cache-control"); it != got.headers.end())
            cached->max_age = max_age_of(it->second);
        write_cached_page(cache_path, *cached);
        return from_cache(std::move(*cached));
    }
    HttpResponse resp;
    resp.status = status;
    resp.effective_url = std::move(effective_url);
    resp.body = std::move(got.body);
    resp.content_type = header_or_empty(got, "content-type");
    resp.content_range = header_or_empty(got, "content-range");
    resp.headers = got.headers;
    if (auto len = header_or_empty(got, "content-length");
        !len.empty() && len.find_first_not_of("0123456789") == std::string::npos)
        resp.content_length = std::strtoull(len.c_str(), nullptr, 10);
    if (req.cache && !req.range && !req.head && status == 200) {
        CachedPage page;
        page.url = req.url;
        page.etag = header_or_empty(got, "etag");
        page.last_modified = header_or_empty(got, "last-modified");
        page.content_type = resp.content_type;
        page.effective_url = resp.effective_url;
        page.stored_at = now;
        page.max_age = got.headers.count("cache-control")
                           ? max_age_of(header_or_empty(got, "cache-control"))
                           : 0;
        page.body = resp.body;
        write_cached_page(cache_path, page);
    }
    return resp;
}

}  // namespace

std::string default_ca_bundle() {
    for (const char* p :
         {"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
          "/etc/ssl/ca-bundle.pem", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
          "/etc/ssl/cert.pem"}) {
        std::error_code ec;
        if (fs::exists(p, ec)) return p;
    }
    return {};
}

HttpClient::HttpClient(HttpOptions options)
    : shared_(std::make_unique<Shared>()), options_(std::move(options)) {
    if (options_.ca_file.empty()) options_.ca_file = default_ca_bundle();
}

HttpClient::~HttpClient() = default;

HttpResponse HttpClient::get(const HttpRequest& req) {
    return transfer(req, -1);
}

// The steps of one request: the cache (fresh, or revalidated), the plan, then attempts until
// one is the answer or the retry decision gives up.
HttpResponse HttpClient::transfer(const HttpRequest& req, int fd) {
    refuse_userinfo(req.url);
    CacheSlot slot;
    slot.path = cache_entry_path(options_.cache_dir, req.url, req.headers);
    if (req.cache && !req.range && !req.head) slot.cached = read_cached_page(slot.path);
    slot.now = static_cast<long long>(std::time(nullptr));
    std::optional<CachedPage>& cached = slot.cached;
    if (cached && (options_.offline || is_fresh(*cached, slot.now))) {
        stats_.cache_hits++;
        return from_cache(std::move(*cached));
    }
    if (options_.offline)
        throw Error(ErrorCode::network,
                    "--offline: " + redact_url(req.url) + " is not in the cache");
    const Plan plan = plan_request(req, fd, cached, options_);
    UniqueFd upload;
    if (!req.upload_file.empty()) {
        upload.reset(::open(req.upload_file.c_str(), O_RDONLY | O_CLOEXEC));
        if (!upload)
            throw Error(ErrorCode::generic,
                        "cannot read " + req.upload_file.string() + ": " + std::strerror(errno));
    }
    std::mt19937 rng(std::random_device{}());
    std::string last_error;
    int attempts = 0;
    Collected got;
    for (int attempt = 1; attempt <= kMaxAttempts; ++attempt) {
        attempts = attempt;
        start_attempt(got, req, plan, fd, upload.get());
        Easy easy;
        set_request(easy, req, plan, got, shared_->share);
        set_redirect_policy(easy.c, req, plan);
        set_credentials(easy.c, req, plan);
        int now_in = ++stats_.in_flight;
        for (int peak = stats_.peak_in_flight.load();
             now_in > peak && !stats_.peak_in_flight.compare_exchange_weak(peak, now_in);) {
        }
        CURLcode rc = shared_->perform(easy.c);
        --stats_.in_flight;
        stats_.requests++;
        long status = 0;
        char* eff = nullptr;
        curl_easy_getinfo(easy.c, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(easy.c, CURLINFO_EFFECTIVE_URL, &eff);
        std::string effective_url = eff ? eff : req.url;
        if (auto too_large = check_body(req, plan, got, fd)) return *too_large;
        RetryDecision d = decide_retry(result_of(rc, easy, status, got));
        using Action = RetryDecision::Action;
        if (d.action == Action::accept)
            return accept_response(req, got, {status, std::move(effective_url), fd}, slot, stats_);
        if (d.action == Action::complete) {
            HttpResponse resp;
            resp.status = 200;
            resp.effective_url = std::move(effective_url);
            return resp;
        }
        if (d.action == Action::restart) rewind_part(fd, plan.shown);
        last_error = d.error;
        if (d.action == Action::fail || attempt == kMaxAttempts) break;
        const int jitter = std::uniform_int_distribution<int>(0, 100)(rng);
        std::this_thread::sleep_for(retry_delay(attempt, d.retry_after_s, jitter));
    }
    throw Error(ErrorCode::network,
                "cannot fetch " + plan.shown + ": " + last_error +
                    (attempts > 1 ? " (after " + std::to_string(attempts) + " attempts)" : ""));
}

}  // namespace envbox::index
