// ops/tree: the dependency graph of a lock, the tree `envbox tree` prints (cli/tree_render), its
// inversion and `envbox why`'s paths, from lock text alone.
#include <catch2/catch.hpp>

#include "../../src/cli/tree_render.hpp"
#include "envbox/lock/pylock.hpp"
#include "envbox/ops/tree.hpp"

using namespace envbox;

namespace {

// A lock of `packages`: "name version: dep dep…" each (no colon: no `dependencies` key).
lock::Pylock lock_of(const std::vector<std::string>& packages) {
    std::string text = "lock-version = \"1.0\"\ncreated-by = \"test\"\n";
    for (const auto& spec : packages) {
        const auto colon = spec.find(':');
        const std::string head = spec.substr(0, colon);
        const std::string name = head.substr(0, head.find(' ')),
                          version = head.substr(head.find(' ') + 1);
        text += "\n[[packages]]\nname = \"" + name + "\"\nversion = \"" + version + "\"\n";
        if (colon != std::string::npos) {
            text += "dependencies = [";
            std::string rest = spec.substr(colon + 1);
            std::size_t at = 0;
            while ((at = rest.find_first_not_of(' ', at)) != std::string::npos) {
                std::size_t end = rest.find(' ', at);
                text += "{ name = \"" + rest.substr(at, end - at) + "\" },";
                at = end;
            }
            text += "]\n";
        }
        std::string dist = name;
        for (auto& c : dist)
            if (c == '-') c = '_';
        text += "[[packages.wheels]]\nurl = \"https://x/" + dist + "-" + version +
                "-py3-none-any.whl\"\nhashes = { sha256 = \"" + std::string(64, 'c') + "\" }\n";
    }
    auto lock = lock::Pylock::parse(text, "pylock.t.toml");
    REQUIRE(lock.ok());
    return std::move(*lock);
}

// torch reaches cublas directly and through cudnn; transformers shares filelock with torch.
lock::Pylock train() {
    return lock_of({
        "torch 2.11.0+cu128: filelock nvidia-cudnn-cu12 nvidia-cublas-cu12",
        "nvidia-cudnn-cu12 9.10.2.21: nvidia-cublas-cu12",
        "nvidia-cublas-cu12 12.8.4.1:",
        "filelock 3.19.1:",
        "transformers 4.57.0: huggingface-hub filelock",
        "huggingface-hub 0.35.0: filelock",
    });
}

const std::vector<std::string> kRequirements = {"torch==2.11.0+cu128", "transformers[torch]>=4.56"};

std::string tree_text(const ops::DependencyGraph& g, ops::TreeOptions o = {}) {
    return cli::render_tree(g, ops::tree_lines(g, o));
}

}  // namespace

TEST_CASE("tree prints the manifest's requirements at the top, as uv tree does", "[tree]") {
    auto g = ops::dependency_graph(train(), kRequirements, "pylock.t.toml");
    CHECK(tree_text(g) ==
          "torch 2.11.0+cu128\n"
          "├── filelock 3.19.1\n"
          "├── nvidia-cublas-cu12 12.8.4.1\n"
          "└── nvidia-cudnn-cu12 9.10.2.21\n"
          "    └── nvidia-cublas-cu12 12.8.4.1\n"
          "transformers[torch] 4.57.0\n"
          "├── filelock 3.19.1\n"
          "└── huggingface-hub 0.35.0\n"
          "    └── filelock 3.19.1\n");
    CHECK(tree_text(g, {std::nullopt, 0}) == "torch 2.11.0+cu128\ntransformers[torch] 4.57.0\n");
    CHECK(tree_text(g, {std::nullopt, 1}).find("    └── nvidia-cublas") == std::string::npos);

    auto json = cli::tree_json(g, ops::tree_lines(g, {}), {});
    CHECK(json["roots"].size() == 2);
    CHECK(json["roots"][1]["extras"] == Json::array({"torch"}));
    CHECK(json["roots"][0]["children"][2]["name"] == "nvidia-cudnn-cu12");
    CHECK(json["roots"][0]["children"][2]["children"][0]["version"] == "12.8.4.1");
    CHECK(json["invert"].is_null());
}

TEST_CASE("a shared subtree is shown once, then marked (*); cycles end", "[tree]") {
    auto lock = lock_of({"app 1.0: mid-a mid-b", "mid-a 1.0: base", "mid-b 1.0: base",
                         "base 1.0: leaf", "leaf 1.0:", "x 1.0: y", "y 1.0: x"});
    // No requirements recorded: the tops are what nothing depends on, then one of each cycle.
    auto g = ops::dependency_graph(lock, {}, "pylock.t.toml");
    CHECK(tree_text(g) ==
          "app 1.0\n"
          "├── mid-a 1.0\n"
          "│   └── base 1.0\n"
          "│       └── leaf 1.0\n"
          "└── mid-b 1.0\n"
          "    └── base 1.0 (*)\n"
          "x 1.0\n"
          "└── y 1.0\n"
          "    └── x 1.0 (*)\n");
    auto lines = ops::tree_lines(g, {});
    auto json = cli::tree_json(g, lines, {});
    CHECK(json["roots"][0]["children"][1]["children"][0]["repeated"] == true);
}

