#include "envbox/ops/tree.hpp"

#include <algorithm>
#include <deque>
#include <map>

#include "envbox/install/target.hpp"
#include "envbox/lock/lock_file.hpp"
#include "envbox/pep/name.hpp"
#include "envbox/pep/requirement.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {
namespace {

// `tree` without --depth stops this far below the tops, as `uv tree` does: no real tree is
// this deep, and a hostile lock's chain would print rails quadratic in its length.
constexpr std::size_t kDefaultTreeDepth = 255;
// The most nodes `why_paths` returns in all its paths.
constexpr std::size_t kMaxWhyElements = 1000000;

// Sorts `v` by the nodes' names, then versions, then position (two entries alike in both stay
// apart, so each node is kept once).
void sort_nodes(const DependencyGraph& g, std::vector<std::size_t>& v) {
    std::sort(v.begin(), v.end(), [&](std::size_t a, std::size_t b) {
        const auto &x = g.nodes[a], &y = g.nodes[b];
        if (x.name != y.name) return x.name < y.name;
        return x.version != y.version ? x.version < y.version : a < b;
    });
    v.erase(std::unique(v.begin(), v.end()), v.end());
}

// Marks every node reachable from `start` (down the dependencies) in `seen`.
void reach(const DependencyGraph& g, std::size_t start, std::vector<bool>& seen) {
    std::deque<std::size_t> todo{start};
    seen[start] = true;
    while (!todo.empty()) {
        std::size_t n = todo.front();
        todo.pop_front();
        for (std::size_t d : g.nodes[n].dependencies)
            if (!seen[d]) seen[d] = true, todo.push_back(d);
    }
}

// The manifest's requirements as roots; then the nodes they do not reach that nothing depends
// on; then, for what is still unreached (cycles), the first of each by name.
void add_roots(DependencyGraph& g, const std::vector<std::string>& requirements,
               const fs::path& source) {
    std::map<std::size_t, DependencyGraph::Root> roots;
    std::multimap<std::string, std::size_t> by_name;
    for (std::size_t i = 0; i < g.nodes.size(); ++i)
        by_name.emplace(g.nodes[i].name, i);
    for (const auto& text : requirements) {
        auto r = pep::Requirement::parse(text);
        if (!r)
            throw Error(ErrorCode::invalid_input, source.string() +
                                                      ": [tool.envbox] requirement '" + text +
                                                      "': " + r.error().message());
        auto [first, last] = by_name.equal_range(r->canonical_name());
        for (auto it = first; it != last; ++it) {
            const std::size_t i = it->second;
            auto& root = roots[i];
            root.node = i;
            root.requested = true;
            for (auto& e : r->canonical_extras())
                if (std::find(root.extras.begin(), root.extras.end(), e) == root.extras.end())
                    root.extras.push_back(e);
            std::sort(root.extras.begin(), root.extras.end());
        }
    }
    std::vector<bool> seen(g.nodes.size(), false);
    for (const auto& [node, _] : roots)
        reach(g, node, seen);
    std::vector<std::size_t> order(g.nodes.size());
    for (std::size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    sort_nodes(g, order);
    for (std::size_t n : order)  // the tops: packages nothing depends on
        if (!seen[n] && g.nodes[n].dependents.empty()) {
            roots[n].node = n;
            reach(g, n, seen);
        }
    for (std::size_t n : order)  // what is left is in cycles: the first of each by name
        if (!seen[n]) {
            roots[n].node = n;
            reach(g, n, seen);
        }
    for (auto& [_, root] : roots)
        g.roots.push_back(std::move(root));
    std::sort(g.roots.begin(), g.roots.end(), [&](const auto& a, const auto& b) {
        const auto &x = g.nodes[a.node], &y = g.nodes[b.node];
        return x.name != y.name ? x.name < y.name : x.version < y.version;
    });
}

// The depth-first walk of tree_lines, with its own stack (a hostile lock's chain may be as deep
// as it has packages): a node's subtree is shown the first time it is reached, then `(*)`.
std::vector<TreeLine> walk_tree(const DependencyGraph& g, const TreeOptions& options,
                                std::vector<TreeLine> tops) {
    const std::size_t max_depth = options.depth.value_or(kDefaultTreeDepth);
    std::vector<bool> expanded(g.nodes.size(), false);
    std::vector<TreeLine> lines, stack(tops.rbegin(), tops.rend());
    while (!stack.empty()) {
        TreeLine line = std::move(stack.back());
        stack.pop_back();
        const auto& next =
            options.invert ? g.nodes[line.node].dependents : g.nodes[line.node].dependencies;
        line.repeated = !next.empty() && expanded[line.node];
        const bool expand = !next.empty() && !line.repeated && line.depth < max_depth;
        if (expand) expanded[line.node] = true;
        const std::size_t depth = line.depth;
        lines.push_back(std::move(line));
        if (!expand) continue;
        for (std::size_t i = next.size(); i-- > 0;)
            stack.push_back(TreeLine{depth + 1, next[i], {}, false, i + 1 == next.size()});
    }
    return lines;
}

std::string lock_name_of(const DependencyGraph& g) {
    return g.lock.filename().string();
}

}  // namespace

std::optional<std::size_t> DependencyGraph::find(const std::string& name) const {
    const std::string canonical = pep::canonicalize_name(name);
    for (std::size_t i = 0; i < nodes.size(); ++i)
        if (nodes[i].name == canonical) return i;
    return std::nullopt;
}

std::string DependencyGraph::label(std::size_t node) const {
    const Node& n = nodes[node];
    return n.version.empty() ? n.name : n.name + " " + n.version;
}

DependencyGraph dependency_graph(const lock::Pylock& lock,
                                 const std::vector<std::string>& requirements,
                                 const fs::path& source) {
    if (!lock.has_dependency_graph())
        throw Error(ErrorCode::invalid_input,
                    source.string() +
                        " has no dependency edges (it was written by an older envbox or by "
                        "another tool); run `envbox lock` again to record them");
    DependencyGraph g;
    g.lock = source;
    for (const auto& p : lock.packages)
        g.nodes.push_back({p.name, p.version ? p.version->str() : "", {}, {}});
    for (std::size_t i = 0; i < lock.packages.size(); ++i)
        for (const auto& d : *lock.packages[i].dependencies)
            for (std::size_t target : d.packages)
                if (target != i) {
                    g.nodes[i].dependencies.push_back(target);
                    g.nodes[target].dependents.push_back(i);
                }
    for (auto& n : g.nodes) {
        sort_nodes(g, n.dependencies);
        sort_nodes(g, n.dependents);
    }
    add_roots(g, requirements, source);
    return g;
}

DependencyGraph read_dependency_graph(const Context& ctx, const std::string& env,
                                      const std::string& target) {
    check_env_name(env);
    ctx.project().required();
    const lock::LockFile lock = ctx.project().read_lock(env);
    const fs::path& path = lock.path;
    if (!lock.pylock.has_dependency_graph())
        throw Error(ErrorCode::invalid_input,
                    path.string() +
                        " has no dependency edges (it was written by an older envbox or by "
                        "another tool); run `envbox lock " +
                        env + "` again to record them");
    const lock::Pylock parsed =
        target.empty() ? lock.pylock : install::lock_for_target(lock, target);
    const lock::ToolTable tool = lock.tool.value_or(lock::ToolTable{});
    DependencyGraph g = dependency_graph(parsed, tool.requirements, path);
    for (const auto& written : tool.overrides)
        if (auto r = pep::Requirement::parse(written))
            g.overridden[pep::canonicalize_name(r->name)] = written;
    return g;
}

std::size_t package_node(const DependencyGraph& g, const std::string& package) {
    if (!pep::is_valid_name(package))
        throw Error(ErrorCode::usage, "'" + package + "' is not a valid package name");
    if (auto n = g.find(package)) return *n;
    throw Error(ErrorCode::usage, "no package " + package + " in " + lock_name_of(g) + " (" +
                                      std::to_string(g.nodes.size()) + " package" +
                                      (g.nodes.size() == 1 ? "" : "s") +
                                      "; `envbox tree` lists them)");
}

std::vector<TreeLine> tree_lines(const DependencyGraph& g, const TreeOptions& options) {
    std::vector<TreeLine> tops;
    if (options.invert)
        tops.push_back(TreeLine{0, *options.invert, {}, false, true});
    else
        for (std::size_t i = 0; i < g.roots.size(); ++i)
            tops.push_back(
                TreeLine{0, g.roots[i].node, g.roots[i].extras, false, i + 1 == g.roots.size()});
    return walk_tree(g, options, std::move(tops));
}

WhyPaths why_paths(const DependencyGraph& g, std::size_t target, std::size_t limit) {
    // Only nodes `target` is reachable from are worth descending into.
    std::vector<bool> leads(g.nodes.size(), false);
    std::deque<std::size_t> todo{target};
    leads[target] = true;
    while (!todo.empty()) {
        std::size_t n = todo.front();
        todo.pop_front();
        for (std::size_t d : g.nodes[n].dependents)
            if (!leads[d]) leads[d] = true, todo.push_back(d);
    }
    // Depth first with its own stack: each entry a node on the path and its next child.
    WhyPaths out;
    std::vector<std::pair<std::size_t, std::size_t>> path;
    std::vector<bool> on_path(g.nodes.size(), false);
    std::size_t steps = 0, elements = 0;  // bounds on the walk and on what it returns
    const std::size_t max_steps = std::max<std::size_t>(1000000, 100 * limit);
    for (const auto& root : g.roots) {
        if (!leads[root.node]) continue;
        path.assign(1, {root.node, 0});
        on_path[root.node] = true;
        while (!path.empty() && !out.truncated) {
            auto& [n, next] = path.back();
            if (n == target || next == g.nodes[n].dependencies.size()) {
                if (n == target) {
                    if (out.paths.size() >= limit || (elements += path.size()) > kMaxWhyElements) {
                        out.truncated = true;
                        break;
                    }
                    out.paths.emplace_back();
                    for (const auto& [node, _] : path)
                        out.paths.back().push_back(node);
                }
                on_path[n] = false;
                path.pop_back();
                continue;
            }
            const std::size_t d = g.nodes[n].dependencies[next++];
            if (!leads[d] || on_path[d]) continue;
            if (++steps > max_steps) {
                out.truncated = true;
                break;
            }
            on_path[d] = true;
            path.push_back({d, 0});
        }
        for (const auto& [node, _] : path)
            on_path[node] = false;
        if (out.truncated) break;
    }
    return out;
}

}  // namespace envbox::ops
