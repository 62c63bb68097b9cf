// HttpClient::download: a body streamed into a file, resumably; and the userinfo rule every
// request of the client keeps.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "envbox/index/http.hpp"
#include "envbox/index/url.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/unique_fd.hpp"
#include "index/http_body.hpp"

namespace fs = std::filesystem;

namespace envbox::index {

// A URL's userinfo is never sent: credentials come from the request's own fields (an index's
// ENVBOX_INDEX_<NAME>_USERNAME / _PASSWORD, a registry's) or ~/.netrc, by origin. A URL that
// carries some (a page's link, a lock's url, a token realm) is refused, not stripped: it is
// asked for before the cache or a part file is touched, and nothing is sent. A redirect to one
// is refused by libcurl (`CURLOPT_DISALLOW_USERNAME_IN_URL`, set_redirect_policy).
void refuse_userinfo(const std::string& url) {
    if (strip_userinfo(url) != url)
        throw Error(ErrorCode::network,
                    "refusing to request " + redact_url(url) +
                        ": credentials in a URL are never sent (an index's belong in "
                        "ENVBOX_INDEX_<NAME>_USERNAME / _PASSWORD or ~/.netrc)");
}

HttpResponse HttpClient::download(const HttpRequest& req, const fs::path& destination,
                                  bool resumable) {
    // Streamed to `<destination>.part` (wheels are gigabytes) and renamed into place once
    // complete. A resumable download keeps the part when it fails, and the next attempt asks
    // only for the rest; a lock file keeps two processes from writing one part.
    refuse_userinfo(req.url);
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
    // O_NOFOLLOW: a link planted as the part file is refused, never written through.
    UniqueFd fd(::open(part.c_str(),
                       O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (resumable ? 0 : O_TRUNC),
                       0644));
    if (!fd)
        throw Error(ErrorCode::generic,
                    "cannot create " + part.string() + ": " + std::strerror(errno));
    HttpRequest r = req;
    r.cache = false;
    r.range.reset();
    HttpResponse resp;
    try {
        resp = transfer(r, fd.get());
    } catch (...) {
        struct stat st {};
        if (::fstat(fd.get(), &st) == 0 && st.st_size == 0)
            ::unlink(part.c_str());  // nothing worth resuming
        throw;
    }
    fd.reset();
    if (resp.status != 200 && !req.follow_redirects) {
        // The caller follows redirects (and answers challenges) itself: the part stays for the
        // request that comes next, unless it is empty.
        struct stat st {};
        if (::stat(part.c_str(), &st) == 0 && st.st_size == 0) ::unlink(part.c_str());
        return resp;
    }
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
