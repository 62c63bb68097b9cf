#include <catch2/catch.hpp>

#include "envbox/lock/pylock.hpp"
#include "envbox/pep/digest.hpp"

using namespace envbox;

namespace {
const char* kTorchLock = R"(lock-version = "1.0"
created-by = "envbox"
requires-python = ">=3.10"

[[packages]]
name = "torch"
version = "2.11.0+cu128"
index = "https://download.pytorch.org/whl/cu128"

[[packages.wheels]]
url = "https://download.pytorch.org/whl/cu128/torch-2.11.0%2Bcu128-cp312-cp312-manylinux_2_28_x86_64.whl"
size = 900000000
hashes = { sha256 = "AB12000000000000000000000000000000000000000000000000000000000000" }

[[packages.wheels]]
url = "https://download.pytorch.org/whl/cu128/torch-2.11.0%2Bcu128-cp311-cp311-manylinux_2_28_x86_64.whl"
hashes = { sha256 = "cd34000000000000000000000000000000000000000000000000000000000000" }

[[packages]]
name = "nvidia-cublas-cu12"
version = "12.8.4.1"
marker = "platform_machine == 'x86_64'"

[[packages.wheels]]
url = "https://pypi.org/nvidia_cublas_cu12-12.8.4.1-py3-none-manylinux_2_27_x86_64.whl"
hashes = { sha256 = "ef56000000000000000000000000000000000000000000000000000000000000" }
)";
}  // namespace

TEST_CASE("a torch lock selects the target's wheels") {
    auto lock = lock::Pylock::parse(kTorchLock, "pylock.train-cu128.toml");
    REQUIRE(lock.ok());
    auto tags = *pep::TargetTags::cpython(3, 12, "manylinux_2_28_x86_64");
    lock::SelectTarget target{
        pep::MarkerEnvironment::linux_cpython("3.12.8", "x86_64"), &tags, {}, {}, {}};
    auto sel = lock::select(*lock, target);
    REQUIRE(sel.ok());
    REQUIRE(sel->size() == 2);
    CHECK((*sel)[0].file->filename() == "torch-2.11.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl");
    CHECK((*sel)[0].file->sha256() ==
          "ab12000000000000000000000000000000000000000000000000000000000000");  // stored lowercase
    CHECK((*sel)[0].file->size == 900000000u);

    // aarch64: the marker drops cublas, and no torch wheel fits.
    auto arm_tags = *pep::TargetTags::cpython(3, 12, "manylinux_2_28_aarch64");
    lock::SelectTarget arm{
        pep::MarkerEnvironment::linux_cpython("3.12.8", "aarch64"), &arm_tags, {}, {}, {}};
    auto none = lock::select(*lock, arm);
    REQUIRE_FALSE(none.ok());
    CHECK(none.error().message().find("package 'torch' at packages[0]") != std::string::npos);

    // Python 3.9 fails requires-python.
    lock::SelectTarget old{
        pep::MarkerEnvironment::linux_cpython("3.9.18", "x86_64"), &tags, {}, {}, {}};
    CHECK_FALSE(lock::select(*lock, old).ok());
}

TEST_CASE("lock errors name the file, the line and the key") {
    struct Row {
        const char* doc;
        const char* expect;
    };
    const Row rows[] = {
        {"lock-version = \"1.0\"\ncreated-by = \"x\"\n\n[[packages]]\nname = \"a\"\n\n"
         "[[packages.wheels]]\nurl = \"https://x/a-1.0-py3-none-any.whl\"\n",
         "pylock.bad.toml:7: Missing required value in 'packages[0].wheels[0].hashes'"},
        {"lock-version = \"3.0\"\ncreated-by = \"x\"\npackages = []\n",
         "pylock.bad.toml:1: pylock version 3.0 is not supported in 'lock-version'"},
        {"lock-version = \"1.0\"\ncreated-by = \"x\"\npackages = []\nrequires-python = "
         "\">=3.10,<\"\n",
         "pylock.bad.toml:4: invalid specifier"},
        {"lock-version = \"1.0\"\ncreated-by = \"x\"\n[[packages]]\nname = \"a\"\nversion = "
         "\"2.0\"\n"
         "wheels = [{ url = \"https://x/a-1.0-py3-none-any.whl\", hashes = { sha256 = "
         "\"0000000000000000000000000000000000000000000000000000000000000000\" } }]\n",
         "Version in 'a-1.0-py3-none-any.whl' is not consistent with package version '2.0'"},
        {"lock-version = \"1.0\"\ncreated-by = \n", "pylock.bad.toml:2:"},
    };
    for (const auto& r : rows) {
        INFO(r.doc);
        auto lock = lock::Pylock::parse(r.doc, "pylock.bad.toml");
        REQUIRE_FALSE(lock.ok());
        CHECK(lock.error().code() == ErrorCode::invalid_input);
        CHECK_THAT(lock.error().message(), Catch::Contains(r.expect));
    }
}

