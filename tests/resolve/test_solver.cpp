#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "envbox/pep/requirement.hpp"
#include "envbox/resolve/resolver.hpp"

// The solver over a small in-memory world (the packse runner plays the whole scenario corpus):
// its answer, the explanation of a conflict, and the trace callback that replaces a debug
// environment variable.
namespace {

using envbox::pep::Requirement;
using envbox::pep::Version;
namespace resolve = envbox::resolve;

// name -> version -> Requires-Dist
class World : public resolve::PackageSource {
  public:
    std::map<std::string, std::map<std::string, std::vector<std::string>>> packages;
    std::map<std::string, std::string> unusable;  // "name==version" -> what its metadata says

    std::vector<resolve::Candidate> versions(const std::string& name) override {
        std::vector<resolve::Candidate> out;
        for (const auto& [v, _] : packages[name])
            out.push_back(resolve::Candidate{Version::parse(v).value(), false, {}});
        return out;
    }
    resolve::Dependencies dependencies(const std::string& name, const Version& version) override {
        resolve::Dependencies d;
        if (auto u = unusable.find(name + "==" + version.str()); u != unusable.end()) {
            d.unusable = u->second;
            return d;
        }
        for (const auto& r : packages[name][version.str()])
            d.requires_dist.push_back(Requirement::parse(r).value());
        return d;
    }
};

std::vector<Requirement> requirements(std::vector<std::string> texts) {
    std::vector<Requirement> out;
    for (const auto& t : texts)
        out.push_back(Requirement::parse(t).value());
    return out;
}

resolve::Options options() {
    resolve::Options o;
    o.environment = envbox::pep::MarkerEnvironment::linux_cpython("3.12.0", "x86_64");
    return o;
}

std::string pins(const std::vector<resolve::Pinned>& p) {
    std::string out;
    for (const auto& x : p)
        out += (out.empty() ? "" : " ") + x.name + "==" + x.version.str();
    return out;
}

}  // namespace

TEST_CASE("the solver backtracks to versions that fit together", "[resolve][solver]") {
    World w;
    w.packages["a"] = {{"1.0", {}}, {"2.0", {"d"}}};
    w.packages["b"] = {{"1.0", {"c>=2"}}};
    w.packages["c"] = {{"1.0", {}}, {"2.0", {}}};
    w.packages["d"] = {{"1.0", {"c<2"}}};
    std::vector<std::string> lines;
    auto o = options();
    o.trace = [&](std::string_view line) { lines.emplace_back(line); };
    auto r = resolve::resolve(requirements({"a", "b"}), w, o);
    REQUIRE(r);
    CHECK(pins(*r) == "a==1.0 b==1.0 c==2.0");
    REQUIRE_FALSE(lines.empty());
    for (const auto& l : lines) {
        CHECK(l.starts_with("conflict "));
        CHECK(l.find('\n') == std::string::npos);
    }
}

TEST_CASE("a conflict is explained in terms of the requirements, traced or not",
          "[resolve][solver]") {
    World w;
    w.packages["a"] = {{"1.0", {"c<2"}}, {"1.1", {"c<2"}}};
    w.packages["b"] = {{"1.0", {"c>=2"}}};
    w.packages["c"] = {{"1.0", {}}, {"2.0", {}}};
    auto quiet = resolve::resolve(requirements({"a", "b"}), w, options());
    REQUIRE_FALSE(quiet);
    CHECK(quiet.error().message() ==
          "no solution:\n"
          "  Because a==1.1 depends on c<2 and a==1.0 depends on c<2, a depends on c==1.0.\n"
          "  Because b depends on c>=2 and a depends on c==1.0, a and b are incompatible.\n"
          "  Because a and b are incompatible and you require a, the requirements rule out b.\n"
          "  Because the requirements rule out b and you require b, the requirements are "
          "unsatisfiable.");
    std::vector<std::string> lines;
    auto o = options();
    o.trace = [&](std::string_view line) { lines.emplace_back(line); };
    auto traced = resolve::resolve(requirements({"a", "b"}), w, o);
    REQUIRE_FALSE(traced);
    CHECK(traced.error().message() == quiet.error().message());
    CHECK_FALSE(lines.empty());
}

