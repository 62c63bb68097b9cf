// own_tree: envbox's own folders are walked, made and removed without following a link below
// the root the user named (the link rule, docs/SECURITY.md).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <functional>

#include "envbox/util/error.hpp"
#include "envbox/util/own_tree.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
using envbox::Error;
using envbox::ErrorCode;

namespace {

void touch(const fs::path& p) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "keep\n";
}

// The victim: what a followed link would reach.
struct Victim {
    envboxtest::TempDir dir{"envbox-own-tree-victim"};
    Victim() {
        touch(dir.path / "a" / "file");
        touch(dir.path / "top");
    }
    bool intact() const {
        return fs::exists(dir.path / "a" / "file") && fs::exists(dir.path / "top");
    }
};

ErrorCode code_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.code();
    }
    return ErrorCode::generic;  // nothing thrown: never the expected integrity
}

}  // namespace

TEST_CASE("a link on the way to an own folder is refused, whatever the call", "[util][own-tree]") {
    envboxtest::TempDir home("envbox-own-tree");
    Victim victim;
    fs::create_directories(home.path / "envs");
    fs::create_symlink(victim.dir.path, home.path / "envs" / "key");
    const fs::path through = home.path / "envs" / "key" / "a";

    CHECK(code_of([&] { (void)envbox::open_own_dir(home.path, "envs/key/a"); }) ==
          ErrorCode::integrity);
    CHECK(code_of([&] { (void)envbox::make_own_dir(home.path, "envs/key/new"); }) ==
          ErrorCode::integrity);
    CHECK(code_of([&] { envbox::remove_own_tree(home.path, through); }) == ErrorCode::integrity);
    CHECK(code_of([&] { envbox::require_no_link_below(home.path, through); }) ==
          ErrorCode::integrity);
    CHECK_FALSE(fs::exists(victim.dir.path / "new"));
    CHECK(victim.intact());
    // The message names the link.
    try {
        envbox::require_no_link_below(home.path, through);
    } catch (const Error& e) {
        CHECK(std::string(e.what()).find((home.path / "envs" / "key").string()) !=
              std::string::npos);
    }
}

TEST_CASE("the root itself may be a link: the user named it", "[util][own-tree]") {
    envboxtest::TempDir real("envbox-own-tree-real");
    envboxtest::TempDir names("envbox-own-tree-names");
    fs::create_symlink(real.path, names.path / "home");
    auto fd = envbox::make_own_dir(names.path / "home", "envs/key");
    CHECK(fd);
    CHECK(fs::is_directory(real.path / "envs" / "key"));
    CHECK(envbox::remove_own_tree(names.path / "home", names.path / "home" / "envs"));
    CHECK_FALSE(fs::exists(real.path / "envs"));
}

TEST_CASE("a removed tree's links are removed themselves, read-only folders emptied",
          "[util][own-tree]") {
    envboxtest::TempDir home("envbox-own-tree");
    Victim victim;
    const fs::path gen = home.path / "envs" / "key" / "env" / "gen-1";
    touch(gen / "lib" / "mod.py");
    fs::create_symlink(victim.dir.path, gen / "lib" / "planted-dir");
    fs::create_symlink(victim.dir.path / "top", gen / "planted-file");
    fs::create_symlink(victim.dir.path / "missing", gen / "dangling");
    ::chmod((gen / "lib").c_str(), 0555);
    ::chmod(gen.c_str(), 0555);
    CHECK(envbox::remove_own_tree(home.path, gen));
    CHECK_FALSE(fs::exists(fs::symlink_status(gen)));
    CHECK(victim.intact());
    CHECK_FALSE(envbox::remove_own_tree(home.path, gen));  // already gone: false, no error

    // The tree's root being a link: the link goes, its target stays.
    fs::create_symlink(victim.dir.path, gen);
    CHECK(envbox::remove_own_tree(home.path, gen));
    CHECK_FALSE(fs::exists(fs::symlink_status(gen)));
    CHECK(victim.intact());
}

TEST_CASE("list_own_dir types entries without following links", "[util][own-tree]") {
    envboxtest::TempDir home("envbox-own-tree");
    Victim victim;
    touch(home.path / "d" / "f");
    fs::create_directories(home.path / "d" / "sub");
    fs::create_symlink(victim.dir.path, home.path / "d" / "l");
    auto fd = envbox::open_own_dir(home.path, "d");
    REQUIRE(fd);
    auto entries = envbox::list_own_dir(fd.get(), home.path / "d");
    REQUIRE(entries.size() == 3);
    CHECK(entries[0].name == "f");
    CHECK(entries[0].type == envbox::OwnEntry::Type::file);
    CHECK(entries[0].size == 5);
    CHECK(entries[1].name == "l");
    CHECK(entries[1].type == envbox::OwnEntry::Type::link);
    CHECK(entries[2].name == "sub");
    CHECK(entries[2].type == envbox::OwnEntry::Type::folder);
    CHECK_FALSE(envbox::open_own_dir(home.path, "missing/below"));
}

TEST_CASE("tally_own_files: a tree deeper than the bound is counted partly, never whole",
          "[util][own-tree]") {
    envboxtest::TempDir root;
    const fs::path cache = root.path / "cache";
    fs::create_directory(cache);
    std::ofstream(cache / "top.bin") << "12345";
    // 600 levels, made through descriptors (the path outgrows PATH_MAX), a file at the bottom.
    int dir = ::open(cache.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(dir >= 0);
    for (int i = 0; i < 600; ++i) {
        REQUIRE(::mkdirat(dir, "d", 0755) == 0);
        const int next = ::openat(dir, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ::close(dir);
        REQUIRE(next >= 0);
        dir = next;
    }
    const int bottom = ::openat(dir, "deep.bin", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    REQUIRE(::write(bottom, "x", 1) == 1);
    ::close(bottom);
    ::close(dir);
    const envbox::FileTally t = envbox::tally_own_files(root.path, cache);
    CHECK(t.partial);
    CHECK(t.files == 1);
    CHECK(t.bytes == 5);
    envbox::remove_own_tree(root.path, cache);
}
