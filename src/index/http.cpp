#include "envbox/index/http.hpp"

#include <curl/curl.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <cstring>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/sha256.hpp"

namespace fs = std::filesystem;

namespace envbox::index {

// One CURLSH for the process's requests: connections, DNS and TLS sessions are reused across
// threads (libcurl locks them through these callbacks).
struct HttpClient::Shared {
    CURLSH* share = nullptr;
    std::mutex locks[CURL_LOCK_DATA_LAST];

    Shared() {
        static std::once_flag once;
        std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
        share = curl_share_init();
        curl_share_setopt(share, CURLSHOPT_LOCKFUNC, &Shared::lock);
        curl_share_setopt(share, CURLSHOPT_UNLOCKFUNC, &Shared::unlock);
        curl_share_setopt(share, CURLSHOPT_USERDATA, this);
        curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
        curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
        curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    }
    ~Shared() { curl_share_cleanup(share); }
    static void lock(CURL*, curl_lock_data data, curl_lock_access, void* self) {
        static_cast<Shared*>(self)->locks[data].lock();
    }
    static void unlock(CURL*, curl_lock_data data, void* self) { static_cast<Shared*>(self)->locks[data].unlock(); }
};

namespace {

struct Collected {
    std::string body;
    int fd = -1;
    bool write_failed = false;
    std::map<std::string, std::string> headers;  // lowercase names, last value
};

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
    auto* c = static_cast<Collected*>(user);
    std::size_t len = size * n;
    if (c->fd >= 0) {
        if (!write_all_fd(c->fd, data, len)) {
            c->write_failed = true;
            return 0;
        }
    } else {
        c->body.append(data, len);
    }
    return len;
}

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
    auto* c = static_cast<Collected*>(user);
    std::string_view line(data, size * n);
    if (line.starts_with("HTTP/")) c->headers.clear();  // a new response (redirect, 100-continue)
    auto colon = line.find(':');
    if (colon != std::string_view::npos) {
        std::string name(line.substr(0, colon));
        for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        std::string_view value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
        while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.remove_suffix(1);
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
        if (k == "url") c.url = v;
        else if (k == "etag") c.etag = v;
        else if (k == "last-modified") c.last_modified = v;
        else if (k == "content-type") c.content_type = v;
        else if (k == "effective-url") c.effective_url = v;
        else if (k == "stored-at") c.stored_at = std::atoll(v.c_str());
        else if (k == "max-age") c.max_age = std::atoll(v.c_str());
    }
    c.body = text.substr(end + 2);
    return c;
}

void write_cache(const fs::path& p, const CachedPage& c) {
    std::string text = "envbox-http-cache 1\nurl " + c.url + "\netag " + c.etag + "\nlast-modified " + c.last_modified +
                       "\ncontent-type " + c.content_type + "\neffective-url " + c.effective_url + "\nstored-at " +
                       std::to_string(c.stored_at) + "\nmax-age " + std::to_string(c.max_age) + "\n\n" + c.body;
    try {
        std::error_code ec;
        fs::create_directories(p.parent_path(), ec);
        write_file_atomic(p, text, 0644, Durability::none);
    } catch (const Error&) {
        // a cache that cannot be written only costs a request next time
    }
}

long long max_age_of(const std::string& cache_control) {
    if (cache_control.find("no-store") != std::string::npos || cache_control.find("no-cache") != std::string::npos)
        return 0;
    auto pos = cache_control.find("max-age=");
    if (pos == std::string::npos) return 0;
    return std::atoll(cache_control.c_str() + pos + 8);
}

}  // namespace

