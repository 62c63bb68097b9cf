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
#include <future>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/sha256.hpp"

namespace fs = std::filesystem;

namespace envbox::index {

// Every transfer of a client runs on one libcurl multi handle, driven by one event-loop thread:
// connections are pooled and HTTP/2 streams multiplexed across all requests in flight, DNS
// answers and TLS sessions shared (CURLSH). Callers on any thread hand an easy handle to the loop
// and wait for its result; retries and backoff stay with the caller, so a sleeping retry never
// holds up other transfers.
struct HttpClient::Shared {
    CURLSH* share = nullptr;
    CURLM* multi = nullptr;
    std::mutex share_locks[CURL_LOCK_DATA_LAST];

    std::mutex mutex;  // guards incoming, stop, started
    std::vector<std::pair<CURL*, std::promise<CURLcode>*>> incoming;
    bool stop = false, started = false;
    std::thread loop;

    Shared() {
        static std::once_flag once;
        std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
        share = curl_share_init();
        curl_share_setopt(share, CURLSHOPT_LOCKFUNC, &Shared::lock);
        curl_share_setopt(share, CURLSHOPT_UNLOCKFUNC, &Shared::unlock);
        curl_share_setopt(share, CURLSHOPT_USERDATA, this);
        curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
        curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
        multi = curl_multi_init();
        curl_multi_setopt(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    }
    ~Shared() {
        {
            std::lock_guard guard(mutex);
            stop = true;
        }
        if (started) {
            curl_multi_wakeup(multi);
            loop.join();
        }
        curl_multi_cleanup(multi);
        curl_share_cleanup(share);
    }
    static void lock(CURL*, curl_lock_data data, curl_lock_access, void* self) {
        static_cast<Shared*>(self)->share_locks[data].lock();
    }
    static void unlock(CURL*, curl_lock_data data, void* self) {
        static_cast<Shared*>(self)->share_locks[data].unlock();
    }

    // Runs `easy` to completion on the loop; returns its result.
    CURLcode perform(CURL* easy) {
        std::promise<CURLcode> done;
        auto result = done.get_future();
        {
            std::lock_guard guard(mutex);
            if (!started) {
                loop = std::thread([this] { run(); });
                started = true;
            }
            incoming.emplace_back(easy, &done);
        }
        curl_multi_wakeup(multi);
        return result.get();
    }

    void run() {
        std::unordered_map<CURL*, std::promise<CURLcode>*> running;
        for (;;) {
            {
                std::lock_guard guard(mutex);
                for (auto& [easy, promise] : incoming) {
                    CURLMcode rc = curl_multi_add_handle(multi, easy);
                    if (rc != CURLM_OK)
                        promise->set_value(CURLE_FAILED_INIT);
                    else
                        running.emplace(easy, promise);
                }
                incoming.clear();
                if (stop && running.empty()) return;
            }
            int active = 0;
            curl_multi_perform(multi, &active);
            int queued = 0;
            while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
                if (msg->msg != CURLMSG_DONE) continue;
                CURL* easy = msg->easy_handle;
                CURLcode rc = msg->data.result;
                curl_multi_remove_handle(multi, easy);
                auto it = running.find(easy);
                if (it == running.end()) continue;
                auto* promise = it->second;
                running.erase(it);
                promise->set_value(rc);
            }
            curl_multi_poll(multi, nullptr, 0, 1000, nullptr);
        }
    }
};

namespace {

struct Collected {
    std::string body;
    int fd = -1;  // a download's file (else the body is collected in memory)
    CURL* easy = nullptr;
    std::uint64_t offset = 0;  // bytes of the file already there (asked for the rest)
    std::uint64_t written = 0;
    bool decided = false;  // the first body byte of this response has been seen
    bool to_file = false;  // this response's body goes to the file
    bool write_failed = false;
    int write_errno = 0;  // errno of the failed write (ENOSPC, EDQUOT, EIO, …)
    const std::function<void(std::uint64_t)>* on_bytes = nullptr;
    std::map<std::string, std::string> headers;  // lowercase names, last value
    // Limits: the body may hold `max_bytes` (a 206 only `range_length`), decided on its first byte.
    std::uint64_t max_bytes = 0;
    std::optional<std::uint64_t> range_length;
    std::uint64_t limit = 0;
    long status = 0;          // of the response whose body this is
    bool over_limit = false;  // stopped at the first byte past `limit`
    std::uint64_t header_bytes = 0;
    bool headers_over = false;
};

// The limit for this response's body, once its status is known.
std::uint64_t body_limit(const Collected& c) {
    if (c.status == 206 && c.range_length) return *c.range_length;
    return c.max_bytes;
}

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
    auto* c = static_cast<Collected*>(user);
    std::size_t len = size * n;
    if (!c->decided) {
        c->decided = true;
        curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &c->status);
        c->limit = body_limit(*c);
        if (c->fd >= 0) {
            // Only a 200 or 206 body belongs in the file (an error page never does); a 200 to a
            // resuming request means the server sent the whole file again: start over.
            c->to_file = c->status == 200 || c->status == 206;
            if (c->status == 200 && c->offset > 0) {
                if (::ftruncate(c->fd, 0) != 0 || ::lseek(c->fd, 0, SEEK_SET) != 0) {
                    c->write_failed = true;
                    c->write_errno = errno;
                    return 0;
                }
                c->offset = 0;
            }
        }
    }
    // Bytes are counted as decoded (a gzip bomb is stopped by what it inflates to), and the
    // transfer stops before the first byte past the limit is kept.
    if (c->to_file) {
        if (c->offset + c->written + len > c->limit) {
            c->over_limit = true;
            return 0;
        }
        if (!write_all_fd(c->fd, data, len)) {
            c->write_failed = true;
            c->write_errno = errno;
            return 0;
        }
        c->written += len;
        if (c->on_bytes && *c->on_bytes) (*c->on_bytes)(len);
    } else if (c->fd >= 0) {
        if (c->body.size() < (64 << 10))
            c->body.append(data, len);  // an error page, for the message
    } else {
        if (c->body.size() + len > c->limit) {
            c->over_limit = true;
            return 0;
        }
        c->body.append(data, len);
    }
    return len;
}

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
    auto* c = static_cast<Collected*>(user);
    std::string_view line(data, size * n);
    if (line.starts_with("HTTP/")) {  // a new response (redirect, 100-continue)
        c->headers.clear();
        c->header_bytes = 0;
    }
    c->header_bytes += line.size();
    if (c->header_bytes > kMaxHeaderBytes) {
        c->headers_over = true;
        return 0;
    }
    auto colon = line.find(':');
    if (colon != std::string_view::npos) {
        std::string name(line.substr(0, colon));
        for (auto& ch : name)
            ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        std::string_view value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
            value.remove_prefix(1);
        while (!value.empty() &&
               (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
            value.remove_suffix(1);
        c->headers[name] = std::string(value);
    }
    return size * n;
}

// A cached page: header block ("key: value" lines, blank line) then the body.
struct CachedPage {
    std::string url, etag, last_modified, content_type, effective_url;
    long long stored_at = 0, max_age = 0;
    std::string body;
};

std::optional<CachedPage> read_cache(const fs::path& p) {
    std::error_code ec;
    if (!fs::exists(p, ec)) return std::nullopt;
    std::string text;
    try {
        text = read_file(p);
    } catch (const Error&) {
        return std::nullopt;
    }
    auto end = text.find("\n\n");
    if (end == std::string::npos || !text.starts_with("envbox-http-cache 1\n")) return std::nullopt;
    CachedPage c;
    std::istringstream s(text.substr(0, end));
    std::string line;
    while (std::getline(s, line)) {
        auto sp = line.find(' ');
        if (sp == std::string::npos) continue;
        std::string k = line.substr(0, sp), v = line.substr(sp + 1);
        if (k == "url")
            c.url = v;
        else if (k == "etag")
            c.etag = v;
        else if (k == "last-modified")
            c.last_modified = v;
        else if (k == "content-type")
            c.content_type = v;
        else if (k == "effective-url")
            c.effective_url = v;
        else if (k == "stored-at")
            c.stored_at = std::atoll(v.c_str());
        else if (k == "max-age")
            c.max_age = std::atoll(v.c_str());
    }
    c.body = text.substr(end + 2);
    return c;
}

void write_cache(const fs::path& p, const CachedPage& c) {
    std::string text = "envbox-http-cache 1\nurl " + c.url + "\netag " + c.etag +
                       "\nlast-modified " + c.last_modified + "\ncontent-type " + c.content_type +
                       "\neffective-url " + c.effective_url + "\nstored-at " +
                       std::to_string(c.stored_at) + "\nmax-age " + std::to_string(c.max_age) +
                       "\n\n" + c.body;
    try {
        std::error_code ec;
        fs::create_directories(p.parent_path(), ec);
        write_file_atomic(p, text, 0644, Durability::none);
    } catch (const Error&) {
        // a cache that cannot be written only costs a request next time
    }
}

long long max_age_of(const std::string& cache_control) {
    if (cache_control.find("no-store") != std::string::npos ||
        cache_control.find("no-cache") != std::string::npos)
        return 0;
    auto pos = cache_control.find("max-age=");
    if (pos == std::string::npos) return 0;
    return std::atoll(cache_control.c_str() + pos + 8);
}

// "64 MiB" for a limit, "1234 bytes" for anything not a whole MiB.
std::string describe_bytes(std::uint64_t n) {
    if (n >= (1u << 20) && n % (1u << 20) == 0) return std::to_string(n >> 20) + " MiB";
    return std::to_string(n) + " bytes";
}

// The length a Range header value asks for ("bytes=-65536", "bytes=100-199").
std::optional<std::uint64_t> range_length(const std::string& range) {
    std::string r = range.starts_with("bytes=") ? range.substr(6) : range;
    auto dash = r.find('-');
    if (dash == std::string::npos) return std::nullopt;
    auto digits = [](const std::string& t) {
        return !t.empty() && t.find_first_not_of("0123456789") == std::string::npos;
    };
    std::string a = r.substr(0, dash), b = r.substr(dash + 1);
    if (a.empty() && digits(b)) return std::strtoull(b.c_str(), nullptr, 10);
    if (digits(a) && digits(b)) {
        auto from = std::strtoull(a.c_str(), nullptr, 10),
             to = std::strtoull(b.c_str(), nullptr, 10);
        if (to >= from) return to - from + 1;
    }
    return std::nullopt;
}

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
    CURLU* u = curl_url();
    std::string out;
    if (curl_url_set(u, CURLUPART_URL, std::string(url).c_str(), 0) == CURLUE_OK) {
        char *scheme = nullptr, *host = nullptr, *port = nullptr;
        if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
            curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
            curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
            std::string sch = scheme, h = host;
            for (auto* t : {&sch, &h})
                for (auto& ch : *t)
                    ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
            if (sch == "http" || sch == "https") out = sch + "://" + h + ":" + port;
        }
        curl_free(scheme);
        curl_free(host);
        curl_free(port);
    }
    curl_url_cleanup(u);
    return out;
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

