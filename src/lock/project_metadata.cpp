// A source tree's `[project]` table (project_metadata.hpp).
#include "envbox/lock/project_metadata.hpp"

#include <algorithm>

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

}  // namespace envbox::lock