TEST_CASE("versions unusable each for a reason of its own share one explanation past 64",
          "[resolve][solver]") {
    // A page that gives each of its versions its own data-requires-python: one set of every
    // version's bits per reason would be 20 000 sets of 20 000 bits.
    class Hostile : public World {
      public:
        std::vector<resolve::Candidate> versions(const std::string& name) override {
            if (name != "x") return World::versions(name);
            std::vector<resolve::Candidate> out;
            for (int i = 1; i <= 20000; ++i)
                out.push_back(resolve::Candidate{Version::parse("1." + std::to_string(i)).value(),
                                                 false,
                                                 "requires Python >=4." + std::to_string(i)});
            return out;
        }
    };
    Hostile w;
    auto r = resolve::resolve(requirements({"x"}), w, options());
    REQUIRE_FALSE(r);
    const std::string why = r.error().message();
    CHECK(why.find("requires Python >=4.1") != std::string::npos);  // the first 64 listed
    CHECK(why.find("each for a reason of its own") != std::string::npos);
    CHECK(why.find("requires Python >=4.19999") == std::string::npos);
}

TEST_CASE("extras share their package's versions, whatever their number", "[resolve][solver]") {
    // One requirement naming 64 extras of a package with 2 000 versions: each extra is a
    // package of its own in the search, and all of them read one list of versions.
    World w;
    std::string extras;
    for (int i = 0; i < 64; ++i)
        extras += (i ? "," : "") + std::string("x") + std::to_string(i);
    for (int v = 1; v <= 2000; ++v)
        w.packages["big"][std::to_string(v)] = {};
    w.packages["big"]["2000"] = {"leaf; extra == 'x7'"};
    w.packages["leaf"] = {{"1.0", {}}};
    auto r = resolve::resolve(requirements({"big[" + extras + "]"}), w, options());
    REQUIRE(r);
    CHECK(pins(*r) == "big==2000 leaf==1.0");
    REQUIRE(r->front().extras.size() == 64);

    // A version whose metadata rules it out is ruled out for every extra at once.
    w.unusable["big==2000"] = "requires Python >=4";
    w.unusable["big==1999"] = "requires Python >=4";
    auto older = resolve::resolve(requirements({"big[x1,x7]", "leaf"}), w, options());
    REQUIRE(older);
    CHECK(pins(*older) == "big==1998 leaf==1.0");
    w.packages["big"] = {{"1", {}}};
    w.unusable["big==1"] = "requires Python >=4";
    auto none = resolve::resolve(requirements({"big[x1,x7]"}), w, options());
    REQUIRE_FALSE(none);
    CHECK(none.error().message().find("requires Python >=4") != std::string::npos);
}

TEST_CASE("a search past the step budget fails, saying so", "[resolve][solver]") {
    // Every version of `a` needs a `b` that does not exist: the solver tries them one by one,
    // a decision and a conflict each.
    World w;
    for (int v = 1; v <= 300; ++v)
        w.packages["a"][std::to_string(v)] = {"b>=" + std::to_string(v)};
    w.packages["b"] = {{"0.1", {}}};
    auto o = options();
    auto unbounded = resolve::resolve(requirements({"a"}), w, o);
    REQUIRE_FALSE(unbounded);
    CHECK(unbounded.error().message().starts_with("no solution:"));
    o.max_steps = 100;
    auto bounded = resolve::resolve(requirements({"a"}), w, o);
    REQUIRE_FALSE(bounded);
    CHECK(bounded.error().code() == envbox::ErrorCode::invalid_input);
    CHECK(bounded.error().message().starts_with("resolution gave up after 100 steps"));
}

TEST_CASE("incompatibilities past the memory budget fail, saying so", "[resolve][solver]") {
    // 5 000 versions, each depending on 50 packages: each dependency's incompatibility holds
    // a set over the 5 000 versions (625 bytes), so trying versions one after another grows
    // memory by 30 KB a version.
    World w;
    for (int v = 1; v <= 5000; ++v) {
        std::vector<std::string> deps;
        for (int d = 0; d < 50; ++d)
            deps.push_back("d" + std::to_string(d));
        deps.push_back("missing>=" + std::to_string(v));
        w.packages["a"][std::to_string(v)] = deps;
    }
    for (int d = 0; d < 50; ++d)
        w.packages["d" + std::to_string(d)] = {{"1.0", {}}};
    w.packages["missing"] = {{"0.1", {}}};
    auto o = options();
    o.max_set_bytes = 4u << 20;
    auto r = resolve::resolve(requirements({"a"}), w, o);
    REQUIRE_FALSE(r);
    CHECK(r.error().code() == envbox::ErrorCode::invalid_input);
    CHECK(r.error().message().starts_with(
        "resolution gave up: its incompatibilities hold more than 4 MiB of version sets"));
}
