#include "envbox/index/lazy_wheel.hpp"

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <functional>

#include "envbox/util/error.hpp"

namespace envbox::index {
namespace {

std::uint64_t le(const std::string& b, std::size_t at, int n) {
    if (at + static_cast<std::size_t>(n) > b.size()) throw Error(ErrorCode::integrity, "truncated zip structure");
    std::uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<std::size_t>(i)]);
    return v;
}

std::string inflate_raw(const std::string& in, std::uint64_t size) {
    std::string out(size, '\0');
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) throw Error(ErrorCode::generic, "zlib: cannot start inflating");
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    int rc = inflate(&z, Z_FINISH);
    inflateEnd(&z);
    if (rc != Z_STREAM_END || z.total_out != size) throw Error(ErrorCode::integrity, "cannot inflate the METADATA member");
    return out;
}

struct Member {
    std::uint64_t local_offset = 0, csize = 0, usize = 0;
    unsigned method = 0;
    std::size_t name_len = 0, extra_len = 0;
};

// Finds `<top>.dist-info/<leaf>` in a central directory.
std::optional<Member> find_member(const std::string& cd, const std::string& leaf) {
    std::size_t p = 0;
    const std::string suffix = ".dist-info/" + leaf;
    while (p + 46 <= cd.size() && le(cd, p, 4) == 0x02014b50) {
        Member m;
        m.method = static_cast<unsigned>(le(cd, p + 10, 2));
        m.csize = le(cd, p + 20, 4);
        m.usize = le(cd, p + 24, 4);
        m.name_len = le(cd, p + 28, 2);
        std::size_t extra = le(cd, p + 30, 2), comment = le(cd, p + 32, 2);
        m.local_offset = le(cd, p + 42, 4);
        m.extra_len = extra;
        std::string name = cd.substr(p + 46, m.name_len);
        // ZIP64 sizes and offset live in extra field 0x0001, in this order, when maxed out.
        std::size_t e = p + 46 + m.name_len, end = e + extra;
        while (e + 4 <= end) {
            std::uint64_t id = le(cd, e, 2), len = le(cd, e + 2, 2);
            if (id == 1) {
                std::size_t f = e + 4;
                if (m.usize == 0xFFFFFFFF) m.usize = le(cd, f, 8), f += 8;
                if (m.csize == 0xFFFFFFFF) m.csize = le(cd, f, 8), f += 8;
                if (m.local_offset == 0xFFFFFFFF) m.local_offset = le(cd, f, 8);
            }
            e += 4 + len;
        }
        if (name.size() > suffix.size() && name.ends_with(suffix) &&
            name.find('/') == name.size() - suffix.size() + std::string(".dist-info").size())
            return m;
        p += 46 + m.name_len + extra + comment;
    }
    return std::nullopt;
}

// Reads the archive through `get(offset, length)` (bytes of the file) given its size.
std::optional<std::string> read_member(const std::function<std::string(std::uint64_t, std::uint64_t)>& get,
                                       std::uint64_t total, const std::string& tail, const std::string& leaf) {
    const std::uint64_t tail_start = total - tail.size();
    // End of central directory: the last "PK\5\6".
    std::size_t eocd = std::string::npos;
    for (std::size_t i = tail.size() >= 22 ? tail.size() - 22 : 0;; --i) {
        if (le(tail, i, 4) == 0x06054b50) {
            eocd = i;
            break;
        }
        if (i == 0) break;
    }
    if (eocd == std::string::npos) throw Error(ErrorCode::integrity, "no zip end-of-central-directory record");
    std::uint64_t cd_size = le(tail, eocd + 12, 4), cd_offset = le(tail, eocd + 16, 4);
    if (cd_offset == 0xFFFFFFFF && eocd >= 20 && le(tail, eocd - 20, 4) == 0x07064b50) {
        std::uint64_t z64 = le(tail, eocd - 20 + 8, 8);
        std::string rec = z64 >= tail_start ? tail.substr(z64 - tail_start, 56) : get(z64, 56);
        cd_size = le(rec, 40, 8);
        cd_offset = le(rec, 48, 8);
    }
    std::string cd = cd_offset >= tail_start ? tail.substr(cd_offset - tail_start, cd_size) : get(cd_offset, cd_size);
    auto m = find_member(cd, leaf);
    if (!m) return std::nullopt;
    // Local header and data in one request, guessing the local extra field from the central one.
    std::uint64_t want = 30 + m->name_len + m->extra_len + 256 + m->csize;
    std::string local = m->local_offset >= tail_start && m->local_offset + want <= total
                            ? tail.substr(m->local_offset - tail_start, want)
                            : get(m->local_offset, std::min(want, total - m->local_offset));
    if (le(local, 0, 4) != 0x04034b50) throw Error(ErrorCode::integrity, "bad local header for the METADATA member");
    std::uint64_t data = 30 + le(local, 26, 2) + le(local, 28, 2);
    std::string compressed = data + m->csize <= local.size() ? local.substr(data, m->csize)
                                                             : get(m->local_offset + data, m->csize);
    if (m->method == 0) return compressed;
    if (m->method == 8) return inflate_raw(compressed, m->usize);
    throw Error(ErrorCode::integrity, "METADATA member uses zip method " + std::to_string(m->method));
}

}  // namespace

std::optional<std::string> read_dist_info_from_zip(const std::string& zip, const std::string& leaf) {
    auto get = [&](std::uint64_t off, std::uint64_t len) { return zip.substr(off, len); };
    return read_member(get, zip.size(), zip.substr(zip.size() > 65536 + 22 ? zip.size() - 65536 - 22 : 0), leaf);
}

std::optional<std::string> read_remote_dist_info(HttpClient& http, const HttpRequest& wheel, const std::string& leaf) {
    HttpRequest tail_req = wheel;
    tail_req.cache = false;
    tail_req.range = "bytes=-65536";
    HttpResponse tail = http.get(tail_req);
    if (tail.status == 200) return read_dist_info_from_zip(tail.body, leaf);  // ranges ignored: the whole file
    if (tail.status != 206) return std::nullopt;
    auto slash = tail.content_range.find('/');
    if (slash == std::string::npos) return std::nullopt;
    std::uint64_t total = std::strtoull(tail.content_range.c_str() + slash + 1, nullptr, 10);
    if (total < tail.body.size()) return std::nullopt;
    auto get = [&](std::uint64_t off, std::uint64_t len) {
        HttpRequest r = wheel;
        r.cache = false;
        r.range = "bytes=" + std::to_string(off) + "-" + std::to_string(off + len - 1);
        HttpResponse resp = http.get(r);
        if (resp.status != 206 || resp.body.size() != len)
            throw Error(ErrorCode::network, "range request for " + wheel.url + " answered HTTP " + std::to_string(resp.status));
        return resp.body;
    };
    return read_member(get, total, tail.body, leaf);
}

}  // namespace envbox::index
