#include <catch2/catch.hpp>
#include <string>

#include "../../src/store/file_list.hpp"
#include "envbox/util/error.hpp"

using namespace envbox;

namespace {
const std::string kA(64, 'a'), kB(64, 'b');

store::WheelFiles sample() {
    store::WheelFiles w;
    w.filename = "demo-1.0-py3-none-any.whl";
    w.name = "demo";
    w.version = "1.0";
    w.dist_info = "demo-1.0.dist-info";
    w.root_is_purelib = true;
    w.files = {{"demo/a b.py", kA, 12, false}, {"demo-1.0.data/scripts/run", kB, 3, true}};
    return w;
}
}  // namespace

// The bytes every home already holds: the list must keep reading and writing them exactly.
TEST_CASE("file list: the on-disk format, byte for byte, and back", "[store]") {
    const std::string text = store::serialise_file_list(sample());
    CHECK(text ==
          "envbox-wheel-files 1\nwheel demo-1.0-py3-none-any.whl\nname demo\nversion 1.0\n"
          "dist-info demo-1.0.dist-info\nroot-is-purelib 1\nfiles 2\n" +
              kA + " - 12 demo/a b.py\n" + kB + " x 3 demo-1.0.data/scripts/run\n");
    auto back = store::parse_file_list(text, kB);
    REQUIRE(back);
    CHECK(back->wheel_sha256 == kB);
    CHECK(back->name == "demo");
    CHECK(back->root_is_purelib);
    REQUIRE(back->files.size() == 2);
    CHECK(back->files[0].path == "demo/a b.py");
    CHECK(back->files[1].executable);
    CHECK(back->files[1].size == 3);
}

TEST_CASE("file list: damaged or planted lists read as damaged", "[store]") {
    const std::string good = store::serialise_file_list(sample());
    CHECK_FALSE(store::parse_file_list("envbox-wheel-files 2\n", kA));
    CHECK_FALSE(store::parse_file_list(good.substr(0, good.rfind(kB)), kA));  // a line short
    std::string swapped = good;
    swapped.replace(swapped.find("name demo"), 9, "nome demo");
    CHECK_FALSE(store::parse_file_list(swapped, kA));
    std::string path_name = good;
    path_name.replace(path_name.find("name demo"), 9, "name ../x");
    CHECK_FALSE(store::parse_file_list(path_name, kA));
    // A header line past the reader's bounds is damage, not an exception.
    std::string huge = "envbox-wheel-files 1\nwheel " + std::string(1 << 17, 'w') + "\n";
    CHECK_FALSE(store::parse_file_list(huge, kA));
    // A value that would add a line is refused before anything is written.
    store::WheelFiles bad = sample();
    bad.version = "1.0\nfiles 0";
    CHECK_THROWS_AS(store::serialise_file_list(bad), Error);
}
