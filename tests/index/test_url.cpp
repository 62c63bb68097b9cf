// URL joins by libcurl's CURLU (index/url.hpp) on the examples of RFC 3986 section 5.4, and
// the links of index pages.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "envbox/index/simple.hpp"
#include "envbox/index/url.hpp"

using namespace envbox::index;

TEST_CASE("url: RFC 3986 5.4.1 normal examples", "[index][url]") {
    const std::string base = "http://a/b/c/d;p?q";
    struct Case {
        std::string ref, expected;
    };
    for (const auto& c : std::vector<Case>{{"g", "http://a/b/c/g"},
                                           {"./g", "http://a/b/c/g"},
                                           {"g/", "http://a/b/c/g/"},
                                           {"/g", "http://a/g"},
                                           {"//g", "http://g/"},  // libcurl writes the root path
                                           {"?y", "http://a/b/c/d;p?y"},
                                           {"g?y", "http://a/b/c/g?y"},
                                           {"#s", "http://a/b/c/d;p?q#s"},
                                           {"g#s", "http://a/b/c/g#s"},
                                           {"g?y#s", "http://a/b/c/g?y#s"},
                                           {";x", "http://a/b/c/;x"},
                                           {"g;x", "http://a/b/c/g;x"},
                                           {"g;x?y#s", "http://a/b/c/g;x?y#s"},
                                           {"", "http://a/b/c/d;p?q"},
                                           {".", "http://a/b/c/"},
                                           {"./", "http://a/b/c/"},
                                           {"..", "http://a/b/"},
                                           {"../", "http://a/b/"},
                                           {"../g", "http://a/b/g"},
                                           {"../..", "http://a/"},
                                           {"../../", "http://a/"},
                                           {"../../g", "http://a/g"}}) {
        INFO(c.ref);
        CHECK(resolve_url(base, c.ref) == c.expected);
    }
}

TEST_CASE("url: RFC 3986 5.4.2 abnormal examples", "[index][url]") {
    const std::string base = "http://a/b/c/d;p?q";
    struct Case {
        std::string ref, expected;
    };
    for (const auto& c : std::vector<Case>{{"../../../g", "http://a/g"},
                                           {"../../../../g", "http://a/g"},
                                           {"/./g", "http://a/g"},
                                           {"/../g", "http://a/g"},
                                           {"g.", "http://a/b/c/g."},
                                           {".g", "http://a/b/c/.g"},
                                           {"g..", "http://a/b/c/g.."},
                                           {"..g", "http://a/b/c/..g"},
                                           {"./../g", "http://a/b/g"},
                                           {"./g/.", "http://a/b/c/g/"},
                                           {"g/./h", "http://a/b/c/g/h"},
                                           {"g/../h", "http://a/b/c/h"},
                                           {"g;x=1/./y", "http://a/b/c/g;x=1/y"},
                                           {"g;x=1/../y", "http://a/b/c/y"},
                                           {"g?y/./x", "http://a/b/c/g?y/./x"},
                                           {"g?y/../x", "http://a/b/c/g?y/../x"},
                                           {"g#s/./x", "http://a/b/c/g#s/./x"},
                                           {"g#s/../x", "http://a/b/c/g#s/../x"}}) {
        INFO(c.ref);
        CHECK(resolve_url(base, c.ref) == c.expected);
    }
}

TEST_CASE("url: index links", "[index][url]") {
    const std::string page = "https://user:pw@files.example/simple/demo/";
    struct Case {
        std::string ref, expected;
    };
    for (const auto& c : std::vector<Case>{
             {"../../packages/ab/demo-1.0.whl#sha256=00",
              "https://user:pw@files.example/packages/ab/demo-1.0.whl#sha256=00"},
             {"//cdn.example/x/demo-1.0.whl", "https://cdn.example/x/demo-1.0.whl"},
             {"http://cdn.example/demo-1.0.whl", "http://cdn.example/demo-1.0.whl"},
             {"HTTPS://cdn.example/a/../demo-1.0.whl", "https://cdn.example/demo-1.0.whl"},
             {"demo-1.0.whl?token=1",
              "https://user:pw@files.example/simple/demo/demo-1.0.whl?token=1"},
             {"demo%2B1.0.whl", "https://user:pw@files.example/simple/demo/demo%2B1.0.whl"},
             {"demo 1.0.whl", "https://user:pw@files.example/simple/demo/demo%201.0.whl"},
             {"file:///etc/passwd", "file:///etc/passwd"}}) {
        INFO(c.ref);
        CHECK(resolve_url(page, c.ref) == c.expected);
    }
    CHECK(resolve_url("https://h/simple/a/?page=2", "#frag") == "https://h/simple/a/?page=2#frag");
    CHECK(resolve_url("https://h/simple/a/#top", "") == "https://h/simple/a/");
    CHECK(resolve_url("file:///w/simple/a/", "../../a-1.0.whl") == "file:///w/a-1.0.whl");
    // Nothing libcurl reads as a URL: no link.
    CHECK(!resolve_url(page, "mailto:someone@example.com"));
    CHECK(!resolve_url(page, std::string("a\x01.whl")));
    CHECK(!resolve_url(page, std::string("a\0.whl", 6)));
    CHECK(!resolve_url("not a url", "a.whl"));
    CHECK(join_url("not a url", "a.whl") == "a.whl");
}

