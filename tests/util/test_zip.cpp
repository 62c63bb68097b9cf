#include <catch2/catch.hpp>
#include <filesystem>
#include <sstream>

#include "envbox/util/error.hpp"
#include "envbox/util/process.hpp"
#include "envbox/util/sha256.hpp"
#include "envbox/util/zip.hpp"

namespace fs = std::filesystem;

namespace {
std::vector<std::string> split(const std::string& line) {
    std::vector<std::string> out;
    std::stringstream s(line);
    std::string field;
    while (std::getline(s, field, '\t'))
        out.push_back(field);
    return out;
}
}  // namespace

// envbox's zip reader against CPython's zipfile (what pip installs with), on Debian's wheels and
// on archives zipfile writes with every feature wheels use; and damaged archives refused with
// the reason named.
TEST_CASE("zip reader reads what CPython's zipfile reads and refuses damaged archives") {
    fs::path dir = fs::temp_directory_path() / ("envbox-zip-test-" + std::to_string(::getpid()));
    auto r = envbox::run_capture(
        {"python3", ENVBOX_SOURCE_DIR "/tests/util/zip_cases.py", dir.string()});
    INFO(r.err);
    REQUIRE(r.status == 0);
    std::stringstream lines(r.out);
    std::string line;
    std::unique_ptr<envbox::zip::File> file;
    std::size_t member = 0, good = 0, bad = 0, members = 0;
    auto close_archive = [&] {
        if (file) CHECK(member == file->members().size());
        file.reset();
    };
    while (std::getline(lines, line)) {
        auto f = split(line);
        if (f[0] == "good") {
            close_archive();
            INFO(f[1]);
            file = std::make_unique<envbox::zip::File>(f[1]);
            member = 0;
            ++good;
        } else if (f[0] == "bad") {
            close_archive();
            INFO(f[1]);
            std::string message;
            try {
                envbox::zip::File z(f[1]);
                for (std::size_t i = 0; i < z.members().size(); ++i)
                    z.read(i);
            } catch (const envbox::Error& e) {
                message = e.what();
                CHECK(e.code() == envbox::ErrorCode::integrity);
            }
            CHECK_THAT(message, Catch::Contains(f[2]));
            ++bad;
        } else {
            REQUIRE(file);
            REQUIRE(member < file->members().size());
            const auto& m = file->members()[member];
            INFO(m.name);
            CHECK(m.name == f[0]);
            std::string data = file->read(member);
            CHECK(envbox::to_hex(envbox::sha256(data)) == f[1]);
            CHECK(std::to_string(data.size()) == f[2]);
            CHECK(std::stoul(f[3], nullptr, 8) == m.unix_mode());
            ++member;
            ++members;
        }
    }
    close_archive();
    CHECK(good >= 7);
    CHECK(bad == 9);
    CHECK(members > 70000);
    std::error_code ec;
    fs::remove_all(dir, ec);
}

TEST_CASE("zip reader finds the top-level dist-info member only") {
    std::vector<envbox::zip::Member> ms(3);
    ms[0].name = "pkg/x-1.0.dist-info/METADATA";
    ms[1].name = "x-1.0.dist-info/METADATA";
    ms[2].name = "x-1.0.dist-info/RECORD";
    CHECK(envbox::zip::find_dist_info(ms, "METADATA") == std::optional<std::size_t>(1));
    CHECK(envbox::zip::find_dist_info(ms, "RECORD") == std::optional<std::size_t>(2));
    CHECK_FALSE(envbox::zip::find_dist_info(ms, "WHEEL"));
}

