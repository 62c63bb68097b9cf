#pragma once
/// An OCI distribution client (distribution-spec 1.1) for envbox's environments: an environment
/// is an image-spec 1.1 artifact whose blobs are its wheels byte for byte (a wheel's sha256 is
/// its blob digest), its lock one more blob, and an empty config. Runs over the index layer's
/// `HttpClient` (pooled connections, retries, TLS verified, bodies bounded) with the registry's
/// auth: the Bearer token flow (`WWW-Authenticate: Bearer realm=…,service=…,scope=…`) or
/// basic auth, the credentials sent only to the registry's own origin and to a token realm on
/// that origin or over https — never along a blob redirect (object storage gets none).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "envbox/index/http.hpp"

namespace envbox::index::oci {

/// What envbox writes and accepts (the artifact type is what `pull` checks first).
inline constexpr std::string_view kArtifactType = "application/vnd.envbox.environment.v1";
inline constexpr std::string_view kManifestMediaType = "application/vnd.oci.image.manifest.v1+json";
inline constexpr std::string_view kEmptyMediaType = "application/vnd.oci.empty.v1+json";
inline constexpr std::string_view kLockMediaType = "application/vnd.envbox.pylock.v1+toml";
inline constexpr std::string_view kWheelMediaType = "application/vnd.envbox.wheel.v1+zip";
/// A wheel's `.pyc` files for one interpreter and level (store/bytecode_layer.hpp), annotated
/// with the wheel's sha256 and the bytecode key's name.
inline constexpr std::string_view kBytecodeMediaType = "application/vnd.envbox.bytecode.v1";
inline constexpr std::string_view kBytecodeWheelAnnotation = "dev.envbox.wheel";
inline constexpr std::string_view kBytecodeKeyAnnotation = "dev.envbox.bytecode-key";
inline constexpr std::string_view kTitleAnnotation = "org.opencontainers.image.title";
/// On a wheel layer built from the lock's sdist (no file of the lock): that sdist's sha256, and
/// the key of the build that made it (its text, `install::BuildKey::text()`).
inline constexpr std::string_view kBuiltFromAnnotation = "dev.envbox.built-from";
inline constexpr std::string_view kBuildKeyAnnotation = "dev.envbox.build-key";
/// The empty config (`{}`) and its digest, as image-spec 1.1 defines them.
inline constexpr std::string_view kEmptyConfig = "{}";
inline constexpr std::string_view kEmptyDigest =
    "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";
/// A manifest is read into memory up to this (distribution's own limit is 4 MiB).
inline constexpr std::uint64_t kMaxManifestBytes = 4ull << 20;

/// `registry.example:5000/team/train-cu128:TAG` or `…@sha256:HEX`. The registry is the first
/// component (it must hold a `.` or `:` or be `localhost`, as docker reads it); the repository
/// is lowercase `[a-z0-9._/-]` components.
struct Reference {
    std::string registry;    ///< host[:port]
    std::string repository;  ///< team/train-cu128
    std::string tag;         ///< empty when none was given (or a digest was)
    std::string digest;      ///< "sha256:…" when pulled by digest
    /// Parses `text`; throws `usage` (exit 2) naming it and what is wrong.
    static Reference parse(std::string_view text);
    /// The tag or the digest, as the manifests endpoint takes it.
    std::string reference() const { return digest.empty() ? tag : digest; }
    /// registry/repository[:tag|@digest], as messages name it.
    std::string str() const;
};

/// One blob an artifact names.
struct Descriptor {
    std::string media_type;
    std::string digest;  ///< "sha256:" + 64 lowercase hex digits
    std::uint64_t size = 0;
    std::map<std::string, std::string> annotations;
};

/// The image manifest of an environment: `artifactType`, the empty config, the lock and one
/// layer per wheel (titled with its file name), annotations for the target.
struct ArtifactManifest {
    std::string artifact_type;
    Descriptor config;
    std::vector<Descriptor> layers;
    std::map<std::string, std::string> annotations;

