#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "envbox/pep/specifier.hpp"
#include "envbox/pep/version.hpp"
#include "envbox/resolve/range.hpp"

// The solver's version-set algebra over one package's versions as an index offers them, with
// the PEP 440 corner cases a set must decide once: local versions under `==`, post- and
// pre-releases at the bounds of `<` and `>`, `!=1.*`, `~=`.
namespace {

using envbox::pep::SpecifierSet;
using envbox::pep::Version;
using envbox::resolve::Term;
using envbox::resolve::VersionSet;

// Ascending, as the solver holds a package's candidates.
std::vector<Version> world() {
    std::vector<Version> v;
    for (const char* t : {"2.1b2", "1.0", "2.0+cu128", "1.0a1", "1.1", "1.0.post1", "2.0",
                          "1.0+cpu", "1.1rc1", "2.0.dev1", "2.0+cu130", "0.9"})
        v.push_back(Version::parse(t).value());
    std::sort(v.begin(), v.end());
    return v;
}

VersionSet matching(const char* spec) {
    return VersionSet::matching(world(), SpecifierSet::parse(spec).value());
}

std::string show(const VersionSet& s) {
    const auto versions = world();
    std::string out;
    for (std::size_t i = 0; i < versions.size(); ++i)
        if (s.has(i)) out += (out.empty() ? "" : " ") + versions[i].str();
    return out;
}

}  // namespace

TEST_CASE("a version set holds exactly the candidates a specifier admits", "[resolve][range]") {
    REQUIRE(show(VersionSet::all(world().size())) ==
            "0.9 1.0a1 1.0 1.0+cpu 1.0.post1 1.1rc1 1.1 2.0.dev1 2.0 2.0+cu128 2.0+cu130 2.1b2");
    struct Case {
        const char* spec;
        const char* members;
    };
    const Case cases[] = {
        // `==V` admits V's local versions; `==V+label` only that one.
        {"==1.0", "1.0 1.0+cpu"},
        {"==2.0", "2.0 2.0+cu128 2.0+cu130"},
        {"==2.0+cu128", "2.0+cu128"},
        {"===2.0", "2.0"},
        // `!=1.*` excludes every 1.x, pre-releases and local versions included.
        {"!=1.*", "0.9 2.0.dev1 2.0 2.0+cu128 2.0+cu130 2.1b2"},
        {"==1.*", "1.0a1 1.0 1.0+cpu 1.0.post1 1.1rc1 1.1"},
        {"!=2.0", "0.9 1.0a1 1.0 1.0+cpu 1.0.post1 1.1rc1 1.1 2.0.dev1 2.1b2"},
        // `<V` does not admit V's pre-releases; `>V` neither V's post-releases nor local ones.
        {"<2.0", "0.9 1.0a1 1.0 1.0+cpu 1.0.post1 1.1rc1 1.1"},
        {">1.0", "1.1rc1 1.1 2.0.dev1 2.0 2.0+cu128 2.0+cu130 2.1b2"},
        {"<=1.0", "0.9 1.0a1 1.0 1.0+cpu"},
        {">=2.0", "2.0 2.0+cu128 2.0+cu130 2.1b2"},
        {"~=1.0", "1.0 1.0+cpu 1.0.post1 1.1rc1 1.1"},
        {">=1.0,<2.0", "1.0 1.0+cpu 1.0.post1 1.1rc1 1.1"},
        {"", "0.9 1.0a1 1.0 1.0+cpu 1.0.post1 1.1rc1 1.1 2.0.dev1 2.0 2.0+cu128 2.0+cu130 2.1b2"},
        {">=3", ""},
    };
    for (const auto& c : cases) {
        INFO(c.spec);
        CHECK(show(matching(c.spec)) == c.members);
    }
}

