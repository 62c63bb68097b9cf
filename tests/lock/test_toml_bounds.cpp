#include <catch2/catch.hpp>
#include <string>

#include "envbox/lock/manifest.hpp"
#include "envbox/lock/pylock.hpp"

using namespace envbox;

// toml++ recurses once per segment of a dotted key: a 200 kB key (in a lock a pull request
// brings, or one `git diff` runs the textconv on) overflowed the stack. Found by
// fuzz_manifest_pylock.
TEST_CASE("a lock or manifest with a deeply dotted key is refused before it is parsed") {
    std::string deep = "a" + std::string(200'000, '.');
    for (std::size_t i = 1; i < deep.size(); i += 2)
        deep[i] = 'a';
    deep += " = 1\n";
    auto lock =
        lock::Pylock::parse("lock-version = \"1.0\"\ncreated-by = \"x\"\n" + deep, "pylock.toml");
    REQUIRE_FALSE(lock.ok());
    CHECK(lock.error().code() == ErrorCode::invalid_input);
    CHECK_THAT(lock.error().message(),
               Catch::StartsWith("pylock.toml:3: a dotted key has more than 32 segments"));
    auto manifest = lock::Manifest::parse("[" + deep.substr(0, 100'001) + "]\n", "envbox.toml");
    REQUIRE_FALSE(manifest.ok());
    CHECK_THAT(manifest.error().message(), Catch::StartsWith("envbox.toml:1: a dotted key"));
}

TEST_CASE("a lock over 16 MiB is refused before parsing") {
    std::string big =
        "lock-version = \"1.0\"\ncreated-by = \"x\"\n# " + std::string(17u << 20, 'x') + "\n";
    auto lock = lock::Pylock::parse(big, "pylock.toml");
    REQUIRE_FALSE(lock.ok());
    CHECK_THAT(lock.error().message(), Catch::Contains("the limit is 16777216 (16 MiB)"));
}

// The dots counted are a key's only: floats, dates, quoted keys, strings of every kind and
// comments, however many, leave a lock readable, and a key of 32 segments is still a key.
TEST_CASE("dots outside keys do not count against the key depth") {
    const std::string dots(100, '.');
    std::string key = "k";
    for (int i = 1; i < 32; ++i)
        key += ".k";
    const std::string text =
        "lock-version = \"1.0\"\ncreated-by = \"" + dots + "\"  # " + dots + "\n" +
        "packages = []\n[tool.x]\nf = [1.5, 2.5, 3.5e1, 1979-05-27T07:32:00.999]\n" + "'" + dots +
        "' = '''\n" + dots + "'''\n" + "\"q.q\".r = \"\"\"" + dots +
        "\\\"\"\"\"\"\n" +  // ends in \"""""
        key + " = 1\n";
    auto lock = lock::Pylock::parse(text, "pylock.toml");
    INFO(text);
    INFO((lock.ok() ? std::string() : lock.error().message()));
    CHECK(lock.ok());
}