TEST_CASE("url: page links resolved by CURLU keep the trust rules", "[index][url]") {
    auto page =
        parse_html_page(R"(<a href="../../packages/demo-1.0-py3-none-any.whl#sha256=ab">x</a>
<a href="mailto:someone@example.com">mail</a>
<a href="demo-1.1-py3-none-any.whl">y</a>)",
                        "https://h/simple/demo/");
    REQUIRE(page);
    REQUIRE(page->files.size() == 2);
    CHECK(page->files[0].url == "https://h/packages/demo-1.0-py3-none-any.whl");
    CHECK(page->files[0].hashes.at("sha256") == "ab");
    CHECK(page->files[0].filename == "demo-1.0-py3-none-any.whl");
    CHECK(page->files[1].url == "https://h/simple/demo/demo-1.1-py3-none-any.whl");
    // <base href> moves the links; a file: link from a remote page is refused, naming the page
    // without its userinfo.
    auto based =
        parse_html_page(R"(<base href="/mirror/"><a href="demo-1.0-py3-none-any.whl">x</a>)",
                        "https://h/simple/demo/");
    REQUIRE(based);
    CHECK(based->files.at(0).url == "https://h/mirror/demo-1.0-py3-none-any.whl");
    auto refused = parse_html_page(R"(<a href="file:///etc/passwd#/a-1.0-py3-none-any.whl">a</a>)",
                                   "https://user:pw@h/simple/a/");
    REQUIRE(!refused);
    CHECK(refused.error().message().find("https://***@h/simple/a/") != std::string::npos);
    CHECK(refused.error().message().find("pw") == std::string::npos);
    auto json = parse_json_page(
        R"({"files": [{"url": "../../p/demo-1.0-py3-none-any.whl#sha256=cd", "hashes": {}}]})",
        "https://h/simple/demo/");
    REQUIRE(json);
    CHECK(json->files.at(0).url == "https://h/p/demo-1.0-py3-none-any.whl");
}

TEST_CASE("rebase_url: a mirror's file as its canonical index would serve it, and back",
          "[index][url]") {
    using envbox::index::rebase_url;
    // Below the index URL itself, and below the part the file shares with it.
    CHECK(rebase_url("http://m:8080/simple/x/x-1.whl", "http://m:8080/simple",
                     "https://pypi.org/simple") == "https://pypi.org/simple/x/x-1.whl");
    CHECK(rebase_url("http://m/pypi/packages/ab/x-1.whl", "http://m/pypi/simple",
                     "https://pypi.org/simple") == "https://pypi.org/packages/ab/x-1.whl");
    CHECK(rebase_url("http://127.0.0.1:1/files/pypi/x-1.whl", "http://127.0.0.1:1/pypi",
                     "https://pypi.example/simple") == "https://pypi.example/files/pypi/x-1.whl");
    // And back, onto another mirror of the same layout.
    CHECK(rebase_url("https://pypi.example/files/pypi/x-1.whl", "https://pypi.example/simple",
                     "http://127.0.0.1:2/pypi") == "http://127.0.0.1:2/files/pypi/x-1.whl");
    // A file on another host (a CDN), or a canonical URL with too few segments to give: as is.
    CHECK(rebase_url("https://files.example/x-1.whl", "http://m/simple",
                     "https://pypi.org/simple") == "https://files.example/x-1.whl");
    CHECK(rebase_url("http://m/a/b/files/x-1.whl", "http://m/a/b/simple", "https://pypi.org") ==
          "http://m/a/b/files/x-1.whl");
    // A name that only starts like the index's last segment is not below it.
    CHECK(rebase_url("http://m/simple2/x-1.whl", "http://m/simple", "https://p/simple") ==
          "https://p/simple2/x-1.whl");
    CHECK(rebase_url("file:///srv/mirror/files/x-1.whl", "file:///srv/mirror/simple",
                     "https://pypi.org/simple") == "https://pypi.org/files/x-1.whl");
}
