// lock::read_build_system: a source tree's [build-system] as PEP 517/518 define it, read as
// hostile input.
#include <catch2/catch.hpp>

#include "envbox/lock/build_system.hpp"

using namespace envbox;

TEST_CASE("read_build_system: the setuptools fallback, a backend, its path", "[lock][build]") {
    auto none = lock::read_build_system(std::nullopt, "pyproject.toml");
    REQUIRE(none.ok());
    CHECK(none->legacy);
    CHECK(none->backend == "setuptools.build_meta:__legacy__");
    REQUIRE(none->requires_.size() == 1);
    CHECK(none->requires_[0].str() == "setuptools>=40.8.0");
    auto no_table = lock::read_build_system("[project]\nname = \"x\"\n", "pyproject.toml");
    REQUIRE(no_table.ok());
    CHECK(no_table->legacy);
    auto given = lock::read_build_system(
        "[build-system]\nrequires = [\"hatchling>=1.20\", \"editables; python_version < '3.9'\"]\n"
        "build-backend = \"hatchling.build\"\nbackend-path = [\"_build\"]\n",
        "pyproject.toml");
    REQUIRE(given.ok());
    CHECK_FALSE(given->legacy);
    CHECK(given->backend == "hatchling.build");
    CHECK(given->requires_.size() == 2);
    CHECK(given->backend_path == std::vector<std::string>{"_build"});
    auto no_backend = lock::read_build_system("[build-system]\nrequires = [\"setuptools\"]\n", "p");
    REQUIRE(no_backend.ok());
    CHECK(no_backend->legacy);  // PEP 517: the legacy path, with the requirements as written
    CHECK(no_backend->requires_.size() == 1);
}

TEST_CASE("read_build_system: what is refused, with its line", "[lock][build]") {
    const std::pair<const char*, const char*> cases[] = {
        {"[build-system]\nbuild-backend = \"b\"\n", "p:1: [build-system] needs `requires`"},
        {"[build-system]\nrequires = [1]\n", "p:2: [build-system] `requires` holds a value"},
        {"[build-system]\nrequires = [\"not a requirement!\"]\n",
         "requirement 'not a requirement!'"},
        {"[build-system]\nrequires = []\nbuild-backend = \"os; import x\"\n",
         "`build-backend` is not `module[:object]`"},
        {"[build-system]\nrequires = []\nbuild-backend = \"b\"\nbackend-path = [\"/etc\"]\n",
         "`backend-path` entries must be folders inside the tree"},
        {"[build-system]\nrequires = []\nbuild-backend = \"b\"\nbackend-path = [\"a/../..\"]\n",
         "`backend-path` entries must be folders inside the tree"},
        {"build-system = 3\n", "[build-system] is not a table"},
    };
    for (const auto& [text, says] : cases) {
        INFO(text);
        auto r = lock::read_build_system(std::string(text), "p");
        REQUIRE_FALSE(r.ok());
        CHECK_THAT(r.error().message(), Catch::Contains(says));
    }
}
