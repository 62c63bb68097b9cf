#pragma once
/// Getting the artifacts a lock names (a `path` relative to the lock, a `file://` URL, or an
/// `http(s)://` URL) onto local disk. Verification (sha256, size) is the store's: it hashes the
/// archive beside decoding its members (store::Ingest), so a gigabyte wheel is read once.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "envbox/index/http.hpp"

namespace envbox::index {

/// Where an artifact is and what it must be.
struct ArtifactRequest {
    std::string display;                ///< file name, for messages
    std::string location;               ///< URL (`file:`, `http:`, `https:`) or local path
    std::string sha256;                 ///< expected digest, lowercase hex (required)
    std::optional<std::uint64_t> size;  ///< expected size, when the lock records one
    std::optional<std::string> ca;      ///< CA bundle of the index it comes from
    std::optional<std::string> username, password;  ///< the index's credentials
    /// The URL of the index they belong to: they are sent only to its origin (scheme, host,
    /// port), never to a file the lock places on another host.
    std::string index_url = {};
    /// Through a mirror: the lock's own URL (the canonical index's), fetched when `location` (the
    /// file on the mirror) cannot be; `via` names the mirror's variable for messages. Either
    /// source is good: the bytes are checked against `sha256` wherever they came from.
    std::string fallback = {}, via = {};
};

/// The local file `request.location` names (a path, relative ones against `base_dir`, or a
/// `file:` URL), unverified; nullopt for an `http(s)` URL. Throws for other schemes.
std::optional<std::filesystem::path> local_artifact_path(const ArtifactRequest& request,
                                                         const std::filesystem::path& base_dir);

/// Where a wheel of this sha256 is downloaded to, and looked for before downloading:
/// `<downloads_dir>/<sha256>.whl` (`download_artifact`, and `lock` when it had to fetch a whole
/// wheel).
std::filesystem::path download_path(const std::filesystem::path& downloads_dir,
                                    std::string_view sha256);

/// Downloads an `http(s)` artifact to `download_path` (unverified), unless a complete copy is
/// there already. Resumable: a part left by an interrupted download, in this run or an earlier
/// one, is continued with a Range request. The transfer stops at the first byte past
/// `request.size` ("larger than the lock's size N", code `integrity`, the part removed); a file
/// whose size differs from it is removed and reported the same way; with no size, a download
/// stops at `kMaxDownloadBytes`. Throws `Error` (network, exit 4) naming the URL (never its
/// userinfo).
std::filesystem::path download_artifact(HttpClient& http, const ArtifactRequest& request,
                                        const std::filesystem::path& downloads_dir,
                                        const std::function<void(std::uint64_t)>& on_bytes = {});

/// Parses a `file:` URL into a local path (percent-decoded); empty when `url` is not one.
std::filesystem::path file_url_path(std::string_view url);

}  // namespace envbox::index