long stall_timeout() {
    static const long seconds = [] {
        const char* env = std::getenv("ENVBOX_HTTP_TIMEOUT");
        long v = env && *env ? std::atol(env) : 0;
        return v > 0 ? v : 30L;
    }();
    return seconds;
}

const std::string& system_ca_bundle() {
    static const std::string bundle = [] {
        if (const char* env = std::getenv("SSL_CERT_FILE"); env && *env) return std::string(env);
        for (const char* p :
             {"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
              "/etc/ssl/ca-bundle.pem", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
              "/etc/ssl/cert.pem"}) {
            std::error_code ec;
            if (fs::exists(p, ec)) return std::string(p);
        }
        return std::string();
    }();
    return bundle;
}

HttpClient::HttpClient(fs::path cache_dir, bool offline)
    : shared_(std::make_unique<Shared>()), cache_dir_(std::move(cache_dir)), offline_(offline) {}

HttpClient::~HttpClient() = default;

HttpResponse HttpClient::get(const HttpRequest& req) {
    return transfer(req, -1);
}

HttpResponse HttpClient::transfer(const HttpRequest& req, int fd) {
    fs::path cache_path = cache_dir_ / to_hex(sha256(req.url + "\n" + [&] {
                              std::string h;
                              for (const auto& x : req.headers)
                                  h += x + "\n";
                              return h;
                          }()));
    std::optional<CachedPage> cached =
        req.cache && !req.range && !req.head ? read_cache(cache_path) : std::nullopt;
    long long now = static_cast<long long>(std::time(nullptr));
    if (cached &&
        (offline_ || (cached->max_age > 0 && now - cached->stored_at < cached->max_age))) {
        stats_.cache_hits++;
        return {200, std::move(cached->body), cached->content_type, cached->effective_url, true};
    }
    if (offline_)
        throw Error(ErrorCode::network,
                    "--offline: " + redact_url(req.url) + " is not in the cache");
    const std::string shown = redact_url(req.url);  // what messages name
    // Credentials only for the origin they belong to; https never falls back to http.
    const bool https = [&] {
        std::string scheme = req.url.substr(0, 8);
        for (auto& ch : scheme)
            ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        return scheme == "https://";
    }();
    const bool own_origin =
        !req.credential_origin.empty() && url_origin(req.url) == req.credential_origin;
    const std::uint64_t max_bytes = req.max_bytes ? req.max_bytes
                                    : fd >= 0     ? kMaxDownloadBytes
                                                  : kMaxPageBytes;

    std::vector<std::string> headers = req.headers;
    if (cached && !cached->etag.empty()) headers.push_back("If-None-Match: " + cached->etag);
    if (cached && !cached->last_modified.empty())
        headers.push_back("If-Modified-Since: " + cached->last_modified);
    Collected got;
    HttpResponse resp;
    // The transfer, with retries.
    std::mt19937 rng(std::random_device{}());
    constexpr int kAttempts = 5;
    std::string last_error;
    int attempts = 0;
    for (int attempt = 1; attempt <= kAttempts; ++attempt) {
        attempts = attempt;
        got = Collected{};
        got.fd = fd;
        got.on_bytes = &req.on_bytes;
        got.max_bytes = max_bytes;
        if (req.range) got.range_length = range_length(*req.range);
        if (fd >= 0) {
            // Whatever an earlier attempt (or an earlier run) wrote stays: ask for the rest. A
            // part already past the size cannot be the file: start over.
            off_t end = ::lseek(fd, 0, SEEK_END);
            if (end < 0)
                throw Error(ErrorCode::generic,
                            "cannot read the download of " + shown + ": " + std::strerror(errno));
            got.offset = static_cast<std::uint64_t>(end);
            if (got.offset > max_bytes) {
                if (::ftruncate(fd, 0) != 0)
                    throw Error(ErrorCode::generic, "cannot rewind the download of " + shown +
                                                        ": " + std::strerror(errno));
                got.offset = 0;
            }
        }
        CURL* c = curl_easy_init();
        got.easy = c;
        char errbuf[CURL_ERROR_SIZE] = {0};
        curl_slist* list = nullptr;
        for (const auto& h : headers)
            list = curl_slist_append(list, h.c_str());
        curl_easy_setopt(c, CURLOPT_URL, req.url.c_str());
        if (req.range) {
            std::string r = req.range->starts_with("bytes=") ? req.range->substr(6) : *req.range;
            list = curl_slist_append(list, ("Range: bytes=" + r).c_str());
        } else if (got.offset > 0) {
            list = curl_slist_append(list,
                                     ("Range: bytes=" + std::to_string(got.offset) + "-").c_str());
        }
        curl_easy_setopt(c, CURLOPT_SHARE, shared_->share);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &got);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, &got);
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
        curl_easy_setopt(c, CURLOPT_UNRESTRICTED_AUTH, 0L);  // credentials stay with the first host
        // An https request never continues over http (a redirect to http is refused).
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, https ? "https" : "http,https");
        curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, https ? "https" : "http,https");
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, stall_timeout());
        // A transfer that moves less than 1 KiB/s for that long has stalled: retried.
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, stall_timeout());
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
        curl_easy_setopt(c, CURLOPT_USERAGENT, "envbox/" ENVBOX_VERSION);
        // A HEAD is asked for the file's own length, which an encoding would change.
        if (req.head)
            curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
        else
            curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
        curl_easy_setopt(c, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS);
        // Rather a stream on a live HTTP/2 connection than a new one. Only over TLS, where ALPN can
        // offer HTTP/2: over plain http every connection is HTTP/1.1, and waiting would run all
        // requests to one host one after another.
        if (https) curl_easy_setopt(c, CURLOPT_PIPEWAIT, 1L);
        // ~/.netrc entries name a host, not a scheme: read for https, and for plain http only on
        // the origin of a plain-http index the user configured.
        curl_easy_setopt(
            c, CURLOPT_NETRC,
            static_cast<long>(https || own_origin ? CURL_NETRC_OPTIONAL : CURL_NETRC_IGNORED));
        if (own_origin && req.username)
            curl_easy_setopt(c, CURLOPT_USERNAME, req.username->c_str());
        if (own_origin && req.password)
            curl_easy_setopt(c, CURLOPT_PASSWORD, req.password->c_str());
        if (req.ca_file)
            curl_easy_setopt(c, CURLOPT_CAINFO, req.ca_file->c_str());
        else if (!system_ca_bundle().empty())
            curl_easy_setopt(c, CURLOPT_CAINFO, system_ca_bundle().c_str());
        int now_in = ++stats_.in_flight;
        for (int peak = stats_.peak_in_flight.load();
             now_in > peak && !stats_.peak_in_flight.compare_exchange_weak(peak, now_in);) {
        }
        CURLcode rc = shared_->perform(c);
        --stats_.in_flight;
        stats_.requests++;
        long status = 0;
        char* eff = nullptr;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &eff);
        resp.effective_url = eff ? eff : req.url;
        curl_easy_cleanup(c);
        curl_slist_free_all(list);
        if (got.write_failed) {
            // A full disk: the part holds the space the user needs back, and is dropped.
            if ((got.write_errno == ENOSPC || got.write_errno == EDQUOT) && fd >= 0)
                (void)!::ftruncate(fd, 0);
            throw Error(ErrorCode::generic, "cannot write the download of " + shown + ": " +
                                                std::strerror(got.write_errno));
        }
        if (got.headers_over)
            throw Error(ErrorCode::network, shown + " sent more than " +
                                                describe_bytes(kMaxHeaderBytes) + " of headers");
        if (got.over_limit) {
            if (fd >= 0) {
                // Nothing past the size is kept, nor the part before it: it cannot be the file.
                (void)!::ftruncate(fd, 0);
                if (!req.max_bytes_what.empty())
                    throw Error(
                        ErrorCode::integrity,
                        shown + " is larger than " + req.max_bytes_what + " " +
                            std::to_string(max_bytes) +
                            " (stopped at the first byte past it; the partial file was removed)");
                throw Error(ErrorCode::network,
                            shown + " is larger than " + describe_bytes(max_bytes) +
                                ", the limit for a download of unknown size (stopped there)");
            }
            if (got.status == 206 && got.range_length)
                throw Error(ErrorCode::network, shown + " answered a request for " +
                                                    std::to_string(*got.range_length) +
                                                    " bytes with more than that");
            if (req.range && got.status == 200) {
                // Ranges ignored, and the whole file is too big to hold: the caller downloads it.
                resp.status = 200;
                resp.too_large = true;
                resp.effective_url = req.url;
                return resp;
            }
            throw Error(ErrorCode::network,
                        shown + " sent more than " + describe_bytes(max_bytes) +
                            " (the limit for " +
                            (req.max_bytes_what.empty() ? std::string("an index page")
                                                        : req.max_bytes_what) +
                            "); stopped there");
        }
        bool transient = false;
        long long retry_after = -1;
        if (rc != CURLE_OK) {
            last_error =
                std::string(curl_easy_strerror(rc)) + (errbuf[0] ? std::string(": ") + errbuf : "");
            transient = rc == CURLE_COULDNT_CONNECT || rc == CURLE_OPERATION_TIMEDOUT ||
                        rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR ||
                        rc == CURLE_PARTIAL_FILE || rc == CURLE_GOT_NOTHING || rc == CURLE_HTTP2 ||
                        rc == CURLE_HTTP2_STREAM;
        } else if (fd >= 0 && got.offset > 0 && status == 416) {
            // Nothing left to send: the file is complete when the size the server gives is
            // what we have; otherwise start over.
            auto it = got.headers.find("content-range");
            auto slash = it == got.headers.end() ? std::string::npos : it->second.find('/');
            if (slash != std::string::npos &&
                std::strtoull(it->second.c_str() + slash + 1, nullptr, 10) == got.offset) {
                resp.status = 200;
                return resp;
            }
            if (::ftruncate(fd, 0) != 0)
                throw Error(ErrorCode::generic,
                            "cannot rewind the download of " + shown + ": " + std::strerror(errno));
            last_error = "HTTP 416 for a resumed download; starting over";
            transient = true;
        } else if (fd >= 0 && got.offset > 0 && status == 206 &&
                   !got.headers["content-range"].starts_with("bytes " + std::to_string(got.offset) +
                                                             "-")) {
            // Not the range asked for: those bytes cannot be appended.
            if (::ftruncate(fd, 0) != 0)
                throw Error(ErrorCode::generic,
                            "cannot rewind the download of " + shown + ": " + std::strerror(errno));
            last_error = "HTTP 206 with an unexpected range (" + got.headers["content-range"] +
                         "); starting over";
            transient = true;
        } else if (status >= 500 || status == 429 || status == 408) {
            last_error = "HTTP " + std::to_string(status);
            transient = true;
            if (auto it = got.headers.find("retry-after"); it != got.headers.end())
                retry_after = std::atoll(it->second.c_str());
        } else {
            stats_.bytes += got.body.size() + got.written;
            if (fd >= 0 && status == 206 && !req.range) status = 200;  // resumed: the file is whole
            if (status == 304 && cached) {
                stats_.cache_hits++;
                cached->stored_at = now;
                if (auto it = got.headers.find("cache-control"); it != got.headers.end())
                    cached->max_age = max_age_of(it->second);
                write_cache(cache_path, *cached);
                return {200, std::move(cached->body), cached->content_type, cached->effective_url,
                        true};
            }
            resp.status = status;
            resp.body = std::move(got.body);
            if (auto it = got.headers.find("content-type"); it != got.headers.end())
                resp.content_type = it->second;
            if (auto it = got.headers.find("content-range"); it != got.headers.end())
                resp.content_range = it->second;
            if (auto it = got.headers.find("content-length");
                it != got.headers.end() && !it->second.empty() &&
                it->second.find_first_not_of("0123456789") == std::string::npos)
                resp.content_length = std::strtoull(it->second.c_str(), nullptr, 10);
            if (req.cache && !req.range && !req.head && status == 200) {
                CachedPage page;
                page.url = req.url;
                page.etag = got.headers.count("etag") ? got.headers["etag"] : "";
                page.last_modified =
                    got.headers.count("last-modified") ? got.headers["last-modified"] : "";
                page.content_type = resp.content_type;
                page.effective_url = resp.effective_url;
                page.stored_at = now;
                page.max_age = got.headers.count("cache-control")
                                   ? max_age_of(got.headers["cache-control"])
                                   : 0;
                page.body = resp.body;
                write_cache(cache_path, page);
            }
            return resp;
        }
        if (!transient || attempt == kAttempts) break;
        long long delay_ms =
            retry_after >= 0 ? std::min<long long>(retry_after, 30) * 1000
                             : (100LL << attempt) + std::uniform_int_distribution<int>(0, 100)(rng);
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    }
    throw Error(ErrorCode::network,
                "cannot fetch " + shown + ": " + last_error +
                    (attempts > 1 ? " (after " + std::to_string(attempts) + " attempts)" : ""));
}

