// PEP 751 `packages.dependencies`: written sorted and deterministic by write_pylock, read back
// and validated by Pylock::parse (the edges `envbox tree` and `why` use).
#include <algorithm>
#include <catch2/catch.hpp>

#include "envbox/lock/pylock.hpp"
#include "envbox/lock/writer.hpp"

using namespace envbox;

namespace {

lock::LockedPackage package(std::string name, std::string version,
                            std::optional<std::vector<lock::LockedDependency>> deps) {
    lock::LockedPackage p;
    p.name = name;
    p.version = version;
    p.index = "https://pypi.org/simple";
    std::string dist = name;
    std::replace(dist.begin(), dist.end(), '-', '_');
    lock::LockedWheel w;
    w.filename = dist + "-" + version + "-py3-none-any.whl";
    w.url = "https://files.example/" + w.filename;
    w.sha256 = std::string(64, 'a');
    p.wheels.push_back(std::move(w));
    p.dependencies = std::move(deps);
    return p;
}

// A lock of one package `a` (and `b`, `c`) whose entry holds `deps` (the text of its
// `dependencies` value).
std::string lock_with(const std::string& deps) {
    std::string text = "lock-version = \"1.0\"\ncreated-by = \"test\"\n";
    for (const char* n : {"a", "b", "c"}) {
        text += std::string("\n[[packages]]\nname = \"") + n + "\"\nversion = \"1.0\"\n";
        if (std::string(n) == "a") text += "dependencies = " + deps + "\n";
        text += std::string("[[packages.wheels]]\nurl = \"https://x/") + n +
                "-1.0-py3-none-any.whl\"\nhashes = { sha256 = \"" + std::string(64, 'b') + "\" }\n";
    }
    return text;
}

}  // namespace

TEST_CASE("the writer records each package's edges sorted, once, and [] for none",
          "[lock][dependencies]") {
    lock::LockDocument doc;
    doc.packages.push_back(package("torch", "2.11.0+cu128",
                                   std::vector<lock::LockedDependency>{
                                       {"sympy", "1.14.0"},
                                       {"nvidia-cublas-cu12", "12.8.4.1"},
                                       {"filelock", "3.19.1"},
                                       {"sympy", "1.14.0"},
                                   }));
    doc.packages.push_back(package("sympy", "1.14.0", std::vector<lock::LockedDependency>{}));
    doc.packages.push_back(package("filelock", "3.19.1", std::vector<lock::LockedDependency>{}));
    doc.packages.push_back(
        package("nvidia-cublas-cu12", "12.8.4.1", std::vector<lock::LockedDependency>{}));
    const std::string text = lock::write_pylock(doc);
    CHECK(text.find("name = \"torch\"\nversion = \"2.11.0+cu128\"\n"
                    "index = \"https://pypi.org/simple\"\n"
                    "dependencies = [\n"
                    "    { name = \"filelock\" },\n"
                    "    { name = \"nvidia-cublas-cu12\" },\n"
                    "    { name = \"sympy\" },\n"
                    "]\n") != std::string::npos);
    CHECK(text.find("name = \"sympy\"\nversion = \"1.14.0\"\nindex = \"https://pypi.org/simple\"\n"
                    "dependencies = []\n") != std::string::npos);

    // The same graph given in another order is the same bytes.
    lock::LockDocument shuffled = doc;
    std::reverse(shuffled.packages.begin(), shuffled.packages.end());
    std::reverse(shuffled.packages.back().dependencies->begin(),
                 shuffled.packages.back().dependencies->end());
    CHECK(lock::write_pylock(shuffled) == text);

    // Read back: every edge names its entry, and the graph is complete.
    auto lock = lock::Pylock::parse(text, "pylock.toml");
    REQUIRE(lock.ok());
    CHECK(lock->has_dependency_graph());
    const lock::Package& torch = lock->packages.back();
    REQUIRE(torch.name == "torch");
    REQUIRE(torch.dependencies->size() == 3);
    for (const auto& d : *torch.dependencies) {
        REQUIRE(d.packages.size() == 1);
        CHECK(lock->packages[d.packages.front()].name == d.name);
        CHECK_FALSE(d.version);
    }
}

TEST_CASE("the writer gives a version only where the lock holds a name twice",
          "[lock][dependencies]") {
    lock::LockDocument doc;
    doc.packages.push_back(package("app", "1.0",
                                   std::vector<lock::LockedDependency>{
                                       {"six", "1.17.0"}, {"six", "1.16.0"}, {"idna", "3.10"}}));
    doc.packages.push_back(package("six", "1.16.0", std::vector<lock::LockedDependency>{}));
    doc.packages.push_back(package("six", "1.17.0", std::vector<lock::LockedDependency>{}));
    doc.packages.push_back(package("idna", "3.10", std::vector<lock::LockedDependency>{}));
    const std::string text = lock::write_pylock(doc);
    CHECK(text.find("dependencies = [\n"
                    "    { name = \"idna\" },\n"
                    "    { name = \"six\", version = \"1.16.0\" },\n"
                    "    { name = \"six\", version = \"1.17.0\" },\n"
                    "]\n") != std::string::npos);
    auto lock = lock::Pylock::parse(text, "pylock.toml");
    REQUIRE(lock.ok());
    const lock::Package& app = lock->packages.front();
    REQUIRE(app.dependencies->size() == 3);
    const auto& six = (*app.dependencies)[1];
    REQUIRE(six.packages.size() == 1);
    CHECK(lock->packages[six.packages.front()].version->str() == "1.16.0");
}

