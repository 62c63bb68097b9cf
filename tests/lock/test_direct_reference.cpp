#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "envbox/lock/direct_reference.hpp"
#include "envbox/lock/manifest.hpp"
#include "envbox/lock/pylock.hpp"
#include "envbox/lock/writer.hpp"

// Direct references of a manifest: the wheels envbox accepts (http(s), file:// and paths, a
// `#sha256=` fragment) and everything it refuses, each with the package named and what to give
// instead; the lock's `[packages.archive]` for them.
namespace {

using envbox::lock::DirectReference;

envbox::Result<DirectReference> parse(const std::string& text) {
    return DirectReference::parse(envbox::pep::Requirement::parse(text).value());
}

const std::string kSha(64, 'a');

}  // namespace

TEST_CASE("direct references envbox accepts", "[lock][direct]") {
    using Kind = DirectReference::Kind;
    struct Row {
        std::string text;
        Kind kind;
        std::string location, filename;
        bool hashed;
    };
    const std::vector<Row> rows = {
        {"flash-attn @ "
         "https://h/x/flash_attn-2.8.3%2Bcu12torch2.8cxx11abiTRUE-cp312-cp312-linux_x86_64.whl",
         Kind::http,
         "https://h/x/flash_attn-2.8.3%2Bcu12torch2.8cxx11abiTRUE-cp312-cp312-linux_x86_64.whl",
         "flash_attn-2.8.3+cu12torch2.8cxx11abiTRUE-cp312-cp312-linux_x86_64.whl", false},
        {"Flash_Attn @ http://127.0.0.1:8000/flash_attn-1.0-py3-none-any.whl#sha256=" + kSha,
         Kind::http, "http://127.0.0.1:8000/flash_attn-1.0-py3-none-any.whl",
         "flash_attn-1.0-py3-none-any.whl", true},
        {"mylib @ file:///abs/path/mylib-1.0-py3-none-any.whl", Kind::file_url,
         "file:///abs/path/mylib-1.0-py3-none-any.whl", "mylib-1.0-py3-none-any.whl", false},
        {"local @ ./wheels/local-1.0-py3-none-any.whl", Kind::path,
         "./wheels/local-1.0-py3-none-any.whl", "local-1.0-py3-none-any.whl", false},
        {"local[x] @ ../w/local-1.0-py3-none-any.whl#SHA256=" + std::string(64, 'B') +
             " ; python_version >= '3'",
         Kind::path, "../w/local-1.0-py3-none-any.whl", "local-1.0-py3-none-any.whl", true},
        {"s3 @ https://bucket.test/s3-1.0-py3-none-any.whl?X-Signature=abc", Kind::http,
         "https://bucket.test/s3-1.0-py3-none-any.whl?X-Signature=abc", "s3-1.0-py3-none-any.whl",
         false},
    };
    for (const auto& row : rows) {
        INFO(row.text);
        auto ref = parse(row.text);
        REQUIRE(ref);
        CHECK(ref->kind == row.kind);
        CHECK(ref->location == row.location);
        CHECK(ref->filename == row.filename);
        CHECK(ref->sha256.has_value() == row.hashed);
        if (ref->sha256) CHECK(ref->sha256->size() == 64);
    }
    CHECK(parse("local[x] @ ../w/local-1.0-py3-none-any.whl#sha256=" + std::string(64, 'B'))
              ->sha256 == std::string(64, 'b'));
}

TEST_CASE("direct references envbox refuses say why and what to give", "[lock][direct]") {
    struct Row {
        std::string text, expect;
    };
    const std::vector<Row> rows = {
        {"foo @ https://h/foo-1.0.tar.gz", "'foo-1.0.tar.gz' is a source distribution"},
        {"foo @ https://h/foo-1.0.zip", "is a source distribution"},
        {"foo @ ./foo-1.0.tar.bz2", "is a source distribution"},
        {"foo @ git+https://github.com/o/foo", "a VCS reference is not supported"},
        {"foo @ ./src/foo/", "a directory reference is not supported"},
        {"foo @ ./src/foo/..", "a directory reference is not supported"},
        {"foo @ file:///src/foo", "is not a wheel"},
        {"foo @ ftp://h/foo-1.0-py3-none-any.whl", "the scheme 'ftp:' is not supported"},
        {"foo @ https://user:pw@h/foo-1.0-py3-none-any.whl", "has credentials in it"},
        {"foo @ https://tok@h/foo-1.0-py3-none-any.whl", "has credentials in it"},
        {"foo @ https://h/bar-1.0-py3-none-any.whl", "is of project 'bar', not 'foo'"},
        {"foo @ https://h/foo-1.0.whl", "is not a valid wheel file name"},
        {"foo @ https://h/foo-1.0-py3-none-any.whl#md5=abc", "the fragment '#md5=abc'"},
        {"foo @ https://h/foo-1.0-py3-none-any.whl#egg=foo", "is not supported"},
        {"foo @ https://h/foo-1.0-py3-none-any.whl#sha256=abc", "takes 64 hexadecimal digits"},
        {"foo @ file://server/share/foo-1.0-py3-none-any.whl", "must name a local path"},
        {"foo @ https:///foo-1.0-py3-none-any.whl", "names no host"},
    };
    for (const auto& row : rows) {
        INFO(row.text);
        auto ref = parse(row.text);
        REQUIRE_FALSE(ref);
        CHECK(ref.error().code() == envbox::ErrorCode::invalid_input);
        CHECK(ref.error().message().find(row.expect) != std::string::npos);
        CHECK(ref.error().message().find("foo") != std::string::npos);
        CHECK(ref.error().message().find("pw") == std::string::npos);
    }
    auto sdist = parse("foo @ https://h/foo-1.0.tar.gz");
    CHECK(sdist.error().message().find("find-links directory") != std::string::npos);
}

