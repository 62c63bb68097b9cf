// The fallbacks of placing store objects (hard link → EMLINK → copy; EXDEV → reflink or copy;
// ENOSPC → a clear error, nothing half-written), with the faults injected through `LinkOps`,
// in `place_file_at` and through the installer's `apply_install`.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <filesystem>
#include <string>

#include "envbox/env/installer.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/sha256.hpp"
#include "envbox/util/unique_fd.hpp"

using namespace envbox;
namespace fs = std::filesystem;

namespace {

struct TempDir {
    fs::path path;
    TempDir() {
        std::string tmpl = (fs::temp_directory_path() / "envbox-faults-XXXXXX").string();
        path = ::mkdtemp(tmpl.data());
    }
    ~TempDir() {
        std::error_code ec;
        fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
        fs::remove_all(path, ec);
    }
};

// The test double: each call answers its configured errno (0: the real call). A failing copy
// first writes half of the data, as a disk that fills up mid-copy does.
struct FaultyOps : LinkOps {
    int link_err = 0, clone_err = 0, copy_err = 0;
    mutable int links = 0, clones = 0, copies = 0;

    int link(int src_dir, const char* src, int dst_dir, const char* dst) const override {
        ++links;
        return link_err ? link_err : LinkOps::link(src_dir, src, dst_dir, dst);
    }
    int clone(int in, int out) const override {
        ++clones;
        if (clone_err) return clone_err;
        return LinkOps::copy(in, out);  // a clone reads as a copy; tmpfs has no FICLONE
    }
    int copy(int in, int out) const override {
        ++copies;
        if (!copy_err) return LinkOps::copy(in, out);
        char half[4];
        ssize_t n = ::read(in, half, sizeof half);
        if (n > 0) (void)write_all_fd(out, half, static_cast<std::size_t>(n));
        return copy_err;
    }
};

const std::string kContent = "print('placed')\n";

fs::path make_object(const fs::path& dir) {
    fs::path p = dir / "object";
    write_file_atomic(p, kContent, 0444, Durability::none);
    return p;
}

ino_t inode_of(const fs::path& p) {
    struct stat st {};
    REQUIRE(::stat(p.c_str(), &st) == 0);
    return st.st_ino;
}

LinkMode place(const fs::path& src, const fs::path& dst, LinkMode mode, const LinkOps& ops) {
    return place_file_at(AT_FDCWD, src.c_str(), AT_FDCWD, dst.c_str(), mode, 0444, ops);
}

}  // namespace

TEST_CASE("EMLINK: the object is copied, for that file only", "[env][link-faults]") {
    TempDir dir;
    fs::path object = make_object(dir.path);
    FaultyOps ops;
    ops.link_err = EMLINK;
    CHECK(place(object, dir.path / "placed", LinkMode::hardlink, ops) == LinkMode::copy);
    CHECK(read_file(dir.path / "placed") == kContent);
    CHECK(inode_of(dir.path / "placed") != inode_of(object));
    CHECK((fs::status(dir.path / "placed").permissions() & fs::perms::all) == fs::perms(0444));
    CHECK(ops.clones == 0);  // the link limit says nothing about clones: straight to a copy
    CHECK(ops.copies == 1);
}

TEST_CASE("EXDEV: a reflink is tried, then a copy", "[env][link-faults]") {
    TempDir dir;
    fs::path object = make_object(dir.path);
    struct Row {
        int clone_err;
        LinkMode expect;
    };
    for (const Row& r : {Row{0, LinkMode::reflink}, Row{EOPNOTSUPP, LinkMode::copy},
                         Row{EXDEV, LinkMode::copy}, Row{ENOTTY, LinkMode::copy}}) {
        INFO("clone errno " << r.clone_err);
        FaultyOps ops;
        ops.link_err = EXDEV;
        ops.clone_err = r.clone_err;
        fs::path dst = dir.path / ("placed-" + std::to_string(r.clone_err));
        CHECK(place(object, dst, LinkMode::hardlink, ops) == r.expect);
        CHECK(read_file(dst) == kContent);
        CHECK(ops.clones == 1);
        CHECK(ops.copies == (r.expect == LinkMode::copy ? 1 : 0));
    }
}

