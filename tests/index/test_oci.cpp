// The OCI client's pure parts as tables (references, manifests, docker config entries) and its
// transfers against local servers: a blob redirect followed without the registry's
// credentials, a blob that is not its digest refused and removed, a blob hashed as it arrives
// across a response cut short, a part an earlier run left resumed and hashed whole, and a part
// longer than the blob emptied and written from its start.
#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "envbox/index/http.hpp"
#include "envbox/index/oci.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/sha256.hpp"
#include "local_server.hpp"
#include "temp_dir.hpp"

using namespace envbox;
namespace oci = envbox::index::oci;
namespace fs = std::filesystem;

namespace {

struct TempDir : envboxtest::TempDir {
    TempDir() : envboxtest::TempDir("envbox-oci") {}
};

std::string response(const std::string& status, const std::string& headers,
                     const std::string& body) {
    return "HTTP/1.1 " + status + "\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\nConnection: close\r\n" + headers + "\r\n" + body;
}

// A local server as a registry host ("127.0.0.1:PORT").
std::string host_of(const envbox::test::LocalServer& server) {
    return "127.0.0.1:" + server.url("").substr(std::string("http://127.0.0.1:").size());
}

std::optional<ErrorCode> code_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.code();
    }
    return std::nullopt;
}

oci::ArtifactManifest good_manifest() {
    oci::ArtifactManifest m;
    m.artifact_type = oci::kArtifactType;
    m.config = {std::string(oci::kEmptyMediaType), std::string(oci::kEmptyDigest), 2, {}};
    m.layers.push_back({std::string(oci::kLockMediaType),
                        "sha256:" + std::string(64, 'a'),
                        10,
                        {{std::string(oci::kTitleAnnotation), "pylock.e.toml"}}});
    m.layers.push_back({std::string(oci::kWheelMediaType),
                        "sha256:" + std::string(64, 'b'),
                        20,
                        {{std::string(oci::kTitleAnnotation), "alpha-1.0-py3-none-any.whl"}}});
    m.annotations = {{"dev.envbox.python", "3.11.2"}};
    return m;
}

}  // namespace

TEST_CASE("registry references", "[index][oci]") {
    struct Case {
        const char* text;
        const char* registry;
        const char* repository;
        const char* tag;
        const char* digest;
    };
    const std::string d = "sha256:" + std::string(64, '0');
    for (const Case& c : std::initializer_list<Case>{
             {"localhost:5000/team/train:v1", "localhost:5000", "team/train", "v1", ""},
             {"registry.example/team/train-cu128", "registry.example", "team/train-cu128", "", ""},
             {"127.0.0.1:5000/a/b/c:gen-3_x.y", "127.0.0.1:5000", "a/b/c", "gen-3_x.y", ""},
             {"oci://localhost/x:t", "localhost", "x", "t", ""},
         }) {
        oci::Reference r = oci::Reference::parse(c.text);
        CHECK(r.registry == c.registry);
        CHECK(r.repository == c.repository);
        CHECK(r.tag == c.tag);
        CHECK(r.digest == c.digest);
    }
    oci::Reference by_digest = oci::Reference::parse("localhost:5000/team/x@" + d);
    CHECK(by_digest.digest == d);
    CHECK(by_digest.reference() == d);
    CHECK(by_digest.str() == "localhost:5000/team/x@" + d);
    for (const char* bad : {"train", "team/train:v1", "localhost:5000/Team/x", "localhost:5000/",
                            "localhost:5000/x:", "localhost:5000/x:-t", "localhost:5000/a//b",
                            "localhost:5000/x@sha256:abc", "local host:5000/x"})
        CHECK(code_of([&] { oci::Reference::parse(bad); }) == ErrorCode::usage);
}

