#include <catch2/catch.hpp>

#include "envbox/util/printable.hpp"

using envbox::first_hidden;
using envbox::has_hidden;
using envbox::printable;

TEST_CASE("ordinary names, versions, URLs and paths print as they are") {
    for (std::string_view s :
         {"torch", "2.11.0+cu128", "https://download.pytorch.org/whl/cu128",
          "torch-2.11.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl", "./wheels/ünïcødé/a.whl",
          "C:\\wheels\\a.whl", "sys_platform == \"linux\"", "日本語", "emoji 🐍", ""}) {
        CHECK(printable(s) == s);
        CHECK_FALSE(has_hidden(s));
    }
}

TEST_CASE("every separator str.splitlines honours is escaped") {
    struct Row {
        std::string in, out;
    } rows[] = {
        {"a\nb", "a\\nb"},
        {"a\rb", "a\\rb"},
        {"a\x0b"
         "b",
         "a\\x0bb"},
        {"a\x0c"
         "b",
         "a\\x0cb"},
        {"a\x1c"
         "b",
         "a\\x1cb"},
        {"a\x1d"
         "b",
         "a\\x1db"},
        {"a\x1e"
         "b",
         "a\\x1eb"},
        {"a\xc2\x85"
         "b",
         "a\\u0085b"},  // NEL
        {"a\xe2\x80\xa8"
         "b",
         "a\\u2028b"},
        {"a\xe2\x80\xa9"
         "b",
         "a\\u2029b"},
    };
    for (const auto& r : rows) {
        CHECK(printable(r.in) == r.out);
        CHECK(has_hidden(r.in));
    }
}

TEST_CASE("terminal escapes, controls, bidi overrides and invisible characters are escaped") {
    struct Row {
        std::string in, out;
    } rows[] = {
        // An escape sequence that moves the cursor back over "evil.example" and prints pypi.org.
        {"https://evil.example\x1b[12Dpypi.org", "https://evil.example\\x1b[12Dpypi.org"},
        {std::string("a\0b", 3), "a\\x00b"},
        {"tab\there", "tab\\there"},
        {"del\x7f", "del\\x7f"},
        {"csi\xc2\x9b"
         "2J",
         "csi\\u009b2J"},  // C1 CSI
        {"\xe2\x80\xae"
         "gro.ipyp",
         "\\u202egro.ipyp"},  // RLO
        {"a\xe2\x81\xa6"
         "b\xe2\x81\xa9",
         "a\\u2066b\\u2069"},                         // LRI … PDI
        {"py\xe2\x80\x8bpi.org", "py\\u200bpi.org"},  // zero-width space
        {"\xef\xbb\xbfname", "\\ufeffname"},          // BOM
        {"\xd8\x9c", "\\u061c"},                      // Arabic letter mark
        {"\xe2\x80\x8f", "\\u200f"},                  // RLM
    };
    for (const auto& r : rows) {
        CHECK(printable(r.in) == r.out);
        CHECK(first_hidden(r.in).has_value());
    }
    CHECK(*first_hidden("ok\x0b\n") == "\\x0b");
}

TEST_CASE("bytes that are not well-formed UTF-8 are escaped one at a time") {
    struct Row {
        std::string in, out;
    } rows[] = {
        {"\xff", "\\xff"},
        {"a\x80", "a\\x80"},                           // a stray continuation byte
        {"\xc0\xaf", "\\xc0\\xaf"},                    // overlong '/'
        {"\xe0\x80\xaf", "\\xe0\\x80\\xaf"},           // overlong '/'
        {"\xed\xa0\x80", "\\xed\\xa0\\x80"},           // a surrogate
        {"\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"},  // past U+10FFFF
        {"\xe2\x80", "\\xe2\\x80"},                    // cut short
        {"\xe2\x80z", "\\xe2\\x80z"},
    };
    for (const auto& r : rows) {
        CHECK(printable(r.in) == r.out);
        CHECK(has_hidden(r.in));
    }
}

TEST_CASE("printable_lines keeps line breaks and escapes the rest") {
    CHECK(envbox::printable_lines("no such index \x1b[2K\n  while locking env") ==
          "no such index \\x1b[2K\n  while locking env");
    CHECK(envbox::printable_lines("a\rb\n") == "a\\rb\n");
    CHECK(envbox::printable_lines("") == "");
}
