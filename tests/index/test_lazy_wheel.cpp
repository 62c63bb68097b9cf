// The lazy wheel reader against zips built here: in memory (read_dist_info_from_zip) and over
// range requests to a local server (read_remote_dist_info), including servers whose 206 answers
// are not the range asked for, and a local extra field longer than the first read allows for.
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "envbox/index/lazy_wheel.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/zip.hpp"
#include "local_server.hpp"
#include "temp_dir.hpp"

using namespace envbox;
namespace fs = std::filesystem;

namespace {

std::uint32_t crc32_of(std::string_view s) {
    std::uint32_t c = 0xFFFFFFFFu;
    for (unsigned char b : s) {
        c ^= b;
        for (int k = 0; k < 8; ++k)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

void put16(std::string& s, std::uint64_t v) {
    s += static_cast<char>(v & 0xff);
    s += static_cast<char>((v >> 8) & 0xff);
}
void put32(std::string& s, std::uint64_t v) {
    put16(s, v & 0xffff);
    put16(s, (v >> 16) & 0xffff);
}

// An extra field: id, length, data.
std::string extra_field(std::uint16_t id, std::string_view data) {
    std::string e;
    put16(e, id);
    put16(e, data.size());
    e += data;
    return e;
}

// A Unicode Path extra field (0x7075) naming `name` (version 1, CRC-32 of the header's name).
std::string unicode_path(std::string_view header_name, std::string_view name) {
    std::string d(1, '\1');
    put32(d, crc32_of(header_name));
    d += name;
    return extra_field(0x7075, d);
}

struct Entry {
    std::string name, data;
    std::string local_extra = {};
};

// A zip of stored members, as a wheel builder writes one.
std::string make_zip(const std::vector<Entry>& entries) {
    std::string out, cd;
    for (const auto& e : entries) {
        const std::uint64_t offset = out.size();
        const std::uint32_t crc = crc32_of(e.data);
        put32(out, 0x04034b50);
        put16(out, 20);    // version needed
        put16(out, 0);     // flags
        put16(out, 0);     // stored
        put16(out, 0);     // time
        put16(out, 0x21);  // date: 1980-01-01
        put32(out, crc);
        put32(out, e.data.size());
        put32(out, e.data.size());
        put16(out, e.name.size());
        put16(out, e.local_extra.size());
        out += e.name + e.local_extra + e.data;
        put32(cd, 0x02014b50);
        put16(cd, 3 << 8 | 20);  // made by: Unix
        put16(cd, 20);
        put16(cd, 0);
        put16(cd, 0);
        put16(cd, 0);
        put16(cd, 0x21);
        put32(cd, crc);
        put32(cd, e.data.size());
        put32(cd, e.data.size());
        put16(cd, e.name.size());
        put16(cd, 0);  // extra
        put16(cd, 0);  // comment
        put16(cd, 0);  // disk
        put16(cd, 0);  // internal attributes
        put32(cd, std::uint64_t{0100644} << 16);
        put32(cd, offset);
        cd += e.name;
    }
    const std::uint64_t cd_offset = out.size();
    out += cd;
    put32(out, 0x06054b50);
    put16(out, 0);
    put16(out, 0);
    put16(out, entries.size());
    put16(out, entries.size());
    put32(out, cd.size());
    put32(out, cd_offset);
    put16(out, 0);
    return out;
}

const std::string kMetadata = "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n";

// METADATA first, then a member large enough that METADATA's local header lies before the
// archive's tail, so a remote read asks for it with a range request.
std::vector<Entry> wheel_entries(std::string local_extra = {}) {
    return {{"demo-1.0.dist-info/METADATA", kMetadata, std::move(local_extra)},
            {"demo/big.bin", std::string(100'000, 'b')},
            {"demo-1.0.dist-info/RECORD", "demo/big.bin,,\n"}};
}

// The whole-file reader's verdict on `zip` (the reference the lazy reader must agree with).
std::optional<std::string> whole_file_metadata(const std::string& zip) {
    const fs::path p =
        fs::temp_directory_path() / ("envbox-lazy-" + std::to_string(::getpid()) + ".whl");
    write_file_atomic(p, zip, 0644, Durability::none);
    struct Remove {
        fs::path p;
        ~Remove() { fs::remove(p); }
    } remove{p};
    zip::File f(p.string());
    auto i = zip::find_dist_info(f.members(), "METADATA");
    if (!i) return std::nullopt;
    return f.read(*i);
}

// How the server answers a range request other than the tail's.
enum class Ranges { honest, longer, shorter, ignored };

std::string answer(const std::string& file, const std::string& head, Ranges mode) {
    std::string range = test::LocalServer::header(head, "range");
    auto response = [](std::string status, std::string extra, const std::string& body) {
        return "HTTP/1.1 " + status + "\r\nContent-Length: " + std::to_string(body.size()) +
               "\r\nConnection: close\r\n" + extra + "\r\n" + body;
    };
    if (range.empty() || mode == Ranges::ignored) return response("200 OK", "", file);
    std::string r = range.substr(6);  // "bytes="
    std::uint64_t from = 0, to = file.size() - 1;
    const bool suffix = r.front() == '-';
    if (suffix) {
        std::uint64_t n = std::stoull(r.substr(1));
        from = n >= file.size() ? 0 : file.size() - n;
    } else {
        from = std::stoull(r.substr(0, r.find('-')));
        to = std::min<std::uint64_t>(std::stoull(r.substr(r.find('-') + 1)), file.size() - 1);
    }
    std::string body = file.substr(from, to - from + 1);
    if (!suffix && mode == Ranges::longer) body += "extra bytes past the range";
    if (!suffix && mode == Ranges::shorter) body.pop_back();
    return response("206 Partial Content",
                    "Content-Range: bytes " + std::to_string(from) + "-" + std::to_string(to) +
                        "/" + std::to_string(file.size()) + "\r\n",
                    body);
}

struct TempHome : envboxtest::TempDir {
    TempHome() : envboxtest::TempDir("envbox-lazy") {}
};

std::optional<std::string> remote_metadata(const std::string& zip, Ranges mode,
                                           std::optional<std::uint64_t>* size = nullptr,
                                           std::string* whole = nullptr) {
    test::LocalServer server([&](const std::string& head) { return answer(zip, head, mode); });
    TempHome home;
    index::HttpClient http(index::HttpOptions{.cache_dir = home.path, .timeout_s = 5});
    index::HttpRequest req;
    req.url = server.url("/files/demo-1.0-py3-none-any.whl");
    return index::read_remote_dist_info(http, req, "METADATA", whole, size);
}

}  // namespace

TEST_CASE("lazy wheel: METADATA from a zip in memory matches the whole-file reader",
          "[index][lazy_wheel]") {
    const std::string zip = make_zip(wheel_entries());
    REQUIRE(whole_file_metadata(zip) == kMetadata);
    CHECK(index::read_dist_info_from_zip(zip, "METADATA") == kMetadata);
    CHECK(index::read_dist_info_from_zip(zip, "RECORD") == "demo/big.bin,,\n");
    CHECK(!index::read_dist_info_from_zip(zip, "WHEEL"));
    // A short local extra field is read with the header; a long one (past the 256 bytes the
    // first read allows for) is read again, whole.
    for (std::size_t pad : {0u, 200u, 300u, 4000u, 65000u}) {
        const std::string z = make_zip(wheel_entries(extra_field(0xcafe, std::string(pad, 'x'))));
        CHECK(whole_file_metadata(z) == kMetadata);
        CHECK(index::read_dist_info_from_zip(z, "METADATA") == kMetadata);
    }
}

TEST_CASE(
    "lazy wheel: a Unicode Path field in a long local extra field is refused as the "
    "whole-file reader refuses it",
    "[index][lazy_wheel]") {
    const std::string name = "demo-1.0.dist-info/METADATA";
    for (std::size_t pad : {0u, 300u, 5000u}) {
        INFO("padding before the Unicode Path field: " << pad);
        const std::string extra = extra_field(0xcafe, std::string(pad, 'x')) +
                                  unicode_path(name, "demo-1.0.dist-info/OTHER");
        const std::string zip = make_zip(wheel_entries(extra));
        CHECK_THROWS_AS(whole_file_metadata(zip), Error);
        try {
            (void)index::read_dist_info_from_zip(zip, "METADATA");
            FAIL("the renamed member was read");
        } catch (const Error& e) {
            CHECK(e.code() == ErrorCode::integrity);
            CHECK_THAT(e.message(), Catch::Contains("Unicode Path"));
        }
        CHECK_THROWS_WITH(remote_metadata(zip, Ranges::honest), Catch::Contains("Unicode Path"));
    }
    // One naming the member itself is what a writer may add: read.
    const std::string same = make_zip(
        wheel_entries(extra_field(0xcafe, std::string(300, 'x')) + unicode_path(name, name)));
    CHECK(index::read_dist_info_from_zip(same, "METADATA") == kMetadata);
}

TEST_CASE("lazy wheel: a local extra field running past the archive is refused",
          "[index][lazy_wheel]") {
    // The local header claims a 60000-byte extra field where the archive has 10 bytes left.
    std::string zip = make_zip({{"demo-1.0.dist-info/METADATA", kMetadata}});
    zip[28] = static_cast<char>(60000 & 0xff);
    zip[29] = static_cast<char>(60000 >> 8);
    CHECK_THROWS_AS(index::read_dist_info_from_zip(zip, "METADATA"), Error);
}

TEST_CASE("lazy wheel: range requests read what the whole-file reader reads",
          "[index][lazy_wheel]") {
    const std::string zip = make_zip(wheel_entries(extra_field(0xcafe, std::string(3000, 'x'))));
    std::optional<std::uint64_t> size;
    CHECK(remote_metadata(zip, Ranges::honest, &size) == kMetadata);
    CHECK(size == zip.size());
    // Ranges ignored: the whole wheel comes, and is handed back.
    std::string whole;
    CHECK(remote_metadata(zip, Ranges::ignored, &size, &whole) == kMetadata);
    CHECK(whole == zip);
}

TEST_CASE("lazy wheel: a 206 longer or shorter than the range asked is an error naming the URL",
          "[index][lazy_wheel]") {
    const std::string zip = make_zip(wheel_entries());
    for (Ranges mode : {Ranges::longer, Ranges::shorter}) {
        try {
            (void)remote_metadata(zip, mode);
            FAIL("a 206 of the wrong length was taken");
        } catch (const Error& e) {
            CHECK(e.code() == ErrorCode::network);
            CHECK_THAT(e.message(), Catch::Contains("/files/demo-1.0-py3-none-any.whl"));
            if (mode == Ranges::longer)
                CHECK_THAT(e.message(), Catch::Contains("with more than that"));
        }
    }
}
