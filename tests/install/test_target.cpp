// The target an environment is locked or built for (install/target.hpp): from a manifest, as `lock`
// resolves; from a probed interpreter, as `create` builds.
#include <catch2/catch.hpp>

#include "envbox/install/target.hpp"
#include "envbox/util/error.hpp"

using namespace envbox;

namespace {

lock::Manifest manifest(const std::string& python, const std::string& platform) {
    auto m = lock::Manifest::parse("[environment]\npython = \"" + python + "\"\nplatform = \"" +
                                       platform + "\"\nrequirements = []\n",
                                   "m.toml");
    REQUIRE(m.ok());
    return *m;
}

env::Interpreter interpreter(int minor, const std::string& full, const std::string& glibc,
                             const std::string& machine, const std::string& abiflags = "") {
    env::Interpreter i;
    i.executable = "/usr/bin/python3." + std::to_string(minor);
    i.implementation = "cpython";
    i.major = 3;
    i.minor = minor;
    i.full_version = full;
    i.abiflags = abiflags;
    i.glibc = glibc;
    i.markers = pep::MarkerEnvironment::linux_cpython(full, machine.empty() ? "x86_64" : machine);
    if (machine.empty()) i.markers.values.erase("platform_machine");
    return i;
}

}  // namespace

TEST_CASE("a manifest's target is CPython 3.N.0 on its platform", "[install][target]") {
    struct Row {
        const char *python, *platform, *full, *machine, *best_tag;
    };
    const Row rows[] = {
        {"3.12", "manylinux_2_28_x86_64", "3.12.0", "x86_64", "cp312-cp312-manylinux_2_28_x86_64"},
        {"3.11", "manylinux_2_17_aarch64", "3.11.0", "aarch64",
         "cp311-cp311-manylinux_2_17_aarch64"},
        {"3.13", "musllinux_1_2_x86_64", "3.13.0", "x86_64", "cp313-cp313-musllinux_1_2_x86_64"},
    };
    for (const auto& r : rows) {
        INFO(r.python << " " << r.platform);
        install::Target t = install::target_of_manifest(manifest(r.python, r.platform));
        CHECK_FALSE(t.interpreter);
        CHECK(t.python_full_version == r.full);
        CHECK(t.platform == r.platform);
        CHECK(t.machine() == r.machine);
        CHECK(t.markers.values.at("python_full_version") == r.full);
        CHECK(t.markers.values.at("platform_machine") == r.machine);
        CHECK(t.markers.values.at("sys_platform") == "linux");
        REQUIRE_FALSE(t.tags.tags().empty());
        CHECK(t.tags.tags().front().str() == r.best_tag);
    }
}

TEST_CASE("this machine's platform comes from the interpreter's glibc and machine",
          "[install][target]") {
    CHECK(install::interpreter_platform(interpreter(12, "3.12.8", "2.36", "aarch64"), "e") ==
          "manylinux_2_36_aarch64");
    CHECK(install::interpreter_platform(interpreter(12, "3.12.8", "2.28", "x86_64"), "e") ==
          "manylinux_2_28_x86_64");
    // An interpreter that reports no machine is taken for x86_64.
    CHECK(install::interpreter_platform(interpreter(12, "3.12.8", "2.31", ""), "e") ==
          "manylinux_2_31_x86_64");
    try {
        install::interpreter_platform(interpreter(12, "3.12.8", "", "x86_64"), "train");
        FAIL("no glibc must be refused");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::invalid_input);
        CHECK(std::string(e.what()).find(" reports no glibc); write "
                                         "manifests/train.toml with a platform") !=
              std::string::npos);
    }
}

