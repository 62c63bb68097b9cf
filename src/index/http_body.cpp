#include "index/http_body.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "envbox/index/http.hpp"
#include "envbox/util/fs.hpp"

namespace envbox::index {

namespace {

// The limit for this response's body, once its status is known.
std::uint64_t body_limit(const Collected& c) {
    if (c.status == 206 && c.range_length) return *c.range_length;
    return c.max_bytes;
}

}  // namespace

void DownloadHash::wrote(std::uint64_t at, const char* data, std::size_t len) {
    if (at == 0 && (hashed != 0 || !whole)) {
        (void)hash.finish();  // the part was emptied: start over
        hashed = 0;
        whole = true;
    }
    if (!whole || at != hashed) {
        whole = false;
        return;
    }
    hash.update(data, len);
    hashed += len;
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
        if (c->hash) c->hash->wrote(c->offset + c->written, data, len);
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

std::size_t on_upload(char* buffer, std::size_t size, std::size_t n, void* user) {
    auto* u = static_cast<Upload*>(user);
    const std::uint64_t total = u->memory ? u->memory->size() : u->length;
    const std::size_t len =
        static_cast<std::size_t>(std::min<std::uint64_t>(size * n, total - u->pos));
    if (len == 0) return 0;
    if (u->memory) {
        std::memcpy(buffer, u->memory->data() + u->pos, len);
    } else {
        ssize_t got = ::pread(u->fd, buffer, len, static_cast<off_t>(u->offset + u->pos));
        if (got <= 0) {
            u->read_errno = got < 0 ? errno : EIO;  // a file shorter than it was: never pad it
            return CURL_READFUNC_ABORT;
        }
        u->pos += static_cast<std::uint64_t>(got);
        return static_cast<std::size_t>(got);
    }
    u->pos += len;
    return len;
}

int on_upload_seek(void* user, curl_off_t offset, int origin) {
    auto* u = static_cast<Upload*>(user);
    const std::uint64_t total = u->memory ? u->memory->size() : u->length;
    if (origin != SEEK_SET || offset < 0 || static_cast<std::uint64_t>(offset) > total)
        return CURL_SEEKFUNC_CANTSEEK;
    u->pos = static_cast<std::uint64_t>(offset);
    return CURL_SEEKFUNC_OK;
}

std::string describe_bytes(std::uint64_t n) {
    if (n >= (1u << 20) && n % (1u << 20) == 0) return std::to_string(n >> 20) + " MiB";
    return std::to_string(n) + " bytes";
}

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

}  // namespace envbox::index
