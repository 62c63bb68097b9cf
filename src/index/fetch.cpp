#include "envbox/index/fetch.hpp"

#include "envbox/index/http.hpp"
#include "envbox/pep/filename.hpp"
#include "envbox/util/error.hpp"

namespace fs = std::filesystem;

namespace envbox::index {

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

std::optional<fs::path> local_artifact_path(const ArtifactRequest& request,
                                            const fs::path& base_dir) {
    const std::string& loc = request.location;
    if (loc.starts_with("http://") || loc.starts_with("https://")) return std::nullopt;
    if (loc.starts_with("file:")) {
        fs::path p = file_url_path(loc);
        if (p.empty())
            throw Error(ErrorCode::invalid_input,
                        "unsupported file URL for " + request.display + ": " + redact_url(loc));
        return p;
    }
    if (loc.find("://") != std::string::npos)
        throw Error(ErrorCode::invalid_input,
                    "unsupported URL scheme for " + request.display + ": " + redact_url(loc));
    fs::path p(loc);
    if (p.is_relative()) p = base_dir / p;
    return p.lexically_normal();
}

fs::path download_path(const fs::path& downloads_dir, std::string_view sha256) {
    return downloads_dir / (std::string(sha256) + ".whl");
}

fs::path download_artifact(HttpClient& http, const ArtifactRequest& request,
                           const fs::path& downloads_dir,
                           const std::function<void(std::uint64_t)>& on_bytes) {
    fs::path path = download_path(downloads_dir, request.sha256);
    std::error_code ec;
    fs::create_directories(downloads_dir, ec);
    HttpRequest req;
    req.url = request.location;
    req.ca_file = request.ca;
    req.username = request.username;
    req.password = request.password;
    req.credential_origin = url_origin(request.index_url);
    req.on_bytes = on_bytes;
    if (request.size) {
        req.max_bytes = *request.size;
        req.max_bytes_what = "the lock's size";
    }
    if (!fs::exists(path, ec)) {
        try {
            http.download(req, path, /*resumable=*/true);
        } catch (const Error& e) {
            // A mirror that is down or lacks the file: the lock's own URL, with no credentials
            // (they are the mirror's), and both named if that fails too.
            if (request.fallback.empty() || e.code() != ErrorCode::network) throw;
            fs::remove(path, ec);
            req.url = request.fallback;
            req.username = req.password = std::nullopt;
            req.credential_origin.clear();
            try {
                http.download(req, path, /*resumable=*/true);
            } catch (const Error& again) {
                if (again.code() != ErrorCode::network) throw;
                throw Error(ErrorCode::network,
                            request.display + ": the mirror " + request.via + " sets failed (" +
                                e.what() + "), and so did the lock's URL (" + again.what() + ")");
            }
        }
    }
    if (request.size) {
        auto got = fs::file_size(path, ec);
        if (!ec && got != *request.size) {
            fs::remove(path, ec);
            throw Error(ErrorCode::integrity, "size mismatch for " + request.display + " (" +
                                                  redact_url(request.location) + "): expected " +
                                                  std::to_string(*request.size) + " bytes, got " +
                                                  std::to_string(got) + "; nothing was stored");
        }
    }
    return path;
}

}  // namespace envbox::index
