#pragma once
/// `envbox diff`: what changed between two locks or environments, for review.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "envbox/ops/context.hpp"

namespace envbox::ops {

/// One side of a diff, as the packages a lock names.
struct LockView {
    std::string label;  ///< "manifests/pylock.train.toml", "train#3", "train@HEAD~1"
    struct Entry {
        std::string name, version, index, filename;
        std::optional<std::uint64_t> size;          ///< download size
        std::optional<std::uint64_t> installed;     ///< installed size, when the store knows the wheel
    };
    std::vector<Entry> packages;  ///< sorted by name
};

/// Resolves a diff operand: a lock file path, `ENV` (its lock), `ENV#N` (generation N's lock),
/// `ENV@REV` (the lock at a git revision of the project), or `ENV` current generation when
/// `generation_side` is set.
LockView load_side(const Context& ctx, const std::string& spec, bool current_generation);

struct DiffEntry {
    enum class Kind { added, removed, upgraded, downgraded, rebuilt, index_changed };
    Kind kind;
    std::string name, before, after;  ///< versions ("" when absent)
    std::string index_before, index_after;
    std::string cuda_before, cuda_after;  ///< CUDA line change ("12.8" → "13.0"), when one
    std::int64_t download_delta = 0;
    std::optional<std::int64_t> installed_delta;
};

struct Diff {
    std::string a, b;
    std::vector<DiffEntry> entries;
    std::int64_t download_delta = 0;
    std::optional<std::int64_t> installed_delta;
    std::size_t unchanged = 0;
};

Diff diff(const LockView& a, const LockView& b);

std::string render_text(const Diff& d, bool color);
std::string render_markdown(const Diff& d);
std::string render_json(const Diff& d);

/// The text git shows for a lock with `diff.pylock.textconv`: one stable line per package.
std::string textconv(const std::string& lock_path);

}  // namespace envbox::ops
