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

#include "envbox/install/target.hpp"
#include "envbox/lock/manifest.hpp"
#include "envbox/ops/context.hpp"
#include "envbox/pep/requirement.hpp"
#include "envbox/resolve/index_source.hpp"

namespace envbox::ops {

class LockBuilds {
  public:
    /// The PEP 751 text of a build environment's lock: `requires` resolved against the
    /// manifest's indexes for its targets, wheels only.
    using ResolveBuildLock = std::function<std::string(const std::vector<pep::Requirement>&)>;

    // shape: the lock's context, manifest and environment, and how a build lock is resolved.
    LockBuilds(const Context& ctx, const lock::Manifest& manifest,
               std::filesystem::path manifest_path, std::string env, bool offline,
               ResolveBuildLock resolve_build_lock);

    /// The resolver's hooks (resolve::IndexSource::allow_builds): the manifest's `build`
    /// settings, and `metadata` below.
    resolve::SdistBuilds hooks();

    /// The core metadata of `r`'s sdist: fetched (the index's sha256 checked) and unpacked as
    /// hostile; its PKG-INFO when that is Metadata 2.2 or later and declares none of
    /// Requires-Dist, Requires-Python and Provides-Extra dynamic; else the METADATA of the
    /// wheel a build of it makes (install::build_wheel in the sandbox, kept in the store by its
    /// build key, so `create` builds nothing again). Either way its build environment's lock is
    /// resolved (`[build-system] requires`; setuptools' backends get `wheel` too, which their
    /// `get_requires_for_build_wheel` asks for) and kept for `write`. The metadata must name the
    /// sdist's package and version (integrity otherwise).
    std::string metadata(const resolve::SdistRequest& r);

    /// Writes the build lock of each of `names` (packages the lock installs from sdists) as
    /// `pylock.ENV.build.NAME.toml` beside `lock_path`, and returns the `[tool.envbox] builds`
    /// entries ("NAME FILE SHA256") for them.
    std::vector<std::string> write(const std::vector<std::string>& names,
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
    ResolveBuildLock resolve_build_lock_;
    mutable std::mutex mutex_;
    std::map<std::string, std::string> build_locks_;  ///< package → its build lock's text
    std::optional<install::Target> target_;
};

}  // namespace envbox::ops
