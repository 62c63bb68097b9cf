#pragma once
/// `envbox delete ENV`: an environment and everything envbox keeps for it, except store content
/// (shared with other environments; the next gc removes what nothing references).

#include <filesystem>
#include <string>
#include <vector>

#include "envbox/ops/context.hpp"

namespace envbox::ops {

struct DeleteOptions {
    std::string env;
    bool force = false;  ///< delete even generations a process uses
};

struct DeleteResult {
    std::vector<std::string> generations;        ///< "gen-N" removed
    std::vector<std::string> in_use;             ///< "gen-N: who uses it", removed under --force
    std::vector<int> pins;                       ///< pinned generations among those removed
    std::vector<std::filesystem::path> removed;  ///< folders, links and files removed
};

/// Removes every generation of ENV (each claimed as gc claims one, then its stamp first, see
/// env::remove_generation), pinned ones too (a pin keeps a generation from gc, not from
/// delete; `pins` says which were), ENV's folder under envs/ (its pins and event log with
/// it), the project's `.envbox/ENV` link, ENV's compile caches (`cache/compile/<key>.<ENV>`) and
/// last its lock file in locks/. Holds ENV's lock throughout, so no create or rollback is between.
/// Refuses (exit 1, naming each user) when a generation is in use — an `envbox run` job holding it,
/// or a process found in /proc — unless `force`; then nothing is removed. The manifest and the lock
/// in `manifests/` are the user's and stay. Throws (exit 1) when ENV has nothing to delete.
DeleteResult delete_environment(const Context& ctx, const DeleteOptions& options);

}  // namespace envbox::ops
