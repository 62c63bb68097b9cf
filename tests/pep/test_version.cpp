#include <catch2/catch.hpp>

#include "envbox/pep/version.hpp"

using envbox::pep::Version;

TEST_CASE("torch local versions parse, print and order") {
    struct Row {
        const char* input;
        const char* canonical;
        const char* local;
    };
    const Row rows[] = {
        {"2.11.0+cu128", "2.11.0+cu128", "cu128"},
        {"2.11.0+CU128", "2.11.0+cu128", "cu128"},
        {"2.9.0+cu126-1", "2.9.0+cu126.1", "cu126.1"},
        {"v2.11.0+rocm6_4", "2.11.0+rocm6.4", "rocm6.4"},
        {" 2.11.0 ", "2.11.0", ""},
    };
    for (const auto& r : rows) {
        INFO(r.input);
        auto v = Version::parse(r.input);
        REQUIRE(v.ok());
        CHECK(v->str() == r.canonical);
        CHECK(v->local_str() == r.local);
    }
    // String comparison of labels: +cu92 sorts above +cu130.
    const char* ascending[] = {"2.11.0",       "2.11.0+cpu",  "2.11.0+cu102",   "2.11.0+cu128",
                               "2.11.0+cu130", "2.11.0+cu92", "2.11.0+rocm6.4", "2.11.0.post1"};
    for (std::size_t k = 1; k < std::size(ascending); ++k) {
        INFO(ascending[k - 1] << " < " << ascending[k]);
        CHECK(*Version::parse(ascending[k - 1]) < *Version::parse(ascending[k]));
    }
}

TEST_CASE("invalid versions are errors with the text named") {
    for (const char* bad :
         {"", "1.0+", "1..0", "2.11.0+cu128+", "1.0 a1", "18446744073709551616"}) {
        INFO(bad);
        auto v = Version::parse(bad);
        REQUIRE_FALSE(v.ok());
        CHECK(v.error().code() == envbox::ErrorCode::invalid_input);
        CHECK(v.error().message().find("invalid version") != std::string::npos);
    }
}
