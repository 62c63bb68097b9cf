#pragma once
/// `envbox export ENV`: the lock in a form other installers read (pip, Docker builds, uv).

#include <filesystem>
#include <map>
#include <string>

#include "envbox/lock/pylock.hpp"
#include "envbox/ops/context.hpp"

namespace envbox::ops {

enum class ExportFormat {
    requirements_txt,  ///< pinned requirements with `--hash` lines, for `pip install
                       ///< --require-hashes`
    pylock,            ///< the PEP 751 lock itself
};

struct ExportResult {
    std::filesystem::path lock;  ///< the lock exported
    std::string text;            ///< the exported file
    std::size_t packages = 0;
    std::size_t built_wheels = 0;  ///< wheels written to `--wheels DIR`
};

/// Wheels built from the lock's sdists that a requirements file lets pip install instead of
/// building: `--find-links` to where they are, and each one's sha256 among its package's hashes.
struct BuiltWheelLinks {
    std::string find_links;                     ///< empty: none
    std::map<std::string, std::string> hashes;  ///< package name → the built wheel's sha256
};

/// The requirements file of `lock`: its package indexes as `--index-url` (the first) and
/// `--extra-index-url` lines (a `file://` index that is a flat directory of wheels as
/// `--find-links`, with `--no-index` when there is no other), userinfo stripped (credentials belong
/// in pip's own config, never in a file that is committed or baked into an image); then per
/// package, by name, `name==version [; marker] \` and one `    --hash=sha256:…` line per wheel (and
/// sdist) the lock lists, so pip picks the file for its own target and checks it. A wheel locked by
/// direct URL (a PEP 751 `archive`) is `name @ URL`; one locked by `path` is that path, as pip
/// reads a path line: `./…` relative to `base` (the project root, where pip is to run) when the
/// file lies under it, else absolute. Throws (invalid_input, naming `source` and the package) for a
/// package pip cannot pin by hash (a directory, a VCS checkout, no sha256) and for a value that
/// would break out of its line.
/// `built`: wheels built from its sdists (export --wheels).
std::string requirements_txt(const lock::Pylock& lock, const std::string& source,
                             const std::filesystem::path& base = {},
                             const BuiltWheelLinks& built = {});

/// Reads ENV's lock (`manifests/pylock.ENV.toml`; missing: invalid_input with the command that
/// writes it), validates it, and renders it in `format` (the pylock format is the file's bytes).
/// `target` (`--target`), when not empty: of a multi-target lock, the requirements of that
/// target alone (`lock_for_target`); with the pylock format a usage error (the lock is one
/// file for all its targets).
/// `wheels_dir`, when not empty (requirements-txt only, else usage): the wheels ENV's current
/// generation installs that envbox built from the lock's sdists are copied there from the store
/// (each checked against its sha256; written under a temporary name, then renamed), and the
/// requirements file points pip at them (`BuiltWheelLinks`; the folder as given when relative),
/// so `pip install --require-hashes` installs what envbox built instead of building again. A
/// lock with sdists and no generation of that lock is refused, naming the command that makes one.
ExportResult export_lock(const Context& ctx, const std::string& env, ExportFormat format,
                         const std::string& target = "",
                         const std::filesystem::path& wheels_dir = {});

}  // namespace envbox::ops
