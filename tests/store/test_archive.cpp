// Kept wheel archives (store/archive.cpp): kept only beside a published file list, never
// replaced, found by size, and named only from a valid digest.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "temp_dir.hpp"

using namespace envbox;
namespace fs = std::filesystem;

TEST_CASE("a wheel archive is kept beside its file list, once", "[store][archive]") {
    envboxtest::TempDir tmp("envbox-archive");
    store::Store s(tmp.path);
    const std::string sha(64, 'a');
    const fs::path first = tmp.path / "first.whl", second = tmp.path / "second.whl";
    write_file_atomic(first, "the wheel");
    write_file_atomic(second, "other bytes");

    // No file list: nothing is kept (a sweep would have no wheel to remove it with).
    s.keep_archive(sha, first);
    CHECK_FALSE(fs::exists(s.archive_path(sha)));
    CHECK_FALSE(fs::exists(first));

    write_file_atomic(first, "the wheel");
    fs::create_directories(s.archive_path(sha).parent_path());
    write_file_atomic(s.archive_path(sha).parent_path() / "files", "");
    s.keep_archive(sha, first);
    REQUIRE(fs::exists(s.archive_path(sha)));
    CHECK(read_file(s.archive_path(sha)) == "the wheel");
    struct stat st {};
    REQUIRE(::stat(s.archive_path(sha).c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0444);
    CHECK(s.kept_archive(sha, 9) == s.archive_path(sha));
    CHECK_FALSE(s.kept_archive(sha, 10));
    CHECK_FALSE(s.kept_archive(std::string(64, 'b'), 9));

    // A second keeper never replaces the first.
    s.keep_archive(sha, second);
    CHECK(read_file(s.archive_path(sha)) == "the wheel");
    CHECK_FALSE(fs::exists(second));

    for (const char* bad : {"", "../etc", "ABC", "a"}) {
        INFO(bad);
        CHECK_THROWS_AS(s.archive_path(bad), Error);
    }
}
