// A source tree's `[project]` table (project_metadata.hpp).
#include "envbox/lock/project_metadata.hpp"

#include <algorithm>
#include <set>

#include "envbox/pep/name.hpp"
#include "lock/toml_reader.hpp"

namespace envbox::lock {
namespace {

constexpr std::size_t kMaxRequirements = 10000;

std::vector<pep::Requirement> requirements_at(const TomlReader& r, const toml::table& t,
                                              std::string_view key, const std::string& path) {
    std::vector<pep::Requirement> out;
    const auto* list = r.opt_array(t, key, path);
    if (!list) return out;
    if (list->size() > kMaxRequirements) r.fail(list, 0, "Too many requirements", path);
    for (std::size_t k = 0; k < list->size(); ++k) {
        const toml::node& n = *list->get(k);
        const std::string at = TomlReader::index(TomlReader::join(path, key), k);
        if (!n.is_string()) r.wrong_type(n, "str", at);
        auto req = pep::Requirement::parse(n.as_string()->get());
        if (!req) r.fail(&n, 0, req.error().message(), at);
        out.push_back(std::move(*req));
    }
    return out;
}

}  // namespace

bool ProjectMetadata::static_dependencies() const {
    return !dynamic.count("dependencies") && !dynamic.count("optional-dependencies");
}

std::vector<pep::Requirement> ProjectMetadata::requires_dist() const {
    std::vector<pep::Requirement> out = dependencies;
    for (const auto& [extra, reqs] : optional_dependencies)
        for (const auto& r : reqs) {
            std::string text = r.str();
            const std::string on = "extra == \"" + extra + "\"";
            if (r.marker) {
                pep::Requirement bare = r;
                bare.marker.reset();
                text = bare.str() + (bare.url ? " " : "") + "; (" + r.marker->str() + ") and " + on;
            } else {
                text += std::string(r.url ? " " : "") + "; " + on;
            }
            out.push_back(pep::Requirement::parse(text).value());
        }
    return out;
}

std::string ProjectMetadata::resolution_text() const {
    std::vector<std::string> lines;
    for (const auto& r : requires_dist())
        lines.push_back("requires-dist " + r.str());
    std::sort(lines.begin(), lines.end());
    std::string out = "name " + pep::canonicalize_name(name) + "\nversion " +
                      (version ? version->str() : "dynamic") + "\nrequires-python " +
                      requires_python.value_or("") + "\n";
    for (const auto& l : lines)
        out += l + "\n";
    return out;
}

Result<ProjectMetadata> read_project_metadata(std::string_view text, std::string_view source) {
    auto doc = parse_toml(text, source);
    if (!doc) return doc.error();
    try {
        const TomlReader r(source);
        const toml::table* project = r.opt_table(*doc, "project", "");
        if (!project)
            r.fail(nullptr, 1,
                   "No [project] table: envbox reads a local package's name and dependencies "
                   "from it (PEP 621)",
                   "project");
        ProjectMetadata m;
        const int line = TomlReader::line_of(*project);
        m.name = r.req_string(*project, "name", "project", line);
        if (!pep::is_valid_name(m.name))
            r.fail(project->get("name"), line, "Invalid package name", "project.name");
        if (const auto* dynamic = r.opt_array(*project, "dynamic", "project"))
            for (std::size_t k = 0; k < dynamic->size(); ++k) {
                const toml::node& n = *dynamic->get(k);
                if (!n.is_string()) r.wrong_type(n, "str", TomlReader::index("project.dynamic", k));
                m.dynamic.insert(pep::ascii_lower(std::string(n.as_string()->get())));
            }
        if (auto v = r.opt_string(*project, "version", "project")) {
            auto parsed = pep::Version::parse(*v);
            if (!parsed)
                r.fail(project->get("version"), line, parsed.error().message(), "project.version");
            m.version = std::move(*parsed);
        } else if (!m.dynamic.count("version")) {
            r.fail(nullptr, line, "Missing required value (or 'version' in dynamic)",
                   "project.version");
        }
        m.requires_python = r.opt_string(*project, "requires-python", "project");
        m.dependencies = requirements_at(r, *project, "dependencies", "project");
        if (const auto* extras = r.opt_table(*project, "optional-dependencies", "project"))
            for (const auto& [key, node] : *extras) {
                const std::string extra(key.str());
                if (!pep::is_valid_name(extra))
                    r.fail(&node, 0, "Invalid extra name",
                           "project.optional-dependencies." + extra);
                m.optional_dependencies[pep::canonicalize_name(extra)] =
                    requirements_at(r, *extras, extra, "project.optional-dependencies");
            }
        return m;
    } catch (const Error& e) {
        return e;
    }
}

namespace {

// Group `name`'s requirements into `out` (PEP 735), following includes; `stack` for cycles.
struct Expansion {
    std::vector<std::string> stack;  ///< the groups being expanded (a cycle is one of them again)
    std::set<std::string> done;      ///< each group's requirements are added once
    std::vector<pep::Requirement> out;
};

void expand_group(const TomlReader& r, const toml::table& groups, const std::string& name,
                  Expansion& x) {
    const std::string path = "dependency-groups." + name;
    std::vector<std::string>& stack = x.stack;
    std::vector<pep::Requirement>& out = x.out;
    if (std::find(stack.begin(), stack.end(), name) != stack.end())
        r.fail(nullptr, 1, "Group '" + name + "' includes itself", path);
    if (x.done.count(name)) return;
    if (stack.size() > 64) r.fail(nullptr, 1, "Groups include each other deeper than 64", path);
    const toml::array* list = nullptr;
    for (const auto& [key, node] : groups)
        if (pep::canonicalize_name(std::string(key.str())) == name) {
            if (!node.is_array()) r.wrong_type(node, "Sequence", path);
            list = node.as_array();
        }
    if (!list) r.fail(nullptr, 1, "No dependency group '" + name + "'", path);
    stack.push_back(name);
    for (std::size_t k = 0; k < list->size(); ++k) {
        const toml::node& n = *list->get(k);
        const std::string at = TomlReader::index(path, k);
        if (const auto* t = n.as_table()) {
            const auto inc = r.opt_string(*t, "include-group", at);
            if (!inc || t->size() != 1) r.fail(&n, 0, "Expected { include-group = \"…\" }", at);
            expand_group(r, groups, pep::canonicalize_name(*inc), x);
            continue;
        }
        if (!n.is_string()) r.wrong_type(n, "str", at);
        auto req = pep::Requirement::parse(n.as_string()->get());
        if (!req) r.fail(&n, 0, req.error().message(), at);
        if (std::none_of(out.begin(), out.end(), [&](const auto& o) { return o == *req; }))
            out.push_back(std::move(*req));
    }
    stack.pop_back();
    x.done.insert(name);
}

}  // namespace

Result<std::vector<pep::Requirement>> read_dependency_groups(
    std::string_view text, std::string_view source, const std::vector<std::string>& groups) {
    auto doc = parse_toml(text, source);
    if (!doc) return doc.error();
    try {
        const TomlReader r(source);
        const toml::table* table = r.opt_table(*doc, "dependency-groups", "");
        if (!table && !groups.empty())
            r.fail(nullptr, 1, "No [dependency-groups] table (PEP 735)", "dependency-groups");
        Expansion x;
        for (const auto& g : groups)
            expand_group(r, *table, g, x);
        return std::move(x.out);
    } catch (const Error& e) {
        return e;
    }
}

}  // namespace envbox::lock
