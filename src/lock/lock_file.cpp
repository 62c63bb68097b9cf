#include "envbox/lock/lock_file.hpp"

#include "envbox/util/fs.hpp"
#include "lock/toml_reader.hpp"

namespace envbox::lock {
namespace {

// A string value of `t`; "" when absent or of another type.
std::string string_at(const toml::table& t, std::string_view key) {
    return t[key].value<std::string>().value_or("");
}

// The string elements of an array value of `t`, in order; others are skipped, and a value that
// is no array gives none.
std::vector<std::string> strings_at(const toml::table& t, std::string_view key) {
    std::vector<std::string> out;
    if (const toml::array* a = t[key].as_array())
        for (const auto& e : *a)
            if (auto s = e.value<std::string>()) out.push_back(*s);
    return out;
}

std::optional<ToolTable> tool_table_of(const toml::table& doc) {
    const toml::table* t = doc["tool"]["envbox"].as_table();
    if (!t) return std::nullopt;
    ToolTable out;
    out.manifest_digest = (*t)["manifest-digest"].value<std::string>();
    out.python = string_at(*t, "python");
    out.platform = string_at(*t, "platform");
    out.platforms = strings_at(*t, "platforms");
    out.cuda = string_at(*t, "cuda");
    out.prerelease = string_at(*t, "prerelease");
    out.exclude_newer = string_at(*t, "exclude-newer");
    out.allow_mixed_cuda = string_at(*t, "allow-mixed-cuda") == "true";
    out.requirements = strings_at(*t, "requirements");
    out.indexes = strings_at(*t, "indexes");
    out.sources = strings_at(*t, "sources");
    out.overrides = strings_at(*t, "overrides");
    out.constraints = strings_at(*t, "constraints");
    out.builds = strings_at(*t, "builds");
    return out;
}

}  // namespace

Result<std::optional<ToolTable>> read_tool_table(std::string_view text, std::string_view source) {
    auto doc = parse_toml(text, source);
    if (!doc) return doc.error();
    return tool_table_of(*doc);
}

Result<LockFile> parse_lock_file(std::filesystem::path path, std::string text) {
    LockFile out;
    out.path = std::move(path);
    out.text = std::move(text);
    const std::string source = out.path.string();
    auto pylock = Pylock::parse(out.text, source);
    if (!pylock) return pylock.error();
    out.pylock = std::move(*pylock);
    // A valid lock is TOML: the table is read from a second parse of the text in memory.
    auto tool = read_tool_table(out.text, source);
    if (!tool) return tool.error();
    out.tool = std::move(*tool);
    return out;
}

Result<LockFile> read_lock_file(const std::filesystem::path& path) {
    return parse_lock_file(path, read_file(path));
}

}  // namespace envbox::lock
