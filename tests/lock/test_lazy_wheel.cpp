#include <catch2/catch.hpp>

#include <filesystem>

#include "envbox/index/lazy_wheel.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/fs.hpp"

// The zip reader behind range requests must agree with libarchive on real wheels.
TEST_CASE("METADATA read from a wheel's central directory matches libarchive's") {
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
