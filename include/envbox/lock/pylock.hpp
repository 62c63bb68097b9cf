#pragma once
/// PEP 751 lock files (`pylock.toml`, `pylock.<name>.toml`): parsing with validation of every key
/// the spec defines, and the spec's install-time selection for a *target* (its marker environment
/// and tags, never the host's). Pure: reads the text it is given, no other I/O.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "envbox/pep/filename.hpp"
#include "envbox/pep/marker.hpp"
#include "envbox/pep/specifier.hpp"
#include "envbox/pep/tags.hpp"
#include "envbox/pep/version.hpp"
#include "envbox/util/error.hpp"

namespace envbox::lock {

/// Supported `lock-version` major; newer minors are read (unknown keys tolerated).
inline constexpr std::uint64_t kLockVersionMajor = 1;

/// True for `pylock.toml` and `pylock.<name>.toml` with `<name>` free of dots and non-empty.
bool is_lock_file_name(std::string_view file_name);

/// A file the lock names: a wheel, an sdist or an archive.
struct FileRef {
    std::optional<std::string> name;  ///< explicit file name
    std::optional<std::string> url;
    std::optional<std::string> path;  ///< relative to the lock file's directory
    std::optional<std::uint64_t> size;
    std::optional<std::string> upload_time;     ///< as written (TOML datetime)
    std::map<std::string, std::string> hashes;  ///< lowercase algorithm → lowercase hex digest
    std::optional<std::string> subdirectory;    ///< archives only
    int line = 0;                               ///< where the entry starts in the lock

    /// The artifact's file name: `name`, else the last component of `path`, else of `url`,
    /// percent-decoded; `\` is accepted as a separator in paths.
    std::string filename() const;
    /// The sha256 digest, when the lock gives one.
    std::optional<std::string> sha256() const;
};

struct WheelRef : FileRef {
    pep::WheelFilename parsed;  ///< name, version and tags of `filename()`
};

struct VcsRef {
    std::string type;
    std::optional<std::string> url, path, requested_revision, subdirectory;
    std::string commit_id;
};

struct DirectoryRef {
    std::string path;
    bool editable = false;
    std::optional<std::string> subdirectory;
};

/// One entry of a package's `dependencies`: the `[[packages]]` entries it names. Informational
/// only (PEP 751 forbids installing from them); `envbox tree` and `why` read them.
struct DependencyRef {
    std::string name;                     ///< normalised
    std::optional<pep::Version> version;  ///< given where the name alone is ambiguous
    /// Positions in `Pylock::packages` of the entries it names (name, and version when given):
    /// never empty once `Pylock::parse` returns. Several only where the lock itself leaves the
    /// name ambiguous.
    std::vector<std::size_t> packages;
    int line = 0;
};

/// The most entries one package's `dependencies` may list: far above any real package's
/// direct requirements, low enough that a hostile lock cannot make a graph of quadratic size.
inline constexpr std::size_t kMaxDependencies = 4096;
/// The most (dependency, entry) links a whole lock may make: a real lock has a few per package;
/// a name held many times and named by many edges cannot make a graph past this.
inline constexpr std::size_t kMaxDependencyLinks = std::size_t{1} << 20;
/// The most tags the wheel file names of a whole lock may expand to (each at most
/// pep::kMaxWheelTags): every wheel keeps its tags, so without this a 16 MiB lock of names
/// that each expand to 256 could hold 40 million. A real lock's wheels have one or two each.
inline constexpr std::size_t kMaxWheelTagsInAll = std::size_t{1} << 20;

/// One `[[packages]]` entry.
struct Package {
    std::string name;  ///< normalised
    std::optional<pep::Version> version;
    std::optional<pep::Marker> marker;
    std::optional<pep::SpecifierSet> requires_python;
    std::optional<std::string> index;
    std::optional<VcsRef> vcs;
    std::optional<DirectoryRef> directory;
    std::optional<FileRef> archive;
    std::optional<FileRef> sdist;
    std::vector<WheelRef> wheels;
    /// The package's direct dependencies, as the lock records them; absent when it records none
    /// (older envbox locks, other tools'). Each names entries of the same lock: parse refuses
    /// an edge to a package the lock lacks, an invalid name, a duplicate, or more than
    /// kMaxDependencies.
    std::optional<std::vector<DependencyRef>> dependencies;
    int line = 0;
};

/// How `Pylock::parse` reads hash values.
enum class DigestCheck {
    /// envbox's reading, for every lock it uses: each value is hexadecimal and a `sha256` is
    /// exactly 64 digits (any case, stored lowercase), since digests become file names.
    strict,
    /// The spec's reading, as pypa/packaging's reader: any string (for conformance tests).
    spec,
};

/// A parsed, validated lock file.
struct Pylock {
    pep::Version lock_version;
    /// Absent: any environment. Present (even empty): one marker must hold.
    std::optional<std::vector<pep::Marker>> environments;
    std::optional<pep::SpecifierSet> requires_python;
    std::vector<std::string> extras;
    std::vector<std::string> dependency_groups;
    std::vector<std::string> default_groups;
    std::string created_by;
    std::vector<Package> packages;

    /// True when every package records its `dependencies` (even as `[]`), so the lock's
    /// dependency graph is complete; a lock of no packages has one.
    bool has_dependency_graph() const;

    /// Parses and validates `text`. `source` names the file in errors, which read
    /// "SOURCE:LINE: … in 'packages[3].wheels[0].hashes'" and carry ErrorCode::invalid_input.
    static Result<Pylock> parse(std::string_view text, std::string_view source,
                                DigestCheck digests = DigestCheck::strict);
};

/// What to install a package from, as chosen by `select`.
struct Selection {
    enum class Kind { wheel, sdist, archive, directory, vcs };
    const Package* package = nullptr;
    std::size_t index = 0;  ///< position in `packages`
    Kind kind = Kind::wheel;
    const FileRef* file = nullptr;  ///< the wheel, sdist or archive (else null)
};

/// The target a lock is installed for.
struct SelectTarget {
    pep::MarkerEnvironment environment;     ///< must define python_full_version
    const pep::TargetTags* tags = nullptr;  ///< ranked tags; no tags ⇒ no wheel is compatible
    std::optional<std::set<std::string>> extras;             ///< default: none
    std::optional<std::set<std::string>> dependency_groups;  ///< default: `default-groups`
    /// Packages for which an sdist is preferred over a compatible wheel.
    std::function<bool(const Package&)> prefer_sdist;
};

/// PEP 751's installation algorithm up to the choice of artifacts: environments and
/// requires-python checked, package markers evaluated (with `extras`/`dependency_groups`),
/// duplicates refused, the best-ranked compatible wheel chosen (sdist as fallback). Errors name
/// the package and its position.
Result<std::vector<Selection>> select(const Pylock& lock, const SelectTarget& target);

/// The lock as one target of a multi-target lock sees it: the packages whose `marker` holds in
/// `environment` (no extras, the lock's default groups), with the edges to packages left out
/// removed and the positions of the others renumbered; `environments` dropped. A marker that
/// cannot be evaluated is the error.
Result<Pylock> for_target(const Pylock& lock, const pep::MarkerEnvironment& environment);

}  // namespace envbox::lock