// Archives the fuzzer (tests/fuzz/fuzz_zip) turned up: zip64 offsets and sizes near 2^64 once
// wrapped the reader's bounds checks (a member claiming the bytes of every other was listed; a
// zip64 locator threw std::out_of_range) and a zip64 size of 2^63 threw length_error from
// read(); bytes between the directory and the end record, which CPython's zipfile takes for a
// prefix shifting every offset, were accepted. Each is now an integrity error.
TEST_CASE("zip64 values near 2^64 are integrity errors, not wrapped bounds or foreign exceptions") {
    const std::string dir = ENVBOX_SOURCE_DIR "/tests/fuzz/regressions/fuzz_zip/";
    struct Row {
        const char* file;
        const char* words;
    };
    const Row rows[] = {
        {"wrapped-compressed-size.zip", "data lies outside the archive"},
        {"zip64-locator-past-2-64.zip", "the zip64 end record is not where its locator says"},
        {"bytes-before-end-record.zip", "bytes between its central directory and its end record"},
        {"size-2-63.zip", "has 100 bytes, the directory records 9223372036854775808"},
        // The deflate stream of a.txt ends 16 bytes (its data descriptor) before the 414 bytes
        // the directory records: libarchive refuses the member, CPython reads it.
        {"deflate-ends-before-compressed-size.zip",
         "deflate stream ends before the 414 bytes of compressed data"},
        // The same with only 6 bytes after the stream, all of them read into ISA-L's bit
        // buffer with its last bits: nothing was left in the input to show them.
        {"deflate-ends-in-the-bit-buffer.zip",
         "deflate stream ends before the 404 bytes of compressed data"},
        // A name flagged UTF-8 that is not (libarchive cannot convert it), and a UTF-8 name
        // without the flag (CPython reads "pkg/caf├⌐.py" where envbox would write "café").
        {"flagged-name-not-utf8.zip", "a zip member name is not valid UTF-8"},
        {"unflagged-non-ascii-name.zip", "has a non-ASCII name without the UTF-8 flag"},
    };
    for (const Row& row : rows) {
        INFO(row.file);
        std::string message;
        try {
            envbox::zip::File z(dir + row.file);
            for (std::size_t i = 0; i < z.members().size(); ++i)
                z.read(i);
        } catch (const envbox::Error& e) {
            message = e.what();
            CHECK(e.code() == envbox::ErrorCode::integrity);
        }
        CHECK_THAT(message, Catch::Contains(row.words));
    }
}

