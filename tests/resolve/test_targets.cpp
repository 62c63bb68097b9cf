// Several targets resolved for one lock (resolve/targets.hpp): one version where one is
// usable on every target, and the notes that say where targets still differ and why.
#include <catch2/catch.hpp>
#include <map>

#include "envbox/resolve/targets.hpp"
#include "envbox/util/error.hpp"

using namespace envbox;

namespace {

// One target's view of a package world: name → version → (requirements, why unusable there).
class World : public resolve::PackageSource {
  public:
    struct Release {
        std::vector<std::string> requires_dist;
        std::string unusable;
    };
    std::map<std::string, std::map<std::string, Release>> packages;

    std::vector<resolve::Candidate> versions(const std::string& name) override {
        std::vector<resolve::Candidate> out;
        for (const auto& [v, r] : packages[name])
            out.push_back(resolve::Candidate{pep::Version::parse(v).value(), false, r.unusable});
        return out;
    }
    resolve::Dependencies dependencies(const std::string& name,
                                       const pep::Version& version) override {
        resolve::Dependencies d;
        for (const auto& r : packages[name][version.str()].requires_dist)
            d.requires_dist.push_back(pep::Requirement::parse(r).value());
        return d;
    }
};

const std::string kNoArm = "has no wheel for the target (CPython 3.12.0, cp312-cp312-…aarch64)";

// x86_64 sees every wheel; aarch64 lacks tv 0.26 and bnb 0.48 (it has bnb 0.47 alone).
std::pair<World, World> worlds() {
    World x86, arm;
    for (World* w : {&x86, &arm}) {
        w->packages["torch"]["2.11.0"] = {{"triton; platform_machine == 'x86_64'"}, ""};
        w->packages["triton"]["3.5.0"] = {{}, w == &arm ? kNoArm : ""};
        w->packages["tv"]["0.25.0"] = {{"torch"}, ""};
        w->packages["tv"]["0.26.0"] = {{"torch"}, w == &arm ? kNoArm : ""};
    }
    x86.packages["bnb"]["0.48.1"] = {{}, ""};
    x86.packages["bnb"]["0.47.0"] = {{}, "has no wheel for the target (…x86_64)"};
    arm.packages["bnb"]["0.48.1"] = {{}, kNoArm};
    arm.packages["bnb"]["0.47.0"] = {{}, ""};
    return {x86, arm};
}

std::vector<resolve::TargetResolution> targets(World& x86, World& arm) {
    std::vector<resolve::TargetResolution> out;
    for (auto [platform, world] :
         {std::pair{"manylinux_2_28_x86_64", &x86}, std::pair{"manylinux_2_28_aarch64", &arm}}) {
        resolve::TargetResolution t;
        t.platform = platform;
        t.markers = pep::MarkerEnvironment::linux_cpython(
            "3.12.0", t.platform.substr(t.platform.rfind("_2_28_") + 6));
        t.source = world;
        out.push_back(std::move(t));
    }
    return out;
}

std::map<std::string, std::string> versions(const resolve::TargetResolution& t) {
    std::map<std::string, std::string> out;
    for (const auto& p : t.pins)
        out[p.name] = p.version.str();
    return out;
}

std::vector<pep::Requirement> root(std::vector<std::string> texts) {
    std::vector<pep::Requirement> out;
    for (const auto& t : texts)
        out.push_back(pep::Requirement::parse(t).value());
    return out;
}

}  // namespace

TEST_CASE("targets agree on the highest version usable on all of them", "[resolve][multi-target]") {
    auto [x86, arm] = worlds();
    auto ts = targets(x86, arm);
    resolve::resolve_targets(ts, root({"torch", "tv", "bnb"}), {}, "train", "3.12");
    CHECK(versions(ts[0]) ==
          std::map<std::string, std::string>{
              {"bnb", "0.48.1"}, {"torch", "2.11.0"}, {"triton", "3.5.0"}, {"tv", "0.25.0"}});
    CHECK(versions(ts[1]) == std::map<std::string, std::string>{
                                 {"bnb", "0.47.0"}, {"torch", "2.11.0"}, {"tv", "0.25.0"}});

    auto notes = resolve::divergence_notes({"bnb", "triton"}, ts);
    REQUIRE(notes.size() == 2);
    CHECK(notes[0] ==
          "bnb: 0.48.1 on manylinux_2_28_x86_64, 0.47.0 on manylinux_2_28_aarch64 "
          "(manylinux_2_28_aarch64: 0.48.1 " +
              kNoArm + ")");
    CHECK(notes[1] ==
          "triton: 3.5.0 on manylinux_2_28_x86_64 (nothing requires it on manylinux_2_28_aarch64)");
}

TEST_CASE("one target alone resolves as a single-target lock does", "[resolve][multi-target]") {
    auto [x86, arm] = worlds();
    auto ts = targets(x86, arm);
    ts.pop_back();
    resolve::resolve_targets(ts, root({"tv"}), {}, "train", "3.12");
    CHECK(versions(ts[0]).at("tv") == "0.26.0");
}

TEST_CASE("a target that cannot resolve fails the lock, naming the target",
          "[resolve][multi-target]") {
    auto [x86, arm] = worlds();
    auto ts = targets(x86, arm);
    try {
        resolve::resolve_targets(ts, root({"tv==0.26.0"}), {}, "train", "3.12");
        FAIL("an unresolvable target was accepted");
    } catch (const Error& e) {
        CHECK_THAT(e.describe(),
                   Catch::Contains("locking train for CPython 3.12 on manylinux_2_28_aarch64"));
    }
}

TEST_CASE("the targets of one lock share its memory budget", "[resolve][multi-target]") {
    // The smallest power-of-two budget x86_64 resolves in alone; half of it does not.
    auto fits = [](std::size_t bytes, bool both) {
        auto [x86, arm] = worlds();
        auto ts = targets(x86, arm);
        if (!both) ts.pop_back();
        resolve::Options o;
        o.max_set_bytes = bytes;
        try {
            resolve::resolve_targets(ts, root({"torch", "tv", "bnb"}), o, "train", "3.12");
            return std::string();
        } catch (const Error& e) {
            return e.describe();
        }
    };
    std::size_t budget = 8;
    while (!fits(budget, false).empty())
        budget *= 2;
    REQUIRE(budget > 8);
    // Two targets side by side get half of it each, so the lock no longer fits.
    CHECK_THAT(fits(budget, true), Catch::Contains("resolution gave up: its incompatibilities"));
    CHECK(fits(std::size_t{1} << 20, true).empty());
}
