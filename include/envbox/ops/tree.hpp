#pragma once
/// `envbox tree ENV` and `envbox why ENV PKG`: the dependency graph of ENV's lock, read from the
/// lock alone (its PEP 751 `dependencies` and the requirements `[tool.envbox]` records), never
/// from an index or the manifest, so they answer for the lock that is committed. What they print
/// (text, JSON) is the CLI's: src/cli/tree_render.hpp.

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "envbox/lock/pylock.hpp"
#include "envbox/ops/context.hpp"

namespace envbox::ops {

/// The packages of a lock and their edges.
struct DependencyGraph {
    struct Node {
        std::string name;                       ///< normalised
        std::string version;                    ///< "" for an entry without one
        std::vector<std::size_t> dependencies;  ///< what it depends on: sorted by name, each once
        std::vector<std::size_t> dependents;    ///< what depends on it: sorted by name, each once
    };
    /// A top of the tree: a requirement of the manifest, or (a lock that records none) a
    /// package nothing depends on.
    struct Root {
        std::size_t node = 0;
        std::vector<std::string> extras;  ///< the extras the requirement asks for
        bool requested = false;           ///< a requirement of the manifest
    };
    std::filesystem::path lock;  ///< the lock it was read from
    std::vector<Node> nodes;     ///< in the lock's order
    std::vector<Root> roots;     ///< sorted by name; every node is reachable from one
    /// The lock's `[tool.envbox] overrides`, by normalised name ("cuda-python" →
    /// "cuda-python>=12,<13"): every edge to such a package is the override's, not what its
    /// dependents declare, and the text says so.
    std::map<std::string, std::string> overridden;

    /// The node of `name` (any spelling), or nullopt.
    std::optional<std::size_t> find(const std::string& name) const;
    /// "name version" (or "name" alone).
    std::string label(std::size_t node) const;
};

/// The graph of `lock`, read from `source`. `requirements` are the PEP 508 strings the lock
/// records as the manifest's (`[tool.envbox] requirements`): their packages are the roots, a
/// requirement the lock holds no package for (a marker false on the target) none; a package
/// reachable from none of them (or with no requirements recorded: one nothing depends on) is
/// a root of its own, so every package shows. Throws invalid_input naming `source` when the
/// lock records no dependency edges (`Pylock::has_dependency_graph`: an older envbox lock, or
/// another tool's), saying that `envbox lock` writes them, or when a requirement does not
/// parse.
DependencyGraph dependency_graph(const lock::Pylock& lock,
                                 const std::vector<std::string>& requirements,
                                 const std::filesystem::path& source);

/// Reads ENV's lock (`manifests/pylock.ENV.toml`; missing: invalid_input with the command
/// that writes it), validates it, and builds its graph.
/// `target` (`--target`), when not empty: the graph of that target of a multi-target lock
/// (`lock_for_target`).
DependencyGraph read_dependency_graph(const Context& ctx, const std::string& env,
                                      const std::string& target = "");

/// The node `package` names: a usage error (exit 2) naming it and the lock when the lock has
/// no package of that name, or the name is not a valid one.
std::size_t package_node(const DependencyGraph& g, const std::string& package);

struct TreeOptions {
    /// Show who depends on this node, up to the roots, instead of the tree from the roots.
    std::optional<std::size_t> invert;
    /// Levels below the top to show (0: the tops alone); nullopt: 255, as `uv tree`.
    std::optional<std::size_t> depth;
};

/// One line of the tree as `uv tree` prints it.
struct TreeLine {
    std::size_t depth = 0;  ///< 0 for a top
    std::size_t node = 0;
    std::vector<std::string> extras;  ///< the root requirement's extras (tops only)
    /// Its subtree was shown above (`(*)`): shown once, a cycle or a shared dependency ends
    /// here. Only for a node that has a subtree.
    bool repeated = false;
    bool last = false;  ///< the last child of its parent
};

/// The lines of the tree, depth first, children by name: from the roots, or with `invert`
/// from that package up through its dependents.
std::vector<TreeLine> tree_lines(const DependencyGraph& g, const TreeOptions& options);

/// The paths from a root to `target` (each a list of nodes, root first, `target` last), no
/// node twice in a path, in order of the roots and then of the names along the path. Bounded:
/// `limit` paths, a million nodes in all, a walk of at most max(10^6, 100·limit) steps.
struct WhyPaths {
    std::vector<std::vector<std::size_t>> paths;
    bool truncated = false;  ///< stopped at `limit` paths
};
WhyPaths why_paths(const DependencyGraph& g, std::size_t target, std::size_t limit = 1000);

}  // namespace envbox::ops
