// Generation records (`gen-N/.envbox/info`): whatever the values, they read back as written, and
// a format 1 record broken by a value (as an older envbox wrote a hostile Version) reads as
// damaged instead of naming the wrong wheels.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "envbox/env/generation.hpp"
#include "envbox/util/error.hpp"
#include "temp_dir.hpp"

using namespace envbox;
namespace fs = std::filesystem;

namespace {

struct TempDir : envboxtest::TempDir {
    TempDir() : envboxtest::TempDir("envbox-record") {}
};

const std::string kSha(64, 'a');

env::Generation generation(const fs::path& dir) {
    env::Generation g;
    g.number = 3;
    g.path = dir / "gen-3";
    fs::create_directories(g.path);
    g.created = "2026-12-01T09:00:00Z";
    g.lock_digest = std::string(64, 'b');
    g.lock_source = "/home/me/my project %41/manifests/pylock.env.toml";
    g.python = "/opt/py thon/bin/python3";
    g.python_version = "3.12.1";
    g.platform = "manylinux_2_28_x86_64";
    g.environment = "env";
    g.link_mode = "hardlink";
    env::GenerationPackage p;
    p.name = "demo";
    p.version = "1.0";
    p.wheel_sha256 = kSha;
    p.filename = "demo-1.0-py3-none-any.whl";
    p.requested = true;
    p.direct_url = "{\"url\": \"file:///a b/demo-1.0-py3-none-any.whl\",\n \"archive_info\": {}}";
    p.preferred = true;
    g.packages.push_back(p);
    return g;
}

void write_info(const fs::path& gen, const std::string& text) {
    fs::create_directories(gen / ".envbox");
    fs::remove(gen / ".envbox" / "info");
    std::ofstream(gen / ".envbox" / "info") << text;
}

}  // namespace

TEST_CASE("a generation record reads back whatever its values hold") {
    TempDir tmp;
    const char* hostile[] = {"1.0 evil", "1.0\nversion 2", "100%", "%20", "tab\there", "\r", ""};
    for (const char* value : hostile) {
        INFO(value);
        env::Generation g = generation(tmp.path);
        g.lock_source = std::string("/x/") + value;
        g.environment = value;
        g.packages[0].filename = std::string("demo ") + value + ".whl";
        if (*value) g.packages[0].version = value;
        env::write_generation_record(g, "lock-version = \"1.0\"\n");
        auto r = env::read_generation(g.path);
        REQUIRE(r);
        CHECK(r->damaged.empty());
        CHECK(r->lock_source == g.lock_source);
        CHECK(r->environment == g.environment);
        CHECK(r->python == g.python);
        REQUIRE(r->packages.size() == 1);
        CHECK(r->packages[0].version == g.packages[0].version);
        CHECK(r->packages[0].wheel_sha256 == kSha);
        CHECK(r->packages[0].filename == g.packages[0].filename);
        CHECK(r->packages[0].direct_url == g.packages[0].direct_url);
        CHECK(r->packages[0].requested);
        CHECK(r->packages[0].preferred);
    }
}

TEST_CASE("a package without a sha256 wheel digest is never recorded") {
    TempDir tmp;
    env::Generation g = generation(tmp.path);
    g.packages[0].wheel_sha256 = "../../x";
    CHECK_THROWS_AS(env::write_generation_record(g, ""), Error);
}

TEST_CASE("format 1 records are still read, and one a value broke reads as damaged") {
    TempDir tmp;
    const fs::path gen = tmp.path / "gen-1";
    const std::string head =
        "envbox-generation 1\ngeneration 1\nlock-source /my project/pylock.toml\n";
    write_info(gen, head + "package demo 1.0 " + kSha +
                        " demo-1.0-py3-none-any.whl requested\n"
                        "direct-url demo {\"url\": \"file:///a b\"}\nprefer demo\n");
    auto g = env::read_generation(gen);
    REQUIRE(g);
    CHECK(g->damaged.empty());
    CHECK(g->lock_source == "/my project/pylock.toml");
    REQUIRE(g->packages.size() == 1);
    CHECK(g->packages[0].wheel_sha256 == kSha);
    CHECK(g->packages[0].direct_url == "{\"url\": \"file:///a b\"}");
    CHECK(g->packages[0].preferred);

    // What an older envbox wrote for METADATA "Version: 1.0 evil": the digest shifted a field.
    const std::string broken[] = {
        "package demo 1.0 evil " + kSha + " demo-1.0-py3-none-any.whl -\n",
        "package demo 1.0 " + kSha + "\n",
        "package demo 1.0 ../../x demo-1.0-py3-none-any.whl -\n",
        "package demo 1.0 " + kSha + " demo-1.0-py3-none-any.whl maybe\n",
    };
    for (const auto& line : broken) {
        INFO(line);
        write_info(gen, head + line);
        auto d = env::read_generation(gen);
        REQUIRE(d);
        CHECK_FALSE(d->damaged.empty());
        CHECK(d->packages.empty());
    }
    write_info(gen, "envbox-generation 9\npackage demo 1.0 " + kSha + " x.whl -\n");
    CHECK_FALSE(env::read_generation(gen)->damaged.empty());
    write_info(gen, "envbox-generation 2\nlock-source bad%zzescape\n");
    CHECK_FALSE(env::read_generation(gen)->damaged.empty());
}

TEST_CASE("a format 2 record is written byte for byte as it always was") {
    TempDir tmp;
    env::Generation g = generation(tmp.path);
    env::write_generation_record(g, "");
    std::ifstream in(g.path / ".envbox" / "info");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(text ==
          "envbox-generation 2\n"
          "generation 3\n"
          "created 2026-12-01T09:00:00Z\n"
          "lock-digest " +
              std::string(64, 'b') +
              "\n"
              "lock-source /home/me/my%20project%20%2541/manifests/pylock.env.toml\n"
              "python /opt/py%20thon/bin/python3\n"
              "python-version 3.12.1\n"
              "platform manylinux_2_28_x86_64\n"
              "environment env\n"
              "link-mode hardlink\n"
              "package demo 1.0 " +
              kSha +
              " demo-1.0-py3-none-any.whl requested\n"
              "direct-url demo "
              "{\"url\":%20\"file:///a%20b/"
              "demo-1.0-py3-none-any.whl\",%0A%20\"archive_info\":%20{}}\n"
              "prefer demo\n");
}
