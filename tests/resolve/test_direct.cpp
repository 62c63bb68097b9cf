#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "envbox/pep/requirement.hpp"
#include "envbox/resolve/resolver.hpp"

// A direct reference (`name @ URL`) is one candidate no index may replace: the source is never
// asked for it, its wheel's own Requires-Dist is resolved with the rest, a requirement of the
// same name it does not satisfy is a conflict naming both, and a dependency's URL is accepted
// only when it is the user's.
namespace {

using envbox::pep::Requirement;
using envbox::pep::Version;
namespace resolve = envbox::resolve;

class World : public resolve::PackageSource {
  public:
    std::map<std::string, std::map<std::string, std::vector<std::string>>> packages;
    std::set<std::string> asked;

    std::vector<resolve::Candidate> versions(const std::string& name) override {
        asked.insert(name);
        std::vector<resolve::Candidate> out;
        for (const auto& [v, _] : packages[name])
            out.push_back(resolve::Candidate{Version::parse(v).value(), false, {}});
        return out;
    }
    resolve::Dependencies dependencies(const std::string& name, const Version& version) override {
        resolve::Dependencies d;
        for (const auto& r : packages[name][version.str()])
            d.requires_dist.push_back(Requirement::parse(r).value());
        return d;
    }
    void prefetch_versions(const std::vector<std::string>& names) override {
        asked.insert(names.begin(), names.end());
    }
};

std::vector<Requirement> requirements(std::vector<std::string> texts) {
    std::vector<Requirement> out;
    for (const auto& t : texts)
        out.push_back(Requirement::parse(t).value());
    return out;
}

constexpr const char* kUrl = "https://host/flash_attn-2.8.3+cu12-cp312-cp312-linux_x86_64.whl";

resolve::Options options(std::vector<std::string> requires_dist = {"dep>=1"}) {
    resolve::Options o;
    o.environment = envbox::pep::MarkerEnvironment::linux_cpython("3.12.0", "x86_64");
    resolve::DirectPackage d;
    d.url = kUrl;
    d.version = Version::parse("2.8.3+cu12").value();
    for (const auto& r : requires_dist)
        d.dependencies.requires_dist.push_back(Requirement::parse(r).value());
    o.direct["flash-attn"] = d;
    return o;
}

std::string pins(const std::vector<resolve::Pinned>& p) {
    std::string out;
    for (const auto& x : p)
        out += (out.empty() ? "" : " ") + x.name + "==" + x.version.str();
    return out;
}

}  // namespace

TEST_CASE("a direct reference is its only candidate; its Requires-Dist resolves",
          "[resolve][direct]") {
    World w;
    w.packages["flash-attn"] = {{"9.0", {}}};  // an index's newer release is never taken
    w.packages["dep"] = {{"0.5", {}}, {"1.2", {}}};
    auto r = resolve::resolve(requirements({std::string("flash-attn @ ") + kUrl}), w, options());
    REQUIRE(r);
    CHECK(pins(*r) == "dep==1.2 flash-attn==2.8.3+cu12");
    CHECK_FALSE(w.asked.count("flash-attn"));
    CHECK(r->at(1).dependencies == std::set<std::string>{"dep"});
}

TEST_CASE("a requirement of the same name that the direct version fails names both",
          "[resolve][direct]") {
    World w;
    w.packages["dep"] = {{"1.0", {}}};
    for (const char* other : {"flash-attn>=3", "flash-attn==2.8.2"}) {
        INFO(other);
        auto r = resolve::resolve(requirements({std::string("flash-attn @ ") + kUrl, other}), w,
                                  options());
        REQUIRE_FALSE(r);
        const std::string msg = r.error().message();
        CHECK(msg.find(other) != std::string::npos);
        CHECK(msg.find("2.8.3+cu12") != std::string::npos);
        CHECK(msg.find(kUrl) != std::string::npos);
    }
    // One it satisfies is fine, as is a dependency's.
    w.packages["user"] = {{"1.0", {"flash-attn>=2.8"}}};
    auto ok = resolve::resolve(
        requirements({std::string("flash-attn @ ") + kUrl, "flash-attn>=2", "user"}), w, options());
    REQUIRE(ok);
    CHECK(pins(*ok) == "dep==1.0 flash-attn==2.8.3+cu12 user==1.0");
    // A dependency that needs another version: the explanation names the reference too.
    w.packages["user"] = {{"1.0", {"flash-attn<2"}}};
    auto bad =
        resolve::resolve(requirements({std::string("flash-attn @ ") + kUrl, "user"}), w, options());
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message().find(kUrl) != std::string::npos);
}

TEST_CASE("a URL requirement other than the user's direct reference is refused",
          "[resolve][direct]") {
    World w;
    w.packages["dep"] = {{"1.0", {}}};
    w.packages["sneaky"] = {{"1.0", {"flash-attn @ https://evil/flash_attn-9-py3-none-any.whl"}}};
    auto r = resolve::resolve(requirements({std::string("flash-attn @ ") + kUrl, "sneaky"}), w,
                              options());
    REQUIRE_FALSE(r);
    CHECK(r.error().message().find("sneaky 1.0 asks for flash-attn from a URL") !=
          std::string::npos);
    // The same URL as the user's is the same package.
    w.packages["sneaky"] = {{"1.0", {std::string("flash-attn @ ") + kUrl}}};
    auto same = resolve::resolve(requirements({std::string("flash-attn @ ") + kUrl, "sneaky"}), w,
                                 options());
    REQUIRE(same);
    // A URL no direct reference prepared.
    auto none = resolve::resolve(requirements({"other @ https://h/other-1-py3-none-any.whl"}), w,
                                 resolve::Options{});
    REQUIRE_FALSE(none);
}

TEST_CASE("a direct wheel's extras and Requires-Python come from its own metadata",
          "[resolve][direct]") {
    World w;
    w.packages["dep"] = {{"1.0", {}}};
    w.packages["extra-dep"] = {{"3.0", {}}};
    auto o = options({"dep", "extra-dep; extra == 'full'"});
    o.direct["flash-attn"].dependencies.provides_extra = {"full"};
    auto r = resolve::resolve(requirements({std::string("flash-attn[full] @ ") + kUrl}), w, o);
    REQUIRE(r);
    CHECK(pins(*r) == "dep==1.0 extra-dep==3.0 flash-attn==2.8.3+cu12");
    o.direct["flash-attn"].dependencies.unusable = "requires Python >=3.13 (the target is 3.12.0)";
    auto old = resolve::resolve(requirements({std::string("flash-attn @ ") + kUrl}), w, o);
    REQUIRE_FALSE(old);
    CHECK(old.error().message().find("requires Python >=3.13") != std::string::npos);
}