TEST_CASE("ENOSPC: an error naming the path and the cause, nothing half-written",
          "[env][link-faults]") {
    TempDir dir;
    fs::path object = make_object(dir.path);
    struct Row {
        const char* what;
        int link_err, clone_err, copy_err;
        LinkMode mode;
        const char* verb;
    };
    const Row rows[] = {
        {"the copy after EMLINK", EMLINK, 0, ENOSPC, LinkMode::hardlink, "cannot copy"},
        {"the copy after EXDEV", EXDEV, EOPNOTSUPP, ENOSPC, LinkMode::hardlink, "cannot copy"},
        {"a copy asked for", 0, 0, ENOSPC, LinkMode::copy, "cannot copy"},
        {"the link itself (a full directory)", ENOSPC, 0, 0, LinkMode::hardlink, "cannot link"},
        {"the clone", 0, ENOSPC, 0, LinkMode::reflink, "cannot clone"},
    };
    for (const Row& r : rows) {
        INFO(r.what);
        FaultyOps ops;
        ops.link_err = r.link_err;
        ops.clone_err = r.clone_err;
        ops.copy_err = r.copy_err;
        const fs::path dst = dir.path / "placed";
        try {
            place(object, dst, r.mode, ops);
            FAIL("placed without an error");
        } catch (const Error& e) {
            CHECK(e.sys_errno() == ENOSPC);
            CHECK(e.code() == ErrorCode::generic);
            CHECK_THAT(e.message(), Catch::StartsWith(r.verb));
            CHECK_THAT(e.message(), Catch::Contains(object.string() + " to " + dst.string()));
            CHECK_THAT(e.message(), Catch::EndsWith(": No space left on device"));
        }
        CHECK_FALSE(fs::exists(fs::symlink_status(dst)));
        CHECK(read_file(object) == kContent);
    }
}

TEST_CASE("sys_error keeps errno; other errors have none", "[env][link-faults]") {
    Error e = sys_error("cannot write /x", ENOSPC);
    CHECK(e.sys_errno() == ENOSPC);
    CHECK(e.message() == "cannot write /x: No space left on device");
    CHECK(e.code() == ErrorCode::generic);
    e.add_context("linking a into b");
    CHECK(e.sys_errno() == ENOSPC);
    CHECK(Error(ErrorCode::usage, "bad").sys_errno() == 0);
    std::error_code ec;
    fs::create_directories("/proc/envbox-test", ec);
    REQUIRE(ec);
    Error from_ec = sys_error("cannot create /proc/envbox-test", ec);
    CHECK(from_ec.sys_errno() == ec.value());
    CHECK(from_ec.message() == "cannot create /proc/envbox-test: " + ec.message());
    CHECK(sys_error("x", std::make_error_code(std::io_errc::stream)).sys_errno() == 0);
    try {
        read_file("/nonexistent/envbox-test");
        FAIL("read a missing file");
    } catch (const Error& err) {
        CHECK(err.sys_errno() == ENOENT);
        CHECK(err.message() == "cannot open /nonexistent/envbox-test: No such file or directory");
    }
}

// ---- through the installer ----------------------------------------------------------------

namespace {

// A store holding one object, and a plan placing it (plus one generated file) into `env`.
struct Installation {
    TempDir home;
    store::Store store{home.path / "home"};
    store::WheelFile object;
    env::VenvLayout layout;
    env::InstallPlan plan;

    Installation() {
        object.path = "pkg/mod.py";
        object.digest = to_hex(sha256(kContent));
        object.size = kContent.size();
        const fs::path obj = store.object_path(object.digest, false);
        fs::create_directories(obj.parent_path());
        write_file_atomic(obj, kContent, 0444, Durability::none);
        layout.root = home.path / "env";
        fs::create_directories(layout.root);
        plan.dirs = {"lib", "lib/pkg"};
        plan.files.push_back({"lib/pkg/mod.py", &object, {}, false, 0});
        plan.files.push_back({"lib/pkg/generated.txt", nullptr, "generated\n", false, 0});
    }
    env::InstallReport apply(const LinkOps& ops, LinkMode mode = LinkMode::hardlink) {
        return env::apply_install(store, layout, plan, mode, 1, ops);
    }
};

std::string joined(const std::vector<std::string>& notes) {
    std::string out;
    for (const auto& n : notes)
        out += n + "\n";
    return out;
}

}  // namespace

