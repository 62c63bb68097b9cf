#pragma once
/// `manifests/ENV.toml`: what people write about an environment (see docs/ARCHITECTURE.md,
/// "Files the user writes and reviews"). Pure: parses the text it is given.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "envbox/pep/requirement.hpp"
#include "envbox/pep/tags.hpp"
#include "envbox/pep/version.hpp"
#include "envbox/util/error.hpp"

namespace envbox::lock {

/// One `[[index]]`: a PEP 503/691 simple index.
struct IndexSpec {
    std::string name;               ///< unique within the manifest
    std::string url;                ///< base URL of the simple API
    bool explicit_ = false;         ///< serves only packages pinned to it in `[sources]`
    std::optional<std::string> ca;  ///< CA bundle for this index's TLS
    /// `ignore-error-codes`: HTTP statuses that mean "this index does not have the project"
    /// for this index, as 404 and 410 do for every index (uv's setting of the same name).
    std::vector<int> ignore_error_codes;
    /// `exclude-newer = false`: the manifest's `exclude-newer` does not apply to this index's
    /// files (for an index that gives no upload times, as download.pytorch.org does not).
    bool exclude_newer = true;
};

/// `ENVBOX_INDEX_<NAME>_<FIELD>`: the variable that gives index `name`'s `field` (`USERNAME`,
/// `PASSWORD`, `URL`) on one machine (letters and digits upper-cased, anything else `_`).
/// Credentials come from there or ~/.netrc, never from a URL: an index URL with userinfo is
/// refused by `Manifest::parse` and `ProjectFile::parse`.
std::string index_variable_name(std::string_view name, std::string_view field);

/// `[sources] NAME = { path = "…", editable = true }` or `{ git = "URL", rev = "…",
/// subdirectory = "…" }`: a package built from a source tree (the project's own package, a
/// library beside it, a library pinned to a commit) rather than taken from an index.
struct LocalSource {
    /// As written: relative to the folder of the file that names it (a manifest's `manifests/`,
    /// `envbox.toml`'s project root), or absolute. Where it leads is checked by `lock`: a folder
    /// inside the project holding a `pyproject.toml`. Empty for a git source.
    std::string path;
    /// A git source: the repository's URL (`https://`, `http://`, `ssh://`, `file://`; no
    /// credentials), the branch, tag or commit asked for (none: the remote's HEAD), and the
    /// project's folder in the repository (none: its root).
    std::string git;
    std::optional<std::string> rev, subdirectory;
    bool editable = false;          ///< installed as PEP 660 editable (locally; never shipped so)
    bool from_project = false;      ///< named by envbox.toml (relative to the project root)
    bool from_requirement = false;  ///< named by a requirement's URL (`name @ ./dir`, `git+…`)
    int line = 0;                   ///< the line that names it
};

/// A package named in `[install].prefer`, with the line that names it.
struct PreferredPackage {
    std::string name;  ///< normalised
    int line = 0;
};

/// `envbox.toml` at the project root (beside `manifests/`): what the project's environments
/// share, so it is written once. Each manifest is read with it (`Manifest::parse`).
struct ProjectFile {
    /// `default-env`: the environment `run` and `shell` use without ENV (after ENVBOX_ENV).
    std::optional<std::string> default_env;
    std::vector<IndexSpec> indexes;              ///< shared `[[index]]` entries, in order
    std::map<std::string, std::string> sources;  ///< shared `[sources]`: package → index name
    std::map<std::string, LocalSource> local_sources;  ///< shared `[sources]` of local trees
    std::map<std::string, std::string> run_env;        ///< shared `[run].env`
    /// `[environment] prerelease`: the resolution settings every environment shares (a
    /// manifest's own wins); `[environment]` in envbox.toml holds nothing else.
    std::optional<std::string> prerelease;
    /// `[environment] overrides` and `constraints`, shared the same way (a manifest's own list
    /// replaces the project's).
    std::optional<std::vector<pep::Requirement>> overrides, constraints;
    /// `[environment] exclude-newer`, shared the same way.
    std::optional<std::string> exclude_newer;

