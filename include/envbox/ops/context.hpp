#pragma once
/// What every command needs to know: where the store and environments live, which project it
/// runs for, and how to report progress (the cli layer renders it; ops never prints).

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "envbox/lock/manifest.hpp"
#include "envbox/ops/project.hpp"
#include "envbox/util/progress.hpp"

namespace envbox::ops {

/// Progress is util's observer (util/progress.hpp); ops reports through it.
using envbox::Progress;

/// What envbox takes from the process environment. The cli reads it once, at start
/// (`cli::settings_from_environment`); no layer below calls getenv, each takes what it needs as
/// an explicit value. Empty means unset.
struct Settings {
    std::string python;             ///< ENVBOX_PYTHON: the one interpreter to use
    std::string cuda_driver;        ///< ENVBOX_CUDA_DRIVER: the driver version to assume
    std::string http_timeout;       ///< ENVBOX_HTTP_TIMEOUT: seconds without progress
    std::string ca_file;            ///< SSL_CERT_FILE: CA bundle for TLS
    bool resolve_debug = false;     ///< ENVBOX_RESOLVE_DEBUG: trace the resolver on stderr
    std::string resolve_max_steps;  ///< ENVBOX_RESOLVE_MAX_STEPS: the resolver's step budget
    /// Where interpreters are looked for: PATH, HOME, PYENV_ROOT, UV_PYTHON_INSTALL_DIR.
    std::string path, user_home, pyenv_root, uv_python_install_dir;
    std::string xdg_data_home;  ///< XDG_DATA_HOME: where the default home lies
    /// Every ENVBOX_INDEX_<NAME>_<FIELD> variable (index credentials), by variable name.
    std::map<std::string, std::string> index_variables;
    /// ENVBOX_GIT_*: the credentials of git sources (install::git_variable_name).
    std::map<std::string, std::string> git_variables;
    /// What git runs with (KEY=VALUE): HOME, PATH, proxies, ssh's agent and command, CA files.
    std::vector<std::string> git_environment;
};

struct Context {
    std::filesystem::path home;          ///< store and environments root
    std::filesystem::path project_root;  ///< holds manifests/ (may be empty for --lock only)
    unsigned jobs = 1;
    Progress* progress = nullptr;  ///< never null once made by `make_context`
    /// The user's umask, put back before `run` execs the workload (envbox itself works under
    /// `home_umask`).
    unsigned user_umask = 022;
    Settings settings;  ///< the process environment, as the cli read it