const std::string& system_ca_bundle() {
    static const std::string bundle = [] {
        if (const char* env = std::getenv("SSL_CERT_FILE"); env && *env) return std::string(env);
        for (const char* p : {"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
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

HttpResponse HttpClient::get(const HttpRequest& req) { return transfer(req, -1); }

HttpResponse HttpClient::transfer(const HttpRequest& req, int fd) {
    fs::path cache_path = cache_dir_ / to_hex(sha256(req.url + "\n" + [&] {
                              std::string h;
                              for (const auto& x : req.headers) h += x + "\n";
                              return h;
                          }()));
    std::optional<CachedPage> cached = req.cache && !req.range ? read_cache(cache_path) : std::nullopt;
    long long now = static_cast<long long>(std::time(nullptr));
    if (cached && (offline_ || (cached->max_age > 0 && now - cached->stored_at < cached->max_age))) {
        stats_.cache_hits++;
        return {200, std::move(cached->body), cached->content_type, cached->effective_url, true};
    }
    if (offline_)
        throw Error(ErrorCode::network, "--offline: " + req.url + " is not in the cache");

    std::vector<std::string> headers = req.headers;
    if (cached && !cached->etag.empty()) headers.push_back("If-None-Match: " + cached->etag);
    if (cached && !cached->last_modified.empty()) headers.push_back("If-Modified-Since: " + cached->last_modified);
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
        if (fd >= 0 && (::ftruncate(fd, 0) != 0 || ::lseek(fd, 0, SEEK_SET) != 0))
            throw Error(ErrorCode::generic, "cannot rewind the download of " + req.url + ": " + std::strerror(errno));
        CURL* c = curl_easy_init();
        char errbuf[CURL_ERROR_SIZE] = {0};
        curl_slist* list = nullptr;
        for (const auto& h : headers) list = curl_slist_append(list, h.c_str());
        curl_easy_setopt(c, CURLOPT_URL, req.url.c_str());
        if (req.range) {
            std::string r = req.range->starts_with("bytes=") ? req.range->substr(6) : *req.range;
            list = curl_slist_append(list, ("Range: bytes=" + r).c_str());
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
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
        curl_easy_setopt(c, CURLOPT_USERAGENT, "envbox/" ENVBOX_VERSION);
        curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
        curl_easy_setopt(c, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS);
        curl_easy_setopt(c, CURLOPT_NETRC, static_cast<long>(CURL_NETRC_OPTIONAL));
        if (req.username) curl_easy_setopt(c, CURLOPT_USERNAME, req.username->c_str());
        if (req.password) curl_easy_setopt(c, CURLOPT_PASSWORD, req.password->c_str());
        if (req.ca_file) curl_easy_setopt(c, CURLOPT_CAINFO, req.ca_file->c_str());
        else if (!system_ca_bundle().empty()) curl_easy_setopt(c, CURLOPT_CAINFO, system_ca_bundle().c_str());
        int now_in = ++stats_.in_flight;
        for (int peak = stats_.peak_in_flight.load(); now_in > peak && !stats_.peak_in_flight.compare_exchange_weak(peak, now_in);) {
        }
        CURLcode rc = curl_easy_perform(c);
        --stats_.in_flight;
        stats_.requests++;
        long status = 0;
        char* eff = nullptr;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &eff);
        resp.effective_url = eff ? eff : req.url;
        curl_easy_cleanup(c);
        curl_slist_free_all(list);
        if (got.write_failed)
            throw Error(ErrorCode::generic, "cannot write the download of " + req.url + ": " + std::strerror(errno));
        bool transient = false;
        long long retry_after = -1;
        if (rc != CURLE_OK) {
            last_error = std::string(curl_easy_strerror(rc)) + (errbuf[0] ? std::string(": ") + errbuf : "");
            transient = rc == CURLE_COULDNT_CONNECT || rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_RECV_ERROR ||
                        rc == CURLE_SEND_ERROR || rc == CURLE_PARTIAL_FILE || rc == CURLE_GOT_NOTHING ||
                        rc == CURLE_HTTP2 || rc == CURLE_HTTP2_STREAM;
        } else if (status >= 500 || status == 429 || status == 408) {
            last_error = "HTTP " + std::to_string(status);
            transient = true;
            if (auto it = got.headers.find("retry-after"); it != got.headers.end()) retry_after = std::atoll(it->second.c_str());
        } else {
            stats_.bytes += got.body.size();
            if (status == 304 && cached) {
                stats_.cache_hits++;
                cached->stored_at = now;
                if (auto it = got.headers.find("cache-control"); it != got.headers.end()) cached->max_age = max_age_of(it->second);
                write_cache(cache_path, *cached);
                return {200, std::move(cached->body), cached->content_type, cached->effective_url, true};
            }
            resp.status = status;
            resp.body = std::move(got.body);
            if (auto it = got.headers.find("content-type"); it != got.headers.end()) resp.content_type = it->second;
            if (auto it = got.headers.find("content-range"); it != got.headers.end()) resp.content_range = it->second;
            if (req.cache && !req.range && status == 200) {
                CachedPage page;
                page.url = req.url;
                page.etag = got.headers.count("etag") ? got.headers["etag"] : "";
                page.last_modified = got.headers.count("last-modified") ? got.headers["last-modified"] : "";
                page.content_type = resp.content_type;
                page.effective_url = resp.effective_url;
                page.stored_at = now;
                page.max_age = got.headers.count("cache-control") ? max_age_of(got.headers["cache-control"]) : 0;
                page.body = resp.body;
                write_cache(cache_path, page);
            }
            return resp;
        }
        if (!transient || attempt == kAttempts) break;
        long long delay_ms = retry_after >= 0 ? std::min<long long>(retry_after, 30) * 1000
                                              : (100LL << attempt) + std::uniform_int_distribution<int>(0, 100)(rng);
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    }
    throw Error(ErrorCode::network, "cannot fetch " + req.url + ": " + last_error +
                                        (attempts > 1 ? " (after " + std::to_string(attempts) + " attempts)" : ""));
}

HttpResponse HttpClient::download(const HttpRequest& req, const fs::path& destination) {
    // Streamed to a temporary file beside the destination (wheels are gigabytes), renamed
    // into place once complete.
    fs::path part = destination;
    part += ".part";
    ScopedRemove remove(part);
    int fd = ::open(part.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw Error(ErrorCode::generic, "cannot create " + part.string() + ": " + std::strerror(errno));
    HttpRequest r = req;
    r.cache = false;
    HttpResponse resp;
    try {
        resp = transfer(r, fd);
    } catch (...) {
        ::close(fd);
        throw;
    }
    ::close(fd);
    if (resp.status != 200)
        throw Error(ErrorCode::network, "cannot download " + req.url + ": HTTP " + std::to_string(resp.status));
    std::error_code ec;
    fs::rename(part, destination, ec);
    if (ec) throw Error(ErrorCode::generic, "cannot move " + part.string() + " to " + destination.string() + ": " + ec.message());
    remove.release();
    return resp;
}

}  // namespace envbox::index
