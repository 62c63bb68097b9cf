#include <catch2/catch.hpp>
#include <string>

#include "envbox/pep/marker.hpp"
#include "envbox/pep/requirement.hpp"

using namespace envbox::pep;

// The marker parser, printer and evaluator recurse once per parenthesised group: 50 000 `(`
// in a lock's marker or a wheel's Requires-Dist overflowed the stack. Found by fuzz_pep440_508.
TEST_CASE("markers nesting parentheses more than 64 deep are refused") {
    auto nested = [](int depth) {
        return std::string(static_cast<std::size_t>(depth), '(') + "os_name == 'posix'" +
               std::string(static_cast<std::size_t>(depth), ')');
    };
    auto ok = Marker::parse(nested(64));
    REQUIRE(ok.ok());
    CHECK(ok->evaluate(MarkerEnvironment::linux_cpython("3.12.8", "x86_64")).value());
    auto deep = Marker::parse(nested(50'000));
    REQUIRE_FALSE(deep.ok());
    CHECK_THAT(deep.error().message(), Catch::Contains("nests parentheses too deeply"));
    auto req = Requirement::parse("pkg; " + nested(65));
    REQUIRE_FALSE(req.ok());
    CHECK_THAT(req.error().message(), Catch::Contains("nests parentheses too deeply"));
}

// A marker's canonical text is written into locks and read back: a literal holding a backslash
// printed bare read back with half its backslashes (or not at all). Found by fuzz_pep440_508.
TEST_CASE("a marker's canonical text parses back to the same marker whatever its literals hold") {
    const char* markers[] = {
        R"(os_name == 'a\\b')",
        R"(os_name == 'a\\\\\\b')",
        R"(platform_release == "it's")",
        R"(platform_release == 'say "hi"')",
        R"(platform_release == "both \" and '")",
        R"(platform_release == 'ends in \\')",
    };
    for (const char* text : markers) {
        INFO(text);
        auto m = Marker::parse(text);
        REQUIRE(m.ok());
        auto again = Marker::parse(m->str());
        INFO(m->str());
        REQUIRE(again.ok());
        CHECK(again->str() == m->str());
        CHECK(std::get<MarkerComparison>(again->root().elements[0]).rhs.text ==
              std::get<MarkerComparison>(m->root().elements[0]).rhs.text);
    }
    CHECK(Marker::parse(R"(os_name == 'a\\b')")->str() == R"(os_name == "a\\b")");
}