    /// The project's layout (ops/project.hpp).
    Project project() const { return Project{project_root}; }
};

/// The umask envbox works under in `home`, whatever the user's: 022 (directories 0755, files
/// as each write says) for a home of one owner, 002 for a home shared by a group (its directory
/// has the set-group-ID bit, so everything made in it belongs to that group), so that a member's
/// umask never locks the others out. Store objects are 0444/0555 either way.
unsigned home_umask(const std::filesystem::path& home);

/// `$ENVBOX_HOME` is handled by the cli; this is the fallback: `$XDG_DATA_HOME/envbox`, else
/// `~/.local/share/envbox`.
std::filesystem::path default_home(const Settings& settings);

/// The one name of a home, however it was reached: absolute, created when missing (so that every
/// symlink on its way resolves), then `weakly_canonical`; and where the home records the name
/// it was first used by (`HOME/.home-path`) and that name is this very directory (same device
/// and inode: a bind mount), that name. Everything envbox writes into an environment (launcher
/// shebangs, `activate`, RECORD) derives from the home's path, so a home reached through a
/// symlink or a bind mount must give the same path as the real one, or verify sees drift.
std::filesystem::path canonical_home(const std::filesystem::path& home);

/// Refuses (exit 5, naming it) a symbolic link at any folder of the home's fixed layout
/// (`store-v1/objects/sha256`, `store-v1/wheels`, `tmp`, `locks`, `envs`, `cache/*`): every
/// command checks this first, about a dozen lstat calls, so nothing it reads or writes by path
/// there goes through a planted link (the link rule, docs/SECURITY.md). The home itself may be
/// a link: the user named it.
void check_home_layout(const std::filesystem::path& home);

/// The nearest directory from `start` upward that holds `manifests/`; empty when none.
std::filesystem::path find_project_root(const std::filesystem::path& start);

/// `name` as a project key's readable part: letters, digits, '-', '_', '.'; others '_';
/// "root" for none.
std::string key_part(std::string name);

/// The key of a checkout by its path: "<dir name>-<12 hex of sha256(path)>".
std::string path_key(const std::filesystem::path& project_root);

/// Where a project's environments live (`envs/<key>/`), and why, when not by its path.
struct ProjectKey {
    std::string key;
    /// Said once by create: "the environments of OLD (moved here) …", or that another checkout
    /// of the project, still on this machine, has them and this one gets its own. Empty: none.
    std::string note;
};

/// The key a project's environments, pins, history and compile caches are stored under. By the
/// project's identity (`manifests/.envbox-project`, written by init and lock and committed
/// with the manifests: "<name>-<12 hex>"), so a moved or cloned-again checkout keeps them —
/// unless this checkout already has environments by its path (made before it had an identity:
/// a generation's venv names its own path, so they stay), or another checkout of the same
/// project, still present here, has them (`envs/<key>/project` names it): then this one is
/// keyed by its path, and told so. A checkout that finds its project's environments recorded
/// at a path that no longer holds the project (moved) records itself there. Without an
/// identity: by its path (`path_key`).
ProjectKey project_key_of(const std::filesystem::path& home,
                          const std::filesystem::path& project_root);

/// `project_key_of(ctx.home, ctx.project_root).key`.
std::string project_key(const Context& ctx);

/// Gives the project at `project_root` an identity when it has none: `manifests/.envbox-project`
/// ("envbox-project 1", then "id" and "name" lines: 32 random hex digits and the folder's
/// name), to commit. Returns whether it wrote one.
bool ensure_project_identity(const std::filesystem::path& project_root);

/// `home/envs/<project key>/<env>`.
std::filesystem::path env_dir(const Context& ctx, const std::string& env);

/// One environment's folder in the home, `envs/<project key>/<env>`.
struct EnvDir {
    std::string project_key, env;
    std::filesystem::path path;
};

/// Every environment folder of the home, sorted, found without following a link: a link where
/// a project's or an environment's folder should be is refused (exit 5, naming it), so gc,
/// list and show never read or remove through one. A file where a folder should be is skipped.
std::vector<EnvDir> environment_dirs(const std::filesystem::path& home);

/// Checks an environment name: letters, digits, `.`, `_`, `-`; not starting with `.`; not
/// holding `.build.` (`pylock.ENV.build.NAME.toml` is a build environment's lock).
void check_env_name(const std::string& env);

/// "the environments here are a, b" (the project's manifests, sorted), or "this project has no
/// manifest yet": what an error about an unknown environment adds, after "did you mean a? "
/// when `mistyped` is near one of them.
std::string known_environments(const std::filesystem::path& project_root,
                               std::string_view mistyped = {});

/// Every environment of the project, sorted, each once: a manifest `manifests/ENV.toml`, a lock
/// `manifests/pylock.ENV.toml` without one, or a folder under the home's `envs/<project key>/`
/// (an environment created from `--lock FILE`). A file whose name is not an environment name
/// is left out. Empty without a project root.
std::vector<std::string> project_environments(const Context& ctx);

/// Throws `invalid_input` (exit 3) when the project holds neither `manifests/ENV.toml` nor
/// `manifests/pylock.ENV.toml`: "no manifest P (the environments here are …; `envbox init ENV`
/// writes one)", so a mistyped ENV is named as such, never as a missing lock. Nothing without
/// a project root (a command given a lock path).
void require_environment_files(const Context& ctx, const std::string& env);

/// For commands on an existing environment (run, shell, verify, show, history, rollback, diff,
/// delete): `require_environment_files` unless ENV has a folder under `envs/` (an environment
/// created from `--lock FILE` has no manifest): a mistyped ENV is named as missing, with the
/// environments there are, as `create` names it.
void require_known_environment(const Context& ctx, const std::string& env);

/// `PROJECT/envbox.toml`, the settings the project's environments share, parsed; nothing when
/// the project has none (or there is no project). Throws invalid_input naming the file and
/// line for a file that does not parse, or whose `default-env` is not an environment name.
std::optional<lock::ProjectFile> read_project_file(const std::filesystem::path& project_root);

/// `manifests/ENV.toml` at `manifest_path`, parsed with its project's `envbox.toml` (the
/// folder above `manifests/`), so every command reads a manifest the same way. Throws
/// invalid_input: "no manifest P" when it does not exist, else the parse error.
lock::Manifest read_manifest(const std::filesystem::path& manifest_path);

}  // namespace envbox::ops