HttpResponse HttpClient::download(const HttpRequest& req, const fs::path& destination,
                                  bool resumable) {
    // Streamed to `<destination>.part` (wheels are gigabytes) and renamed into place once
    // complete. A resumable download keeps the part when it fails, and the next attempt asks
    // only for the rest; a lock file keeps two processes from writing one part.
    fs::path part = destination;
    part += ".part";
    std::optional<FileLock> busy;
    if (resumable) {
        fs::path lock_path = destination;
        lock_path += ".lock";
        busy.emplace(lock_path);
        std::error_code ec;
        if (fs::exists(destination, ec))
            return {200, {}, {}, req.url, true};  // another process finished it
    }
    ScopedRemove remove(resumable ? fs::path() : part);
    int fd = ::open(part.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (resumable ? 0 : O_TRUNC), 0644);
    if (fd < 0)
        throw Error(ErrorCode::generic,
                    "cannot create " + part.string() + ": " + std::strerror(errno));
    HttpRequest r = req;
    r.cache = false;
    r.range.reset();
    HttpResponse resp;
    try {
        resp = transfer(r, fd);
    } catch (...) {
        struct stat st {};
        if (::fstat(fd, &st) == 0 && st.st_size == 0)
            ::unlink(part.c_str());  // nothing worth resuming
        ::close(fd);
        throw;
    }
    ::close(fd);
    if (resp.status != 200) {
        if (resumable) ::unlink(part.c_str());  // a 404 part is worth nothing
        throw Error(ErrorCode::network, "cannot download " + redact_url(req.url) + ": HTTP " +
                                            std::to_string(resp.status));
    }
    std::error_code ec;
    fs::rename(part, destination, ec);
    if (ec)
        throw Error(ErrorCode::generic, "cannot move " + part.string() + " to " +
                                            destination.string() + ": " + ec.message());
    remove.release();
    return resp;
}

}  // namespace envbox::index
