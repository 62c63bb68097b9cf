#include "envbox/index/lazy_wheel.hpp"

#include <algorithm>
#include <cstdint>

#include "envbox/util/error.hpp"
#include "envbox/util/zip.hpp"

namespace envbox::index {
namespace {

// The little-endian 16-bit field at `at` of a zip header.
std::uint64_t zip_u16(std::string_view b, std::size_t at) {
    return static_cast<unsigned char>(b[at]) |
           static_cast<std::uint64_t>(static_cast<unsigned char>(b[at + 1])) << 8;
}

// Reads `<top>.dist-info/<leaf>` of an archive of `total` bytes whose tail is `tail`; other
// bytes come from `get(offset, length)`.
std::optional<std::string> read_member(const zip::ReadAt& get, std::uint64_t total,
                                       const std::string& tail, const std::string& leaf) {
    const std::uint64_t tail_start = total - tail.size();
    auto members = zip::read_directory(total, tail, get);
    auto i = zip::find_dist_info(members, leaf);
    if (!i) return std::nullopt;
    const zip::Member& m = members[*i];
    // A METADATA or WHEEL file is kilobytes; a member claiming more is not read into memory.
    if (m.compressed_size > kMaxMetadataBytes || m.size > kMaxMetadataBytes)
        throw Error(ErrorCode::integrity,
                    m.name + " claims " + std::to_string(std::max(m.size, m.compressed_size)) +
                        " bytes, more than the " + std::to_string(kMaxMetadataBytes >> 20) +
                        " MiB limit for a wheel's metadata");
    // Bytes of the archive, from its tail when they lie there.
    auto read = [&](std::uint64_t offset, std::uint64_t length) {
        return offset >= tail_start && offset + length <= total
                   ? tail.substr(offset - tail_start, length)
                   : get(offset, length);
    };
    // Local header and data in one request, allowing for a local extra field.
    std::uint64_t want =
        std::min(30 + m.name.size() + 256 + m.compressed_size, total - m.local_offset);
    std::string local = read(m.local_offset, want);
    // A local extra field longer than that allowance: the header, name and whole extra field
    // again (bounded by the archive), so `data_offset` always checks the extra field (a Unicode
    // Path field there renames the member for some readers).
    if (local.size() >= 30) {
        const std::uint64_t header = 30 + zip_u16(local, 26) + zip_u16(local, 28);
        if (local.size() < header && m.local_offset + header <= total)
            local = read(m.local_offset, header);
    }
    std::uint64_t data = zip::data_offset(m, local) - m.local_offset;
    if (m.local_offset + data + m.compressed_size > total)
        throw Error(ErrorCode::integrity, "member '" + m.name + "' is truncated");
    if (data + m.compressed_size <= local.size())
        return zip::decode(m, std::string_view(local).substr(data, m.compressed_size));
    return zip::decode(m, get(m.local_offset + data, m.compressed_size));
}

}  // namespace

std::optional<std::string> read_dist_info_from_zip(const std::string& archive,
                                                   const std::string& leaf) {
    auto get = [&](std::uint64_t off, std::uint64_t len) { return archive.substr(off, len); };
    const std::size_t tail =
        static_cast<std::size_t>(std::min<std::uint64_t>(archive.size(), zip::kTailSize));
    return read_member(get, archive.size(), archive.substr(archive.size() - tail), leaf);
}

std::optional<std::string> read_remote_dist_info(HttpClient& http, const HttpRequest& wheel,
                                                 const std::string& leaf, std::string* whole,
                                                 std::optional<std::uint64_t>* size) {
    HttpRequest tail_req = wheel;
    tail_req.cache = false;
    tail_req.range = "bytes=-" + std::to_string(zip::kTailSize);
    // Ranges ignored: the whole file comes, kept in memory only up to the page limit (else
    // `too_large`, and the caller downloads it to disk).
    HttpResponse tail = http.get(tail_req);
    if (tail.too_large) return std::nullopt;
    if (tail.status == 200) {  // ranges ignored: the whole file
        if (size) *size = tail.body.size();
        auto meta = read_dist_info_from_zip(tail.body, leaf);
        if (whole) *whole = std::move(tail.body);
        return meta;
    }
    if (tail.status != 206) return std::nullopt;
    auto slash = tail.content_range.find('/');
    if (slash == std::string::npos) return std::nullopt;
    std::uint64_t total = std::strtoull(tail.content_range.c_str() + slash + 1, nullptr, 10);
    if (total < tail.body.size()) return std::nullopt;
    if (size) *size = total;
    auto get = [&](std::uint64_t off, std::uint64_t len) {
        if (len == 0) return std::string();
        if (len > kMaxPageBytes)
            throw Error(ErrorCode::integrity,
                        redact_url(wheel.url) + ": its zip directory asks to read " +
                            std::to_string(len) + " bytes, more than the " +
                            std::to_string(kMaxPageBytes >> 20) + " MiB limit");
        HttpRequest r = wheel;
        r.cache = false;
        r.range = "bytes=" + std::to_string(off) + "-" + std::to_string(off + len - 1);
        HttpResponse resp = http.get(r);
        if (resp.status != 206 || resp.body.size() != len)
            throw Error(ErrorCode::network, "range request for " + redact_url(wheel.url) +
                                                " answered HTTP " + std::to_string(resp.status));
        return resp.body;
    };
    return read_member(get, total, tail.body, leaf);
}

}  // namespace envbox::index
