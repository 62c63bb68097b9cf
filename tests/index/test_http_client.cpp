// The HTTP client's steps end to end against a local server: retries, a 4xx returned, the page
// cache revalidated, offline answers, a resumed download.
#include <catch2/catch.hpp>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "envbox/index/http.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "local_server.hpp"
#include "temp_dir.hpp"

using namespace envbox;
namespace fs = std::filesystem;

namespace {

struct TempDir : envboxtest::TempDir {
    TempDir() : envboxtest::TempDir("envbox-http") {}
};

std::string response(const std::string& status, const std::string& headers,
                     const std::string& body) {
    return "HTTP/1.1 " + status + "\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\nConnection: close\r\n" + headers + "\r\n" + body;
}

index::HttpOptions options(const fs::path& cache, bool offline = false) {
    return {.cache_dir = cache, .offline = offline, .timeout_s = 5};
}

index::HttpRequest request(const std::string& url, bool cache = false) {
    index::HttpRequest r;
    r.url = url;
    r.cache = cache;
    return r;
}

}  // namespace

TEST_CASE("http client: a 503 is retried, a 404 returned", "[index][http_client]") {
    int calls = 0;
    test::LocalServer server([&](const std::string& head) {
        if (head.starts_with("GET /missing")) return response("404 Not Found", "", "no");
        return ++calls < 3 ? response("503 Service Unavailable", "Retry-After: 0\r\n", "busy")
                           : response("200 OK", "Content-Type: text/html\r\n", "<html/>");
    });
    TempDir dir;
    index::HttpClient http(options(dir.path));
    auto ok = http.get(request(server.url("/simple/demo/")));
    CHECK(ok.status == 200);
    CHECK(ok.body == "<html/>");
    CHECK(ok.content_type == "text/html");
    CHECK(calls == 3);
    auto missing = http.get(request(server.url("/missing/")));
    CHECK(missing.status == 404);
    CHECK(server.requests() == 4);
}

TEST_CASE("http client: retries give up naming the URL and the attempts", "[index][http_client]") {
    test::LocalServer server([&](const std::string&) {
        return response("500 Internal Server Error", "Retry-After: 0\r\n", "");
    });
    TempDir dir;
    index::HttpClient http(options(dir.path));
    try {
        (void)http.get(request(server.url("/simple/demo/")));
        FAIL("a 500 was taken");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::network);
        CHECK(e.message() ==
              "cannot fetch " + server.url("/simple/demo/") + ": HTTP 500 (after 5 attempts)");
    }
    CHECK(server.requests() == 5);
}

TEST_CASE("http client: cached pages are revalidated and answer offline", "[index][http_client]") {
    std::vector<std::string> heads;
    std::mutex m;
    test::LocalServer server([&](const std::string& head) {
        std::lock_guard g(m);
        heads.push_back(head);
        if (test::LocalServer::header(head, "if-none-match") == "\"v1\"")
            return response("304 Not Modified", "ETag: \"v1\"\r\n", "");
        return response("200 OK", "ETag: \"v1\"\r\nCache-Control: max-age=0\r\n", "page v1");
    });
    TempDir dir;
    const std::string url = server.url("/simple/demo/");
    {
        index::HttpClient http(options(dir.path));
        auto first = http.get(request(url, true));
        CHECK(first.body == "page v1");
        CHECK(!first.from_cache);
        auto second = http.get(request(url, true));
        CHECK(second.body == "page v1");
        CHECK(second.from_cache);
        CHECK(http.stats().cache_hits == 1);
    }
    REQUIRE(heads.size() == 2);
    CHECK(test::LocalServer::header(heads[1], "if-none-match") == "\"v1\"");
    index::HttpClient offline(options(dir.path, true));
    CHECK(offline.get(request(url, true)).body == "page v1");
    CHECK_THROWS_WITH(offline.get(request(server.url("/simple/other/"), true)),
                      "--offline: " + server.url("/simple/other/") + " is not in the cache");
    CHECK(heads.size() == 2);
}

