#include "cli/tree_render.hpp"

#include <algorithm>

namespace envbox::cli {

using ops::DependencyGraph;
using ops::TreeLine;
using ops::WhyPaths;

std::string render_tree(const DependencyGraph& g, const std::vector<TreeLine>& lines) {
    std::string out;
    std::vector<bool> last_at;  // per depth: was the line shown there last of its parent
    for (const TreeLine& line : lines) {
        last_at.resize(line.depth + 1);
        last_at[line.depth] = line.last;
        for (std::size_t d = 1; d < line.depth; ++d)
            out += last_at[d] ? "    " : "│   ";
        if (line.depth > 0) out += line.last ? "└── " : "├── ";
        const auto& n = g.nodes[line.node];
        out += n.name;
        if (!line.extras.empty()) {
            out += "[";
            for (std::size_t i = 0; i < line.extras.size(); ++i)
                out += (i ? "," : "") + line.extras[i];
            out += "]";
        }
        if (!n.version.empty()) out += " " + n.version;
        if (auto o = g.overridden.find(n.name); o != g.overridden.end() && line.depth > 0)
            out += " (overridden: " + o->second + ")";
        if (line.repeated) out += " (*)";
        out += "\n";
    }
    return out;
}

Json tree_json(const DependencyGraph& g, const std::vector<TreeLine>& lines,
               const ops::TreeOptions& options) {
    Json roots = Json::array();
    std::vector<Json*> stack;  // the open node at each depth
    for (const TreeLine& line : lines) {
        const auto& n = g.nodes[line.node];
        Json node = {{"name", n.name}, {"version", n.version}};
        if (!line.extras.empty()) node["extras"] = line.extras;
        if (line.repeated) node["repeated"] = true;
        node["children"] = Json::array();
        stack.resize(line.depth);
        Json& siblings = line.depth == 0 ? roots : (*stack.back())["children"];
        siblings.push_back(std::move(node));
        stack.push_back(&siblings.back());
    }
    return Json{{"lock", g.lock.string()},
                {"invert", options.invert ? Json(g.nodes[*options.invert].name) : Json()},
                {"roots", std::move(roots)}};
}

std::string render_why(const DependencyGraph& g, std::size_t target, const WhyPaths& why) {
    std::string out;
    for (const auto& path : why.paths) {
        if (path.size() == 1) {
            bool requested = std::any_of(g.roots.begin(), g.roots.end(), [&](const auto& r) {
                return r.node == target && r.requested;
            });
            out += g.label(target) + (requested ? " (a requirement of the manifest)\n"
                                                : " (nothing depends on it)\n");
            continue;
        }
        for (std::size_t i = 0; i < path.size(); ++i) {
            out += (i ? " → " : "") + g.label(path[i]);
            // An edge into an overridden package is the override's requirement.
            if (auto o = g.overridden.find(g.nodes[path[i]].name); i > 0 && o != g.overridden.end())
                out += " (overridden: " + o->second + ")";
        }
        out += "\n";
    }
    if (why.truncated)
        out += "… (only the first " + std::to_string(why.paths.size()) + " paths are shown)\n";
    return out;
}

Json why_json(const DependencyGraph& g, std::size_t target, const WhyPaths& why) {
    auto entry = [&](std::size_t n) {
        return Json{{"name", g.nodes[n].name}, {"version", g.nodes[n].version}};
    };
    Json paths = Json::array();
    for (const auto& path : why.paths) {
        Json p = Json::array();
        for (std::size_t n : path)
            p.push_back(entry(n));
        paths.push_back(std::move(p));
    }
    bool requested = std::any_of(g.roots.begin(), g.roots.end(),
                                 [&](const auto& r) { return r.node == target && r.requested; });
    return Json{{"lock", g.lock.string()},
                {"package", entry(target)},
                {"requested", requested},
                {"paths", std::move(paths)},
                {"truncated", why.truncated}};
}

}  // namespace envbox::cli
