#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include "envbox/lock/manifest.hpp"
#include "envbox/lock/manifest_edit.hpp"

using namespace envbox;

namespace {

// A manifest around `requirements` (the text from `requirements =` to the end of the array),
// with a comment before and an index and a comment after, which every edit must keep.
std::string doc(const std::string& requirements, const std::string& tail = "") {
    return "# the training stack\n[environment]\npython = \"3.12\"  # the cluster's\n"
           "platform = \"manylinux_2_28_x86_64\"\n" +
           requirements +
           "\n\n[[index]]\nname = \"pypi\"   # the public one\nurl = "
           "\"https://pypi.org/simple\"\n\n"
           "[[index]]\nname = \"pytorch-cu128\"\nurl = \"https://download.pytorch.org/whl/cu128\"\n"
           "explicit = true\n" +
           tail;
}

std::string added(const std::string& text, const std::string& req) {
    auto r = lock::add_requirement(text, "m.toml", req);
    INFO(text);
    if (!r) FAIL(r.error().message());
    return r->text;
}

std::string removed(const std::string& text, const std::string& name) {
    auto r = lock::remove_requirement(text, "m.toml", name);
    INFO(text);
    if (!r) FAIL(r.error().message());
    return *r;
}

}  // namespace

TEST_CASE("add appends in the array's own layout, keeping comments", "[manifest_edit]") {
    struct Row {
        const char* before;
        const char* req;
        const char* after;
    };
    const Row rows[] = {
        // one-line arrays: ", " (or the separator the array uses) before the new one
        {"requirements = []", "tqdm", "requirements = [\"tqdm\"]"},
        {"requirements = [\"numpy\"]", "tqdm>=4", "requirements = [\"numpy\", \"tqdm>=4\"]"},
        {"requirements = [\"a\",\"b\"]  # two", "c", "requirements = [\"a\",\"b\",\"c\"]  # two"},
        {"requirements = [\"a\", ]", "c", "requirements = [\"a\", \"c\", ]"},
        {"requirements = ['a']", "c ; python_version >= \"3.9\"",
         "requirements = ['a', 'c ; python_version >= \"3.9\"']"},
        // multi-line: a line of its own, indented as the last, trailing comma as the array has
        {"requirements = [\n    \"numpy\",  # fast\n    \"torch==2.11.0\",\n]", "tqdm",
         "requirements = [\n    \"numpy\",  # fast\n    \"torch==2.11.0\",\n    \"tqdm\",\n]"},
        {"requirements = [\n  \"numpy\",\n  \"torch\"  # pinned below\n]", "tqdm",
         "requirements = [\n  \"numpy\",\n  \"torch\",  # pinned below\n  \"tqdm\"\n]"},
        {"requirements = [\n  # nothing yet\n]", "tqdm",
         "requirements = [\n  # nothing yet\n    \"tqdm\",\n]"},
        {"requirements = [\"numpy\",\n                \"torch\"]", "tqdm",
         "requirements = [\"numpy\",\n                \"torch\",\n                \"tqdm\"]"},
        {"requirements = [\n  \"a\", # x, y ]\n  \"b\",]", "c",
         "requirements = [\n  \"a\", # x, y ]\n  \"b\",\n  \"c\",]"},
        // a comment inside the array, between elements, stays where it is
        {"requirements = [\n    \"numpy\",\n    # the CUDA 12.8 build\n    \"torch\",\n]", "tqdm",
         "requirements = [\n    \"numpy\",\n    # the CUDA 12.8 build\n    \"torch\",\n    "
         "\"tqdm\",\n]"},
    };
    for (const auto& row : rows) {
        INFO(row.before);
        CHECK(added(doc(row.before), row.req) == doc(row.after));
    }
}

TEST_CASE("add of a required package replaces it in place", "[manifest_edit]") {
    struct Row {
        const char* before;
        const char* req;
        const char* after;
    };
    const Row rows[] = {
        {"requirements = [\"numpy\", \"Torch==2.10\", \"tqdm\"]", "torch==2.11.0",
         "requirements = [\"numpy\", \"torch==2.11.0\", \"tqdm\"]"},
        {"requirements = [\n    \"torch==2.10\",  # cu128\n    \"numpy\",\n]", "torch>=2.11",
         "requirements = [\n    \"torch>=2.11\",  # cu128\n    \"numpy\",\n]"},
        // names compare canonicalized (PEP 503)
        {"requirements = [\"typing_extensions>=4\"]", "Typing.Extensions>=4.12",
         "requirements = [\"Typing.Extensions>=4.12\"]"},
        // a second requirement of the name goes; the first is replaced where it stands
        {"requirements = [\n  \"a\",\n  \"b<2\",\n  \"c\",\n  \"b>1\",\n]", "b==1.5",
         "requirements = [\n  \"a\",\n  \"b==1.5\",\n  \"c\",\n]"},
    };
    for (const auto& row : rows) {
        INFO(row.before);
        auto r = lock::add_requirement(doc(row.before), "m.toml", row.req);
        REQUIRE(r.ok());
        CHECK(r->change == lock::RequirementChange::replaced);
        CHECK(r->text == doc(row.after));
    }
    auto same = lock::add_requirement(doc("requirements = [\"tqdm>=4\"]"), "m.toml", " tqdm>=4 ");
    REQUIRE(same.ok());
    CHECK(same->change == lock::RequirementChange::kept);
    CHECK(same->text == doc("requirements = [\"tqdm>=4\"]"));
}

