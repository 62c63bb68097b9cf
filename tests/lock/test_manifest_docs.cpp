// Every ```toml example of docs/manifest.md reads as a manifest, as written: a fragment of
// `[environment]` (`cuda = "13.0"`) is read inside one, with the keys it leaves out given their
// plainest value, and a table (`[[index]]`, `[sources]`, `[run]`) beside one. The page is the
// manifest's reference; an example the reader refuses is a promise broken.
#include <catch2/catch.hpp>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "envbox/lock/manifest.hpp"

namespace {

// An example and the table its section of the page documents ("[environment]", "[[index]]",
// "[sources]", …; "envbox.toml" past that heading).
struct Example {
    std::string table, text;
};

std::vector<Example> toml_examples(const std::string& page) {
    std::vector<Example> out;
    std::string table;
    std::size_t at = 0;
    while (at < page.size()) {
        std::size_t end = page.find('\n', at);
        if (end == std::string::npos) end = page.size();
        const std::string line = page.substr(at, end - at);
        at = end + 1;
        if (line.starts_with("## ")) {
            const auto open = line.find('`'), close = line.find('`', open + 1);
            table = open == std::string::npos ? line : line.substr(open + 1, close - open - 1);
        } else if (line == "```toml") {
            const std::size_t stop = page.find("\n```", at);
            REQUIRE(stop != std::string::npos);
            out.push_back({table, page.substr(at, stop - at) + "\n"});
            at = page.find('\n', stop + 1) + 1;
        }
    }
    return out;
}

bool has_line(const std::string& text, const std::string& pattern) {
    return std::regex_search(text, std::regex(pattern, std::regex::multiline));
}

// The example as a whole manifest: a fragment inside the table its section documents (with
// the keys that table requires and it leaves out), and `[environment]` given its plainest
// required keys.
std::string as_manifest(const Example& e) {
    std::string text = e.text;
    if (!has_line(text, R"(^\[)")) {  // a fragment
        if (e.table == "[[index]]") {
            std::string keys;
            if (!has_line(text, R"(^name\s*=)")) keys += "name = \"pypi\"\n";
            if (!has_line(text, R"(^url\s*=)")) keys += "url = \"https://pypi.org/simple\"\n";
            text = "[[index]]\n" + keys + text;
        } else if (e.table == "[build.NAME]") {
            text = "[build.demo]\n" + text;
        } else if (e.table != "[environment]") {
            text = e.table + "\n" + text;
        }
    }
    // The indexes a [sources] table names, as the manifest it comes from has them.
    if (const auto at = text.find("[sources]\n"); at != std::string::npos) {
        const auto end = text.find("\n[", at + 1);
        const std::string table = text.substr(at, end == std::string::npos ? end : end - at);
        const std::regex named(R"re(=\s*"([A-Za-z0-9._-]+)")re");
        for (std::sregex_iterator m(table.begin(), table.end(), named), none; m != none; ++m)
            if (!has_line(text, "^name\\s*=\\s*\"" + (*m)[1].str() + "\""))
                text += "\n[[index]]\nname = \"" + (*m)[1].str() + "\"\nurl = \"https://" +
                        (*m)[1].str() + ".example/simple\"\n";
    }
    std::string defaults;
    const bool environment = has_line(text, R"(^\[environment\]\s*$)");
    const std::string& keys = environment || e.table == "[environment]" ? text : std::string();
    if (!has_line(keys, R"(^python\s*=)")) defaults += "python = \"3.12\"\n";
    if (!has_line(keys, R"(^requirements\s*=)")) defaults += "requirements = []\n";
    if (!has_line(keys, R"(^platforms?\s*=)")) defaults += "platform = \"manylinux_2_28_x86_64\"\n";
    if (environment)
        return std::regex_replace(text, std::regex(R"(^\[environment\]\n)"),
                                  "[environment]\n" + defaults,
                                  std::regex_constants::format_first_only);
    // Keys before the first table belong to [environment]; the tables follow it.
    return "[environment]\n" + defaults + text;
}

}  // namespace

TEST_CASE("docs/manifest.md: every toml example reads as a manifest", "[lock][manifest][docs]") {
    std::ifstream in(ENVBOX_SOURCE_DIR "/docs/manifest.md");
    REQUIRE(in);
    std::stringstream page;
    page << in.rdbuf();
    const auto examples = toml_examples(page.str());
    REQUIRE(examples.size() >= 20);
    for (const auto& example : examples) {
        // The project file's examples, not a manifest's.
        if (example.table.find("envbox.toml") != std::string::npos ||
            example.text.starts_with("# envbox.toml"))
            continue;
        const std::string text = as_manifest(example);
        CAPTURE(text);
        auto m = envbox::lock::Manifest::parse(text, "manifests/example.toml");
        CHECK((m.ok() ? std::string() : std::string(m.error().what())) == "");
    }
}