// A digest becomes part of file names (store, download cache, staging): only 64 hex digits.
TEST_CASE("a lock's sha256 that is not 64 hex digits is refused with its line") {
    auto doc = [](const std::string& sha, const std::string& algo = "sha256") {
        return "lock-version = \"1.0\"\ncreated-by = \"x\"\n[[packages]]\nname = \"a\"\nversion = "
               "\"1.0\"\n\n"
               "[[packages.wheels]]\nurl = \"https://x/a-1.0-py3-none-any.whl\"\nhashes = { " +
               algo + " = \"" + sha + "\" }\n";
    };
    const std::string good(64, 'a');
    struct Row {
        std::string sha, algo;
    };
    const Row bad[] = {
        {"../../../../tmp/x", "sha256"},
        {"../../../../tmp/" + std::string(48, 'a'), "sha256"},  // 64 characters, not hex
        {good.substr(1), "sha256"},                             // 63
        {good + "0", "sha256"},                                 // 65
        {"", "sha256"},
        {std::string(63, 'a') + "/", "sha256"},
        {std::string(63, 'a') + "\\n", "sha256"},
        {std::string(62, 'a') + " a", "sha256"},
        {std::string(64, 'g'), "sha256"},
        {"../x", "sha512"},
        {"", "md5"},
    };
    for (const auto& r : bad) {
        INFO(r.algo << " = " << r.sha);
        auto lock = lock::Pylock::parse(doc(r.sha, r.algo), "pylock.evil.toml");
        REQUIRE_FALSE(lock.ok());
        CHECK(lock.error().code() == ErrorCode::invalid_input);
        CHECK_THAT(lock.error().message(),
                   Catch::Contains("pylock.evil.toml:9: Invalid " + r.algo + " digest"));
        CHECK_THAT(lock.error().message(),
                   Catch::Contains("in 'packages[0].wheels[0].hashes." + r.algo + "'"));
        // The spec's own reading (pypa/packaging) takes any string.
        CHECK(lock::Pylock::parse(doc(r.sha, r.algo), "pylock.evil.toml", lock::DigestCheck::spec)
                  .ok());
    }
    for (const std::string& sha : std::vector<std::string>{
             good, std::string(64, 'F'),
             "0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789abcdef"}) {
        auto lock = lock::Pylock::parse(doc(sha), "pylock.toml");
        REQUIRE(lock.ok());
        CHECK(pep::is_sha256_hex(*lock->packages[0].wheels[0].sha256()));
    }
}

