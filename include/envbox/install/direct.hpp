#pragma once
/// Direct wheel references of a manifest (`name @ URL`, `name @ ./wheels/x.whl`) for `lock`:
/// each wheel fetched (http, https) or read in place (file://, paths), checked as hostile input,
/// and described for the resolver (`resolve::DirectPackage`) and for the lock's
/// `[packages.archive]` (`lock::LockedArchive`).

#include <filesystem>
#include <map>
#include <string>

#include "envbox/index/http.hpp"
#include "envbox/install/target.hpp"
#include "envbox/lock/direct_reference.hpp"
#include "envbox/lock/manifest.hpp"
#include "envbox/lock/writer.hpp"
#include "envbox/resolve/resolver.hpp"
#include "envbox/store/home.hpp"

namespace envbox::install {

/// One direct reference's wheel, checked.
struct DirectWheel {
    std::string name;  ///< normalised
    lock::DirectReference reference;
    /// What the lock records: the URL (no fragment) or the path relative to the lock's
    /// directory (the manifest's), the wheel's size and sha256.
    lock::LockedArchive archive;
    /// The one version the resolver may choose, and the wheel's own Requires-Dist.
    resolve::DirectPackage package;
};

/// The file name, tags, sha256 (against a `#sha256=` fragment), size and METADATA of the wheel
/// at `file` (local, already fetched), for the requirement `r` whose reference is `ref`.
/// Throws: invalid_input when the tags do not fit `target` (the message lists the wheel's tags
/// and the target's) or METADATA's Name or Version is not the file name's; integrity for a
/// digest unlike the fragment's, a file that is not a readable wheel, no METADATA or one past
/// the store's bound.
DirectWheel check_direct_wheel(const pep::Requirement& r, const lock::DirectReference& ref,
                               const std::filesystem::path& file, const Target& target);

/// Every direct reference of `manifest` (at `manifest_path`) whose marker holds for `target`,
/// by normalised name. An http(s) wheel is downloaded once into `home.downloads()` (where
/// `create` finds it by sha256; with a `#sha256=` whose download is there, not at all); local
/// ones are read in place. Two references of one package to different URLs are refused,
/// naming both.
std::map<std::string, DirectWheel> direct_wheels(const lock::Manifest& manifest,
                                                 const std::filesystem::path& manifest_path,
                                                 const Target& target, index::HttpClient& http,
                                                 const store::Home& home);

/// The tags of `target` for a message: its best few and how many there are.
std::string describe_target_tags(const Target& target);

}  // namespace envbox::install
