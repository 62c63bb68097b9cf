// The check of a direct reference's wheel (install/direct.hpp), in-process on real wheel files:
// tags against the target (both listed), the `#sha256=` fragment, METADATA's Name and Version
// against the file name, Requires-Dist and Requires-Python taken from it.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "envbox/install/direct.hpp"
#include "envbox/util/sha256.hpp"
#include "stored_zip.hpp"
#include "temp_dir.hpp"

using namespace envbox;
namespace fs = std::filesystem;

namespace {

// A wheel file `filename` in `dir` whose METADATA is `metadata` (none when empty).
fs::path wheel_file(const fs::path& dir, const std::string& filename, const std::string& metadata) {
    std::vector<envboxtest::ZipMember> members = {{"pkg/__init__.py", ""}};
    if (!metadata.empty()) members.push_back({"pkg-1.0.dist-info/METADATA", metadata});
    fs::path p = dir / filename;
    std::ofstream(p, std::ios::binary) << envboxtest::stored_zip(members);
    return p;
}

install::Target target() {
    lock::Manifest m;
    m.python = "3.12";
    m.python_major = 3;
    m.python_minor = 12;
    m.platform = "manylinux_2_28_x86_64";
    return install::target_of_manifest(m);
}

install::DirectWheel check(const std::string& requirement, const fs::path& file) {
    auto r = pep::Requirement::parse(requirement).value();
    auto ref = lock::DirectReference::parse(r).value();
    return install::check_direct_wheel(r, ref, file, target());
}

const std::string kMeta =
    "Metadata-Version: 2.1\nName: Pkg\nVersion: 1.0\nRequires-Dist: dep>=2\n"
    "Requires-Dist: extra-dep; extra == 'full'\nProvides-Extra: Full\n";

}  // namespace

TEST_CASE("a direct wheel's digest, size and metadata are its own", "[install][direct]") {
    envboxtest::TempDir dir("envbox-direct");
    fs::path w = wheel_file(dir.path, "pkg-1.0-py3-none-any.whl", kMeta);
    install::DirectWheel d = check("pkg @ ./pkg-1.0-py3-none-any.whl", w);
    CHECK(d.name == "pkg");
    CHECK(d.archive.sha256 == to_hex(sha256_file(w)));
    CHECK(d.archive.size == fs::file_size(w));
    CHECK(d.package.version.str() == "1.0");
    CHECK(d.package.url == "./pkg-1.0-py3-none-any.whl");
    REQUIRE(d.package.dependencies.requires_dist.size() == 2);
    CHECK(d.package.dependencies.provides_extra == std::set<std::string>{"full"});
    CHECK(d.package.dependencies.unusable.empty());
    // The fragment that matches.
    CHECK_NOTHROW(check("pkg @ ./pkg-1.0-py3-none-any.whl#sha256=" + d.archive.sha256, w));
}

TEST_CASE("a direct wheel unlike its reference is refused, saying how", "[install][direct]") {
    envboxtest::TempDir dir("envbox-direct");
    struct Row {
        std::string filename, metadata, requirement_tail;
        ErrorCode code;
        std::vector<std::string> expect;
    };
    const std::string zeros(64, '0');
    const std::vector<Row> rows = {
        {"pkg-1.0-cp312-cp312-macosx_11_0_arm64.whl",
         kMeta,
         "",
         ErrorCode::invalid_input,
         {"cp312-cp312-macosx_11_0_arm64", "do not fit the target",
          "CPython 3.12 on manylinux_2_28_x86_64 accepts cp312-cp312-manylinux_2_28_x86_64",
          "-none-any ("}},
        {"pkg-1.0-py3-none-any.whl",
         kMeta,
         "#sha256=" + zeros,
         ErrorCode::integrity,
         {"not the " + zeros}},
        {"pkg-1.0-py3-none-any.whl",
         "Metadata-Version: 2.1\nName: other\nVersion: 1.0\n",
         "",
         ErrorCode::invalid_input,
         {"METADATA names other 1.0"}},
        {"pkg-1.0-py3-none-any.whl",
         "Metadata-Version: 2.1\nName: pkg\nVersion: 1.1\n",
         "",
         ErrorCode::invalid_input,
         {"METADATA names pkg 1.1"}},
        {"pkg-1.0-py3-none-any.whl", "", "", ErrorCode::integrity, {"has no METADATA"}},
    };
    for (const auto& row : rows) {
        INFO(row.filename << " " << row.metadata);
        fs::path w = wheel_file(dir.path, row.filename, row.metadata);
        try {
            check("pkg @ ./" + row.filename + row.requirement_tail, w);
            FAIL("accepted");
        } catch (const Error& e) {
            CHECK(e.code() == row.code);
            for (const auto& x : row.expect)
                CHECK(std::string(e.what()).find(x) != std::string::npos);
            CHECK(std::string(e.what()).find("pkg @ ./") != std::string::npos);
        }
        fs::remove(w);
    }
    fs::path broken = dir.path / "pkg-1.0-py3-none-any.whl";
    std::ofstream(broken) << "not a zip";
    CHECK_THROWS_AS(check("pkg @ ./pkg-1.0-py3-none-any.whl", broken), Error);
}

TEST_CASE("a direct wheel's Requires-Python is kept as why it cannot be used",
          "[install][direct]") {
    envboxtest::TempDir dir("envbox-direct");
    fs::path w = wheel_file(dir.path, "pkg-1.0-py3-none-any.whl",
                            "Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n"
                            "Requires-Python: >=3.13\n");
    CHECK(check("pkg @ ./pkg-1.0-py3-none-any.whl", w).package.dependencies.unusable ==
          "requires Python >=3.13 (the target is 3.12.0)");
}
