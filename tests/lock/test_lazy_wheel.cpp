#include <catch2/catch.hpp>
#include <filesystem>

#include "envbox/index/lazy_wheel.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/fs.hpp"

// The range-request path (the archive's tail first, other bytes on demand) must read what the
// whole-file reader reads (itself checked against CPython's zipfile in tests/util/test_zip.cpp).
TEST_CASE("METADATA read from a wheel's tail and central directory matches the whole-file reader") {
    int checked = 0;
    for (const auto& e : std::filesystem::directory_iterator("/usr/share/python-wheels")) {
        if (e.path().extension() != ".whl") continue;
        std::string zip = envbox::read_file(e.path());
        auto ours = envbox::index::read_dist_info_from_zip(zip, "METADATA");
        auto theirs = envbox::store::read_dist_info_file(e.path(), "METADATA");
        REQUIRE(ours);
        REQUIRE(theirs);
        CHECK(*ours == *theirs);
        CHECK_FALSE(envbox::index::read_dist_info_from_zip(zip, "NO_SUCH_FILE"));
        ++checked;
    }
    CHECK(checked >= 1);
    CHECK_THROWS(envbox::index::read_dist_info_from_zip(std::string(100, 'x'), "METADATA"));
}
