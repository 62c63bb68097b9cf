// The page cache's entries: the bytes envbox has always written, read back by kv.
#include <catch2/catch.hpp>
#include <string>

#include "envbox/index/http_cache.hpp"

using namespace envbox::index;

TEST_CASE("http cache: entries keep their bytes and read back", "[index][http_cache]") {
    CachedPage page;
    page.url = "https://pypi.org/simple/six/";
    page.etag = "\"abc\"";
    page.content_type = "application/vnd.pypi.simple.v1+json";
    page.effective_url = "https://pypi.org/simple/six/";
    page.stored_at = 1764583200;
    page.max_age = 600;
    page.body = "{\"files\": []}\n\nsecond paragraph";
    const std::string text = serialise_cached_page(page);
    CHECK(text ==
          "envbox-http-cache 1\nurl https://pypi.org/simple/six/\netag \"abc\"\nlast-modified "
          "\ncontent-type application/vnd.pypi.simple.v1+json\neffective-url "
          "https://pypi.org/simple/six/\nstored-at 1764583200\nmax-age 600\n\n{\"files\": "
          "[]}\n\nsecond paragraph");
    auto back = parse_cached_page(text, "entry");
    REQUIRE(back);
    CHECK(back->url == page.url);
    CHECK(back->etag == page.etag);
    CHECK(back->last_modified.empty());
    CHECK(back->content_type == page.content_type);
    CHECK(back->effective_url == page.effective_url);
    CHECK(back->stored_at == page.stored_at);
    CHECK(back->max_age == page.max_age);
    CHECK(back->body == page.body);
    CHECK(is_fresh(*back, page.stored_at + 599));
    CHECK(!is_fresh(*back, page.stored_at + 600));
}

TEST_CASE("http cache: what is not an entry reads as none", "[index][http_cache]") {
    CHECK(!parse_cached_page("", "e"));
    CHECK(!parse_cached_page("envbox-http-cache 2\nurl x\n\nbody", "e"));
    CHECK(!parse_cached_page("envbox-http-cache 1\nurl x\n", "e"));  // no blank line
    auto odd = parse_cached_page("envbox-http-cache 1\nnoblank\nfuture-key v\nmax-age x\n\n", "e");
    REQUIRE(odd);
    CHECK(odd->max_age == 0);
    CHECK(odd->body.empty());
    // A header line past the bounds.
    CHECK_THROWS(
        parse_cached_page("envbox-http-cache 1\netag " + std::string(3 << 20, 'x') + "\n\n", "e"));
    // A value with a line break cannot be written (it would read back as two lines).
    CachedPage bad;
    bad.etag = "a\nmax-age 99999";
    CHECK_THROWS(serialise_cached_page(bad));
}

TEST_CASE("http cache: Cache-Control", "[index][http_cache]") {
    CHECK(max_age_of("max-age=600") == 600);
    CHECK(max_age_of("public, max-age=30") == 30);
    CHECK(max_age_of("max-age=600, no-cache") == 0);
    CHECK(max_age_of("no-store") == 0);
    CHECK(max_age_of("") == 0);
}

TEST_CASE("http cache: entries are named by URL and headers", "[index][http_cache]") {
    const auto a = cache_entry_path("/c", "https://h/simple/x/", {"Accept: text/html"});
    CHECK(a.parent_path() == "/c");
    CHECK(a.filename().string().size() == 64);
    CHECK(a != cache_entry_path("/c", "https://h/simple/x/", {}));
    CHECK(a != cache_entry_path("/c", "https://h/simple/y/", {"Accept: text/html"}));
    CHECK(a == cache_entry_path("/c", "https://h/simple/x/", {"Accept: text/html"}));
}
