#include <catch2/catch.hpp>

#include "envbox/pep/specifier.hpp"

using namespace envbox::pep;

TEST_CASE("local-version rules for torch pins") {
    struct Row {
        const char* spec;
        const char* version;
        bool contains;
    };
    const Row rows[] = {
        {"==2.11.0", "2.11.0+cu128", true},
        {"==2.11.0", "2.11.0+cu130", true},
        {"==2.11.0", "2.11.0", true},
        {"==2.11.0+cu128", "2.11.0+cu128", true},
        {"==2.11.0+cu128", "2.11.0+cu130", false},
        {"==2.11.0+cu128", "2.11.0", false},
        {"==2.11.0+cu128", "2.11.0+CU128", true},
        {"!=2.11.0+cu128", "2.11.0+cu130", true},
        {"!=2.11.0", "2.11.0+cu130", false},
        {">=2.11.0", "2.11.0+cu128", true},
        {"<=2.11.0", "2.11.0+cu128", true},
        {">2.11.0", "2.11.0+cu128", false},
        {">2.10", "2.11.0+cu128", true},
        {"<2.11.0", "2.11.0rc1+cu128", false},
        {"==2.11.*", "2.11.0+cu130", true},
        {"~=2.10", "2.11.0+cu128", true},
        {"~=2.10.0", "2.11.0+cu128", false},
        {">=2.4,<3,!=2.5.1", "2.5.1", false},
        {">=2.4,<3,!=2.5.1", "2.6.0", true},
    };
    for (const auto& r : rows) {
        INFO(r.spec << " contains " << r.version);
        auto set = SpecifierSet::parse(r.spec);
        REQUIRE(set.ok());
        CHECK(set->contains(*Version::parse(r.version)) == r.contains);
    }
}

TEST_CASE("filter keeps pre-releases only when nothing final matches") {
    auto set = *SpecifierSet::parse(">=2.0");
    auto cands = [](std::initializer_list<const char*> xs) {
        std::vector<Candidate> out;
        for (auto x : xs)
            out.push_back(Candidate::from_text(x));
        return out;
    };
    auto texts = [](const std::vector<Candidate>& cs) {
        std::vector<std::string> out;
        for (const auto& c : cs)
            out.push_back(c.text);
        return out;
    };
    CHECK(texts(set.filter(cands({"2.0", "2.1rc1", "1.9"}))) == std::vector<std::string>{"2.0"});
    CHECK(texts(set.filter(cands({"2.1rc1", "1.9"}))) == std::vector<std::string>{"2.1rc1"});
    CHECK(texts(set.filter(cands({"2.1rc1", "2.0"}), true)) ==
          std::vector<std::string>{"2.1rc1", "2.0"});
}

TEST_CASE("bad specifiers are errors naming the clause") {
    for (const char* bad : {"=>2.0", "~=1", ">=1.0+cu128", "==2.0a1.*", ">= 1.0.*", "2.0"}) {
        INFO(bad);
        auto s = SpecifierSet::parse(bad);
        REQUIRE_FALSE(s.ok());
        CHECK(s.error().message().find(bad) != std::string::npos);
    }
}

TEST_CASE("satisfiability and relations") {
    CHECK_FALSE(SpecifierSet::parse(">=2.11,<2.11")->is_satisfiable());
    CHECK(SpecifierSet::parse("==2.11.0+cu128,>=2.11")->is_satisfiable());
    CHECK_FALSE(SpecifierSet::parse("==2.11.0+cu128,!=2.11.0")->is_satisfiable());
    CHECK(SpecifierSet::parse("==2.11.0")->is_superset(*SpecifierSet::parse("==2.11.0+cu130")));
    CHECK(
        SpecifierSet::parse("==2.11.0+cu128")->is_disjoint(*SpecifierSet::parse("==2.11.0+cu130")));
}

TEST_CASE("a specifier set of more than 256 clauses is refused before it is compared") {
    std::string many;
    for (int i = 0; i < 100000; ++i)
        many += (i ? ",>=" : ">=") + std::to_string(i);
    auto refused = SpecifierSet::parse(many);
    REQUIRE_FALSE(refused);
    CHECK_THAT(refused.error().message(), Catch::Matchers::Contains("more than 256 clauses"));
    CHECK_THAT(refused.error().message(),
               Catch::Matchers::Contains("bytes)"));  // not 600 KB quoted
    std::string ok = ">=2.7";
    for (int minor = 0; minor < 6; ++minor)
        ok += ",!=3." + std::to_string(minor) + ".*";
    CHECK(SpecifierSet::parse(ok));
}
