#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>

#include "envbox/util/error.hpp"
#include "envbox/util/sha256.hpp"

using namespace envbox;

TEST_CASE("SHA-256 known answers, hex and RECORD encodings") {
    struct Row {
        std::string input;
        const char* hex;
        const char* b64;
    };
    const Row rows[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
         "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
         "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0"},
    };
    for (const auto& r : rows) {
        INFO(r.input);
        CHECK(to_hex(sha256(r.input)) == r.hex);
        CHECK(to_record_b64(sha256(r.input)) == r.b64);
    }
    // Streaming in pieces gives the one-shot digest.
    Sha256 h;
    h.update("a");
    h.update("bc");
    CHECK(to_hex(h.finish()) == rows[1].hex);
    CHECK(to_hex(h.finish()) == rows[0].hex);  // reset after finish
}

TEST_CASE("file hashing reads the file and names it on failure") {
    std::string path = "/tmp/envbox-sha256-test-" + std::to_string(::getpid());
    {
        std::ofstream out(path, std::ios::binary);
        for (int k = 0; k < 3 * 1024 * 1024 / 3; ++k)
            out << "abc";
    }
    Sha256 h;
    for (int k = 0; k < 3 * 1024 * 1024 / 3; ++k)
        h.update("abc");
    CHECK(sha256_file(path) == h.finish());
    std::remove(path.c_str());
    try {
        sha256_file(path);
        FAIL("no error for a missing file");
    } catch (const Error& e) {
        CHECK_THAT(e.message(), Catch::Contains(path));
    }
}
