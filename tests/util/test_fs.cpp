#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"

using namespace envbox;
namespace fs = std::filesystem;

namespace {
struct TempDir {
    fs::path path;
    TempDir() {
        std::string tmpl = (fs::temp_directory_path() / "envbox-fs-XXXXXX").string();
        path = ::mkdtemp(tmpl.data());
    }
    ~TempDir() { fs::remove_all(path); }
};
}  // namespace

TEST_CASE("atomic writes replace the file and leave no temporary behind") {
    TempDir dir;
    const fs::path file = dir.path / "pylock.train.toml";
    for (auto durability : {Durability::fsync, Durability::none}) {
        write_file_atomic(file, "first\n", 0644, durability);
        CHECK(read_file(file) == "first\n");
        write_file_atomic(file, "second\n", 0444, durability);
        CHECK(read_file(file) == "second\n");
        struct stat st {};
        REQUIRE(::stat(file.c_str(), &st) == 0);
        CHECK((st.st_mode & 0777) == 0444);
        fs::permissions(file, fs::perms::owner_write, fs::perm_options::add);
    }
    CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
    sync_filesystem(dir.path);
}

TEST_CASE("a failed atomic write names the path and keeps the old content") {
    TempDir dir;
    const fs::path missing = dir.path / "no-such-dir" / "file";
    CHECK_THROWS_WITH(write_file_atomic(missing, "x"), Catch::Contains("no-such-dir"));
    // Renaming onto a directory fails after the temporary was written: it must be cleaned up.
    const fs::path target = dir.path / "target";
    fs::create_directory(target);
    fs::create_directory(target / "child");
    CHECK_THROWS_AS(write_file_atomic(target, "x"), Error);
    CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
    CHECK_THROWS_WITH(read_file(dir.path / "absent"), Catch::Contains("absent"));
}
