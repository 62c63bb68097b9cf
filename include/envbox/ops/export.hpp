#pragma once
/// `envbox export ENV`: the lock in a form other installers read (pip, Docker builds, uv).

#include <filesystem>
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
std::string requirements_txt(const lock::Pylock& lock, const std::string& source,
                             const std::filesystem::path& base = {});

/// Reads ENV's lock (`manifests/pylock.ENV.toml`; missing: invalid_input with the command that
/// writes it), validates it, and renders it in `format` (the pylock format is the file's bytes).
/// `target` (`--target`), when not empty: of a multi-target lock, the requirements of that
/// target alone (`lock_for_target`); with the pylock format a usage error (the lock is one
/// file for all its targets).
ExportResult export_lock(const Context& ctx, const std::string& env, ExportFormat format,
                         const std::string& target = "");

}  // namespace envbox::ops
