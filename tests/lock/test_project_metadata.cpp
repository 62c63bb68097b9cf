// lock::read_project_metadata: a local tree's [project] table (PEP 621), and the [sources]
// tables that name local trees in a manifest.
#include <catch2/catch.hpp>

#include "envbox/lock/manifest.hpp"
#include "envbox/lock/project_metadata.hpp"

using namespace envbox;

TEST_CASE("read_project_metadata: name, version, dependencies and extras", "[lock][local]") {
    auto m = lock::read_project_metadata(
        "[project]\nname = \"My_Lab\"\nversion = \"0.1.0\"\nrequires-python = \">=3.10\"\n"
        "dependencies = [\"torch>=2.4\", \"numpy; python_version >= '3.10'\"]\n"
        "[project.optional-dependencies]\nTrain = [\"wandb\", \"deepspeed; sys_platform == "
        "'linux'\"]\n",
        "pyproject.toml");
    REQUIRE(m.ok());
    CHECK(m->name == "My_Lab");
    CHECK(m->version->str() == "0.1.0");
    CHECK(m->static_dependencies());
    const auto rd = m->requires_dist();
    REQUIRE(rd.size() == 4);
    CHECK(rd[0].str() == "torch>=2.4");
    CHECK(rd[2].str() == "wandb; extra == \"train\"");
    CHECK(rd[3].str() == "deepspeed; sys_platform == \"linux\" and extra == \"train\"");
    // The digest's text moves with a dependency, not with the order they are written in.
    auto swapped = lock::read_project_metadata(
        "[project]\nname = \"My_Lab\"\nversion = \"0.1.0\"\nrequires-python = \">=3.10\"\n"
        "dependencies = [\"numpy; python_version >= '3.10'\", \"torch>=2.4\"]\n"
        "[project.optional-dependencies]\ntrain = [\"deepspeed; sys_platform == 'linux'\", "
        "\"wandb\"]\n",
        "pyproject.toml");
    REQUIRE(swapped.ok());
    CHECK(swapped->resolution_text() == m->resolution_text());
    auto dynamic = lock::read_project_metadata(
        "[project]\nname = \"x\"\ndynamic = [\"version\", \"Dependencies\"]\n", "p");
    REQUIRE(dynamic.ok());
    CHECK_FALSE(dynamic->version);
    CHECK_FALSE(dynamic->static_dependencies());
}

TEST_CASE("read_project_metadata: what is refused, with its line", "[lock][local]") {
    const std::pair<const char*, const char*> cases[] = {
        {"[tool.x]\n", "No [project] table"},
        {"[project]\nversion = \"1\"\n", "p:1: Missing required value in 'project.name'"},
        {"[project]\nname = \"-bad-\"\nversion = \"1\"\n", "Invalid package name"},
        {"[project]\nname = \"x\"\n", "or 'version' in dynamic"},
        {"[project]\nname = \"x\"\nversion = \"one\"\n", "project.version"},
        {"[project]\nname = \"x\"\nversion = \"1\"\ndependencies = [\"a b c\"]\n",
         "project.dependencies[0]"},
        {"[project]\nname = \"x\"\nversion = \"1\"\ndependencies = \"a\"\n", "Sequence"},
    };
    for (const auto& [text, says] : cases) {
        INFO(text);
        auto r = lock::read_project_metadata(text, "p");
        REQUIRE_FALSE(r.ok());
        CHECK_THAT(r.error().message(), Catch::Contains(says));
    }
}

TEST_CASE("Manifest: [sources] tables name local trees", "[lock][local]") {
    const std::string head =
        "[environment]\npython = \"3.12\"\nplatform = \"manylinux_2_28_x86_64\"\n"
        "requirements = [\"mylab\"]\n[[index]]\nname = \"pypi\"\nurl = "
        "\"https://pypi.org/simple\"\n";
    auto m = lock::Manifest::parse(
        head + "[sources]\nMyLab = { path = \"..\", editable = true }\ntorch = \"pypi\"\n",
        "m.toml");
    REQUIRE(m.ok());
    REQUIRE(m->local_sources.count("mylab"));
    CHECK(m->local_sources.at("mylab").path == "..");
    CHECK(m->local_sources.at("mylab").editable);
    CHECK(m->local_sources.at("mylab").line == 9);
    CHECK(m->sources.count("torch"));
    CHECK_FALSE(m->sources.count("mylab"));
    auto typo = lock::Manifest::parse(
        head + "[sources]\nmylab = { path = \"..\", editabel = true }\n", "m.toml");
    REQUIRE_FALSE(typo.ok());
    CHECK_THAT(typo.error().message(), Catch::Contains("did you mean 'editable'"));
    auto empty = lock::Manifest::parse(head + "[sources]\nmylab = { path = \"\" }\n", "m.toml");
    REQUIRE_FALSE(empty.ok());
    // envbox.toml's local trees are relative to the project root; the manifest's own win.
    auto project = lock::ProjectFile::parse("[sources]\nmylab = { path = \".\" }\n", "envbox.toml");
    REQUIRE(project.ok());
    auto shared = lock::Manifest::parse(head, "m.toml", &*project);
    REQUIRE(shared.ok());
    CHECK(shared->local_sources.at("mylab").from_project);
    auto own = lock::Manifest::parse(head + "[sources]\nmylab = \"pypi\"\n", "m.toml", &*project);
    REQUIRE(own.ok());
    CHECK_FALSE(own->local_sources.count("mylab"));
}

TEST_CASE("read_dependency_groups: PEP 735 groups, includes followed once", "[lock][local]") {
    const std::string text =
        "[dependency-groups]\nCommon = [\"numpy\", \"torch>=2\"]\n"
        "test = [{include-group = \"common\"}, \"pytest\", \"numpy\"]\n"
        "loop-a = [{include-group = \"loop-b\"}]\nloop-b = [{include-group = \"loop-a\"}]\n";
    auto test = lock::read_dependency_groups(text, "pyproject.toml", {"test"});
    REQUIRE(test.ok());
    REQUIRE(test->size() == 3);
    CHECK((*test)[0].str() == "numpy");
    CHECK((*test)[2].str() == "pytest");
    auto loop = lock::read_dependency_groups(text, "pyproject.toml", {"loop-a"});
    REQUIRE_FALSE(loop.ok());
    CHECK_THAT(loop.error().message(), Catch::Contains("includes itself"));
    auto missing = lock::read_dependency_groups(text, "pyproject.toml", {"docs"});
    REQUIRE_FALSE(missing.ok());
    CHECK_THAT(missing.error().message(), Catch::Contains("No dependency group 'docs'"));
    auto none = lock::read_dependency_groups("[project]\n", "p", {"x"});
    REQUIRE_FALSE(none.ok());
}

TEST_CASE("read_dependency_groups: each group expanded once, however often it is included",
          "[lock][local]") {
    std::string text = "[dependency-groups]\ng40 = [\"numpy\"]\n";
    for (int i = 0; i < 40; ++i)  // each includes the next twice: 2^40 paths, 41 groups
        text += "g" + std::to_string(i) + " = [{include-group = \"g" + std::to_string(i + 1) +
                "\"}, {include-group = \"g" + std::to_string(i + 1) + "\"}]\n";
    auto all = lock::read_dependency_groups(text, "pyproject.toml", {"g0"});
    REQUIRE(all.ok());
    REQUIRE(all->size() == 1);
}