TEST_CASE("an artifact manifest reads back as written, and others are refused", "[index][oci]") {
    const oci::ArtifactManifest m = good_manifest();
    oci::ArtifactManifest back = oci::ArtifactManifest::parse(m.to_json(), "r");
    REQUIRE(back.layers.size() == 2);
    CHECK(back.layers[1].digest == m.layers[1].digest);
    CHECK(back.layers[1].size == 20);
    CHECK(back.annotations.at("dev.envbox.python") == "3.11.2");

    struct Bad {
        const char* what;
        std::function<void(oci::ArtifactManifest&)> edit;
    };
    for (const Bad& b : std::initializer_list<Bad>{
             {"artifact type", [](auto& x) { x.artifact_type = "application/x"; }},
             {"config", [](auto& x) { x.config.digest = "sha256:" + std::string(64, 'c'); }},
             {"layer media type",
              [](auto& x) { x.layers[1].media_type = "application/vnd.oci.image.layer.v1.tar"; }},
             {"digest", [](auto& x) { x.layers[1].digest = "sha512:" + std::string(64, 'b'); }},
             {"upper-case digest",
              [](auto& x) { x.layers[1].digest = "sha256:" + std::string(64, 'B'); }},
             {"title with a slash",
              [](auto& x) {
                  x.layers[1].annotations[std::string(oci::kTitleAnnotation)] =
                      "../a-1-py3-none-any.whl";
              }},
             {"no lock", [](auto& x) { x.layers.erase(x.layers.begin()); }},
             {"two locks", [](auto& x) { x.layers.push_back(x.layers[0]); }},
         }) {
        INFO(b.what);
        oci::ArtifactManifest edited = good_manifest();
        b.edit(edited);
        CHECK(code_of([&] { oci::ArtifactManifest::parse(edited.to_json(), "r"); }) ==
              ErrorCode::integrity);
    }
    for (const char* text : {"", "[]", "{\"schemaVersion\": 2}", "not json"})
        CHECK(code_of([&] { oci::ArtifactManifest::parse(text, "r"); }) == ErrorCode::integrity);
}

TEST_CASE("docker config entries", "[index][oci]") {
    TempDir tmp;
    const fs::path cfg = tmp.path / "config.json";
    write_file_atomic(cfg,
                      R"({"auths": {"https://reg.example:5000": {"auth": "dXNlcjpwYSA6c3M="},
                                    "plain.example": {"username": "u2", "password": "p2"},
                                    "empty.example": {}}})");
    auto a = oci::docker_config_credentials(cfg, "reg.example:5000");
    REQUIRE(a);
    CHECK(a->username == "user");
    CHECK(a->password == "pa :ss");
    auto b = oci::docker_config_credentials(cfg, "plain.example");
    REQUIRE(b);
    CHECK(b->username == "u2");
    CHECK_FALSE(oci::docker_config_credentials(cfg, "empty.example"));
    CHECK_FALSE(oci::docker_config_credentials(cfg, "other.example"));
    CHECK_FALSE(oci::docker_config_credentials(tmp.path / "absent.json", "reg.example:5000"));
    write_file_atomic(cfg, "{not json");
    CHECK(code_of([&] { oci::docker_config_credentials(cfg, "x"); }) == ErrorCode::invalid_input);
}

TEST_CASE("a blob redirect is followed without the registry's credentials", "[index][oci]") {
    TempDir tmp;
    const std::string blob = "the wheel's bytes";
    const std::string digest = "sha256:" + to_hex(sha256(blob));
    std::mutex m;
    std::string storage_auth = "unset", registry_auth;
    envbox::test::LocalServer storage([&](const std::string& head) {
        std::lock_guard<std::mutex> g(m);
        storage_auth = envbox::test::LocalServer::header(head, "authorization");
        return response("200 OK", "",
                        head.find("/corrupt") != std::string::npos ? "other bytes!!" : blob);
    });
    envbox::test::LocalServer registry([&](const std::string& head) {
        std::string auth = envbox::test::LocalServer::header(head, "authorization");
        if (auth.empty())
            return response("401 Unauthorized", "WWW-Authenticate: Basic realm=\"test\"\r\n", "");
        std::lock_guard<std::mutex> g(m);
        registry_auth = auth;
        const bool corrupt = head.find("/corrupt/") != std::string::npos;
        return response("307 Temporary Redirect",
                        "Location: " + storage.url(corrupt ? "/corrupt" : "/object") + "\r\n", "");
    });
    index::HttpClient http({.cache_dir = tmp.path / "cache", .timeout_s = 5});
    oci::RegistryOptions opt;
    opt.plain_http = true;
    opt.credentials = oci::RegistryCredentials{"user", "secret"};
    const std::string host = host_of(registry);
    oci::RegistryClient client(http, oci::Reference::parse(host + "/team/x:t"), opt);
    const fs::path dest = tmp.path / "blob";
    client.download_blob(digest, blob.size(), dest);
    CHECK(read_file(dest) == blob);
    CHECK(registry_auth == "Basic dXNlcjpzZWNyZXQ=");
    CHECK(storage_auth.empty());

    oci::RegistryClient corrupt(http, oci::Reference::parse(host + "/corrupt/x:t"), opt);
    const fs::path dest2 = tmp.path / "blob2";
    CHECK(code_of([&] { corrupt.download_blob(digest, blob.size(), dest2); }) ==
          ErrorCode::integrity);
    CHECK_FALSE(fs::exists(dest2));
}