TEST_CASE("an interpreter's target keeps its version, markers and free-threading",
          "[install][target]") {
    install::Target t =
        install::target_of_interpreter(interpreter(12, "3.12.8", "2.36", "x86_64"), "", "e");
    REQUIRE(t.interpreter);
    CHECK(t.interpreter->full_version == "3.12.8");
    CHECK(t.python_full_version == "3.12.8");
    CHECK(t.python_major == 3);
    CHECK(t.python_minor == 12);
    CHECK(t.platform == "manylinux_2_36_x86_64");
    CHECK(t.markers.values.at("python_full_version") == "3.12.8");
    CHECK(t.tags.tags().front().str() == "cp312-cp312-manylinux_2_36_x86_64");

    // The manifest's platform wins over the machine's.
    install::Target m = install::target_of_interpreter(interpreter(12, "3.12.8", "2.36", "x86_64"),
                                                       "manylinux_2_28_x86_64", "e");
    CHECK(m.platform == "manylinux_2_28_x86_64");
    CHECK(m.tags.tags().front().str() == "cp312-cp312-manylinux_2_28_x86_64");
    // Without glibc, a platform given is enough.
    CHECK_NOTHROW(install::target_of_interpreter(interpreter(12, "3.12.8", "", "x86_64"),
                                                 "manylinux_2_28_x86_64", "e"));

    install::Target ft = install::target_of_interpreter(
        interpreter(13, "3.13.1", "2.36", "x86_64", "t"), "manylinux_2_28_x86_64", "e");
    CHECK(ft.tags.tags().front().str() == "cp313-cp313t-manylinux_2_28_x86_64");
}

TEST_CASE("a manifest's target and its interpreter's rank wheels alike", "[install][target]") {
    install::Target locked = install::target_of_manifest(manifest("3.12", "manylinux_2_28_x86_64"));
    install::Target built = install::target_of_interpreter(
        interpreter(12, "3.12.8", "2.36", "x86_64"), "manylinux_2_28_x86_64", "e");
    REQUIRE(locked.tags.tags().size() == built.tags.tags().size());
    for (std::size_t i = 0; i < locked.tags.tags().size(); ++i)
        CHECK(locked.tags.tags()[i].str() == built.tags.tags()[i].str());
    CHECK(locked.machine() == built.machine());
}

TEST_CASE("an unknown platform is no target", "[install][target]") {
    CHECK_THROWS_AS(install::target_of_interpreter(interpreter(12, "3.12.8", "2.36", "x86_64"),
                                                   "windows_amd64", "e"),
                    Error);
}

TEST_CASE("a manifest of several platforms: one target each, create picks the host's",
          "[ops][target][multi-target]") {
    auto m = lock::Manifest::parse(
        "[environment]\npython = \"3.12\"\nplatforms = [\"manylinux_2_28_x86_64\", "
        "\"manylinux_2_28_aarch64\"]\nrequirements = []\n",
        "m.toml");
    REQUIRE(m.ok());
    auto targets = install::targets_of_manifest(*m);
    REQUIRE(targets.size() == 2);
    CHECK(targets[1].platform == "manylinux_2_28_aarch64");
    CHECK(targets[1].markers.values.at("platform_machine") == "aarch64");
    CHECK(targets[1].tags.tags().front().str() == "cp312-cp312-manylinux_2_28_aarch64");
    CHECK(install::target_marker(targets[0]) == "platform_machine == 'x86_64'");

    struct Row {
        const char *host, *wanted, *chosen;
    };
    const Row rows[] = {
        {"manylinux_2_36_aarch64", "", "manylinux_2_28_aarch64"},
        {"manylinux_2_31_x86_64", "", "manylinux_2_28_x86_64"},
        {"manylinux_2_31_x86_64", "aarch64", "manylinux_2_28_aarch64"},
        {"manylinux_2_31_x86_64", "manylinux_2_28_aarch64", "manylinux_2_28_aarch64"},
    };
    for (const auto& r : rows) {
        INFO(r.host << " " << r.wanted);
        CHECK(install::platform_for_host(*m, r.host, r.wanted, "train") == r.chosen);
    }
    try {
        install::platform_for_host(*m, "manylinux_2_28_ppc64le", "", "train");
        FAIL("a host the lock does not cover was accepted");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::invalid_input);
        CHECK_THAT(e.what(), Catch::Contains("this machine is manylinux_2_28_ppc64le; "
                                             "manifests/train.toml locks for "
                                             "manylinux_2_28_x86_64, manylinux_2_28_aarch64 only"));
    }
    try {
        install::platform_for_host(*m, "manylinux_2_31_x86_64", "ppc64le", "train");
        FAIL("a --target the lock does not cover was accepted");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::usage);
    }
    // One platform is built wherever create runs, as before.
    auto one = lock::Manifest::parse(
        "[environment]\npython = \"3.12\"\nplatform = "
        "\"manylinux_2_28_x86_64\"\nrequirements = []\n",
        "m.toml");
    REQUIRE(one.ok());
    CHECK(install::platform_for_host(*one, "manylinux_2_36_aarch64", "", "t") ==
          "manylinux_2_28_x86_64");
}
