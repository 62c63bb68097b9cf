#pragma once
/// Fetching the artifacts a lock names (a `path` relative to the lock, a `file://` URL, or an
/// `http(s)://` URL), verifying sha256 and size while the bytes stream.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace envbox::index {

/// Where an artifact is and what it must be.
struct ArtifactRequest {
    std::string display;                 ///< file name, for messages
    std::string location;                ///< URL (`file:`, `http:`, `https:`) or local path
    std::string sha256;                  ///< expected digest, lowercase hex (required)
    std::optional<std::uint64_t> size;   ///< expected size, when the lock records one
};

/// A verified local copy.
struct FetchedArtifact {
    std::filesystem::path path;  ///< the verified file
    bool temporary = false;      ///< true when downloaded into the temp directory (caller removes)
    std::uint64_t bytes = 0;
};

/// Called with bytes transferred so far (for progress); may be empty.
using FetchProgress = std::function<void(std::uint64_t)>;

/// Resolves `request.location` (relative paths against `base_dir`), then: a local file is
/// hashed in place; a URL is downloaded into `tmp_dir` (a unique temporary file, removed on any
/// failure) with retries on transient errors. Throws `Error`: code `integrity` (5) on a hash or
/// size mismatch, naming the file, the expected and the actual digest; `network` (4) when a
/// URL cannot be fetched (naming the URL and the HTTP status or curl error); `generic` when a
/// local file is missing or unreadable.
FetchedArtifact fetch_artifact(const ArtifactRequest& request, const std::filesystem::path& base_dir,
                               const std::filesystem::path& tmp_dir,
                               const FetchProgress& progress = {});

/// The local file `request.location` names (a path, relative ones against `base_dir`, or a
/// `file:` URL), unverified; nullopt for an `http(s)` URL. Throws for other schemes.
std::optional<std::filesystem::path> local_artifact_path(const ArtifactRequest& request,
                                                         const std::filesystem::path& base_dir);

/// Parses a `file:` URL into a local path (percent-decoded); empty when `url` is not one.
std::filesystem::path file_url_path(std::string_view url);

}  // namespace envbox::index