TEST_CASE("a download's hash follows the bytes as they reach the file", "[index][oci]") {
    const std::string a = "first half, ", b = "second half";
    index::DownloadHash h;
    h.wrote(0, a.data(), a.size());
    h.wrote(a.size(), b.data(), b.size());
    CHECK(h.whole);
    CHECK(h.hashed == a.size() + b.size());
    CHECK(to_hex(h.hash.finish()) == to_hex(sha256(a + b)));

    // The part emptied and written again from its start: hashed from there.
    index::DownloadHash again;
    again.wrote(0, "junk", 4);
    again.wrote(0, a.data(), a.size());
    CHECK(again.whole);
    CHECK(to_hex(again.hash.finish()) == to_hex(sha256(a)));

    // Resumed past bytes it never saw (an earlier run's part): not the file's hash.
    index::DownloadHash resumed;
    resumed.wrote(a.size(), b.data(), b.size());
    CHECK_FALSE(resumed.whole);
}

TEST_CASE("a blob resumed from an earlier run's part is hashed whole", "[index][oci]") {
    TempDir tmp;
    std::string blob;
    for (int i = 0; i < 20000; ++i)
        blob += std::to_string(i) + ",";
    const std::string digest = "sha256:" + to_hex(sha256(blob));
    envbox::test::LocalServer registry([&](const std::string& head) {
        const std::string range = envbox::test::LocalServer::header(head, "range");
        if (range.rfind("bytes=", 0) != 0) return response("200 OK", "", blob);
        const std::size_t from = std::stoul(range.substr(6));
        return response("206 Partial Content",
                        "Content-Range: bytes " + std::to_string(from) + "-" +
                            std::to_string(blob.size() - 1) + "/" + std::to_string(blob.size()) +
                            "\r\n",
                        blob.substr(from));
    });
    index::HttpClient http({.cache_dir = tmp.path / "cache", .timeout_s = 5});
    oci::RegistryOptions opt;
    opt.plain_http = true;
    const std::string host = host_of(registry);
    oci::RegistryClient client(http, oci::Reference::parse(host + "/team/x:t"), opt);

    // Hashed as it arrives.
    const fs::path whole = tmp.path / "whole";
    client.download_blob(digest, blob.size(), whole);
    CHECK(read_file(whole) == blob);

    // The first half there already, as an interrupted run left it: only the rest is asked
    // for, and the file is hashed whole.
    const fs::path resumed = tmp.path / "resumed";
    write_file_atomic(tmp.path / "resumed.part", blob.substr(0, blob.size() / 2), 0644,
                      Durability::none);
    client.download_blob(digest, blob.size(), resumed);
    CHECK(read_file(resumed) == blob);

    // A response cut short (its length promised, half its body sent): resumed within the same
    // download, the hash following the bytes across both responses.
    std::atomic<int> cut{1};
    std::mutex m;
    std::string asked;
    envbox::test::LocalServer cutting([&](const std::string& head) {
        const std::string range = envbox::test::LocalServer::header(head, "range");
        if (range.rfind("bytes=", 0) == 0) {
            const std::lock_guard<std::mutex> g(m);
            asked = range;
            const std::size_t from = std::stoul(range.substr(6));
            return response("206 Partial Content",
                            "Content-Range: bytes " + std::to_string(from) + "-" +
                                std::to_string(blob.size() - 1) + "/" +
                                std::to_string(blob.size()) + "\r\n",
                            blob.substr(from));
        }
        std::string full = response("200 OK", "", blob);
        if (cut-- > 0) full.resize(full.size() - blob.size() / 2);
        return full;
    });
    const std::string cut_host = host_of(cutting);
    oci::RegistryClient cut_client(http, oci::Reference::parse(cut_host + "/team/x:t"), opt);
    const fs::path rest = tmp.path / "rest";
    cut_client.download_blob(digest, blob.size(), rest);
    CHECK(read_file(rest) == blob);
    CHECK(cutting.requests() == 2);
    {
        const std::lock_guard<std::mutex> g(m);
        CHECK(asked == "bytes=" + std::to_string(blob.size() - blob.size() / 2) + "-");
    }

    // A part longer than the blob cannot be it: emptied, and the blob written from its start.
    const fs::path longer = tmp.path / "longer";
    write_file_atomic(tmp.path / "longer.part", std::string(blob.size() + 100, 'x'), 0644,
                      Durability::none);
    client.download_blob(digest, blob.size(), longer);
    CHECK(read_file(longer) == blob);

    // A part whose bytes are not the blob's start: the whole file is not the digest.
    const fs::path bad = tmp.path / "bad";
    write_file_atomic(tmp.path / "bad.part", std::string(blob.size() / 2, 'x'), 0644,
                      Durability::none);
    CHECK(code_of([&] { client.download_blob(digest, blob.size(), bad); }) == ErrorCode::integrity);
    CHECK_FALSE(fs::exists(bad));
}
