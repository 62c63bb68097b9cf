#include <catch2/catch.hpp>

#include "envbox/util/spelling.hpp"

using namespace envbox;

TEST_CASE("edit distance counts a swap of neighbours as one edit") {
    CHECK(edit_distance("check", "check") == 0);
    CHECK(edit_distance("chekc", "check") == 1);
    CHECK(edit_distance("chek", "check") == 1);
    CHECK(edit_distance("", "abc") == 3);
    CHECK(edit_distance("kitten", "sitting") == 3);
}

TEST_CASE("closest spelling: near enough to be a typo, or nothing") {
    const std::vector<std::string_view> commands = {"lock", "create", "run", "rollback"};
    CHECK(closest_spelling("lokc", commands) == "lock");
    CHECK(closest_spelling("CRAETE", commands) == "create");
    CHECK(closest_spelling("rollbak", commands) == "rollback");
    CHECK_FALSE(closest_spelling("frobnicate", commands));
    CHECK_FALSE(closest_spelling("xy", commands));
    CHECK_FALSE(closest_spelling(std::string(1000, 'a'), commands));
    CHECK_FALSE(closest_spelling("lock", {}));
}
