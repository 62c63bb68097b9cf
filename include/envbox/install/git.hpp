#pragma once
/// Git sources (`[sources] NAME = { git = "URL", rev = "…" }`): the system's `git` fetches into
/// a bare repository per URL in the home's cache (`cache/git/`), never a checkout the user
/// sees. `lock` resolves a branch or tag to its full commit once; `create` archives exactly that
/// commit (a subdirectory, if given) as an sdist-shaped `.tar.gz` and builds it like one. git runs
/// with hooks off, only the https, http, ssh and file transports, no terminal prompt, and
/// credentials for a private repository given as an HTTP header through git's environment
/// (never in its arguments, the URL or the lock); ~/.netrc works as git reads it.
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace envbox::install {

struct GitAccess {
    std::filesystem::path cache;   ///< HOME/cache/git (made below HOME, never through a link)
    std::vector<std::string> env;  ///< git's environment (KEY=VALUE): HOME, PATH, proxies, ssh
    std::optional<std::string> username, password;  ///< ENVBOX_GIT_<NAME>_USERNAME / _PASSWORD
    /// The one URL the credentials go to (`http.<URL>.extraHeader`): the manifest's for that
    /// package, never a lock's; empty: none are sent.
    std::string credential_url;
    bool offline = false;  ///< only what the cache holds
    std::chrono::seconds timeout{900};
};

/// What git sources are fetched with on this machine: the home's cache/git, git's environment
/// (HOME, PATH, proxies, ssh's agent and command, CA files) and every ENVBOX_GIT_* variable.
struct GitSettings {
    std::filesystem::path cache;
    std::vector<std::string> env;
    std::map<std::string, std::string> variables;
    /// How package `name`'s git source is fetched: the credentials its ENVBOX_GIT_<NAME>_USERNAME
    /// / _PASSWORD give, sent only to `credential_url` (the manifest's URL of that source;
    /// empty: to none), and `offline`.
    GitAccess access(const std::string& name, bool offline,
                     const std::string& credential_url = "") const;
};

/// Why a lock's `[packages.vcs]` cannot be fetched as it is (a lock is hostile input): a type
/// other than git, a URL of another scheme than https, http, ssh or file (never `ext::`), with
/// a password, or starting with '-', a commit that is not a full id, a subdirectory that climbs
/// out; nullopt when none.
std::optional<std::string> vcs_problem(const std::string& type, const std::string& url,
                                       const std::string& commit,
                                       const std::optional<std::string>& subdirectory);

/// "commit COMMIT clean|dirty" of the git checkout `dir` is part of (dirty: a tracked change or
/// an untracked file git does not ignore), or "commit unknown" when it is none (or git cannot
/// tell): the provenance a local package's wheel carries. `skip` (the project's manifests/,
/// which tree_digest leaves out too) is not looked at.
std::string git_tree_state(const GitAccess& access, const std::filesystem::path& dir,
                           const std::filesystem::path& skip = {});

/// `ENVBOX_GIT_<NAME>_<FIELD>` for package `name` (letters and digits upper-cased, anything
/// else `_`), as index credentials are named.
std::string git_variable_name(const std::string& name, const std::string& field);

/// Whether `s` is a full commit id (40 lowercase hexadecimal digits).
bool is_commit_id(const std::string& s);

/// The full commit `rev` (a branch, tag or commit; none: the remote's HEAD) names in the
/// repository at `url`, fetched into the cache and kept there by a ref of envbox's. A full
/// commit id the cache holds is answered offline. Throws (network) naming the URL and git's
/// last words when the remote cannot be read or has no such revision.
std::string git_resolve(const GitAccess& access, const std::string& url,
                        const std::optional<std::string>& rev);

/// The text of `path` (`/`-separated, in the repository) at `commit`, at most 16 MiB; none
/// when the commit has no such file. The commit must be in the cache (git_resolve).
std::optional<std::string> git_file(const GitAccess& access, const std::string& url,
                                    const std::string& commit, const std::string& path);

/// Writes the tree of `commit` (its `subdirectory`, if given) to `out` as a `.tar.gz` whose one
/// top-level folder is `prefix`, the shape of an sdist. Fetches the commit first when the cache
/// lacks it (every branch and tag of the remote, so a commit whose branch was deleted or moved
/// is found where anything still reaches it); offline, or when nothing does: an error naming it.
void git_archive(const GitAccess& access, const std::string& url, const std::string& commit,
                 const std::optional<std::string>& subdirectory, const std::string& prefix,
                 const std::filesystem::path& out);

}  // namespace envbox::install
