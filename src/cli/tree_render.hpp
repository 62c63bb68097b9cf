#pragma once
// What `envbox tree` and `envbox why` print of ops/tree.hpp's graph, lines and paths: text and
// JSON. Pure functions of ops' values, no terminal and no I/O (the command escapes the text's
// hidden characters when it prints it), so the unit tests pin them.

#include <cstddef>
#include <string>
#include <vector>

#include "envbox/ops/tree.hpp"
#include "envbox/util/json.hpp"

namespace envbox::cli {

/// The text: `name version` per line, below a parent with `├── ` / `└── ` and `│   ` rails,
/// `(*)` after a repeated subtree.
std::string render_tree(const ops::DependencyGraph& g, const std::vector<ops::TreeLine>& lines);

/// `{"lock", "invert", "roots": [NODE…]}`, NODE = `{"name", "version", ["extras"],
/// ["repeated": true], "children": [NODE…]}` — the same tree as the text (docs/usage.md).
Json tree_json(const ops::DependencyGraph& g, const std::vector<ops::TreeLine>& lines,
               const ops::TreeOptions& options);

/// One line a path: `torch 2.11.0+cu128 → nvidia-cublas-cu12 12.8.4.1`; a requested package's
/// own path says it is a requirement of the manifest.
std::string render_why(const ops::DependencyGraph& g, std::size_t target, const ops::WhyPaths& why);

/// `{"lock", "package": {"name", "version"}, "requested", "paths": [[{"name", "version"}…]…],
/// "truncated"}`.
Json why_json(const ops::DependencyGraph& g, std::size_t target, const ops::WhyPaths& why);

}  // namespace envbox::cli
