#pragma once
/// A new generation's record and the install requests of its items: what `Transaction::execute`
/// and a build environment hand to env::build_generation.

#include <filesystem>
#include <string>
#include <vector>

#include "envbox/env/generation.hpp"
#include "envbox/env/installer.hpp"
#include "envbox/install/item.hpp"
#include "envbox/install/target.hpp"
#include "envbox/lock/manifest.hpp"
#include "envbox/util/fs.hpp"

namespace envbox::install {

/// The PEP 610 direct_url.json of an item installed from an `archive` (no credentials), a
/// local folder or a git commit; a relative `path` is made absolute from `lock_dir`, the lock's
/// directory.
std::string direct_url_json(const Item& item, const std::filesystem::path& lock_dir = {});

/// The number of the next generation in `edir` (one past the highest); unstamped leftovers of
/// a crash are removed on the way.
int next_generation_number(const std::filesystem::path& edir);

/// The record of environment `env`'s generation to build next in `edir` (numbered by
/// `next_generation_number`, created now, for `target`, from the lock at `lock_path` whose
/// generation digest is `digest`, linked by `link_mode`); its packages are added by
/// `install_requests`.
// shape: the environment's folder and name, and what the generation records.
env::Generation next_generation(const std::filesystem::path& edir, const std::string& env,
                                const std::string& digest, const std::filesystem::path& lock_path,
                                const Target& target, LinkMode link_mode);

/// The install requests for `items`, in their order, and `gen`'s package records beside them:
/// requested when the manifest requires the package (or without a manifest, always), preferred
/// when its `[install].prefer` names it.
std::vector<env::InstallRequest> install_requests(const std::vector<Item>& items,
                                                  const lock::Manifest* manifest,
                                                  env::Generation& gen);

}  // namespace envbox::install
