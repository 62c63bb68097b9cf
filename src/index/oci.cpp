// The OCI distribution client: auth challenges, blob HEAD/mount/upload/download, manifests,
// over the index layer's HttpClient (contract in include/envbox/index/oci.hpp; the artifact's
// data side is oci_manifest.cpp).

#include "envbox/index/oci.hpp"

#include <curl/curl.h>

#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "envbox/index/url.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/sha256.hpp"

namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace envbox::index::oci {
namespace {

std::string escape(std::string_view s) {
    char* e = curl_easy_escape(nullptr, s.data(), static_cast<int>(s.size()));
    std::string out = e ? e : "";
    curl_free(e);
    return out;
}

// commas and escaped quotes).
std::pair<std::string, std::map<std::string, std::string>> parse_challenge(std::string_view h) {
    std::pair<std::string, std::map<std::string, std::string>> out;
    std::size_t i = 0;
    while (i < h.size() && h[i] != ' ')
        out.first += static_cast<char>(std::tolower(static_cast<unsigned char>(h[i++])));
    while (i < h.size()) {
        while (i < h.size() && (h[i] == ' ' || h[i] == ','))
            ++i;
        std::string key;
        while (i < h.size() && h[i] != '=')
            key += static_cast<char>(std::tolower(static_cast<unsigned char>(h[i++])));
        if (i >= h.size()) break;
        ++i;
        std::string value;
        if (i < h.size() && h[i] == '"') {
            for (++i; i < h.size() && h[i] != '"'; ++i) {
                if (h[i] == '\\' && i + 1 < h.size()) ++i;
                value += h[i];
            }
            ++i;
        } else {
            while (i < h.size() && h[i] != ',')
                value += h[i++];
        }
        out.second[key] = value;
    }
    return out;
}

std::string header(const HttpResponse& r, const std::string& name) {
    auto it = r.headers.find(name);
    return it == r.headers.end() ? std::string() : it->second;
}

std::string error_detail(const HttpResponse& r) {
    // distribution answers `{"errors":[{"code":"…","message":"…"}]}`.
    try {
        auto j = ordered_json::parse(r.body);
        if (j.contains("errors") && j["errors"].is_array() && !j["errors"].empty()) {
            const auto& e = j["errors"][0];
            std::string code = e.value("code", ""), message = e.value("message", "");
            return code.empty() ? message : code + (message.empty() ? "" : ": " + message);
        }
    } catch (...) {
    }
    return {};
}

Error http_error(const std::string& what, const HttpResponse& r, ErrorCode code) {
    std::string detail = error_detail(r);
    return Error(code, what + ": HTTP " + std::to_string(r.status) +
                           (detail.empty() ? "" : " (" + detail + ")"));
}

}  // namespace

// ---- the client ------------------------------------------------------------------------------

RegistryClient::RegistryClient(HttpClient& http, Reference ref, RegistryOptions options)
    : http_(http), ref_(std::move(ref)), options_(std::move(options)) {
    origin_ = url_origin(base());
}

std::string RegistryClient::base() const {
    return (options_.plain_http ? "http://" : "https://") + ref_.registry;
}

HttpRequest RegistryClient::request(const std::string& url) const {
    HttpRequest r;
    r.url = url;
    r.credential_origin = origin_;
    if (!options_.ca_file.empty()) r.ca_file = options_.ca_file;
    r.follow_redirects = false;
    return r;
}

std::string RegistryClient::authorization(const std::string& scope) {
    std::lock_guard<std::mutex> g(mutex_);
    if (auto it = tokens_.find(scope); it != tokens_.end()) return it->second;
    if (basic_ && options_.credentials)
        return "Basic " +
               to_base64(options_.credentials->username + ":" + options_.credentials->password);
    return {};
}

// A 401's challenge answered: a Bearer token fetched from the realm (with the registry's
// credentials only when the realm is on the registry's own origin or over https), or basic
// auth remembered for the registry.
void RegistryClient::answer_challenge(const std::string& challenge, const std::string& scope,
                                      const std::string& what) {
    auto [scheme, params] = parse_challenge(challenge);
    if (scheme == "basic") {
        if (!options_.credentials)
            throw Error(ErrorCode::network, what +
                                                ": the registry asks for a user name and "
                                                "password, and none is configured (docker "
                                                "login, or ENVBOX_REGISTRY_USERNAME/PASSWORD)");
        std::lock_guard<std::mutex> g(mutex_);
        basic_ = true;
        return;
    }
    if (scheme != "bearer" || params["realm"].empty())
        throw Error(ErrorCode::network,
                    what + ": the registry's challenge is not one envbox answers: " + challenge);
    const std::string realm = params["realm"];
    std::string url = realm + (realm.find('?') == std::string::npos ? "?" : "&");
    if (!params["service"].empty()) url += "service=" + escape(params["service"]) + "&";
    url += "scope=" + escape(params["scope"].empty() ? scope : params["scope"]);
    HttpRequest r;
    r.url = url;
    if (!options_.ca_file.empty()) r.ca_file = options_.ca_file;
    const std::string realm_origin = url_origin(realm);
    if (options_.credentials && (realm_origin == origin_ || realm_origin.starts_with("https://"))) {
        r.credential_origin = realm_origin;
        r.authorization = "Basic " + to_base64(options_.credentials->username + ":" +
                                               options_.credentials->password);
    }
    r.max_bytes = 1 << 20;
    r.max_bytes_what = "a token answer";
    HttpResponse resp = http_.get(r);
    if (resp.status == 401 || resp.status == 403)
        throw Error(ErrorCode::network,
                    what + ": authentication failed (the token service " + redact_url(realm) +
                        " answered HTTP " + std::to_string(resp.status) +
                        (options_.credentials ? "; check the user name and password)"
                                              : "; no credentials are configured)"));
    if (resp.status != 200)
        throw http_error(what + ": the token service " + redact_url(realm), resp,
                         ErrorCode::network);
    std::string token;
    try {
        auto j = ordered_json::parse(resp.body);
        token = j.value("token", "");
        if (token.empty()) token = j.value("access_token", "");
    } catch (...) {
    }
    if (token.empty())
        throw Error(ErrorCode::network,
                    what + ": the token service " + redact_url(realm) + " sent no token");
    std::lock_guard<std::mutex> g(mutex_);
    tokens_[scope] = "Bearer " + token;
}

HttpResponse RegistryClient::send(HttpRequest req, const std::string& scope,
                                  const std::string& what) {
    for (int round = 0;; ++round) {
        req.authorization = authorization(scope);
        HttpResponse resp = http_.get(req);
        if (resp.status != 401) return resp;
        if (round > 0 || header(resp, "www-authenticate").empty())
            throw Error(ErrorCode::network,
                        what + ": authentication failed (HTTP 401 from " + ref_.registry +
                            (options_.credentials ? "; check the user name and password)"
                                                  : "; no credentials are configured)"));
        answer_challenge(header(resp, "www-authenticate"), scope, what);
    }
}

namespace {
std::string pull_scope(const Reference& r) {
    return "repository:" + r.repository + ":pull";
}
std::string push_scope(const Reference& r) {
    return "repository:" + r.repository + ":pull,push";
}
}  // namespace

std::optional<std::uint64_t> RegistryClient::blob_size(const std::string& digest) {
    HttpRequest r = request(base() + "/v2/" + ref_.repository + "/blobs/" + digest);
    r.head = true;
    const std::string what = ref_.str() + ": blob " + digest;
    HttpResponse resp = send(r, push_scope(ref_), what);
    if (resp.status == 200) return resp.content_length.value_or(0);
    if (resp.status == 404) return std::nullopt;
    if (resp.status >= 300 && resp.status < 400) return resp.content_length.value_or(0);
    throw http_error(what, resp, ErrorCode::network);
}

bool RegistryClient::mount_blob(const std::string& digest, const std::string& from) {
    HttpRequest r = request(base() + "/v2/" + ref_.repository +
                            "/blobs/uploads/?mount=" + escape(digest) + "&from=" + escape(from));
    r.method = "POST";
    const std::string what = ref_.str() + ": mounting " + digest + " from " + from;
    HttpResponse resp = send(r, push_scope(ref_) + " repository:" + from + ":pull", what);
    if (resp.status == 201) return true;
    if (resp.status == 202) return false;  // not mountable: an upload was started instead
    throw http_error(what, resp, ErrorCode::network);
}

std::string RegistryClient::upload_location(const HttpResponse& r, const std::string& what) const {
    std::string loc = header(r, "location");
    auto url = loc.empty() ? std::nullopt : resolve_url(base() + "/", loc);
    if (!url || url_origin(*url) != origin_)
        throw Error(ErrorCode::network,
                    what + ": the registry's upload location is missing or on another host");
    return *url;
}

// A chunked upload's session, as the last completed PATCH left it: "<offset>\n<location>".
// The registry confirms it (GET of the location: 204 with `Range: 0-<offset - 1>`) before
// anything is sent on it; anything else starts a new upload.
std::optional<std::pair<std::uint64_t, std::string>> RegistryClient::resume_session(
    const fs::path& session, const std::string& what) {
    std::error_code ec;
    if (session.empty() || !fs::exists(session, ec)) return std::nullopt;
    std::string text;
    try {
        text = read_file(session);
    } catch (const Error&) {
        return std::nullopt;
    }
    const auto nl = text.find('\n');
    if (nl == std::string::npos || text.find_first_not_of("0123456789") != nl || nl == 0)
        return std::nullopt;
    const std::uint64_t offset = std::strtoull(text.c_str(), nullptr, 10);
    const std::string url = text.substr(nl + 1);
    if (url_origin(url) != origin_) return std::nullopt;
    HttpRequest status = request(url);
    HttpResponse r = send(status, push_scope(ref_), what);
    if (r.status != 204 || header(r, "range") != "0-" + std::to_string(offset - 1))
        return std::nullopt;
    return std::make_pair(offset, upload_location(r, what));
}

std::uint64_t RegistryClient::upload_blob(const std::string& digest, const fs::path& file,
                                          std::uint64_t size,
                                          const std::function<void(std::uint64_t)>& on_bytes,
                                          const fs::path& session) {
    const std::string what = ref_.str() + ": uploading " + digest;
    const bool chunked = size > options_.chunk_bytes;
    std::string url;
    std::uint64_t sent = 0, resumed = 0;
    if (auto s = chunked ? resume_session(session, what) : std::nullopt) {
        std::tie(sent, url) = *s;
        resumed = sent;
        if (on_bytes) on_bytes(sent);
    } else {
        HttpRequest start = request(base() + "/v2/" + ref_.repository + "/blobs/uploads/");
        start.method = "POST";
        HttpResponse resp = send(start, push_scope(ref_), what);
        if (resp.status != 202) throw http_error(what, resp, ErrorCode::network);
        url = upload_location(resp, what);
    }
    if (chunked) {
        std::error_code ec;
        if (!session.empty()) fs::create_directories(session.parent_path(), ec);
        while (sent < size) {
            const std::uint64_t n = std::min(options_.chunk_bytes, size - sent);
            HttpRequest patch = request(url);
            patch.method = "PATCH";
            patch.upload_file = file;
            patch.upload_offset = sent;
            patch.upload_length = n;
            patch.headers = {
                "Content-Type: application/octet-stream",
                "Content-Range: " + std::to_string(sent) + "-" + std::to_string(sent + n - 1)};
            HttpResponse p = send(patch, push_scope(ref_), what);
            if (p.status != 202) throw http_error(what, p, ErrorCode::network);
            url = upload_location(p, what);
            sent += n;
            // Where a push killed from here on continues (one small write per chunk).
            if (!session.empty())
                write_file_atomic(session, std::to_string(sent) + "\n" + url, 0600,
                                  Durability::none);
            if (on_bytes) on_bytes(n);
        }
    }
    HttpRequest put = request(url + (url.find('?') == std::string::npos ? "?" : "&") +
                              "digest=" + escape(digest));
    put.method = "PUT";
    put.headers = {"Content-Type: application/octet-stream"};
    if (!chunked) {
        put.upload_file = file;
        put.upload_offset = 0;
        put.upload_length = size;
    }
    HttpResponse done = send(put, push_scope(ref_), what);
    std::error_code ec;
    if (!session.empty()) {
        // The record, and what a push killed while writing it left beside it
        // (write_file_atomic's `<record>.tmp.<pid>.<n>`).
        fs::remove(session, ec);
        const std::string partial = session.filename().string() + ".tmp.";
        for (const auto& e : fs::directory_iterator(session.parent_path(), ec))
            if (e.path().filename().string().starts_with(partial)) fs::remove(e.path(), ec);
    }
    if (done.status != 201)
        throw http_error(what, done,
                         done.status == 400 ? ErrorCode::integrity : ErrorCode::network);
    if (!chunked && on_bytes) on_bytes(size);
    return resumed;
}

void RegistryClient::upload_blob(const std::string& digest, const std::string& content) {
    const std::string what = ref_.str() + ": uploading " + digest;
    HttpRequest start = request(base() + "/v2/" + ref_.repository + "/blobs/uploads/");
    start.method = "POST";
    HttpResponse resp = send(start, push_scope(ref_), what);
    if (resp.status != 202) throw http_error(what, resp, ErrorCode::network);
    std::string loc = header(resp, "location");
    auto url = loc.empty() ? std::nullopt : resolve_url(base() + "/", loc);
    if (!url || url_origin(*url) != origin_)
        throw Error(ErrorCode::network,
                    what + ": the registry's upload location is missing or on another host");
    HttpRequest put = request(*url + (url->find('?') == std::string::npos ? "?" : "&") +
                              "digest=" + escape(digest));
    put.method = "PUT";
    put.body = content;
    put.headers = {"Content-Type: application/octet-stream"};
    HttpResponse done = send(put, push_scope(ref_), what);
    if (done.status != 201) throw http_error(what, done, ErrorCode::network);
}

std::string RegistryClient::put_manifest(const std::string& json) {
    const std::string what = ref_.str() + ": writing the manifest";
    HttpRequest put = request(base() + "/v2/" + ref_.repository + "/manifests/" + ref_.reference());
    put.method = "PUT";
    put.body = json;
    put.headers = {"Content-Type: " + std::string(kManifestMediaType)};
    HttpResponse resp = send(put, push_scope(ref_), what);
    if (resp.status != 201) throw http_error(what, resp, ErrorCode::network);
    return "sha256:" + to_hex(sha256(json));
}

std::string RegistryClient::get_manifest(std::string& digest) {
    const std::string what = ref_.str();
    HttpRequest get = request(base() + "/v2/" + ref_.repository + "/manifests/" + ref_.reference());
    get.headers = {"Accept: " + std::string(kManifestMediaType)};
    get.max_bytes = kMaxManifestBytes;
    get.max_bytes_what = "a manifest";
    HttpResponse resp = send(get, pull_scope(ref_), what);
    if (resp.status == 404)
        throw Error(ErrorCode::network,
                    what + ": not found in the registry (no such repository or tag)" +
                        (error_detail(resp).empty() ? "" : " (" + error_detail(resp) + ")"));
    if (resp.status != 200) throw http_error(what, resp, ErrorCode::network);
    std::string type = resp.content_type.substr(0, resp.content_type.find(';'));
    if (type != kManifestMediaType)
        throw Error(ErrorCode::integrity,
                    what + ": the registry sent '" + type + "', not an OCI image manifest");
    digest = "sha256:" + to_hex(sha256(resp.body));
    if (!ref_.digest.empty() && digest != ref_.digest)
        throw Error(ErrorCode::integrity, what + ": the manifest's bytes hash to " + digest +
                                              ", not the digest asked for");
    if (auto d = header(resp, "docker-content-digest"); !d.empty() && d != digest)
        throw Error(ErrorCode::integrity, what + ": the manifest's bytes hash to " + digest +
                                              ", not the " + d + " the registry names");
    return std::move(resp.body);
}

std::string RegistryClient::get_blob(const std::string& digest, std::uint64_t size) {
    const std::string what = ref_.str() + ": blob " + digest;
    std::string url = base() + "/v2/" + ref_.repository + "/blobs/" + digest;
    HttpRequest get = request(url);
    get.max_bytes = size;
    get.max_bytes_what = "the size the manifest gives";
    HttpResponse resp = send(get, pull_scope(ref_), what);
    for (int hop = 0; resp.status >= 300 && resp.status < 400 && hop < 5; ++hop) {
        auto next = resolve_url(url, header(resp, "location"));
        if (!next) break;
        url = *next;
        HttpRequest r;  // no credentials on a redirect
        r.url = url;
        r.follow_redirects = false;
        r.max_bytes = size;
        r.max_bytes_what = get.max_bytes_what;
        resp = http_.get(r);
    }
    if (resp.status != 200) throw http_error(what, resp, ErrorCode::network);
    std::string got = "sha256:" + to_hex(sha256(resp.body));
    if (got != digest || resp.body.size() != size)
        throw Error(ErrorCode::integrity, what + ": the registry sent " +
                                              std::to_string(resp.body.size()) +
                                              " bytes hashing to " + got);
    return std::move(resp.body);
}

void RegistryClient::download_blob(const std::string& digest, std::uint64_t size,
                                   const fs::path& destination,
                                   const std::function<void(std::uint64_t)>& on_bytes) {
    const std::string what = ref_.str() + ": blob " + digest;
    std::string url = base() + "/v2/" + ref_.repository + "/blobs/" + digest;
    HttpRequest get = request(url);
    get.max_bytes = size;
    get.max_bytes_what = "the size the manifest gives";
    get.on_bytes = on_bytes;
    DownloadHash streamed;  // the bytes hashed as they arrive: no second read of the file
    get.hash = &streamed;
    HttpResponse resp;
    for (int round = 0;; ++round) {
        get.authorization = authorization(pull_scope(ref_));
        resp = http_.download(get, destination, true);
        if (resp.status == 401 && round == 0 && get.credential_origin == origin_ &&
            !header(resp, "www-authenticate").empty()) {
            answer_challenge(header(resp, "www-authenticate"), pull_scope(ref_), what);
            continue;
        }
        if (resp.status >= 300 && resp.status < 400 && round < 6) {
            auto next = resolve_url(get.url, header(resp, "location"));
            if (!next) break;
            get.url = *next;
            get.credential_origin.clear();  // object storage gets none of the registry's
            get.authorization.clear();
            get.ca_file.reset();
            continue;
        }
        break;
    }
    if (resp.status != 200) throw http_error(what, resp, ErrorCode::network);
    std::uint64_t bytes = 0;
    std::error_code ec;
    const std::uint64_t file_bytes = fs::file_size(destination, ec);
    std::string got = "sha256:";
    if (!ec && streamed.whole && streamed.hashed == file_bytes) {
        got += to_hex(streamed.hash.finish());
        bytes = file_bytes;
    } else {
        got += to_hex(sha256_file(destination, &bytes));  // resumed from an earlier run's part
    }
    if (got != digest || bytes != size) {
        fs::remove(destination, ec);
        throw Error(ErrorCode::integrity, what + ": the registry sent " + std::to_string(bytes) +
                                              " bytes hashing to " + got +
                                              " (removed; nothing was stored)");
    }
}

}  // namespace envbox::index::oci