TEST_CASE("remove takes the element and keeps the array valid", "[manifest_edit]") {
    struct Row {
        const char* before;
        const char* name;
        const char* after;
    };
    const Row rows[] = {
        {"requirements = [\"a\", \"b\", \"c\"]", "b", "requirements = [\"a\", \"c\"]"},
        {"requirements = [\"a\", \"b\", \"c\"]", "c", "requirements = [\"a\", \"b\"]"},
        {"requirements = [\"a\", \"b\", \"c\"]", "a", "requirements = [\"b\", \"c\"]"},
        {"requirements = [\"a\", \"b\",]", "b", "requirements = [\"a\",]"},
        {"requirements = [\"only\"]", "only", "requirements = []"},
        // alone on its line: the line goes, with its comment
        {"requirements = [\n    \"a\",\n    \"b\",  # about b\n    \"c\",\n]", "b",
         "requirements = [\n    \"a\",\n    \"c\",\n]"},
        // the last one without a trailing comma: the comma before it goes too
        {"requirements = [\n    \"a\",  # about a\n    \"b\"\n]", "b",
         "requirements = [\n    \"a\"  # about a\n]"},
        // removing the last one leaves an empty, valid array and the comments around it
        {"requirements = [\n    # pinned by the platform team\n    \"torch\",\n]", "TORCH",
         "requirements = [\n    # pinned by the platform team\n]"},
        // every requirement of the name (two markers)
        {"requirements = [\n  \"a; python_version < '3.13'\",\n  \"b\",\n  \"A>1; python_version "
         ">= '3.13'\",\n]",
         "a", "requirements = [\n  \"b\",\n]"},
    };
    for (const auto& row : rows) {
        INFO(row.before);
        CHECK(removed(doc(row.before), row.name) == doc(row.after));
    }
}

TEST_CASE("edits are refused before anything changes", "[manifest_edit]") {
    const std::string text = doc("requirements = [\"numpy\", \"tqdm\"]");
    auto bad = lock::add_requirement(text, "m.toml", "torch==");
    REQUIRE(!bad.ok());
    CHECK(bad.error().code() == ErrorCode::usage);
    CHECK_THAT(bad.error().message(), Catch::Contains("invalid requirement 'torch=='"));

    auto missing = lock::remove_requirement(text, "m.toml", "scipy");
    REQUIRE(!missing.ok());
    CHECK(missing.error().code() == ErrorCode::usage);
    CHECK_THAT(missing.error().message(),
               Catch::Contains("'scipy' is not a requirement of m.toml; it requires numpy, tqdm"));

    auto broken = lock::add_requirement("[environment]\npython = 3.12\n", "m.toml", "tqdm");
    REQUIRE(!broken.ok());
    CHECK(broken.error().code() == ErrorCode::invalid_input);

    auto no_index = lock::pin_source(text, "m.toml", "torch", "cu128");
    REQUIRE(!no_index.ok());
    CHECK(no_index.error().code() == ErrorCode::usage);
    CHECK_THAT(no_index.error().message(), Catch::Contains("its indexes are pypi, pytorch-cu128"));
}

TEST_CASE("pin_source edits or adds the [sources] entry", "[manifest_edit]") {
    const std::string reqs = "requirements = [\"torch\"]";
    struct Row {
        std::string before_tail, package, after_tail;
    };
    const Row rows[] = {
        // no [sources]: a new table at the end
        {"", "torch", "\n[sources]\ntorch = \"pytorch-cu128\"\n"},
        {"# end\n", "zope.interface",
         "# end\n\n[sources]\n\"zope.interface\" = \"pytorch-cu128\"\n"},
        // a [sources] table: a line after its last entry, before what follows
        {"\n[sources]\ntriton = \"pytorch-cu128\"  # with torch\n\n[run]\nenv = {}\n", "torch",
         "\n[sources]\ntriton = \"pytorch-cu128\"  # with torch\ntorch = \"pytorch-cu128\"\n\n"
         "[run]\nenv = {}\n"},
        {"\n[sources]\n", "torch", "\n[sources]\ntorch = \"pytorch-cu128\"\n"},
        // an entry of the name (canonicalized): its value replaced, its comment kept
        {"\n[sources]\nTorch = \"pypi\"  # for now\n", "torch",
         "\n[sources]\nTorch = \"pytorch-cu128\"  # for now\n"},
    };
    for (const auto& row : rows) {
        INFO(row.before_tail);
        auto r =
            lock::pin_source(doc(reqs, row.before_tail), "m.toml", row.package, "pytorch-cu128");
        if (!r) FAIL(r.error().message());
        CHECK(*r == doc(reqs, row.after_tail));
        auto m = lock::Manifest::parse(*r, "m.toml");
        REQUIRE(m.ok());
        CHECK(m->sources.size() >= 1);
    }
    // Already pinned there: the text is unchanged.
    const std::string pinned = doc(reqs, "\n[sources]\ntorch = \"pytorch-cu128\"\n");
    auto same = lock::pin_source(pinned, "m.toml", "torch", "pytorch-cu128");
    REQUIRE(same.ok());
    CHECK(*same == pinned);
}