// A member that is a directory by its attributes but not by its name: libarchive reads it as a
// directory (adding a '/'), CPython's zipfile and pip as a file. Found by fuzz_zip's
// libarchive check (an MS-DOS host with the directory bit); refused on either kind of host.
TEST_CASE("zip reader refuses a member whose attributes say directory and name says file") {
    fs::path dir = fs::temp_directory_path() / ("envbox-zip-dirattr-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const char* script = R"(
import sys, zipfile
out = sys.argv[1]
for name, made_by, attr in [("dos", 0, 0x10), ("unix", 3, (0o40755 << 16)),
                            ("dos-file", 0, 0x20), ("unix-file", 3, (0o100644 << 16))]:
    with zipfile.ZipFile(f"{out}/{name}.zip", "w") as z:
        info = zipfile.ZipInfo("pkg/mod.py")
        info.create_system = made_by
        info.external_attr = attr
        z.writestr(info, b"print('hi')\n")
)";
    auto r = envbox::run_capture({"python3", "-c", script, dir.string()});
    INFO(r.err);
    REQUIRE(r.status == 0);
    for (const char* name : {"dos", "unix"}) {
        INFO(name);
        try {
            envbox::zip::File z((dir / (std::string(name) + ".zip")).string());
            FAIL("accepted");
        } catch (const envbox::Error& e) {
            CHECK(e.code() == envbox::ErrorCode::integrity);
            CHECK_THAT(std::string(e.what()), Catch::Contains("is a directory by its attributes"));
        }
    }
    for (const char* name : {"dos-file", "unix-file"}) {
        INFO(name);
        envbox::zip::File z((dir / (std::string(name) + ".zip")).string());
        REQUIRE(z.members().size() == 1);
        CHECK(z.read(0) == "print('hi')\n");
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
}

namespace {
// Appends `n` little-endian bytes of `v`.
void put(std::string& b, std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i)
        b.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// A one-member stored archive ("a.txt", "hi"): its local header and data, its central directory
// entry, then an end record whose fields `end` may change before it is written.
struct TinyZip {
    std::uint64_t disk = 0, entries = 1, cd_offset = 0;
    std::string comment;

    std::string bytes() const {
        std::string b;
        put(b, 0x04034b50, 4);
        put(b, 20, 2), put(b, 0, 2), put(b, 0, 2), put(b, 0, 4), put(b, 0, 4);  // crc unchecked
        put(b, 2, 4), put(b, 2, 4), put(b, 5, 2), put(b, 0, 2);
        b += "a.txthi";
        const std::size_t cd_start = b.size();
        put(b, 0x02014b50, 4);
        put(b, 20, 2), put(b, 20, 2), put(b, 0, 2), put(b, 0, 2), put(b, 0, 4), put(b, 0, 4);
        put(b, 2, 4), put(b, 2, 4), put(b, 5, 2), put(b, 0, 2), put(b, 0, 2), put(b, 0, 2);
        put(b, 0, 2), put(b, 0, 4), put(b, 0, 4);
        b += "a.txt";
        const std::size_t cd_size = b.size() - cd_start;
        put(b, 0x06054b50, 4);
        put(b, disk, 2), put(b, 0, 2), put(b, entries, 2), put(b, entries, 2);
        put(b, cd_size, 4), put(b, cd_offset ? cd_offset : cd_start, 4);
        put(b, comment.size(), 2);
        return b + comment;
    }
};

// read_directory over the whole archive as its tail, or the message of the error it throws.
std::string directory_error(const std::string& archive) {
    try {
        envbox::zip::read_directory(archive.size(), archive, [](std::uint64_t, std::uint64_t) {
            FAIL("the whole archive was the tail");
            return std::string();
        });
    } catch (const envbox::Error& e) {
        CHECK(e.code() == envbox::ErrorCode::integrity);
        return e.message();
    }
    return "";
}
}  // namespace

// The directory's steps on an archive built in memory: the end record found, its counts and
// bounds checked, the entry read, and the bytes before the tail asked of `read_at`.
TEST_CASE("zip read_directory finds the end record, checks its bounds and reads the entries") {
    const std::string good = TinyZip{}.bytes();
    auto members = envbox::zip::read_directory(good.size(), good, nullptr);
    REQUIRE(members.size() == 1);
    CHECK(members[0].name == "a.txt");
    CHECK(members[0].size == 2);
    CHECK(members[0].local_offset == 0);

    // A tail of just the end record: the directory comes from read_at, at its offset.
    const std::string tail = good.substr(good.size() - 22);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> asked;
    auto from_read_at =
        envbox::zip::read_directory(good.size(), tail, [&](std::uint64_t off, std::uint64_t len) {
            asked.emplace_back(off, len);
            return good.substr(off, len);
        });
    CHECK(from_read_at.size() == 1);
    CHECK(asked == std::vector<std::pair<std::uint64_t, std::uint64_t>>{{37, 51}});

    struct Row {
        TinyZip zip;
        const char* message;
    };
    const Row rows[] = {
        {{0, 1, 0, std::string("PK\x05\x06", 4)},
         "the zip archive has a second end-of-central-directory record (it reads differently by "
         "tool)"},
        {{1, 1, 0, ""}, "the zip archive spans several disks"},
        {{0, 2, 0, ""}, "the zip central directory holds 1 entries, its end record says 2"},
        {{0, 1, 40, ""}, "the zip central directory lies outside the archive"},
    };
    for (const Row& row : rows) {
        INFO(row.message);
        CHECK(directory_error(row.zip.bytes()) == row.message);
    }
    CHECK(directory_error("PK\x05\x06" + std::string(18, '\0')) ==
          "the zip archive has no members");
    CHECK(directory_error("no zip here, just twenty-two bytes or so") ==
          "not a zip archive (no end-of-central-directory record)");
}
