#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <filesystem>

#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "temp_dir.hpp"

using namespace envbox;
namespace fs = std::filesystem;

namespace {
struct TempDir : envboxtest::TempDir {
    TempDir() : envboxtest::TempDir("envbox-fs") {}
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

TEST_CASE("a no-replace rename moves a file only where the name is free") {
    TempDir dir;
    const fs::path staged = dir.path / "staged", taken = dir.path / "taken",
                   free_name = dir.path / "free";
    write_file_atomic(staged, "object", 0444, Durability::none);
    write_file_atomic(taken, "theirs", 0444, Durability::none);
    NoReplaceMethod used = NoReplaceMethod::link_unlink;
    // EEXIST leaves both files as they were: a concurrent ingest's object is never replaced.
    CHECK(rename_noreplace_at(AT_FDCWD, staged.c_str(), AT_FDCWD, taken.c_str(), &used) == EEXIST);
    CHECK(read_file(taken) == "theirs");
    CHECK(read_file(staged) == "object");
    CHECK(rename_noreplace_at(AT_FDCWD, staged.c_str(), AT_FDCWD, free_name.c_str(), &used) == 0);
    CHECK(used == NoReplaceMethod::renameat2);  // a local filesystem has RENAME_NOREPLACE
    CHECK(read_file(free_name) == "object");
    CHECK(!fs::exists(staged));
    CHECK(rename_noreplace_at(AT_FDCWD, staged.c_str(), AT_FDCWD, (dir.path / "x").c_str()) ==
          ENOENT);
    CHECK(std::string(no_replace_method_name(NoReplaceMethod::link_unlink)) == "link fallback");
}

TEST_CASE("a plain hard link is not taken for a copy-up; another inode is") {
    TempDir dir;
    const fs::path object = dir.path / "object";
    write_file_atomic(object, "x", 0444, Durability::none);
    struct stat before {};
    REQUIRE(::stat(object.c_str(), &before) == 0);
    REQUIRE(::link(object.c_str(), (dir.path / "linked").c_str()) == 0);
    CHECK(!link_was_copied_up(before, AT_FDCWD, (dir.path / "linked").c_str()));
    // What a copy-up looks like: the new name is another inode.
    write_file_atomic(dir.path / "copied", "x", 0444, Durability::none);
    CHECK(link_was_copied_up(before, AT_FDCWD, (dir.path / "copied").c_str()));
}
