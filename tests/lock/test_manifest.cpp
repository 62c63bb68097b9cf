#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "envbox/lock/manifest.hpp"

using namespace envbox;

TEST_CASE("the mission manifests parse") {
    for (const char* name : {"train-cu128", "infer-cu130"}) {
        INFO(name);
        std::ifstream in(std::string(ENVBOX_SOURCE_DIR) + "/manifests/" + name + ".toml");
        REQUIRE(in);
        std::stringstream text;
        text << in.rdbuf();
        auto m = lock::Manifest::parse(text.str(), std::string("manifests/") + name + ".toml");
        REQUIRE(m.ok());
        CHECK(m->python == "3.12");
        CHECK(m->platform == "manylinux_2_28_x86_64");
        REQUIRE(m->indexes.size() == 2);
        CHECK(m->indexes[0].explicit_);
        CHECK(m->indexes[1].name == "pypi");
        CHECK(m->sources.at("torch") == m->indexes[0].name);
        CHECK(m->requirements.front().name == "torch");
        CHECK(m->target_tags().ok());
    }
}

TEST_CASE("manifest errors name the file, line and key") {
    struct Row { const char* doc; const char* expect; };
    const Row rows[] = {
        {"[environment]\nplatform = \"manylinux_2_28_x86_64\"\nrequirements = []\n",
         "m.toml:1: Missing required value in 'environment.python'"},
        {"[environment]\npython = \"3.x\"\nplatform = \"manylinux_2_28_x86_64\"\nrequirements = []\n",
         "m.toml:2: Expected a CPython version"},
        {"[environment]\npython = \"3.12\"\nplatform = \"win_amd64\"\nrequirements = []\n",
         "m.toml:3: unsupported target platform 'win_amd64'"},
        {"[environment]\npython = \"3.12\"\nplatform = \"manylinux_2_28_x86_64\"\n"
         "requirements = [\"torch==2.11.0+cu128\", \"transformers>=\"]\n",
         "in 'environment.requirements[1]'"},
        {"[environment]\npython = \"3.12\"\nplatform = \"manylinux_2_28_x86_64\"\nrequirements = []\n"
         "[sources]\ntorch = \"pytorch-cu128\"\n",
         "m.toml:6: No [[index]] is named 'pytorch-cu128' in 'sources.torch'"},
        {"[environment]\npython = \"3.12\"\nplatform = \"manylinux_2_28_x86_64\"\nrequirements = []\n"
         "[[index]]\nname = \"a\"\nurl = \"https://a\"\n[[index]]\nname = \"a\"\nurl = \"https://b\"\n",
         "Duplicate index name 'a' in 'index[1].name'"},
        {"[environmnet]\n", "m.toml:1: Unknown key"},
    };
    for (const auto& r : rows) {
        INFO(r.doc);
        auto m = lock::Manifest::parse(r.doc, "m.toml");
        REQUIRE_FALSE(m.ok());
        CHECK_THAT(m.error().message(), Catch::Contains(r.expect));
    }
}
