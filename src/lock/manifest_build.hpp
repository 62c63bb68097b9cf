#pragma once
// A manifest's `[build.NAME]` tables (lock/manifest.hpp's PackageBuild) and its `[sources]`
// tables of local trees, read with located errors.
#include <map>
#include <optional>
#include <string>

#include "envbox/lock/manifest.hpp"
#include "lock/toml_reader.hpp"

namespace envbox::lock {

/// The `[build]` table of `doc`, one entry per package (normalised name): `build`,
/// `dependencies` (package names, each once), `variables` (names as a shell spells them, values
/// of at most 4096 bytes with no NUL), `speed-variables` (names among `variables`) and
/// `requires-dist` (PEP 508, no direct reference). Throws the reader's located error.
std::map<std::string, PackageBuild> read_build_tables(const TomlReader& r, const toml::table& doc);

/// A `[sources]` entry that is a table (at `path`): `path` (required: a non-empty path of at
/// most 4096 bytes, no control character) and `editable` (a boolean). Throws located.
LocalSource read_local_source(const TomlReader& r, const toml::table& t, const std::string& path);

/// The local source a direct reference names, if it names one: `git+URL[@REV][#subdirectory=S]`
/// (pip's and uv's form), or a path or `file://` URL that is not a wheel or an sdist (a folder,
/// relative to the manifest's). Its requirement is then read without the URL. `line`: where.
/// Throws located (`at`) for a git URL that `[sources]` would refuse.
std::optional<LocalSource> local_source_of(const TomlReader& r, const toml::node& at,
                                           const pep::Requirement& req, const std::string& path);

}  // namespace envbox::lock