TEST_CASE("select chooses one artifact per package: best rank, then build tag, then sdist") {
    const char* text = R"(lock-version = "1.0"
created-by = "envbox"

[[packages]]
name = "foo"
version = "1.0"

[packages.sdist]
url = "https://example.org/foo-1.0.tar.gz"
hashes = { sha256 = "0000000000000000000000000000000000000000000000000000000000000000" }

[[packages.wheels]]
url = "https://example.org/foo-1.0-2-py3-none-any.whl"
hashes = { sha256 = "1111111111111111111111111111111111111111111111111111111111111111" }

[[packages.wheels]]
url = "https://example.org/foo-1.0-7-py3-none-any.whl"
hashes = { sha256 = "2222222222222222222222222222222222222222222222222222222222222222" }

[[packages]]
name = "bar"
version = "1.0"

[[packages.wheels]]
url = "https://example.org/bar-1.0-9-py3-none-any.whl"
hashes = { sha256 = "3333333333333333333333333333333333333333333333333333333333333333" }

[[packages.wheels]]
url = "https://example.org/bar-1.0-cp312-cp312-manylinux_2_28_x86_64.whl"
hashes = { sha256 = "4444444444444444444444444444444444444444444444444444444444444444" }

[[packages]]
name = "baz"

[packages.vcs]
type = "git"
url = "https://example.org/baz.git"
commit-id = "0123456789abcdef0123456789abcdef01234567"
)";
    auto lock = lock::Pylock::parse(text, "pylock.toml");
    REQUIRE(lock.ok());
    auto tags = *pep::TargetTags::cpython(3, 12, "manylinux_2_28_x86_64");
    lock::SelectTarget target{
        pep::MarkerEnvironment::linux_cpython("3.12.8", "x86_64"), &tags, {}, {}, {}};

    auto sel = lock::select(*lock, target);
    REQUIRE(sel.ok());
    REQUIRE(sel->size() == 3);
    // Same tags: the higher build tag. A better-ranked tag beats any build tag.
    CHECK((*sel)[0].kind == lock::Selection::Kind::wheel);
    CHECK((*sel)[0].file->filename() == "foo-1.0-7-py3-none-any.whl");
    CHECK((*sel)[1].file->filename() == "bar-1.0-cp312-cp312-manylinux_2_28_x86_64.whl");
    CHECK((*sel)[2].kind == lock::Selection::Kind::vcs);
    CHECK((*sel)[2].file == nullptr);
    CHECK((*sel)[2].index == 2);

    // Preferred sdist: taken where there is one; bar has none and keeps its wheel.
    target.prefer_sdist = [](const lock::Package&) { return true; };
    auto prefer = lock::select(*lock, target);
    REQUIRE(prefer.ok());
    CHECK((*prefer)[0].kind == lock::Selection::Kind::sdist);
    CHECK((*prefer)[0].file->filename() == "foo-1.0.tar.gz");
    CHECK((*prefer)[1].kind == lock::Selection::Kind::wheel);

    // No tags: no wheel is compatible; foo falls back to its sdist, bar has none.
    target.prefer_sdist = nullptr;
    target.tags = nullptr;
    auto untagged = lock::select(*lock, target);
    REQUIRE_FALSE(untagged.ok());
    CHECK(untagged.error().message() ==
          "No wheel found matching the provided tags for package 'bar' at packages[1], and no "
          "sdist available as a fallback");
}

TEST_CASE("the wheel tags of a whole lock are bounded in all") {
    // Each file name expands to 256 tags (64 Python tags, 4 platforms), the most one name may;
    // 4 097 of them are more than kMaxWheelTagsInAll, and the lock is refused at the wheel
    // that passes it, not after expanding all of them.
    std::string py;
    for (int i = 0; i < 64; ++i)
        py += (i ? "." : "") + std::string("py3") + std::to_string(i);
    const std::string tags = "-" + py + "-none-linux_a.linux_b.linux_c.linux_d.whl";
    auto lock_of = [&](int wheels) {
        std::string text =
            "lock-version = \"1.0\"\ncreated-by = \"x\"\n[[packages]]\nname = "
            "\"a\"\nversion = \"1.0\"\n";
        for (int k = 0; k < wheels; ++k)
            text += "[[packages.wheels]]\nurl = \"https://x/a-1.0-" + std::to_string(k) + tags +
                    "\"\nhashes = { sha256 = \"" + std::string(64, 'a') + "\" }\n";
        return text;
    };
    const auto limit = static_cast<int>(lock::kMaxWheelTagsInAll / 256);
    auto ok = lock::Pylock::parse(lock_of(limit), "pylock.toml");
    REQUIRE(ok.ok());
    CHECK(ok->packages[0].wheels.back().parsed.tags.size() == 256);
    auto over = lock::Pylock::parse(lock_of(limit + 1), "pylock.evil.toml");
    REQUIRE_FALSE(over.ok());
    CHECK(over.error().code() == ErrorCode::invalid_input);
    CHECK_THAT(over.error().message(), Catch::Contains("More than 1048576 wheel tags in all"));
    CHECK_THAT(over.error().message(),
               Catch::Contains("'packages[0].wheels[" + std::to_string(limit) + "]'"));
}