TEST_CASE("a manifest refuses a direct reference envbox cannot lock, with its line",
          "[lock][direct]") {
    auto m = envbox::lock::Manifest::parse(
        "[environment]\npython = \"3.12\"\nplatform = \"manylinux_2_28_x86_64\"\n"
        "requirements = [\n  \"ok\",\n  \"foo @ https://h/foo-1.0.tar.gz\",\n]\n",
        "m.toml");
    REQUIRE_FALSE(m);
    CHECK(m.error().message().find("m.toml:6:") == 0);
    CHECK(m.error().message().find("source distribution") != std::string::npos);
    CHECK(m.error().message().find("environment.requirements[1]") != std::string::npos);
}

TEST_CASE("a direct wheel is written as [packages.archive], without an index", "[lock][direct]") {
    envbox::lock::LockDocument doc;
    envbox::lock::LockedPackage p;
    p.name = "local";
    p.version = "1.0";
    p.index = "https://ignored/simple";
    p.archive =
        envbox::lock::LockedArchive{std::nullopt, "wheels/local-1.0-py3-none-any.whl", 42, kSha};
    p.dependencies = std::vector<envbox::lock::LockedDependency>{{"dep", "1.0"}};
    doc.packages.push_back(p);
    const std::string text = envbox::lock::write_pylock(doc);
    CHECK(text.find("index =") == std::string::npos);
    CHECK(text.find("[[packages.wheels]]") == std::string::npos);
    CHECK(text.find("name = \"local\"\nversion = \"1.0\"\ndependencies = [\n    { name = "
                    "\"dep\" },\n]\n\n[packages.archive]\npath = "
                    "\"wheels/local-1.0-py3-none-any.whl\"\nsize = 42\nhashes = { sha256 = \"" +
                    kSha + "\" }\n") != std::string::npos);
}

TEST_CASE("an index package locked from its sdist is written as [packages.sdist] and read back",
          "[lock][sdist]") {
    envbox::lock::LockDocument doc;
    envbox::lock::LockedPackage p;
    p.name = "antlr4-python3-runtime";
    p.version = "4.9.3";
    p.index = "https://pypi.org/simple";
    p.sdist = envbox::lock::LockedWheel{"antlr4-python3-runtime-4.9.3.tar.gz",
                                        "https://files.example/antlr4-python3-runtime-4.9.3.tar.gz",
                                        kSha, 117'000, std::nullopt};
    p.dependencies = std::vector<envbox::lock::LockedDependency>{};
    doc.packages.push_back(p);
    const std::string text = envbox::lock::write_pylock(doc);
    CHECK(text.find("[[packages.wheels]]") == std::string::npos);
    CHECK(text.find("\n[packages.sdist]\nname = \"antlr4-python3-runtime-4.9.3.tar.gz\"\nurl = "
                    "\"https://files.example/antlr4-python3-runtime-4.9.3.tar.gz\"\nsize = "
                    "117000\nhashes = { sha256 = \"" +
                    kSha + "\" }\n") != std::string::npos);
    auto lock = envbox::lock::Pylock::parse(text, "pylock.toml");
    REQUIRE(lock);
    REQUIRE(lock->packages.size() == 1);
    REQUIRE(lock->packages[0].sdist);
    CHECK(lock->packages[0].sdist->filename() == "antlr4-python3-runtime-4.9.3.tar.gz");
    CHECK(lock->packages[0].sdist->hashes.at("sha256") == kSha);
    CHECK(lock->packages[0].wheels.empty());
}
