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