TEST_CASE("the installer counts an EMLINK copy as a copy and says so", "[env][link-faults]") {
    Installation inst;
    FaultyOps ops;
    ops.link_err = EMLINK;
    env::InstallReport r = inst.apply(ops);
    CHECK(r.files == 2);
    CHECK(r.hardlinked == 0);
    CHECK(r.reflinked == 0);
    CHECK(r.copied == 1);
    CHECK(r.generated == 1);
    CHECK(r.bytes == kContent.size() + std::string("generated\n").size());
    CHECK_THAT(joined(r.notes),
               Catch::Contains("hardlink not possible for some files here; used copy"));
    CHECK(read_file(inst.layout.root / "lib/pkg/mod.py") == kContent);
}

TEST_CASE("the installer falls back on EXDEV as place_file does", "[env][link-faults]") {
    SECTION("to a reflink") {
        Installation inst;
        FaultyOps ops;
        ops.link_err = EXDEV;
        env::InstallReport r = inst.apply(ops);
        CHECK(r.reflinked == 1);
        CHECK(r.copied == 0);
        CHECK_THAT(joined(r.notes),
                   Catch::Contains("hardlink not possible for some files here; used reflink"));
    }
    SECTION("to a copy, when clones are refused too") {
        Installation inst;
        FaultyOps ops;
        ops.link_err = EXDEV;
        ops.clone_err = EXDEV;
        env::InstallReport r = inst.apply(ops);
        CHECK(r.copied == 1);
        CHECK(r.reflinked == 0);
        CHECK_THAT(joined(r.notes),
                   Catch::Contains("hardlink not possible for some files here; used copy"));
        CHECK(read_file(inst.layout.root / "lib/pkg/mod.py") == kContent);
    }
    SECTION("nothing to note when every link works") {
        Installation inst;
        FaultyOps ops;
        env::InstallReport r = inst.apply(ops);
        CHECK(r.hardlinked == 1);
        CHECK(r.notes.empty());
    }
}

TEST_CASE("the installer fails on ENOSPC naming the file, leaving no partial file",
          "[env][link-faults]") {
    Installation inst;
    FaultyOps ops;
    ops.link_err = EMLINK;
    ops.copy_err = ENOSPC;
    const fs::path dst = inst.layout.root / "lib/pkg/mod.py";
    try {
        inst.apply(ops);
        FAIL("installed without an error");
    } catch (const Error& e) {
        CHECK(e.sys_errno() == ENOSPC);
        CHECK_THAT(e.message(), Catch::Contains(dst.string()));
        CHECK_THAT(e.message(), Catch::Contains("No space left on device"));
    }
    CHECK_FALSE(fs::exists(fs::symlink_status(dst)));
}

TEST_CASE(
    "the installer creates a wide, deep tree of directories on several threads, parents "
    "first",
    "[env][link-faults]") {
    Installation inst;
    // 16 + 256 + 4096 directories, the deepest holding a file each: a child made before its
    // parent would fail (ENOENT).
    inst.plan.files.clear();
    std::vector<std::string> leaves;
    for (int a = 0; a < 16; ++a) {
        const std::string da = "lib/pkg/d" + std::to_string(a);
        inst.plan.dirs.insert(da);
        for (int b = 0; b < 16; ++b) {
            const std::string db = da + "/e" + std::to_string(b);
            inst.plan.dirs.insert(db);
            for (int c = 0; c < 16; ++c) {
                leaves.push_back(db + "/f" + std::to_string(c));
                inst.plan.dirs.insert(leaves.back());
            }
        }
    }
    for (const auto& leaf : leaves)
        inst.plan.files.push_back({leaf + "/mod.py", &inst.object, {}, false, 0});
    env::InstallReport r =
        env::apply_install(inst.store, inst.layout, inst.plan, LinkMode::hardlink, 8, LinkOps{});
    CHECK(r.files == leaves.size());
    CHECK(r.hardlinked == leaves.size());
    for (const auto& leaf : leaves)
        CHECK(read_file(inst.layout.root / leaf / "mod.py") == kContent);

    // A directory whose parent nothing creates: the error names it, whichever thread met it.
    Installation broken;
    broken.plan.dirs.insert("lib/missing/child");
    try {
        env::apply_install(broken.store, broken.layout, broken.plan, LinkMode::hardlink, 8,
                           LinkOps{});
        FAIL("installed without an error");
    } catch (const Error& e) {
        CHECK(e.sys_errno() == ENOENT);
        CHECK_THAT(e.message(),
                   Catch::Contains("cannot create " +
                                   (broken.layout.root / "lib/missing/child").string()));
    }
}
