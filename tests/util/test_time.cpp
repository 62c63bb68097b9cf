#include <catch2/catch.hpp>
#include <ctime>
#include <string>

#include "envbox/util/time.hpp"

using namespace envbox;

TEST_CASE("parse_rfc3339 reads PEP 700 upload times and offsets") {
    // PyPI's shape, with microseconds.
    CHECK(parse_rfc3339("2024-01-02T03:04:05.123456Z") == 1704164645123456);
    CHECK(parse_rfc3339("1970-01-01T00:00:00Z") == 0);
    // An offset names the same instant.
    CHECK(parse_rfc3339("2024-01-02T05:04:05+02:00") == parse_rfc3339("2024-01-02T03:04:05Z"));
    CHECK(parse_rfc3339("2024-01-01T23:30:00-04:30") == parse_rfc3339("2024-01-02T04:00:00Z"));
    // RFC 3339's lower-case and space forms; more than six fraction digits are cut.
    CHECK(parse_rfc3339("2024-01-02t03:04:05z") == parse_rfc3339("2024-01-02T03:04:05Z"));
    CHECK(parse_rfc3339("2024-01-02 03:04:05.1234567Z") == 1704164645123456);
    CHECK(parse_rfc3339("2024-01-02T03:04:05.5Z") == 1704164645500000);
    CHECK(parse_rfc3339("2024-02-29T00:00:00Z"));  // a leap year
    CHECK(parse_rfc3339("1969-12-31T23:59:59Z") == -1000000);
}

TEST_CASE("parse_rfc3339 agrees with timegm over many days") {
    for (std::int64_t day = -800; day < 30000; day += 37) {
        const std::time_t t = static_cast<std::time_t>(day * 86400 + 3723);
        std::tm tm{};
        gmtime_r(&t, &tm);
        char text[32];
        std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
        INFO(text);
        CHECK(parse_rfc3339(text) == static_cast<std::int64_t>(t) * 1000000);
        CHECK(format_rfc3339(static_cast<std::int64_t>(t) * 1000000) == text);
    }
}

TEST_CASE("parse_rfc3339 refuses what is not an RFC 3339 date-time") {
    for (const char* bad :
         {"", "2024-01-02", "2024-01-02T03:04:05", "2024-13-01T00:00:00Z", "2023-02-29T00:00:00Z",
          "2024-04-31T00:00:00Z", "2024-01-02T24:00:00Z", "2024-01-02T03:60:00Z",
          "2024-01-02T03:04:05.Z", "2024-01-02T03:04:05.1234567890Z", "2024-01-02T03:04:05+2:00",
          "2024-01-02T03:04:05Z\n[x]", "2024-01-02T03:04:05Z ", "0000-01-01T00:00:00Z",
          "+2024-01-02T03:04:05Z", "2024-1-02T03:04:05Z", "2024-01-02T03:04:05+24:00",
          // An offset may not carry the instant out of years 0001-9999.
          "9999-12-31T23:59:59-00:01", "0001-01-01T00:00:00+00:01"}) {
        INFO(bad);
        CHECK_FALSE(parse_rfc3339(bad));
    }
}

TEST_CASE("format_rfc3339 writes UTC, with microseconds only when there are some") {
    CHECK(format_rfc3339(0) == "1970-01-01T00:00:00Z");
    CHECK(format_rfc3339(1704164645123456) == "2024-01-02T03:04:05.123456Z");
    CHECK(format_rfc3339(-1) == "1969-12-31T23:59:59.999999Z");
    CHECK(format_rfc3339(*parse_rfc3339("9999-12-31T23:59:59.999999Z")) ==
          "9999-12-31T23:59:59.999999Z");
}