    /// Parses and validates as `Manifest::parse` does the same tables (index names unique,
    /// URLs absolute, `[sources]` naming its own indexes); unknown keys are errors naming the
    /// closest valid one. `default-env` is checked as an environment name where it is used.
    static Result<ProjectFile> parse(std::string_view text, std::string_view source);
};

/// A parsed, validated manifest.
/// `[build.NAME]`: how one package is built from its sdist.
struct PackageBuild {
    /// `build = "allow" | "never"`: over `[environment] build`.
    std::optional<std::string> build;
    /// `dependencies`: packages of the environment's own lock (normalised names) whose locked
    /// wheels, with their dependencies from the lock, the build sees beside its build
    /// requirements (uv's `extra-build-dependencies` with match-runtime: `["torch"]` for a CUDA
    /// extension built against the environment's torch).
    std::vector<std::string> dependencies;
    /// `variables`: set in the backend's environment (`TORCH_CUDA_ARCH_LIST = "9.0"`); part of
    /// the build's key but for those named in `speed-variables` (`MAX_JOBS`), which change only
    /// how fast it builds.
    std::map<std::string, std::string> variables;
    std::set<std::string> speed_variables;
    /// `requires-dist`: the sdist's dependencies as the manifest gives them (uv's
    /// dependency-metadata), read instead of its metadata: for a package whose metadata only a
    /// build that sees `dependencies` could give, which `lock` cannot run before they are locked.
    std::optional<std::vector<pep::Requirement>> requires_dist;
};

/// A variable name as a shell spells it (letters, digits and `_`, not starting with a digit; at
/// most 128 bytes): what `[build.NAME] variables` and a lock's build settings may name.
bool is_build_variable_name(std::string_view s);

/// A variable's value as a manifest or a lock may give it: at most 4096 bytes, no NUL.
bool is_build_variable_value(std::string_view s);

struct Manifest {
    int python_major = 3;
    int python_minor = 0;
    std::string python;    ///< as written ("3.12")
    std::string platform;  ///< target platform tag ("manylinux_2_28_x86_64"): the first
    /// Every target platform the lock covers, in manifest order: `platforms = [...]`, or
    /// `platform` alone as a list of one. Their machines differ (a PEP 751 marker tells
    /// targets apart by `platform_machine`, never by glibc).
    std::vector<std::string> platforms;
    std::optional<std::string> cuda;  ///< declared CUDA line ("12.8")
    /// `prerelease`: when a pre-release may be locked, with uv's names ("if-necessary-or-
    /// explicit", "allow", "disallow", "explicit", "if-necessary"); unset: the first. From the
    /// manifest, else envbox.toml.
    std::optional<std::string> prerelease;
    /// `overrides`: PEP 508 requirements that replace every requirement on their package,
    /// whoever declares it (uv's override-dependencies: `cuda-python>=12,<13` for a package
    /// whose metadata pins CUDA 13). From the manifest, else envbox.toml; none when unset.
    std::optional<std::vector<pep::Requirement>> overrides;
    /// `constraints`: PEP 508 requirements that narrow their package wherever something
    /// requires it, adding nothing otherwise (uv's constraint-dependencies).
    std::optional<std::vector<pep::Requirement>> constraints;
    /// `exclude-newer`: only files an index says were uploaded before this instant are
    /// candidates (uv's setting; PEP 700 `upload-time`), as UTC RFC 3339
    /// (`2026-11-01T00:00:00Z`). From the manifest, else envbox.toml.
    std::optional<std::string> exclude_newer;
    /// `build`: whether `lock` may choose a package's source distribution where no wheel
    /// serves the target ("allow"; building runs the sdist's own code, in the sandbox), or
    /// never ("never", the default: such a package is refused, naming this setting).
    std::optional<std::string> build;
    /// `[build.NAME]`: how each package (normalised name) is built from its sdist.
    std::map<std::string, PackageBuild> package_builds;
    std::vector<pep::Requirement> requirements;
    /// `dependency-groups`: PEP 735 groups of the project's pyproject.toml whose requirements
    /// join `requirements` (normalised names; ops::read_manifest adds them).
    std::vector<std::string> dependency_groups;
    std::vector<IndexSpec> indexes;              ///< in manifest order (priority order)
    std::map<std::string, std::string> sources;  ///< normalised package name → index name
    /// `[sources]` entries that are tables: normalised package name → its local source tree.
    std::map<std::string, LocalSource> local_sources;
    std::map<std::string, std::string> run_env;  ///< `[run].env`
    /// `[install].prefer`: where two wheels ship one path with different content, the file of
    /// the listed package is installed (opencv-python-headless over opencv-python). Without
    /// it such a path is an install conflict.
    std::vector<PreferredPackage> install_prefer;
    /// `[install].allow-unlinked`: packages whose native files may fail the link check
    /// (a CUDA library of another line, a symbol their library lacks); their findings are notes.
    std::vector<PreferredPackage> install_allow_unlinked;
    /// `[install].compile`: false builds environments without bytecode (as `create
    /// --no-compile`); unset or true, every module gets its `.pyc` from the store.
    std::optional<bool> install_compile;

    /// Parses and validates; errors read "SOURCE:LINE: what in 'key'" (ErrorCode::invalid_input).
    /// Checks: python is `3.N`, exactly one of `platform` and `platforms` (each a supported
    /// target, each once, no two of one machine), cuda is `X.Y`, requirements
    /// parse, index names are unique and URLs absolute without userinfo, `[sources]` name existing
    /// indexes, `ignore-error-codes` are HTTP error statuses, `[install].prefer` names valid
    /// packages. A key envbox does not know is an error naming its line and the closest valid key;
    /// keys for other tools belong under `[tool.NAME]`, which envbox ignores.
    ///
    /// With `project` (the project's `envbox.toml`), the manifest is read as if it held the
    /// project's shared settings too: its indexes follow the manifest's own in priority order
    /// (an index of the same name in the manifest replaces the project's), its `[sources]` and
    /// `[run].env` entries apply where the manifest has none for that package or variable.
    static Result<Manifest> parse(std::string_view text, std::string_view source,
                                  const ProjectFile* project = nullptr);

    /// Whether `name` (normalised) may be built from its sdist: its `[build.NAME]`, else
    /// `[environment] build`, else never.
    bool may_build(const std::string& name) const;

    /// The error for the first `[install].prefer` entry that names no package of `lock_names`
    /// (normalised names), located in `source` (the manifest's path); nothing when all do.
    std::optional<Error> check_prefer(const std::vector<std::string>& lock_names,
                                      std::string_view source) const;

    /// The ranked tags of this manifest's target (CPython python_major.python_minor on platform).
    Result<pep::TargetTags> target_tags() const;
};

}  // namespace envbox::lock
