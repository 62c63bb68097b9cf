#include "envbox/index/fetch.hpp"

#include <curl/curl.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "envbox/index/http.hpp"
#include "envbox/pep/filename.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/sha256.hpp"

namespace fs = std::filesystem;

namespace envbox::index {
namespace {

void curl_init_once() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

[[noreturn]] void mismatch(const ArtifactRequest& r, const std::string& actual, std::uint64_t size) {
    std::string msg = "hash mismatch for " + r.display + " (" + r.location + "): expected sha256 " +
                      r.sha256 + ", got " + actual;
    if (r.size && *r.size != size)
        msg += " (expected " + std::to_string(*r.size) + " bytes, got " + std::to_string(size) + ")";
    throw Error(ErrorCode::integrity, msg + "; nothing was stored");
}

FetchedArtifact hash_local(const ArtifactRequest& r, const fs::path& path, const FetchProgress& progress) {
    std::uint64_t total = 0;
    std::string actual;
    try {
        actual = to_hex(sha256_file(path, &total, progress));
    } catch (Error& e) {
        e.add_context("reading " + r.display);
        throw;
    }
    if (actual != r.sha256 || (r.size && *r.size != total)) mismatch(r, actual, total);
    return {path, false, total};
}

struct Download {
    int fd = -1;
    Sha256 hash;
    std::uint64_t bytes = 0;
    const FetchProgress* progress = nullptr;
    bool write_failed = false;
    int write_errno = 0;
};

std::size_t on_data(char* data, std::size_t size, std::size_t nmemb, void* user) {
    auto* d = static_cast<Download*>(user);
    std::size_t n = size * nmemb;
    if (!write_all_fd(d->fd, data, n)) {
        d->write_failed = true;
        d->write_errno = errno;
        return 0;
    }
    d->hash.update(data, n);
    d->bytes += n;
    if (d->progress && *d->progress) (*d->progress)(d->bytes);
    return n;
}

FetchedArtifact download(const ArtifactRequest& r, const fs::path& tmp_dir, const FetchProgress& progress) {
    curl_init_once();
    static std::atomic<unsigned> counter{0};
    fs::path tmp = tmp_dir / ("download-" + std::to_string(::getpid()) + "-" +
                              std::to_string(counter++) + ".whl");
    constexpr int kAttempts = 4;
    std::string last_error;
    for (int attempt = 1; attempt <= kAttempts; ++attempt) {
        Download d;
        d.progress = &progress;
        d.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (d.fd < 0)
            throw Error(ErrorCode::generic, "cannot create " + tmp.string() + ": " + std::strerror(errno));
        CURL* c = curl_easy_init();
        char errbuf[CURL_ERROR_SIZE] = {0};
        curl_easy_setopt(c, CURLOPT_URL, r.location.c_str());
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &d);
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
        curl_easy_setopt(c, CURLOPT_USERAGENT, "envbox/" ENVBOX_VERSION);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
        if (!system_ca_bundle().empty()) curl_easy_setopt(c, CURLOPT_CAINFO, system_ca_bundle().c_str());
        CURLcode rc = curl_easy_perform(c);
        long status = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_cleanup(c);
        ::close(d.fd);
        if (d.write_failed) {
            ::unlink(tmp.c_str());
            throw Error(ErrorCode::generic,
                        "cannot write " + tmp.string() + ": " + std::strerror(d.write_errno));
        }
        bool transient = false;
        if (rc != CURLE_OK) {
            last_error = std::string(curl_easy_strerror(rc)) + (errbuf[0] ? std::string(": ") + errbuf : "");
            transient = rc == CURLE_COULDNT_CONNECT || rc == CURLE_OPERATION_TIMEDOUT ||
                        rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR ||
                        rc == CURLE_PARTIAL_FILE || rc == CURLE_GOT_NOTHING;
        } else if (status >= 400) {
            last_error = "HTTP " + std::to_string(status);
            transient = status >= 500 || status == 429 || status == 408;
        } else {
            std::string actual = to_hex(d.hash.finish());
            if (actual != r.sha256 || (r.size && *r.size != d.bytes)) {
                ::unlink(tmp.c_str());
                mismatch(r, actual, d.bytes);
            }
            return {tmp, true, d.bytes};
        }
        ::unlink(tmp.c_str());
        if (!transient || attempt == kAttempts) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(200 << attempt));
    }
    throw Error(ErrorCode::network, "cannot download " + r.display + " from " + r.location + ": " + last_error);
}

}  // namespace

fs::path file_url_path(std::string_view url) {
    if (!url.starts_with("file:")) return {};
    std::string_view rest = url.substr(5);
    if (rest.starts_with("//")) {
        rest.remove_prefix(2);
        auto slash = rest.find('/');
        std::string_view host = rest.substr(0, slash);
        if (!host.empty() && host != "localhost") return {};
        rest = slash == std::string_view::npos ? std::string_view("/") : rest.substr(slash);
    }
    return fs::path(pep::percent_decode(rest));
}

std::optional<fs::path> local_artifact_path(const ArtifactRequest& request, const fs::path& base_dir) {
    const std::string& loc = request.location;
    if (loc.starts_with("http://") || loc.starts_with("https://")) return std::nullopt;
    if (loc.starts_with("file:")) {
        fs::path p = file_url_path(loc);
        if (p.empty())
            throw Error(ErrorCode::invalid_input, "unsupported file URL for " + request.display + ": " + loc);
        return p;
    }
    if (loc.find("://") != std::string::npos)
        throw Error(ErrorCode::invalid_input, "unsupported URL scheme for " + request.display + ": " + loc);
    fs::path p(loc);
    if (p.is_relative()) p = base_dir / p;
    return p.lexically_normal();
}

FetchedArtifact fetch_artifact(const ArtifactRequest& request, const fs::path& base_dir,
                               const fs::path& tmp_dir, const FetchProgress& progress) {
    if (auto local = local_artifact_path(request, base_dir)) return hash_local(request, *local, progress);
    return download(request, tmp_dir, progress);
}

}  // namespace envbox::index