TEST_CASE("a package without dependencies writes no key, and such a lock has no graph",
          "[lock][dependencies]") {
    lock::LockDocument doc;
    doc.packages.push_back(package("six", "1.17.0", std::nullopt));
    const std::string text = lock::write_pylock(doc);
    CHECK(text.find("dependencies") == std::string::npos);
    auto lock = lock::Pylock::parse(text, "pylock.toml");
    REQUIRE(lock.ok());
    CHECK_FALSE(lock->packages.front().dependencies);
    CHECK_FALSE(lock->has_dependency_graph());
    // One package with the key and one without: still not a graph to trust.
    auto partial = lock::Pylock::parse(lock_with("[{ name = \"b\" }]"), "pylock.toml");
    REQUIRE(partial.ok());
    CHECK_FALSE(partial->has_dependency_graph());
}

TEST_CASE("edges are read by name, any spelling, and other keys are tolerated",
          "[lock][dependencies]") {
    auto lock = lock::Pylock::parse(
        lock_with("[{ name = \"B\" }, { name = \"c\", version = \"1.0\", vcs = { x = 1 } }]"),
        "pylock.toml");
    REQUIRE(lock.ok());
    const auto& deps = *lock->packages.front().dependencies;
    REQUIRE(deps.size() == 2);
    CHECK(deps[0].name == "b");
    CHECK(deps[0].packages == std::vector<std::size_t>{1});
    CHECK(deps[1].packages == std::vector<std::size_t>{2});
}

TEST_CASE("hostile dependencies are refused with the file, line and key", "[lock][dependencies]") {
    struct Case {
        std::string deps, error;
    };
    const std::vector<Case> cases = {
        {"[{ name = \"torchh\" }]",
         "'a' depends on 'torchh', which is not a package of this lock in "
         "'packages[0].dependencies[0]'"},
        {"[{ name = \"b\", version = \"2.0\" }]",
         "'a' depends on 'b 2.0', which is not a package of this lock"},
        {"[{ name = \"../b\" }]",
         "Invalid package name '../b' in 'packages[0].dependencies[0].name'"},
        {"[{ version = \"1.0\" }]", "Missing required value in 'packages[0].dependencies[0].name'"},
        {"[\"b\"]", "Unexpected type str (expected Mapping) in 'packages[0].dependencies[0]'"},
        {"{ name = \"b\" }",
         "Unexpected type Mapping (expected Sequence) in 'packages[0].dependencies'"},
        {"[{ name = \"b\" }, { name = \"B\" }]",
         "Dependency 'b' is listed twice in 'packages[0].dependencies[1]'"},
        {"[{ name = \"b\", version = \"x y\" }]", "Invalid version: 'x y'"},
    };
    for (const auto& c : cases) {
        INFO(c.deps);
        auto lock = lock::Pylock::parse(lock_with(c.deps), "pylock.x.toml");
        REQUIRE_FALSE(lock.ok());
        CHECK(lock.error().code() == ErrorCode::invalid_input);
        CHECK_THAT(lock.error().message(), Catch::Contains(c.error));
        CHECK_THAT(lock.error().message(), Catch::StartsWith("pylock.x.toml:"));
    }
    // Bounded: one more entry than the limit is refused before any is read.
    std::string many = "[";
    for (std::size_t i = 0; i <= lock::kMaxDependencies; ++i)
        many += "{ name = \"b\" },";
    auto lock = lock::Pylock::parse(lock_with(many + "]"), "pylock.x.toml");
    REQUIRE_FALSE(lock.ok());
    CHECK_THAT(lock.error().message(), Catch::Contains("More than 4096 dependencies (4097)"));
}

TEST_CASE("a name held many times and named by many edges is bounded in all",
          "[lock][dependencies]") {
    // 1024 entries of `a`, each depending on `b`, which the lock holds 1025 times: more links
    // than kMaxDependencyLinks, each edge legal on its own.
    std::string text = "lock-version = \"1.0\"\ncreated-by = \"test\"\n";
    auto entry = [&](const std::string& name, int k, bool edge) {
        const std::string v = "1.0." + std::to_string(k);
        text += "[[packages]]\nname = \"" + name + "\"\nversion = \"" + v + "\"\n";
        if (edge) text += "dependencies = [{ name = \"b\" }]\n";
        text += "[[packages.wheels]]\nurl = \"https://x/" + name + "-" + v +
                "-py3-none-any.whl\"\nhashes = { sha256 = \"" + std::string(64, 'd') + "\" }\n";
    };
    for (int k = 0; k < 1025; ++k)
        entry("b", k, false);
    for (int k = 0; k < 1024; ++k)
        entry("a", k, true);
    auto lock = lock::Pylock::parse(text, "pylock.x.toml");
    REQUIRE_FALSE(lock.ok());
    CHECK_THAT(lock.error().message(), Catch::Contains("More than 1048576 dependency links"));
    // With a version, each edge names one entry: the same shape is read.
    std::string pinned = text;
    std::size_t at = 0;
    while ((at = pinned.find("{ name = \"b\" }", at)) != std::string::npos)
        pinned.replace(at, 14, "{ name = \"b\", version = \"1.0.0\" }"), at += 30;
    auto ok = lock::Pylock::parse(pinned, "pylock.x.toml");
    REQUIRE(ok.ok());
    CHECK(ok->has_dependency_graph() == false);  // the `b` entries record none
}
