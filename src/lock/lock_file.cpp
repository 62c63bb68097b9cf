#include "envbox/lock/lock_file.hpp"

#include <algorithm>

#include "envbox/pep/name.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/kv.hpp"
#include "envbox/util/printable.hpp"
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
    out.local = strings_at(*t, "local");
    out.build_settings = strings_at(*t, "build-settings");
    return out;
}

}  // namespace

std::vector<std::string> build_settings_lines(const std::string& name, const PackageBuild& b) {
    std::vector<std::string> out;
    for (const auto& d : b.dependencies)
        out.push_back(name + " dependency " + d);
    for (const auto& [key, value] : b.variables)
        out.push_back(name + (b.speed_variables.count(key) ? " speed-variable " : " variable ") +
                      key + " " + kv::percent_encode(value));
    std::sort(out.begin(), out.end());
    return out;
}

Result<std::map<std::string, PackageBuild>> read_build_settings(
    const std::vector<std::string>& lines, std::string_view source) {
    std::map<std::string, PackageBuild> out;
    for (const auto& line : lines) {
        const auto f = kv::split_fields(line);
        const bool dependency = f.size() == 3 && f[1] == "dependency" && pep::is_valid_name(f[2]);
        const bool variable = f.size() == 4 && (f[1] == "variable" || f[1] == "speed-variable") &&
                              is_build_variable_name(f[2]);
        std::optional<std::string> value = variable ? kv::percent_decode(f[3]) : std::nullopt;
        if (value && !is_build_variable_value(*value)) value.reset();
        if (f.empty() || !pep::is_valid_name(f[0]) || (!dependency && !value))
            return Error(ErrorCode::invalid_input,
                         std::string(source) + ": [tool.envbox] build-settings entry '" +
                             printable(line) +
                             "' is not NAME dependency DEP or NAME variable KEY VALUE");
        PackageBuild& b = out[pep::canonicalize_name(f[0])];
        if (dependency) {
            b.dependencies.push_back(pep::canonicalize_name(f[2]));
            continue;
        }
        b.variables[std::string(f[2])] = *value;
        if (f[1] == "speed-variable") b.speed_variables.insert(std::string(f[2]));
    }
    return out;
}

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
    return parse_lock_file(path, read_input_file(path));
}

}  // namespace envbox::lock
