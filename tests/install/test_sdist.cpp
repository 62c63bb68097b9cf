// install::unpack_sdist and util/tar over archives made by Python's tarfile and zipfile (the
// modules setuptools writes every sdist with) and GNU tar: the real formats, hostile members too.
#include <catch2/catch.hpp>
#include <filesystem>

#include "envbox/install/sdist.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/process.hpp"
#include "temp_dir.hpp"

using namespace envbox;
using envboxtest::TempDir;
namespace fs = std::filesystem;

namespace {

// Runs a Python program (Debian's python3) that writes an archive at argv[1].
void make_archive(const fs::path& out, const std::string& program) {
    auto r = run_capture({"python3", "-c", program, out.string()});
    INFO(r.err);
    REQUIRE(r.status == 0);
}

// A program that writes a .tar.gz (PAX, as setuptools does) of `members`: Python literals of
// (name, kind, data) with kind one of "file", "dir", "exec", "symlink", "hardlink", "fifo".
std::string tar_program(const std::string& members) {
    return R"(import io, sys, tarfile
members = [)" +
           members +
           R"(]
with tarfile.open(sys.argv[1], "w:gz", format=tarfile.PAX_FORMAT) as t:
    for name, kind, data in members:
        i = tarfile.TarInfo(name)
        i.mode = 0o755 if kind in ("dir", "exec") else 0o644
        if kind == "dir": i.type = tarfile.DIRTYPE
        elif kind == "symlink": i.type = tarfile.SYMTYPE; i.linkname = data
        elif kind == "hardlink": i.type = tarfile.LNKTYPE; i.linkname = data
        elif kind == "fifo": i.type = tarfile.FIFOTYPE
        else: i.size = len(data)
        t.addfile(i, io.BytesIO(data.encode()) if i.type == tarfile.REGTYPE else None)
)";
}

std::string error_of(const fs::path& archive, const fs::path& dest) {
    try {
        install::unpack_sdist(archive, dest);
    } catch (const Error& e) {
        CHECK_FALSE(fs::exists(dest));  // nothing is left
        return e.message();
    }
    return "";
}

}  // namespace

