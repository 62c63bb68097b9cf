#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "envbox/util/error.hpp"
#include "envbox/util/kv.hpp"

using namespace envbox;

namespace {
// Every line of `text` as (key, value, has_separator).
struct Seen {
    std::string key, value;
    bool sep;
    bool operator==(const Seen&) const = default;
};
std::vector<Seen> lines_of(std::string_view text, char separator = ' ') {
    kv::Reader r(text, "f", separator);
    std::vector<Seen> out;
    while (auto l = r.next())
        out.push_back({std::string(l->key), std::string(l->value), l->has_separator});
    return out;
}
}  // namespace

TEST_CASE("kv: lines split at the first separator, as getline did", "[kv]") {
    CHECK(lines_of("envbox-x 1\nurl https://a/b c\netag \nnosep\n\nlast") ==
          std::vector<Seen>{{"envbox-x", "1", true},
                            {"url", "https://a/b c", true},
                            {"etag", "", true},
                            {"nosep", "", false},
                            {"", "", false},
                            {"last", "", false}});
    CHECK(lines_of("").empty());
    CHECK(lines_of("\n") == std::vector<Seen>{{"", "", false}});
    CHECK(lines_of("a=b=c\r\n", '=') == std::vector<Seen>{{"a", "b=c\r", true}});
}

TEST_CASE("kv: a blank line ends a block and rest() is the body, unscanned", "[kv]") {
    const std::string body = std::string(1 << 20, 'x') + "\n\nmore";
    const std::string text = "envbox-http-cache 1\nurl u\n\n" + body;
    kv::Reader r(text, "cache", ' ', {.max_line_bytes = 64, .max_lines = 4});
    REQUIRE(r.next()->text == "envbox-http-cache 1");
    REQUIRE(r.next()->value == "u");
    auto blank = r.next();
    REQUIRE(blank);
    CHECK(blank->text.empty());
    CHECK(r.rest() == body);
    CHECK(r.line_number() == 3);
}

TEST_CASE("kv: bounds are errors naming the file and the line", "[kv]") {
    const std::string text = "ok\n" + std::string(100, 'a') + "\n";  // a Reader only views it
    kv::Reader longline(text, "/h/cache/ab", ' ', {.max_line_bytes = 99, .max_lines = 10});
    CHECK(longline.next());
    try {
        (void)longline.next();
        FAIL("a line over the limit was read");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::integrity);
        CHECK(e.message() == "/h/cache/ab: line 2 is longer than 99 bytes");
    }
    // Exactly the limit is fine, with or without its '\n'.
    const std::string full(99, 'a');
    kv::Reader exact(full, "f", ' ', {.max_line_bytes = 99, .max_lines = 10});
    CHECK(exact.next()->text.size() == 99);
    CHECK(!exact.next());

    kv::Reader many("a\nb\nc\n", "list", ' ', {.max_line_bytes = 10, .max_lines = 2});
    CHECK(many.next());
    CHECK(many.next());
    CHECK_THROWS_WITH(many.next(), "list: more than 2 lines");
    CHECK(kv::Reader("x", "f").error("why").message() == "f: why");
    kv::Reader one("x\n", "f");
    (void)one.next();
    CHECK(one.error("bad value").message() == "f: line 1: bad value");
}

TEST_CASE("kv: the writer writes each home format byte for byte", "[kv]") {
    // The HTTP cache entry as write_cache wrote it.
    kv::Writer cache("envbox-http-cache 1");
    cache.add("url", "https://pypi.org/simple/x/")
        .add("etag", "")
        .add("last-modified", "Tue, 01 Dec 2026 10:00:00 GMT")
        .add("content-type", "text/html")
        .add("effective-url", "https://pypi.org/simple/x/")
        .add("stored-at", "1764583200")
        .add("max-age", "600")
        .blank()
        .raw("<html>\n\n</html>");
    CHECK(cache.text() ==
          "envbox-http-cache 1\nurl https://pypi.org/simple/x/\netag \nlast-modified Tue, 01 Dec "
          "2026 10:00:00 GMT\ncontent-type text/html\neffective-url "
          "https://pypi.org/simple/x/\nstored-at 1764583200\nmax-age 600\n\n<html>\n\n</html>");
    // The store's file list: fields in order, then raw record lines.
    const std::string digest(64, 'a');
    kv::Writer list("envbox-wheel-files 1");
    list.add("wheel", "six-1.16.0-py2.py3-none-any.whl")
        .add("files", "1")
        .line(digest + " - 10 six dir/a b.py");
    CHECK(list.text() == "envbox-wheel-files 1\nwheel six-1.16.0-py2.py3-none-any.whl\nfiles 1\n" +
                             digest + " - 10 six dir/a b.py\n");
    // A generation v2 package line: encoded fields joined by blanks.
    kv::Writer gen("envbox-generation 2");
    const std::string version = kv::percent_encode("1.0 evil\nx");
    gen.add("generation", "3").add_fields("package", {"six", version, digest, "six.whl", "-"});
    CHECK(gen.text() == "envbox-generation 2\ngeneration 3\npackage six 1.0%20evil%0Ax " + digest +
                            " six.whl -\n");
    // The probe cache: its key lines, then the interpreter's `k=v` output as it came.
    kv::Writer probe("envbox-probe 1");
    probe.add("path", "/usr/bin/python3.12").raw("major=3\nminor=12\n");
    CHECK(std::move(probe).take() ==
          "envbox-probe 1\npath /usr/bin/python3.12\nmajor=3\nminor=12\n");
    CHECK(kv::Writer("", '=').add("k", "v=w").text() == "k=v=w\n");
}

TEST_CASE("kv: the writer refuses what would read back differently", "[kv]") {
    kv::Writer w("h", ' ', "the HTTP cache entry of https://x/");
    CHECK_THROWS_WITH(w.add("etag", "a\nstored-at 9"),
                      "the HTTP cache entry of https://x/: the value of etag holds a line break");
    CHECK_THROWS_AS(w.add("two words", "v"), Error);
    CHECK_THROWS_AS(w.add("", "v"), Error);
    CHECK_THROWS_AS(w.line("a\nb"), Error);
    CHECK_THROWS_WITH(kv::Writer("h").add("k\n", "v"), "a record: the key 'k\n' cannot be written");
    CHECK(w.text() == "h\n");  // nothing refused was written
}

TEST_CASE("kv: percent encoding and fields as a generation v2 stores them", "[kv]") {
    struct Case {
        std::string raw, encoded;
    };
    for (const auto& c : std::vector<Case>{{"", ""},
                                           {"1.0", "1.0"},
                                           {"a b", "a%20b"},
                                           {"100%", "100%25"},
                                           {"t\tn\nr\r", "t%09n%0Ar%0D"},
                                           {std::string("\x7f\x01", 2), "%7F%01"},
                                           {"caf\xc3\xa9", "caf\xc3\xa9"}}) {
        CHECK(kv::percent_encode(c.raw) == c.encoded);
        CHECK(kv::percent_decode(c.encoded) == c.raw);
    }
    CHECK(kv::percent_decode("%2f") == "/");
    for (const char* bad : {"%", "%2", "%zz", "a%4", "%G0"})
        CHECK(!kv::percent_decode(bad));
    using V = std::vector<std::string_view>;
    CHECK(kv::split_fields("") == V{});
    CHECK(kv::split_fields("a b c") == V{"a", "b", "c"});
    CHECK(kv::split_fields("a  b") == V{"a", "", "b"});
    CHECK(kv::split_fields("a b ") == V{"a", "b"});
}
