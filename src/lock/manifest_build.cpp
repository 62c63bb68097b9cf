// `[build.NAME]` (manifest_build.hpp).
#include "lock/manifest_build.hpp"

#include <algorithm>
#include <set>

#include "envbox/pep/name.hpp"

namespace envbox::lock {
namespace {

// An array of strings at `t.key`, each checked by `check` (which fails located).
template <class Check>
void read_strings(const TomlReader& r, const toml::table& t, const char* key,
                  const std::string& path, Check check) {
    const auto* list = r.opt_array(t, key, path);
    if (!list) return;
    for (std::size_t k = 0; k < list->size(); ++k) {
        const toml::node& n = *list->get(k);
        const std::string at = TomlReader::index(TomlReader::join(path, key), k);
        if (!n.is_string()) r.wrong_type(n, "str", at);
        check(n, std::string(n.as_string()->get()), at);
    }
}

void read_variables(const TomlReader& r, const toml::table& t, const std::string& path,
                    PackageBuild& b) {
    if (const auto* vars = r.opt_table(t, "variables", path)) {
        for (const auto& [key, node] : *vars) {
            const std::string name(key.str()), at = path + ".variables." + name;
            if (!is_build_variable_name(name))
                r.fail(&node, 0, "Expected a variable name (letters, digits and _)", at);
            if (!node.is_string()) r.wrong_type(node, "str", at);
            const std::string value(node.as_string()->get());
            if (!is_build_variable_value(value))
                r.fail(&node, 0, "Expected a value of at most 4096 bytes without NUL", at);
            b.variables[name] = value;
        }
    }
    read_strings(r, t, "speed-variables", path,
                 [&](const toml::node& n, const std::string& name, const std::string& at) {
                     if (!b.variables.count(name))
                         r.fail(&n, 0, "'" + name + "' is not one of this table's variables", at);
                     b.speed_variables.insert(name);
                 });
}

PackageBuild read_one(const TomlReader& r, const toml::table& t, const std::string& path) {
    r.require_known_keys(t,
                         {"build", "dependencies", "variables", "speed-variables", "requires-dist"},
                         path, kToolHint);
    PackageBuild b;
    b.build = r.opt_string(t, "build", path);
    if (b.build && *b.build != "allow" && *b.build != "never")
        r.fail(t.get("build"), TomlReader::line_of(t), "Expected \"allow\" or \"never\"",
               path + ".build");
    std::set<std::string> seen;
    read_strings(r, t, "dependencies", path,
                 [&](const toml::node& n, const std::string& name, const std::string& at) {
                     if (!pep::is_valid_name(name)) r.fail(&n, 0, "Expected a package name", at);
                     if (!seen.insert(pep::canonicalize_name(name)).second)
                         r.fail(&n, 0, "'" + name + "' is given twice", at);
                     b.dependencies.push_back(pep::canonicalize_name(name));
                 });
    read_variables(r, t, path, b);
    if (t.get("requires-dist")) b.requires_dist.emplace();
    read_strings(r, t, "requires-dist", path,
                 [&](const toml::node& n, const std::string& text, const std::string& at) {
                     auto req = pep::Requirement::parse(text);
                     if (!req) r.fail(&n, 0, req.error().message(), at);
                     if (req->url) r.fail(&n, 0, "Expected a requirement, not a URL", at);
                     b.requires_dist->push_back(std::move(*req));
                 });
    return b;
}

}  // namespace

bool is_build_variable_name(std::string_view s) {
    if (s.empty() || s.size() > 128 || (s[0] >= '0' && s[0] <= '9')) return false;
    for (char c : s)
        if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9')))
            return false;
    return true;
}

bool is_build_variable_value(std::string_view s) {
    return s.size() <= 4096 && s.find('\0') == std::string_view::npos;
}

LocalSource read_local_source(const TomlReader& r, const toml::table& t, const std::string& path) {
    r.require_known_keys(t, {"path", "editable"}, path,
                         "a source is an index name (\"pypi\") or { path = \"…\" }");
    LocalSource s;
    s.line = TomlReader::line_of(t);
    s.path = r.req_string(t, "path", path, s.line);
    const bool control = std::any_of(s.path.begin(), s.path.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
    if (s.path.empty() || s.path.size() > 4096 || control)
        r.fail(t.get("path"), s.line, "Expected a path of at most 4096 bytes", path + ".path");
    s.editable = r.opt_bool(t, "editable", path).value_or(false);
    return s;
}

std::map<std::string, PackageBuild> read_build_tables(const TomlReader& r, const toml::table& doc) {
    std::map<std::string, PackageBuild> out;
    const auto* builds = r.opt_table(doc, "build", "");
    if (!builds) return out;
    for (const auto& [key, node] : *builds) {
        const std::string name(key.str()), path = "build." + name;
        if (!node.is_table()) r.wrong_type(node, "Mapping", path);
        if (!pep::is_valid_name(name)) r.fail(&node, 0, "Expected a package name", path);
        out[pep::canonicalize_name(name)] = read_one(r, *node.as_table(), path);
    }
    return out;
}

}  // namespace envbox::lock