TEST_CASE("--invert shows who depends on a package, up to the roots", "[tree]") {
    auto g = ops::dependency_graph(train(), kRequirements, "pylock.t.toml");
    ops::TreeOptions o;
    o.invert = ops::package_node(g, "NVIDIA_cublas.cu12");
    CHECK(tree_text(g, o) ==
          "nvidia-cublas-cu12 12.8.4.1\n"
          "├── nvidia-cudnn-cu12 9.10.2.21\n"
          "│   └── torch 2.11.0+cu128\n"
          "└── torch 2.11.0+cu128\n");
    o.invert = ops::package_node(g, "filelock");
    o.depth = 1;
    CHECK(tree_text(g, o) ==
          "filelock 3.19.1\n"
          "├── huggingface-hub 0.35.0\n"
          "├── torch 2.11.0+cu128\n"
          "└── transformers 4.57.0\n");
    CHECK(cli::tree_json(g, ops::tree_lines(g, o), o)["invert"] == "filelock");
}

TEST_CASE("why prints every path from a root to the package", "[tree][why]") {
    auto g = ops::dependency_graph(train(), kRequirements, "pylock.t.toml");
    const std::size_t cublas = ops::package_node(g, "nvidia-cublas-cu12");
    auto why = ops::why_paths(g, cublas);
    CHECK(cli::render_why(g, cublas, why) ==
          "torch 2.11.0+cu128 → nvidia-cublas-cu12 12.8.4.1\n"
          "torch 2.11.0+cu128 → nvidia-cudnn-cu12 9.10.2.21 → nvidia-cublas-cu12 12.8.4.1\n");
    auto json = cli::why_json(g, cublas, why);
    CHECK(json["paths"].size() == 2);
    CHECK(json["paths"][1].size() == 3);
    CHECK(json["requested"] == false);

    const std::size_t torch = ops::package_node(g, "torch");
    CHECK(cli::render_why(g, torch, ops::why_paths(g, torch)) ==
          "torch 2.11.0+cu128 (a requirement of the manifest)\n");
    const std::size_t filelock = ops::package_node(g, "filelock");
    CHECK(ops::why_paths(g, filelock).paths.size() == 3);

    // Bounded: the paths stop at the limit, and say so.
    auto two = ops::why_paths(g, filelock, 2);
    CHECK(two.paths.size() == 2);
    CHECK(two.truncated);
    CHECK_THAT(cli::render_why(g, filelock, two),
               Catch::EndsWith("(only the first 2 paths are shown)\n"));
}

TEST_CASE("an unknown package and a lock without edges are errors that say what to do", "[tree]") {
    auto g = ops::dependency_graph(train(), kRequirements, "pylock.t.toml");
    try {
        ops::package_node(g, "nvidia-cublas");
        FAIL("no error");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::usage);
        CHECK_THAT(e.message(), Catch::Contains("no package nvidia-cublas in pylock.t.toml"));
    }
    CHECK_THROWS_AS(ops::package_node(g, "../x"), Error);

    auto old = lock_of({"torch 2.11.0", "filelock 3.19.1"});
    try {
        ops::dependency_graph(old, kRequirements, "pylock.old.toml");
        FAIL("no error");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::invalid_input);
        CHECK_THAT(e.message(), Catch::Contains("pylock.old.toml has no dependency edges"));
        CHECK_THAT(e.message(), Catch::Contains("envbox lock"));
    }
}

TEST_CASE("a requirement whose package the lock lacks is no root", "[tree]") {
    auto g = ops::dependency_graph(
        train(), {"torch", "transformers", "pywin32; sys_platform == 'win32'"}, "pylock.t.toml");
    REQUIRE(g.roots.size() == 2);
    CHECK(g.roots[0].requested);
    CHECK(g.nodes[g.roots[1].node].name == "transformers");
}

TEST_CASE("a hostile chain as long as a lock can be neither overflows nor floods", "[tree]") {
    ops::DependencyGraph g;
    const std::size_t n = 200000;
    for (std::size_t i = 0; i < n; ++i) {
        g.nodes.push_back({"p" + std::to_string(i), "1.0", {}, {}});
        if (i > 0) {
            g.nodes[i - 1].dependencies.push_back(i);
            g.nodes[i].dependents.push_back(i - 1);
        }
    }
    g.roots.push_back({0, {}, true});
    CHECK(ops::tree_lines(g, {}).size() == 256);  // 255 levels below the top, as uv tree
    CHECK(ops::tree_lines(g, {std::nullopt, n}).size() == n);
    ops::TreeOptions inverted{n - 1, n};
    CHECK(ops::tree_lines(g, inverted).back().node == 0);
    auto why = ops::why_paths(g, n - 1);
    REQUIRE(why.paths.size() == 1);
    CHECK(why.paths[0].size() == n);
    CHECK_FALSE(why.truncated);
}
