#include <catch2/catch.hpp>
#include <fstream>
#include <set>
#include <sstream>

#include "envbox/lock/lock_file.hpp"
#include "envbox/lock/manifest.hpp"
#include "envbox/lock/pylock.hpp"

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
        CHECK(m->platforms ==
              std::vector<std::string>{"manylinux_2_28_x86_64", "manylinux_2_28_aarch64"});
        REQUIRE(m->indexes.size() == 2);
        CHECK(m->indexes[0].explicit_);
        CHECK(m->indexes[1].name == "pypi");
        CHECK(m->sources.at("torch") == m->indexes[0].name);
        CHECK(m->requirements.front().name == "torch");
        CHECK(m->target_tags().ok());
    }
}

TEST_CASE("manifest errors name the file, line and key") {
    struct Row {
        const char* doc;
        const char* expect;
    };
    const Row rows[] = {
        {"[environment]\nplatform = \"manylinux_2_28_x86_64\"\nrequirements = []\n",
         "m.toml:1: Missing required value in 'environment.python'"},
        {"[environment]\npython = \"3.x\"\nplatform = \"manylinux_2_28_x86_64\"\nrequirements = "
         "[]\n",
         "m.toml:2: Expected a CPython version"},
        {"[environment]\npython = \"3.12\"\nplatform = \"win_amd64\"\nrequirements = []\n",
         "m.toml:3: unsupported target platform 'win_amd64'"},
        {"[environment]\npython = \"3.12\"\nplatform = \"manylinux_2_28_x86_64\"\n"
         "requirements = [\"torch==2.11.0+cu128\", \"transformers>=\"]\n",
         "in 'environment.requirements[1]'"},
        {"[environment]\npython = \"3.12\"\nplatform = \"manylinux_2_28_x86_64\"\nrequirements = "
         "[]\n"
         "[sources]\ntorch = \"pytorch-cu128\"\n",
         "m.toml:6: No [[index]] is named 'pytorch-cu128' in 'sources.torch'"},
        {"[environment]\npython = \"3.12\"\nplatform = \"manylinux_2_28_x86_64\"\nrequirements = "
         "[]\n"
         "[[index]]\nname = \"a\"\nurl = \"https://a\"\n[[index]]\nname = \"a\"\nurl = "
         "\"https://b\"\n",
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

namespace {
const char* kHead =
    "[environment]\npython = \"3.12\"\nplatform = \"manylinux_2_28_x86_64\"\nrequirements = []\n";
}

TEST_CASE("unknown manifest keys are errors naming the line and the key meant") {
    struct Row {
        std::string doc;
        const char* expect;
    };
    const Row rows[] = {
        // The typo that let a PyTorch-index package shadow PyPI's.
        {std::string(kHead) + "[[index]]\nname = \"pytorch-cu128\"\nurl = "
                              "\"https://download.pytorch.org/whl/cu128\"\n"
                              "explict = true\n",
         "m.toml:8: Unknown key 'index[0].explict' (did you mean 'explicit'?); settings for other "
         "tools belong under [tool.NAME]"},
        {std::string(kHead) + "[[index]]\nname = \"a\"\nurl = \"https://a\"\n[[index]]\nname = "
                              "\"b\"\nurl = \"https://b\"\n"
                              "ignore-error-code = [403]\n",
         "m.toml:11: Unknown key 'index[1].ignore-error-code' (did you mean "
         "'ignore-error-codes'?)"},
        {"[environment]\npyhton = \"3.12\"\n",
         "m.toml:2: Unknown key 'environment.pyhton' (did you mean 'python'?)"},
        {"[environment]\npython = \"3.12\"\nplatform = \"manylinux_2_28_x86_64\"\nrequirement = "
         "[\"torch\"]\n",
         "m.toml:4: Unknown key 'environment.requirement' (did you mean 'requirements'?)"},
        {"[environment]\npython = \"3.12\"\nCUDA = \"12.8\"\n",
         "m.toml:3: Unknown key 'environment.CUDA' (did you mean 'cuda'?)"},
        {"[environmnet]\n", "m.toml:1: Unknown key 'environmnet' (did you mean 'environment'?)"},
        {std::string(kHead) + "[sourcse]\ntorch = \"x\"\n",
         "m.toml:5: Unknown key 'sourcse' (did you mean 'sources'?)"},
        {std::string(kHead) + "[run]\nenvs = { A = \"1\" }\n",
         "m.toml:6: Unknown key 'run.envs' (did you mean 'env'?)"},
        {std::string(kHead) + "[install]\nprefers = [\"a\"]\n",
         "m.toml:6: Unknown key 'install.prefers' (did you mean 'prefer'?)"},
        // Nothing close: the valid keys are listed.
        {std::string(kHead) + "[[index]]\nname = \"a\"\nurl = \"https://a\"\npriority = 1\n",
         "m.toml:8: Unknown key 'index[0].priority' (expected name, url, explicit, ca, "
         "ignore-error-codes or exclude-newer); "
         "settings for other tools belong under [tool.NAME]"},
        {"dependencies = [\"x\"]\n" + std::string(kHead),
         "m.toml:1: Unknown key 'dependencies' (expected environment, index, sources, run, "
         "install, "
         "build or tool)"},
        {"tool = 1\n" + std::string(kHead),
         "m.toml:1: Unexpected type int (expected Mapping) in 'tool'"},
        // Values of the keys added with [install] and ignore-error-codes.
        {std::string(kHead) +
             "[[index]]\nname = \"a\"\nurl = \"https://a\"\nignore-error-codes = [403, 200]\n",
         "m.toml:8: Expected an HTTP error status (400-599), not 200 in "
         "'index[0].ignore-error-codes[1]'"},
        {std::string(kHead) +
             "[[index]]\nname = \"a\"\nurl = \"https://a\"\nignore-error-codes = [\"403\"]\n",
         "m.toml:8: Unexpected type str (expected int) in 'index[0].ignore-error-codes[0]'"},
        {std::string(kHead) +
             "[[index]]\nname = \"a\"\nurl = \"https://a\"\nignore-error-codes = 403\n",
         "m.toml:8: Unexpected type int (expected Sequence) in 'index[0].ignore-error-codes'"},
        {std::string(kHead) + "[install]\nprefer = [\"not a name!\"]\n",
         "m.toml:6: Invalid package name 'not a name!' in 'install.prefer[0]'"},
        {std::string(kHead) + "[install]\nprefer = \"opencv-python\"\n",
         "m.toml:6: Unexpected type str (expected Sequence) in 'install.prefer'"},
        {std::string(kHead) + "[install]\nprefer = [\"OpenCV_Python\", \"opencv-python\"]\n",
         "m.toml:6: 'opencv-python' is listed twice in 'install.prefer[1]'"},
    };
    for (const auto& r : rows) {
        INFO(r.doc);
        auto m = lock::Manifest::parse(r.doc, "m.toml");
        REQUIRE_FALSE(m.ok());
        CHECK(m.error().code() == ErrorCode::invalid_input);
        CHECK_THAT(m.error().message(), Catch::Contains(r.expect));
    }
}

TEST_CASE("[tool.*] holds what envbox does not know; known keys are read") {
    std::string doc =
        std::string(kHead) +
        "[[index]]\nname = \"pytorch\"\nurl = "
        "\"https://download.pytorch.org/whl/cu128/\"\nexplicit = true\n"
        "ignore-error-codes = [403, 401, 403]\n"
        "[[index]]\nname = \"pypi\"\nurl = \"https://pypi.org/simple\"\n"
        "[sources]\nAny_Name = \"pytorch\"\n"
        "[run]\nenv = { ANY_VARIABLE = \"1\" }\n"
        "[install]\nprefer = [\"OpenCV_Python.Headless\"]\n"
        "[tool.mytool]\nwhatever = { nested = [1, 2] }\n[tool.uv]\nindex-strategy = \"x\"\n";
    auto m = lock::Manifest::parse(doc, "m.toml");
    REQUIRE(m.ok());
    CHECK(m->indexes[0].url == "https://download.pytorch.org/whl/cu128");
    CHECK(m->indexes[0].ignore_error_codes == std::vector<int>{403, 401});
    CHECK(m->indexes[1].ignore_error_codes.empty());
    CHECK(m->sources.at("any-name") == "pytorch");
    REQUIRE(m->install_prefer.size() == 1);
    CHECK(m->install_prefer[0].name == "opencv-python-headless");
    CHECK(m->install_prefer[0].line == 18);
    CHECK_FALSE(m->check_prefer({"numpy", "opencv-python-headless"}, "m.toml"));
    auto missing = m->check_prefer({"opencv-python"}, "m.toml");
    REQUIRE(missing);
    CHECK(missing->code() == ErrorCode::invalid_input);
    CHECK(missing->message() ==
          "m.toml:18: 'opencv-python-headless' is not a package of the lock in 'install.prefer'");
}

TEST_CASE("the key suggested is a typo's distance away, or none") {
    struct Row {
        const char* key;
        const char* expect;
    };
    const Row rows[] = {
        {"explict", "(did you mean 'explicit'?)"},
        {"expilcit", "(did you mean 'explicit'?)"},
        {"Explicit", "(did you mean 'explicit'?)"},
        {"urls", "(did you mean 'url'?)"},
        {"nmae", "(did you mean 'name'?)"},
        {"ca-bundle", "(expected name, url,"},
        {"x", "(expected name, url,"},
        {"indexes", "(expected name, url,"},
    };
    for (const auto& r : rows) {
        INFO(r.key);
        std::string doc = std::string(kHead) + "[[index]]\nname = \"a\"\nurl = \"https://a\"\n" +
                          r.key + " = 1\n";
        auto m = lock::Manifest::parse(doc, "m.toml");
        REQUIRE_FALSE(m.ok());
        CHECK_THAT(m.error().message(), Catch::Contains("m.toml:8: Unknown key 'index[0]." +
                                                        std::string(r.key) + "' " + r.expect));
    }
}

TEST_CASE("a PEP 751 lock with keys envbox does not know is still read (the spec allows them)") {
    const char* lock =
        "lock-version = \"1.0\"\ncreated-by = \"other-tool\"\nfuture-key = 1\n"
        "[[packages]]\nname = \"a\"\nversion = \"1.0\"\nnew-package-key = \"x\"\n"
        "[[packages.wheels]]\nname = \"a-1.0-py3-none-any.whl\"\nurl = "
        "\"https://x/a-1.0-py3-none-any.whl\"\n"
        "hashes = { sha256 = \""
        "0000000000000000000000000000000000000000000000000000000000000000"
        "\" }\n"
        "new-wheel-key = true\n[tool.other]\nx = 1\n";
    auto p = lock::Pylock::parse(lock, "pylock.toml");
    REQUIRE(p.ok());
    CHECK(p->packages.size() == 1);
}

TEST_CASE("a manifest read with the project file: its own entries first, the shared ones under") {
    auto project = lock::ProjectFile::parse(R"(default-env = "train"
[[index]]
name = "pytorch"
url = "https://download.pytorch.org/whl/cu128"
explicit = true

[[index]]
name = "pypi"
url = "https://pypi.org/simple"

[sources]
torch = "pytorch"
triton = "pytorch"

[run]
env = { A = "project", B = "project" }
)",
                                            "envbox.toml");
    REQUIRE(project.ok());
    CHECK(project->default_env == "train");
    const std::string text = R"([environment]
python = "3.12"
platform = "manylinux_2_28_x86_64"
requirements = ["torch", "numpy"]

[[index]]
name = "pypi"
url = "https://mirror.example/simple"

[[index]]
name = "local"
url = "file:///srv/wheels"

[sources]
triton = "local"

[run]
env = { B = "manifest" }
)";
    auto m = lock::Manifest::parse(text, "manifests/train.toml", &*project);
    REQUIRE(m.ok());
    REQUIRE(m->indexes.size() == 3);
    CHECK(m->indexes[0].url == "https://mirror.example/simple");  // the manifest's pypi wins
    CHECK(m->indexes[1].name == "local");
    CHECK(m->indexes[2].name == "pytorch");
    CHECK(m->sources.at("torch") == "pytorch");
    CHECK(m->sources.at("triton") == "local");
    CHECK(m->run_env.at("A") == "project");
    CHECK(m->run_env.at("B") == "manifest");
    // Alone, the manifest knows no index `pytorch`: a source naming it is an error.
    auto alone = lock::Manifest::parse(text + "\n", "manifests/train.toml");
    REQUIRE(alone.ok());
    CHECK(alone->indexes.size() == 2);
    auto pinned = lock::Manifest::parse(
        std::string(text).replace(text.find("triton = \"local\""), 16, "numpy = \"pytorch\""),
        "m.toml");
    CHECK(!pinned.ok());
    CHECK(lock::Manifest::parse(
              std::string(text).replace(text.find("triton = \"local\""), 16, "numpy = \"pytorch\""),
              "m.toml", &*project)
              .ok());
    // The project file refuses what a manifest would, and keys it does not have.
    CHECK(!lock::ProjectFile::parse("[environment]\npython = \"3.12\"\n", "envbox.toml").ok());
    auto typo = lock::ProjectFile::parse("default_env = \"x\"\n", "envbox.toml");
    REQUIRE(!typo.ok());
    CHECK(typo.error().message().find("envbox.toml:1") != std::string::npos);
    CHECK(!lock::ProjectFile::parse("[sources]\ntorch = \"nowhere\"\n", "envbox.toml").ok());
}

TEST_CASE("an index URL with credentials is refused, naming where they go instead") {
    struct Row {
        const char* url;
        bool refused;
    };
    const Row rows[] = {
        {"https://alice:s3cret@pypi.example/simple", true},
        {"http://:s3cret@127.0.0.1:8080/simple", true},
        {"https://token@pypi.example", true},
        {"https://a@b@pypi.example/simple", true},
        {"file://user@localhost/srv/wheels", true},
        {"https://pypi.example/simple/a@b", false},  // an '@' in the path is no userinfo
        {"https://pypi.example/simple?x=a@b", false},
        {"https://pypi.example/simple#a@b", false},
    };
    for (const auto& r : rows) {
        INFO(r.url);
        const std::string index =
            std::string("[[index]]\nname = \"my-mirror\"\nurl = \"") + r.url + "\"\n";
        auto m = lock::Manifest::parse(std::string(kHead) + index, "m.toml");
        auto p = lock::ProjectFile::parse(index, "envbox.toml");
        CHECK(m.ok() != r.refused);
        CHECK(p.ok() != r.refused);
        if (!r.refused) continue;
        for (const auto* e : {&m.error(), &p.error()}) {
            CHECK(e->code() == ErrorCode::invalid_input);
            CHECK_THAT(e->message(),
                       Catch::Contains("without credentials") &&
                           Catch::Contains("ENVBOX_INDEX_MY_MIRROR_USERNAME / "
                                           "ENVBOX_INDEX_MY_MIRROR_PASSWORD or ~/.netrc") &&
                           Catch::Contains("in 'index[0].url'"));
            CHECK_THAT(e->message(), !Catch::Contains("s3cret") && !Catch::Contains("token@"));
        }
        CHECK_THAT(m.error().message(), Catch::StartsWith("m.toml:7: "));
        CHECK_THAT(p.error().message(), Catch::StartsWith("envbox.toml:3: "));
    }
}

TEST_CASE("build settings: never by default, [environment] for all, [build.NAME] over it") {
    auto none = lock::Manifest::parse(kHead, "m.toml");
    REQUIRE(none.ok());
    CHECK_FALSE(none->may_build("antlr4-python3-runtime"));

    auto m = lock::Manifest::parse(
        "[environment]\npython = \"3.12\"\nplatform = \"manylinux_2_28_x86_64\"\n"
        "build = \"allow\"\nrequirements = []\n"
        "[build.Deep_Speed]\nbuild = \"never\"\n",
        "m.toml");
    REQUIRE(m.ok());
    CHECK(m->may_build("antlr4-python3-runtime"));
    CHECK_FALSE(m->may_build("deep-speed"));  // names are normalised

    auto one = lock::Manifest::parse(
        std::string(kHead) + "[build.antlr4-python3-runtime]\nbuild = \"allow\"\n", "m.toml");
    REQUIRE(one.ok());
    CHECK(one->may_build("antlr4-python3-runtime"));
    CHECK_FALSE(one->may_build("rouge-score"));

    struct Row {
        std::string doc;
        const char* expect;
    };
    const Row rows[] = {
        {std::string(kHead) + "[build.x]\nbuild = \"yes\"\n",
         "Expected \"allow\" or \"never\" in 'build.x.build'"},
        {std::string(kHead) + "[build.x]\nbuidl = \"allow\"\n", "Unknown key"},
        {std::string(kHead) + "[build]\nx = 1\n", "build.x"},
        {"[environment]\npython = \"3.12\"\nplatform = \"manylinux_2_28_x86_64\"\n"
         "build = \"sometimes\"\nrequirements = []\n",
         "Expected \"allow\" or \"never\" in 'environment.build'"},
        {std::string(kHead) + "[build.x]\ndependencies = [\"torch\", \"Torch\"]\n",
         "'Torch' is given twice in 'build.x.dependencies[1]'"},
        {std::string(kHead) + "[build.x]\ndependencies = [\"not a name\"]\n",
         "Expected a package name in 'build.x.dependencies[0]'"},
        {std::string(kHead) + "[build.x]\nvariables = { \"A=B\" = \"1\" }\n",
         "Expected a variable name"},
        {std::string(kHead) + "[build.x]\nvariables = { A = 1 }\n", "build.x.variables.A"},
        {std::string(kHead) + "[build.x]\nvariables = { A = \"" + std::string(4097, 'v') + "\" }\n",
         "at most 4096 bytes"},
        {std::string(kHead) + "[build.x]\nvariables = { A = \"1\" }\nspeed-variables = [\"B\"]\n",
         "'B' is not one of this table's variables"},
        {std::string(kHead) + "[build.x]\nrequires-dist = [\"y @ https://h/y.whl\"]\n",
         "Expected a requirement, not a URL in 'build.x.requires-dist[0]'"},
    };
    for (const auto& r : rows) {
        INFO(r.doc);
        auto bad = lock::Manifest::parse(r.doc, "m.toml");
        REQUIRE_FALSE(bad.ok());
        CHECK_THAT(bad.error().message(), Catch::Contains(r.expect));
    }
}

TEST_CASE("build settings: dependencies, variables and requires-dist, and the lock's lines") {
    auto m = lock::Manifest::parse(
        std::string(kHead) +
            "[build.Flash_Attn]\ndependencies = [\"Torch\"]\n"
            "variables = { TORCH_CUDA_ARCH_LIST = \"8.0 9.0\", MAX_JOBS = \"16\" }\n"
            "speed-variables = [\"MAX_JOBS\"]\nrequires-dist = [\"torch\", \"einops>=0.6\"]\n",
        "m.toml");
    REQUIRE(m.ok());
    const lock::PackageBuild& b = m->package_builds.at("flash-attn");
    CHECK_FALSE(b.build.has_value());
    CHECK(b.dependencies == std::vector<std::string>{"torch"});
    CHECK(b.variables.at("TORCH_CUDA_ARCH_LIST") == "8.0 9.0");
    CHECK(b.speed_variables == std::set<std::string>{"MAX_JOBS"});
    REQUIRE(b.requires_dist);
    CHECK(b.requires_dist->size() == 2);

    const auto lines = lock::build_settings_lines("flash-attn", b);
    CHECK(lines == std::vector<std::string>{"flash-attn dependency torch",
                                            "flash-attn speed-variable MAX_JOBS 16",
                                            "flash-attn variable TORCH_CUDA_ARCH_LIST 8.0%209.0"});
    auto back = lock::read_build_settings(lines, "pylock.e.toml");
    REQUIRE(back.ok());
    const lock::PackageBuild& r = back->at("flash-attn");
    CHECK(r.dependencies == b.dependencies);
    CHECK(r.variables == b.variables);
    CHECK(r.speed_variables == b.speed_variables);

    const std::string too_long = "x variable A " + std::string(4097, 'v');
    for (const std::string& hostile :
         {std::string("x variable A=B 1"), std::string("x variable A %zz"),
          std::string("x dependency"), std::string("x other y"),
          std::string("not/a/name dependency y"), std::string("x variable 1A v"),
          std::string("x variable A a%00b"), too_long}) {
        INFO(hostile.substr(0, 40));
        auto bad = lock::read_build_settings({hostile}, "pylock.e.toml");
        REQUIRE_FALSE(bad.ok());
        CHECK_THAT(bad.error().message(), Catch::StartsWith("pylock.e.toml: [tool.envbox] "
                                                            "build-settings entry"));
    }
}