TEST_CASE("toml_quote", "[manifest_edit]") {
    CHECK(lock::toml_quote("torch==2.11") == "\"torch==2.11\"");
    CHECK(lock::toml_quote("a; python_version < \"3.13\"") == "'a; python_version < \"3.13\"'");
    CHECK(lock::toml_quote("a; x == \"it's\"") == "\"a; x == \\\"it's\\\"\"");
}

TEST_CASE("the mission manifests: add then remove gives back their bytes", "[manifest_edit]") {
    for (const char* name : {"train-cu128", "infer-cu130"}) {
        INFO(name);
        std::ifstream in(std::string(ENVBOX_SOURCE_DIR) + "/manifests/" + name + ".toml");
        REQUIRE(in);
        std::stringstream buf;
        buf << in.rdbuf();
        const std::string text = buf.str();
        const std::string with = added(text, "tqdm>=4.67");
        CHECK(with.size() == text.size() + std::string(", \"tqdm>=4.67\"").size());
        CHECK(removed(with, "tqdm") == text);
        // A new pin goes after the last [sources] entry, before [run].
        auto pinned = lock::pin_source(with, "m.toml", "torchvision", "pypi");
        REQUIRE(pinned.ok());
        CHECK(pinned->find("torchvision = \"pypi\"\n") != std::string::npos);
        CHECK(pinned->find("torchvision = \"pypi\"\n") < pinned->find("[run]"));
        auto m = lock::Manifest::parse(*pinned, "m.toml");
        REQUIRE(m.ok());
        CHECK(m->sources.at("torchvision") == "pypi");
        CHECK(m->run_env == lock::Manifest::parse(text, "m.toml")->run_env);
    }
}

TEST_CASE("other shapes of a manifest: CRLF, tabs, inline and dotted tables", "[manifest_edit]") {
    const std::string idx = "\n[[index]]\nname = \"pypi\"\nurl = \"https://pypi.org/simple\"\n";
    struct Row {
        std::string before, after;  // after adding tqdm
    };
    const Row rows[] = {
        {"[environment]\r\npython = \"3.12\"\r\nplatform = \"manylinux_2_28_x86_64\"\r\n"
         "requirements = [\r\n\t\"numpy\",\r\n]\r\n" +
             idx,
         "[environment]\r\npython = \"3.12\"\r\nplatform = \"manylinux_2_28_x86_64\"\r\n"
         "requirements = [\r\n\t\"numpy\",\r\n\t\"tqdm\",\r\n]\r\n" +
             idx},
        {"environment = { python = \"3.12\", platform = \"manylinux_2_28_x86_64\", requirements = "
         "[\"numpy\"] }\n" +
             idx,
         "environment = { python = \"3.12\", platform = \"manylinux_2_28_x86_64\", requirements = "
         "[\"numpy\", \"tqdm\"] }\n" +
             idx},
        {"environment.python = \"3.12\"\nenvironment.platform = \"manylinux_2_28_x86_64\"\n"
         "environment.requirements = [] # none yet\n" +
             idx,
         "environment.python = \"3.12\"\nenvironment.platform = \"manylinux_2_28_x86_64\"\n"
         "environment.requirements = [\"tqdm\"] # none yet\n" +
             idx},
    };
    for (const auto& row : rows) {
        INFO(row.before);
        const std::string with = added(row.before, "tqdm");
        CHECK(with == row.after);
        CHECK(removed(with, "tqdm") == row.before);
    }
    // Inline and dotted [sources] get their entry in their own form.
    const std::string base =
        "[environment]\npython = \"3.12\"\nplatform = "
        "\"manylinux_2_28_x86_64\"\nrequirements = []\n";
    auto inline_table = lock::pin_source("sources = { triton = \"pypi\" }\n" + base + idx, "m.toml",
                                         "torch", "pypi");
    if (!inline_table) FAIL(inline_table.error().message());
    CHECK(*inline_table == "sources = { triton = \"pypi\", torch = \"pypi\" }\n" + base + idx);
    auto dotted =
        lock::pin_source("sources.triton = \"pypi\"\n" + base + idx, "m.toml", "torch", "pypi");
    if (!dotted) FAIL(dotted.error().message());
    CHECK(*dotted == "sources.triton = \"pypi\"\nsources.torch = \"pypi\"\n" + base + idx);
}
