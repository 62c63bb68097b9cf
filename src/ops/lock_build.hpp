#pragma once
// `lock`'s source builds: which packages may be locked from their sdists (the manifest's
// `build` settings), each such sdist's core metadata (its PKG-INFO where that is static, else
// what a build of it in the sandbox says), and the PEP 751 lock of its build environment, written
// beside the main lock and named in its `[tool.envbox] builds`.
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "envbox/install/local.hpp"
#include "envbox/install/target.hpp"
#include "envbox/lock/lock_file.hpp"
#include "envbox/lock/manifest.hpp"
#include "envbox/lock/writer.hpp"
#include "envbox/ops/context.hpp"
#include "envbox/pep/requirement.hpp"
#include "envbox/resolve/index_source.hpp"

namespace envbox::ops {

class LockBuilds {
  public:
    /// The PEP 751 text of a build environment's lock: `requires` resolved against the
    /// manifest's indexes for its targets, wheels only, preferring the versions of the previous
    /// build lock's text (the file beside the lock, when there is one), as `lock` keeps the main
    /// lock's: a relock moves a build requirement only where it must.
    using ResolveBuildLock = std::function<std::string(const std::vector<pep::Requirement>&,
                                                       const std::optional<std::string>&)>;

    // shape: the lock's context, manifest and environment, and how a build lock is resolved.
    LockBuilds(const Context& ctx, const lock::Manifest& manifest,
               std::filesystem::path manifest_path, std::string env, bool offline,
               ResolveBuildLock resolve_build_lock);

    /// The resolver's hooks (resolve::IndexSource::allow_builds): the manifest's `build`
    /// settings, and `metadata` below.
    resolve::SdistBuilds hooks();

    /// The core metadata of `r`'s sdist: fetched (the index's sha256 checked) and unpacked as
    /// hostile; `[build.NAME] requires-dist` when the manifest gives it; its PKG-INFO when that is
    /// Metadata 2.2 or later and declares none of Requires-Dist, Requires-Python and Provides-Extra
    /// dynamic; else the METADATA of the wheel a build of it makes (install::build_wheel in the
    /// sandbox, kept in the store by its build key, so `create` builds nothing again). Either way
    /// its build environment's lock is resolved (`[build-system] requires`; setuptools' backends
    /// get `wheel` too, which their `get_requires_for_build_wheel` asks for) and kept for `write`.
    /// The metadata must name the sdist's package and version (integrity otherwise). A package
    /// whose build sees runtime wheels (`[build.NAME] dependencies`) is never built here: without
    /// static metadata or `requires-dist` it is refused, naming the setting.
    std::string metadata(const resolve::SdistRequest& r);

    /// Resolves the build environment's lock of the local tree `project` (its `[build-system]`
    /// requires; `wheel` beside setuptools), kept for `files` under its name: a local tree is
    /// always built, whatever the manifest's `build` setting says of sdists.
    void local(const install::LocalProject& project);

    /// A build lock to write: `pylock.ENV.build.NAME.toml` beside the lock, its text, its
    /// `[tool.envbox] builds` entry ("NAME FILE SHA256") and the package's `build-settings`
    /// lines (lock::build_settings_lines).
    struct File {
        std::string name;
        std::filesystem::path path;
        std::string text, entry;
        std::vector<std::string> settings;
    };
    /// The build lock of each package of `packages` (sorted by name) locked from its sdist or
    /// a local tree,
    /// by the sdist's sha256 (so a version the resolver looked at and left is never the one
    /// written). One package locked from two sdists (targets at two versions) is refused.
    std::vector<File> files(const std::vector<lock::LockedPackage>& packages,
                            const std::filesystem::path& lock_path) const;

  private:
    /// The target a build runs for: this machine's interpreter of the manifest's Python, found
    /// when the first build needs it.
    const install::Target& build_target();

    const Context& ctx_;
    const lock::Manifest& manifest_;
    std::filesystem::path manifest_path_;
    std::string env_;
    bool offline_;
    std::vector<resolve::IndexConfig> indexes_;  ///< the manifest's, with their credentials
    ResolveBuildLock resolve_build_lock_;
    mutable std::mutex mutex_;
    /// sdist sha256 (or "local NAME") → its build lock's text
    std::map<std::string, std::string> build_locks_;
    std::mutex build_mutex_;  ///< held by the one build running
    std::optional<install::Target> target_;
};

/// Whether every build lock `lock` names (`[tool.envbox] builds`) is beside it with the bytes
/// it recorded: a lock whose build lock went or changed is not up to date.
bool build_locks_intact(const lock::LockFile& lock);

/// Removes the build locks the lock's `previous` text (`lock_path`, ENV's) named that `kept`
/// (the new lock's) does not: only a file of the name envbox writes for ENV
/// (`pylock.ENV.build.NAME.toml`), beside the lock, not a link, still of the bytes recorded (one
/// changed by hand is left). Returns the file names removed.
std::vector<std::string> remove_stale_build_locks(const std::string& previous,
                                                  const std::filesystem::path& lock_path,
                                                  const std::string& env,
                                                  const std::vector<LockBuilds::File>& kept);

}  // namespace envbox::ops