    /// The manifest's bytes as pushed (compact JSON; the digest is of these bytes).
    std::string to_json() const;
    /// Reads a manifest a registry sent for `ref` (named in every message); refuses (`integrity`,
    /// exit 5) anything but an image manifest of envbox's artifact type: another media type or
    /// artifact type, a config that is not the empty one, a digest that is not sha256 hex, a
    /// layer of a media type envbox does not write, a wheel layer without a plain file name.
    static ArtifactManifest parse(std::string_view json, const std::string& ref);
};

/// Credentials for one registry.
struct RegistryCredentials {
    std::string username, password;
};

/// The registry's entry of a docker `config.json` (`auths`: `auth` base64 of user:password, or
/// `username` and `password`; keys as docker writes them: `host:port`, `https://host:port`, …).
/// nullopt when the file or the entry is absent; a file that is not JSON throws naming it.
std::optional<RegistryCredentials> docker_config_credentials(const std::filesystem::path& config,
                                                             std::string_view registry);

/// How to reach a registry.
struct RegistryOptions {
    bool plain_http = false;  ///< http:// instead of https:// (a registry on loopback, tests)
    std::string ca_file;      ///< a CA bundle for the registry's TLS (empty: the client's)
    std::optional<RegistryCredentials> credentials;
    /// A blob up to this size goes in one PUT; a bigger one in PATCH chunks of this size.
    std::uint64_t chunk_bytes = 64ull << 20;
};

/// A client for one registry (thread-safe: tokens are shared under a mutex). Every error
/// names the reference and the URL (never credentials); a registry's 401 after the challenge
/// was answered is "authentication failed" (network, exit 4), a missing tag "not found".
class RegistryClient {
  public:
    RegistryClient(HttpClient& http, Reference ref, RegistryOptions options);

    const Reference& ref() const { return ref_; }

    /// The blob's size when the repository holds it (HEAD), else nullopt.
    std::optional<std::uint64_t> blob_size(const std::string& digest);
    /// Asks the registry to mount `digest` from another repository of it. true: mounted (201);
    /// false: the registry does not have it there (an upload it started is left to expire).
    bool mount_blob(const std::string& digest, const std::string& from_repository);
    /// Uploads `size` bytes of `file` as `digest`: one PUT up to `chunk_bytes`, else PATCH
    /// chunks then the closing PUT. The registry checks the digest; `on_bytes` gets each part.
    /// With `session`, a chunked upload records its offset and location there after every
    /// chunk, and an upload that finds one (a push killed mid-blob) continues it once the
    /// registry confirms the offset; the file goes when the blob is complete. Returns the
    /// offset it resumed from (0: from the start).
    std::uint64_t upload_blob(const std::string& digest, const std::filesystem::path& file,
                              std::uint64_t size,
                              const std::function<void(std::uint64_t)>& on_bytes = {},
                              const std::filesystem::path& session = {});
    /// Uploads a small blob held in memory (the lock, the empty config).
    void upload_blob(const std::string& digest, const std::string& content);
    /// PUTs the manifest under `ref().reference()`; returns its digest.
    std::string put_manifest(const std::string& json);
    /// GETs the manifest (bounded, its digest checked against a by-digest reference and the
    /// registry's `Docker-Content-Digest`); returns the body and sets `digest`.
    std::string get_manifest(std::string& digest);
    /// GETs a small blob into memory, checked against `digest` and `size`.
    std::string get_blob(const std::string& digest, std::uint64_t size);
    /// GETs a blob into `destination` (resumable `.part`, bounded at `size`), following the
    /// registry's redirect without its credentials, then hashes it: a file that is not
    /// `digest` is removed and refused (`integrity`).
    void download_blob(const std::string& digest, std::uint64_t size,
                       const std::filesystem::path& destination,
                       const std::function<void(std::uint64_t)>& on_bytes = {});

  private:
    std::string base() const;  ///< scheme://registry
    /// Sends `req` to the registry with the current auth, answering one 401 challenge (Bearer
    /// token or basic) and sending again; `scope` is what the token is asked for.
    HttpResponse send(HttpRequest req, const std::string& scope, const std::string& what);
    HttpRequest request(const std::string& url) const;
    std::string authorization(const std::string& scope);
    /// The absolute upload URL a 202 names (on the registry's origin, else refused).
    std::string upload_location(const HttpResponse& r, const std::string& what) const;
    /// The (offset, location) of `session` when the registry confirms it, else nullopt.
    std::optional<std::pair<std::uint64_t, std::string>> resume_session(
        const std::filesystem::path& session, const std::string& what);
    void answer_challenge(const std::string& challenge, const std::string& scope,
                          const std::string& what);

    HttpClient& http_;
    Reference ref_;
    RegistryOptions options_;
    std::string origin_;
    std::mutex mutex_;
    std::map<std::string, std::string> tokens_;  ///< scope → "Bearer …"
    bool basic_ = false;                         ///< the registry asked for basic auth
};

}  // namespace envbox::index::oci
