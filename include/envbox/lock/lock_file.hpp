#pragma once
/// A lock file as envbox reads it, once: its bytes, the PEP 751 lock they hold, and what envbox
/// recorded under `[tool.envbox]` (ops::lock writes it, lock/writer.hpp) as typed fields, so that
/// `lock`, `create` and `run` each read a lock file once and no command looks a key up by name.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envbox/lock/manifest.hpp"
#include "envbox/lock/pylock.hpp"
#include "envbox/util/error.hpp"

namespace envbox::lock {

/// What a lock's `[tool.envbox]` records: the manifest inputs the lock was written from. Read as
/// leniently as another tool's table is: a value of another type than envbox writes (a number,
/// a table, a non-string element of a list) counts as absent, a key envbox does not write is
/// ignored; what a value must be is checked where it is used (`python` by install::lock_target).
struct ToolTable {
    /// `manifest-digest`: set only in a lock `envbox lock` wrote; none: another tool wrote it.
    std::optional<std::string> manifest_digest;
    std::string python;                  ///< `python`, the CPython line ("3.12")
    std::string platform;                ///< `platform`: the target of a one-target lock
    std::vector<std::string> platforms;  ///< `platforms`: the targets of a several-target lock
    std::string cuda;                    ///< `cuda`: the manifest's CUDA line, "" when none
    std::string prerelease;              ///< `prerelease`: the policy; "" in a lock from before it
    std::string exclude_newer;           ///< `exclude-newer`: UTC RFC 3339, "" when unset
    bool allow_mixed_cuda = false;       ///< `allow-mixed-cuda = "true"`: locked with the flag
    /// The manifest's inputs as `ops::Inputs` spells them, sorted (`overrides` and `constraints`
    /// are written only when the manifest has some).
    std::vector<std::string> requirements, indexes, sources, overrides, constraints;
    /// `builds`: "NAME FILE SHA256" per package the lock installs from its sdist: FILE, beside
    /// the lock, is the PEP 751 lock of its build environment, and SHA256 its bytes' digest.
    std::vector<std::string> builds;
    /// `build-settings`: how those packages are built, as `build_settings_lines` writes them.
    std::vector<std::string> build_settings;
    /// `local`: "NAME PATH editable|built SHA256" per local source tree the lock was resolved
    /// with (install::LocalProject::input_line): SHA256 is its metadata's digest.
    std::vector<std::string> local;
};

/// The `build-settings` lines of package `name` (normalised) from its `[build.NAME]`:
/// "NAME dependency DEP" per dependency, "NAME variable KEY VALUE" per variable and
/// "NAME speed-variable KEY VALUE" per speed variable (VALUE percent-encoded), sorted.
std::vector<std::string> build_settings_lines(const std::string& name, const PackageBuild& b);

/// A lock's `build-settings`, per package: an entry that is not such a line is an
/// invalid_input error naming `source`.
Result<std::map<std::string, PackageBuild>> read_build_settings(
    const std::vector<std::string>& lines, std::string_view source);

/// The `[tool.envbox]` table of a lock's text; none when the lock has no such table (or `tool`
/// or `tool.envbox` is not a table). A text that is not TOML is an error carrying SOURCE:LINE.
Result<std::optional<ToolTable>> read_tool_table(std::string_view text, std::string_view source);

/// A lock file read once.
struct LockFile {
    std::filesystem::path path;
    std::string text;               ///< its bytes, as read
    Pylock pylock;                  ///< `text` as a PEP 751 lock
    std::optional<ToolTable> tool;  ///< its `[tool.envbox]`; none: it has none
};

/// `text`, the lock at `path`, parsed: the error `Pylock::parse` gives (SOURCE:LINE, source
/// `path`) when it is not a PEP 751 lock.
Result<LockFile> parse_lock_file(std::filesystem::path path, std::string text);

/// The lock at `path` read once (`read_file`: an Error naming it when it cannot be read; the
/// 16 MiB bound of every lock is checked before parsing) and parsed as `parse_lock_file` does.
Result<LockFile> read_lock_file(const std::filesystem::path& path);

}  // namespace envbox::lock