TEST_CASE("http client: a resumable download continues its part", "[index][http_client]") {
    const std::string file(50'000, 'w');
    std::string asked;
    test::LocalServer server([&](const std::string& head) {
        asked = test::LocalServer::header(head, "range");
        if (asked.empty()) return response("200 OK", "", file);
        const std::size_t from = std::stoul(asked.substr(6));
        return response("206 Partial Content",
                        "Content-Range: bytes " + std::to_string(from) + "-" +
                            std::to_string(file.size() - 1) + "/" + std::to_string(file.size()) +
                            "\r\n",
                        file.substr(from));
    });
    TempDir dir;
    const fs::path dest = dir.path / "demo.whl";
    write_file_atomic(fs::path(dest.string() + ".part"), file.substr(0, 12'345), 0644,
                      Durability::none);
    index::HttpClient http(options(dir.path / "cache"));
    std::uint64_t seen = 0;
    auto req = request(server.url("/files/demo.whl"));
    req.on_bytes = [&](std::uint64_t n) { seen += n; };
    auto resp = http.download(req, dest, /*resumable=*/true);
    CHECK(resp.status == 200);
    CHECK(asked == "bytes=12345-");
    CHECK(read_file(dest) == file);
    CHECK(seen == file.size() - 12'345);
    CHECK(!fs::exists(dest.string() + ".part"));
}

TEST_CASE("http client: a URL's userinfo is never sent, explicit credentials are",
          "[index][http_client]") {
    // Every request's Authorization header, and a redirect to a URL with userinfo at /hop.
    std::vector<std::string> auth;
    std::mutex m;
    int port = 0;
    test::LocalServer server([&](const std::string& head) {
        std::lock_guard g(m);
        auth.push_back(test::LocalServer::header(head, "authorization"));
        if (head.starts_with("GET /hop"))
            return response("302 Found",
                            "Location: http://eve:PW-IN-LOCATION@127.0.0.1:" +
                                std::to_string(port) + "/landed\r\n",
                            "");
        return response("200 OK", "", "ok");
    });
    port = std::stoi(server.url("").substr(std::string("http://127.0.0.1:").size()));
    TempDir dir;
    index::HttpClient http(options(dir.path / "cache"));
    const std::string plain = server.url("/simple/demo/");
    for (const std::string userinfo : {"user:PW-IN-URL@", ":PW-IN-URL@", "PW-IN-URL@"}) {
        const std::string url = "http://" + userinfo + plain.substr(7);
        INFO(url);
        const std::string shown = "http://***@" + plain.substr(7);
        auto refused = [&](const Error& e) {
            CHECK(e.code() == ErrorCode::network);
            CHECK(e.message().find(shown) != std::string::npos);
            CHECK(e.message().find("PW-IN-URL") == std::string::npos);
        };
        try {
            (void)http.get(request(url, /*cache=*/true));
            FAIL("a URL with userinfo was requested");
        } catch (const Error& e) {
            refused(e);
        }
        const fs::path dest = dir.path / "demo.whl";
        try {
            (void)http.download(request(url), dest, /*resumable=*/true);
            FAIL("a URL with userinfo was downloaded");
        } catch (const Error& e) {
            refused(e);
        }
        CHECK(!fs::exists(dest.string() + ".part"));
        // Given the index's origin, explicit credentials would go there: still refused.
        auto with_origin = request(url);
        with_origin.credential_origin = index::url_origin(plain);
        with_origin.username = "alice";
        with_origin.password = "s3cret";
        CHECK_THROWS_AS(http.get(with_origin), Error);
    }
    CHECK(server.requests() == 0);

    // A redirect to a URL with userinfo is not followed with it (libcurl would send it as
    // Basic auth): the request fails and nothing reaches /landed.
    CHECK_THROWS_AS(http.get(request(server.url("/hop"))), Error);
    REQUIRE(auth.size() == 1);
    CHECK(auth[0].empty());

    // Credentials given as the request's own, to their origin: sent (alice:s3cret).
    auto given = request(plain);
    given.credential_origin = index::url_origin(plain);
    given.username = "alice";
    given.password = "s3cret";
    CHECK(http.get(given).status == 200);
    REQUIRE(auth.size() == 2);
    CHECK(auth[1] == "Basic YWxpY2U6czNjcmV0");
}
