#pragma once
/// `envbox diff`: what changed between two locks or environments, for review. What it prints
/// (text, markdown, JSON, git's textconv) is the CLI's: src/cli/diff_render.hpp.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "envbox/ops/context.hpp"

namespace envbox::ops {

/// One side of a diff, as the packages a lock names.
struct LockView {
    std::string label;  ///< "manifests/pylock.train.toml", "train#3", "train@HEAD~1"
    struct Entry {
        std::string name, version, index, filename;
        std::string sha256;                      ///< of the wheel ("" when the lock gives none)
        std::optional<std::uint64_t> size;       ///< download size
        std::optional<std::uint64_t> installed;  ///< installed size, when the store knows the wheel
    };
    std::vector<Entry> packages;  ///< sorted by name
};

/// Resolves a diff operand: a lock file path, `ENV` (its lock), `ENV#N` (generation N's lock),
/// `ENV@REV` (the lock at a git revision of the project), or `ENV` current generation when
/// `current_generation` is set.
/// `target` (`--target`), when not empty: of a multi-target lock, the packages and wheels that
/// target installs (`lock::select` for `lock_target`). Without it, an entry of a name the lock
/// holds more than once (targets that differ) is named `name [marker]`.
LockView load_side(const Context& ctx, const std::string& spec, bool current_generation,
                   const std::string& target = "");

/// The two sides `envbox diff A` compares when B is not given, as `git diff` does: `ENV` is its
/// current generation against its lock, `ENV@REV` the lock at REV against the working lock,
/// `ENV#N` generation N against the current generation. A lock path alone is a usage error.
std::pair<LockView, LockView> load_sides(const Context& ctx, const std::string& a,
                                         const std::string& target = "");

struct DiffEntry {
    /// What changed, the most telling first: a version, its local label (`+cu128` → `+cu130`),
    /// the index, the wheel chosen for the same version (its tags or build tag), or only the
    /// wheel's content (the same file name re-uploaded with a new sha256: the change a review
    /// must never miss).
    enum class Kind {
        added,
        removed,
        upgraded,
        downgraded,
        local_label,
        index_changed,
        wheel_changed,
        rebuilt
    };
    Kind kind;
    std::string name, before, after;          ///< versions ("" when absent)
    std::string detail;                       ///< wheel_changed, rebuilt: what differs, in words
    std::string wheel_before, wheel_after;    ///< wheel file names ("" when absent)
    std::string sha256_before, sha256_after;  ///< wheel sha256 ("" when absent)
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

/// The packages of a lock's text as `diff` compares them (no installed sizes: the store is not
/// read); `label` names it, in errors too. What `diff --textconv` shows of a lock.
LockView lock_view(const std::string& text, const std::string& label);

/// One line of the change list `lock`, `add` and `remove` print, as uv does: a package added
/// (`before` empty), removed (`after` empty) or at another version.
struct VersionChange {
    std::string name, before, after;
};

/// The entries of `d` whose version changed, in name order; a new wheel or index for the same
/// version is left out (`envbox diff` reports those).
std::vector<VersionChange> version_changes(const Diff& d);

/// The CUDA line a package at `version` is built for ("12.8": `env::cuda_line_of`), "" when
/// none or the version does not parse: what `diff` compares (`cuda_before`, `cuda_after`).
std::string cuda_line(const std::string& name, const std::string& version);

}  // namespace envbox::ops