TEST_CASE("intersection, union and complement of version sets are exact", "[resolve][range]") {
    const std::size_t n = world().size();
    const VersionSet low = matching("<1.1"), high = matching(">=2.0"), one = matching("~=1.0");
    CHECK((matching(">=1.0") & matching("<2.0")) == matching(">=1.0,<2.0"));
    CHECK(show(low & one) == "1.0 1.0+cpu 1.0.post1");  // `<1.1` admits no 1.1 pre-release
    CHECK(show(low | high) == "0.9 1.0a1 1.0 1.0+cpu 1.0.post1 2.0 2.0+cu128 2.0+cu130 2.1b2");
    // The complement is exact: what neither `<1.1` nor `>=2.0` admits includes the
    // pre-releases both exclude, which the range `>=1.1,<2.0` does not.
    CHECK(show((low | high).complement()) == "1.1rc1 1.1 2.0.dev1");
    CHECK(show(matching(">=1.1,<2.0")) == "1.1");
    CHECK(show(matching("==1.*").complement()) == show(matching("!=1.*")));
    CHECK(show(one.minus(low)) == "1.1rc1 1.1");
    for (const VersionSet& s : {low, high, one, matching("==2.0"), VersionSet::none(n)}) {
        CHECK(s.complement().complement() == s);
        CHECK((s & s.complement()).empty());
        CHECK((s | s.complement()) == VersionSet::all(n));
        CHECK(s.count() + s.complement().count() == n);
        CHECK((s & VersionSet::all(n)) == s);
        CHECK((s | VersionSet::none(n)) == s);
        CHECK(s.subset_of(s | high));
        CHECK((s & high).subset_of(s));
    }
    CHECK(matching("==2.0+cu130").subset_of(matching("==2.0")));
    CHECK_FALSE(matching("==2.0").subset_of(matching("==2.0+cu130")));
    CHECK(VersionSet::none(n).empty());
    CHECK_FALSE(VersionSet::one(n, 3).empty());
    CHECK(VersionSet::one(n, 3).count() == 1);
}

TEST_CASE("version sets span more than one word", "[resolve][range]") {
    const std::size_t n = 130;
    VersionSet even = VersionSet::none(n);
    for (std::size_t i = 0; i < n; i += 2)
        even.set(i);
    const VersionSet odd = even.complement();
    CHECK(even.count() == 65);
    CHECK(odd.count() == 65);
    CHECK(odd.has(129));
    CHECK_FALSE(odd.has(128));
    CHECK((even | odd) == VersionSet::all(n));
    CHECK((even & odd).empty());
    CHECK(VersionSet::one(n, 64).subset_of(even));
    CHECK_FALSE(VersionSet::one(n, 127).subset_of(even));
    CHECK(VersionSet::all(n).complement().empty());
}

TEST_CASE("terms combine as PubGrub's positive and negative terms", "[resolve][range]") {
    const VersionSet a = matching(">=1.0,<2.0"), b = matching("==1.*"), c = matching(">=2.0");
    const Term pa{1, true, a}, pb{1, true, b}, pc{1, true, c};
    const Term na = pa.negate(), nb = pb.negate(), nc = pc.negate();

    // Intersection: positive ∩ positive, positive ∖ negative, negative ∪ negative.
    CHECK(intersect(pa, pb).positive);
    CHECK(intersect(pa, pb).set == (a & b));
    CHECK(intersect(pa, nb).positive);
    CHECK(show(intersect(pa, nb).set) == "");
    CHECK(intersect(nb, pa).set == a.minus(b));
    CHECK(show(intersect(pb, na).set) == "1.0a1");
    CHECK_FALSE(intersect(na, nc).positive);
    CHECK(intersect(na, nc).set == (a | c));

    // Union is the dual: positive ∪ positive, negative ∩ negative.
    CHECK(unite(pa, pc).positive);
    CHECK(unite(pa, pc).set == (a | c));
    CHECK_FALSE(unite(na, nb).positive);
    CHECK(unite(na, nb).set == (a & b));
    CHECK(unite(pa, na).is_any());

    // Subset: every solution of the first is one of the second.
    CHECK(subset(intersect(pa, pb), pa));
    CHECK(subset(pc, na));        // selected at >=2.0: not selected at 1.x
    CHECK_FALSE(subset(na, pc));  // "not a" also allows the package to be absent
    CHECK(subset(na, Term{1, false, a & b}));
    CHECK_FALSE(subset(pa, pc));

    // Disjoint: no solution of both.
    CHECK(disjoint(pa, pc));
    CHECK(disjoint(pc, pa));
    CHECK(disjoint(pa, na));
    CHECK_FALSE(disjoint(pa, pb));
    CHECK_FALSE(disjoint(na, nc));  // both allow the package to be absent
    CHECK_FALSE(disjoint(pc, na));

    // The negative term of nothing allows everything.
    const Term any{1, false, VersionSet::none(a.n)};
    CHECK(any.is_any());
    CHECK(subset(pa, any));
    CHECK(subset(na, any));
    CHECK(intersect(pa, any).set == a);
}
