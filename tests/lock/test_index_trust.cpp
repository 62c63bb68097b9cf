#include <catch2/catch.hpp>
#include <string>

#include "envbox/index/http.hpp"
#include "envbox/index/simple.hpp"

using namespace envbox::index;

// Credentials are attached by comparing origins: the parse must be libcurl's (the host it
// connects to), whatever userinfo, case or default port the URL is written with.
TEST_CASE("url_origin is scheme, host and port as libcurl reads them", "[index][trust]") {
    CHECK(url_origin("https://pypi.org/simple/") == "https://pypi.org:443");
    CHECK(url_origin("HTTPS://PyPI.org:443/simple") == "https://pypi.org:443");
    CHECK(url_origin("http://127.0.0.1:8080/x") == "http://127.0.0.1:8080");
    CHECK(url_origin("http://127.0.0.1/x") == "http://127.0.0.1:80");
    // The host is what follows the last '@' of the authority, not what precedes it.
    CHECK(url_origin("https://pypi.org@evil.example/x") == "https://evil.example:443");
    CHECK(url_origin("https://pypi.org:443@evil.example/x") == "https://evil.example:443");
    CHECK(url_origin("https://user:pw@pypi.org/x") == "https://pypi.org:443");
    CHECK(url_origin("https://pypi.org:8443/x") != url_origin("https://pypi.org/x"));
    CHECK(url_origin("http://pypi.org/x") != url_origin("https://pypi.org/x"));
    CHECK(url_origin("file:///etc/passwd").empty());
    CHECK(url_origin("not a url").empty());
    CHECK(url_origin("").empty());
}

TEST_CASE("userinfo is redacted from every URL shown and stripped from locked ones",
          "[index][trust]") {
    CHECK(redact_url("https://alice:s3cret@host/simple/x/") == "https://***@host/simple/x/");
    CHECK(redact_url("https://host/simple/a@b/") == "https://host/simple/a@b/");  // '@' in the path
    CHECK(redact_url("https://tok@host") == "https://***@host");
    CHECK(redact_url("no scheme at all") == "no scheme at all");
    CHECK(strip_userinfo("http://a:b@h:1/p?q=@") == "http://h:1/p?q=@");
}

TEST_CASE("a remote page links only to http(s); a file index may link to files", "[index][trust]") {
    auto remote = parse_html_page(R"(<a href="file:///etc/passwd#/a-1.0-py3-none-any.whl">a</a>)",
                                  "https://user:pw@host/simple/a/");
    REQUIRE(!remote);
    CHECK(remote.error().code() == envbox::ErrorCode::network);
    CHECK(remote.error().message().find("https://***@host/simple/a/") != std::string::npos);
    CHECK(remote.error().message().find("pw") == std::string::npos);
    CHECK(!parse_html_page(R"(<base href="FILE:///tmp/"><a href="a-1.0-py3-none-any.whl">a</a>)",
                           "http://h/simple/a/"));
    CHECK(!parse_json_page(
        R"({"files": [{"url": "file:///tmp/a-1.0-py3-none-any.whl", "hashes": {}}]})",
        "https://h/simple/a/"));
    auto local = parse_html_page(R"(<a href="file:///w/a-1.0-py3-none-any.whl">a</a>)",
                                 "file:///w/simple/a/");
    REQUIRE(local);
    CHECK(local->files.size() == 1);
    auto http_from_https = parse_html_page(R"(<a href="http://cdn/a-1.0-py3-none-any.whl">a</a>)",
                                           "https://h/simple/a/");
    CHECK(http_from_https);
}

// Millions of bare `&`: a decoder that rescans its input per `&` (quadratic) would run for
// hours on these and be stopped by the test's timeout; a linear one takes milliseconds (seconds
// under the sanitizers). No wall-clock check here: the machine's speed is not the property.
TEST_CASE("entity decoding is linear in its input", "[index][trust]") {
    std::string amps(4'000'000, '&');
    CHECK(html_unescape(amps) == amps);
    CHECK(html_unescape(std::string(1'000'000, '&') + "amp;") == std::string(1'000'000, '&'));
    CHECK(html_unescape("&#x110000;&#xd800;&#0;") == "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    CHECK(html_unescape("&lt;&#62;&amp;&lt 1") == "<>&< 1");
}
