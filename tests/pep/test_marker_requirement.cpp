#include <catch2/catch.hpp>

#include "envbox/pep/requirement.hpp"

using namespace envbox::pep;

TEST_CASE("markers evaluate against the target, not the host") {
    auto py312 = MarkerEnvironment::linux_cpython("3.12.8", "x86_64");
    auto py310 = MarkerEnvironment::linux_cpython("3.10.14", "aarch64");
    struct Row {
        const char* marker;
        bool on312;
        bool on310;
    };
    const Row rows[] = {
        {"python_version >= '3.11'", true, false},
        {"python_full_version < '3.12.9'", true, true},
        {"platform_machine == 'x86_64'", true, false},
        {"sys_platform == 'linux' and platform_machine != 'aarch64'", true, false},
        {"sys_platform == 'win32' or python_version == '3.10'", false, true},
        {"'3.1' in python_version", true, true},
        {"platform_python_implementation == 'CPython' and implementation_name == 'cpython'", true,
         true},
        {"extra == 'cuda'", false, false},
    };
    for (const auto& r : rows) {
        INFO(r.marker);
        auto m = Marker::parse(r.marker);
        REQUIRE(m.ok());
        CHECK(*m->evaluate(py312) == r.on312);
        CHECK(*m->evaluate(py310) == r.on310);
    }
}

TEST_CASE("extras are normalised on both sides (PEP 685)") {
    auto env = MarkerEnvironment::linux_cpython("3.12.8", "x86_64");
    env.set("extra", "Flash_Attn");
    CHECK(*Marker::parse("extra == 'flash-attn'")->evaluate(env));
    CHECK(*Marker::parse("extra == 'FLASH.ATTN'")->evaluate(env));
    env.extras = std::set<std::string>{"cuda"};
    CHECK(*Marker::parse("'CUDA' in extras")->evaluate(env, MarkerContext::lock_file));
}

TEST_CASE("undefined variables and comparisons are errors") {
    MarkerEnvironment empty;
    CHECK_FALSE(Marker::parse("os_name == 'posix'")->evaluate(empty).ok());
    auto env = MarkerEnvironment::linux_cpython("3.12.8", "x86_64");
    CHECK_FALSE(Marker::parse("os_name ~= '1.0'")->evaluate(env).ok());
    CHECK_FALSE(Marker::parse("'a' in extras")->evaluate(env, MarkerContext::requirement).ok());
    CHECK_FALSE(*Marker::parse("'a' in extras")->evaluate(env, MarkerContext::lock_file));
}

TEST_CASE("requirements from real metadata") {
    struct Row {
        const char* input;
        const char* name;
        const char* spec;
        const char* str;
    };
    const Row rows[] = {
        {"nvidia-cublas-cu12==12.8.4.1; platform_system == \"Linux\" and platform_machine == "
         "\"x86_64\"",
         "nvidia-cublas-cu12", "==12.8.4.1",
         "nvidia-cublas-cu12==12.8.4.1; platform_system == \"Linux\" and platform_machine == "
         "\"x86_64\""},
        {"triton==3.5.0; platform_system == 'Linux'", "triton", "==3.5.0",
         "triton==3.5.0; platform_system == \"Linux\""},
        {"typing-extensions (>=4.10.0)", "typing-extensions", ">=4.10.0",
         "typing-extensions>=4.10.0"},
        {"torch[opt-einsum] >=2.4, <3", "torch", "<3,>=2.4", "torch[opt-einsum]<3,>=2.4"},
        {"simple (==1.0)", "simple", "==1.0", "simple==1.0"},
    };
    for (const auto& r : rows) {
        INFO(r.input);
        auto req = Requirement::parse(r.input);
        REQUIRE(req.ok());
        CHECK(req->name == r.name);
        CHECK(req->specifier.str() == r.spec);
        CHECK(req->str() == r.str);
    }
}

TEST_CASE("requirement errors point at the fault") {
    auto req = Requirement::parse("torch >= 2.11 <3");
    REQUIRE_FALSE(req.ok());
    const std::string msg = req.error().message();
    CHECK(msg.find("Expected comma") != std::string::npos);
    CHECK(msg.find("torch >= 2.11 <3") != std::string::npos);
    CHECK(msg.find("^") != std::string::npos);
}

TEST_CASE("requirements from a hostile page or METADATA stay small: extras and literals bounded") {
    std::string extras;
    for (int i = 0; i < 65; ++i)
        extras += (i ? ",e" : "e") + std::to_string(i);
    CHECK_FALSE(Requirement::parse("x[" + extras + "]"));
    CHECK(Requirement::parse("dask[array,dataframe,diagnostics,distributed]"));
    // `in` between two literals of megabytes would be minutes of comparing per evaluation.
    const std::string big(1025, 'a');
    auto r = Requirement::parse("x; '" + big + "' in '" + big + "b'");
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message(), Catch::Matchers::Contains("longer than 1024"));
    CHECK(Requirement::parse("x; platform_release in '" + std::string(1000, 'a') + "'"));
}