TEST_CASE("unpack_sdist: a setuptools-shaped .tar.gz, long names, modes", "[install][sdist]") {
    TempDir dir;
    const fs::path archive = dir.path / "demo_pkg-1.0.tar.gz";
    const std::string deep = "demo_pkg-1.0/src/" + std::string(150, 'd') + "/" +
                             std::string(120, 'e') + ".py";  // past ustar's 100+155 bytes
    make_archive(archive, tar_program(R"(("demo_pkg-1.0", "dir", ""),
        ("demo_pkg-1.0/PKG-INFO", "file", "Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n"),
        ("demo_pkg-1.0/setup.py", "file", "from setuptools import setup\nsetup()\n"),
        ("demo_pkg-1.0/bin/tool", "exec", "#!/bin/sh\n"),
        (")" + deep + R"(", "file", "x = 1\n"),
        ("demo_pkg-1.0/empty.txt", "file", ""))"));
    const fs::path project = install::unpack_sdist(archive, dir.path / "out");
    CHECK(project == dir.path / "out" / "demo_pkg-1.0");
    CHECK(read_file(project / "setup.py") == "from setuptools import setup\nsetup()\n");
    CHECK(read_file(dir.path / "out" / deep) == "x = 1\n");
    CHECK(read_file(project / "empty.txt").empty());
    CHECK((fs::status(project / "bin" / "tool").permissions() & fs::perms::owner_exec) !=
          fs::perms::none);
    CHECK((fs::status(project / "setup.py").permissions() & fs::perms::owner_exec) ==
          fs::perms::none);
}

TEST_CASE("unpack_sdist: GNU tar's long names and a .zip sdist", "[install][sdist]") {
    TempDir dir;
    const fs::path tree = dir.path / "tree", top = tree / "pkg-2.0";
    const std::string deep = std::string(160, 'g') + "/" + std::string(110, 'h');
    fs::create_directories(top / deep);
    write_file_atomic(top / "pyproject.toml", "[build-system]\n", 0644, Durability::none);
    write_file_atomic(top / deep / "m.py", "y = 2\n", 0644, Durability::none);
    const fs::path gnu = dir.path / "pkg-2.0.tar.gz";
    auto r =
        run_capture({"tar", "--format=gnu", "-czf", gnu.string(), "-C", tree.string(), "pkg-2.0"});
    REQUIRE(r.status == 0);
    CHECK(read_file(install::unpack_sdist(gnu, dir.path / "a") / deep / "m.py") == "y = 2\n");
    const fs::path zip = dir.path / "pkg-2.0.zip";
    make_archive(zip, R"(import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("pkg-2.0/", "")
    z.writestr("pkg-2.0/pyproject.toml", "[build-system]\n")
    z.writestr("pkg-2.0/pkg/__init__.py", "z = 3\n")
)");
    const fs::path project = install::unpack_sdist(zip, dir.path / "b");
    CHECK(read_file(project / "pkg" / "__init__.py") == "z = 3\n");
}

TEST_CASE("unpack_sdist: hostile members are refused and nothing is left", "[install][sdist]") {
    TempDir dir;
    const fs::path dest = dir.path / "out";
    struct Case {
        const char* members;
        const char* says;
    };
    const Case cases[] = {
        {R"(("p-1/setup.py", "file", ""), ("p-1/../../escape", "file", "x"))", "'..' component"},
        {R"(("/etc/p-1/setup.py", "file", ""),)", "absolute"},
        {R"(("p-1/setup.py", "file", ""), ("p-1/link", "symlink", "/etc/passwd"))",
         "is a symbolic link"},
        {R"(("p-1/setup.py", "file", ""), ("p-1/hard", "hardlink", "p-1/setup.py"))",
         "is a hard link"},
        {R"(("p-1/setup.py", "file", ""), ("p-1/f", "fifo", ""))", "is a FIFO"},
        {R"(("p-1/setup.py", "file", ""), ("q-1/setup.py", "file", ""))",
         "outside the archive's one top-level folder 'p-1'"},
        {R"(("p-1/setup.py", "file", "a"), ("p-1/setup.py", "file", "b"))", "in the archive twice"},
        {R"(("p-1/a", "file", "a"), ("p-1/a/b", "file", "b"))", "a file has that name"},
        {R"(("p-1/README", "file", ""),)", "holds neither pyproject.toml nor setup.py"},
    };
    for (const auto& c : cases) {
        INFO(c.members);
        const fs::path archive = dir.path / "p-1.tar.gz";
        fs::remove(archive);
        make_archive(archive, tar_program(c.members));
        CHECK_THAT(error_of(archive, dest), Catch::Contains(c.says));
    }
    CHECK_FALSE(fs::exists(dir.path / "escape"));
}

TEST_CASE("read_tar_gz: damage and limits are refused", "[util][tar]") {
    TempDir dir;
    const fs::path archive = dir.path / "p-1.tar.gz";
    make_archive(archive, tar_program(R"(("p-1/setup.py", "file", "x" * 4000),)"));
    const std::string bytes = read_file(archive);
    const auto refused = [&](const std::string& content, const tar::Limits& limits) {
        const fs::path bad = dir.path / "bad.tar.gz";
        write_file_atomic(bad, content, 0644, Durability::none);
        try {
            tar::read_tar_gz(bad.string(), limits, [](const tar::Entry&) { return tar::Sink{}; });
        } catch (const Error& e) {
            return e.message();
        }
        return std::string();
    };
    CHECK_THAT(refused(bytes.substr(0, bytes.size() / 2), {}), Catch::Contains("truncated"));
    std::string flipped = bytes;
    flipped[flipped.size() - 6] ^= 0x55;  // the gzip trailer's CRC-32
    CHECK_THAT(refused(flipped, {}), Catch::Contains("CRC-32"));
    CHECK_THAT(refused("not gzip at all", {}), Catch::Contains("gzip"));
    tar::Limits small;
    small.max_member = 100;
    CHECK_THAT(refused(bytes, small), Catch::Contains("more than the 100 a member may have"));
    small = {};
    small.max_members = 0;
    CHECK_THAT(refused(bytes, small), Catch::Contains("more than 0 members"));
    CHECK(refused(bytes, {}).empty());
    // A folder member carrying data (a bomb's shape): counted against the same limits.
    const fs::path folder = dir.path / "folder.tar.gz";
    make_archive(folder, R"(import gzip, sys, tarfile
i = tarfile.TarInfo("p-1/d")
i.type = tarfile.DIRTYPE
i.size = 4000
data = i.tobuf(tarfile.GNU_FORMAT) + b"x" * 4000 + b"\0" * (512 - 4000 % 512) + b"\0" * 1024
open(sys.argv[1], "wb").write(gzip.compress(data))
)");
    small = {};
    small.max_total = 1000;
    CHECK_THAT(refused(read_file(folder), small), Catch::Contains("holds more than 1000 bytes"));
    CHECK(refused(read_file(folder), {}).empty());
}
