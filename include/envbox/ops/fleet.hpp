#pragma once
/// Moving a built environment to other machines: `push` and `pull` through an OCI registry
/// (index/oci.hpp), `pack` and `unpack` through one tar file for nodes with no network. Both
/// carry the lock and its wheels byte for byte; the receiving side checks every wheel's sha256
/// against the lock (they are the registry's blob digests too) and builds a generation with no
/// index asked (`create --frozen --offline` on the received lock).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "envbox/index/oci.hpp"
#include "envbox/ops/context.hpp"
#include "envbox/ops/create.hpp"

namespace envbox::ops {

/// How to reach a registry, as the cli gathered it.
struct RegistryAccess {
    bool plain_http = false;  ///< --plain-http: http:// (a registry on loopback)
    std::string ca_file;      ///< --ca FILE: the registry's CA bundle (else SSL_CERT_FILE, system)
    /// ENVBOX_REGISTRY_USERNAME / _PASSWORD when set; else the docker config's entry.
    std::optional<index::oci::RegistryCredentials> credentials;
    std::filesystem::path docker_config;  ///< $DOCKER_CONFIG/config.json or ~/.docker/config.json
    std::uint64_t chunk_bytes = 64ull << 20;  ///< a bigger blob is uploaded in PATCH chunks
    /// ENVBOX_REGISTRY_MIRROR as set: `REGISTRY=URL[,REGISTRY=URL…]`, each URL `http://HOST[:PORT]`
    /// or `https://…` of a registry mirroring REGISTRY (a pull-through cache: distribution's
    /// `proxy.remoteurl`). Pulls of REGISTRY's artifacts ask the mirror first (with only the
    /// docker config's credentials for its host, never REGISTRY's), and REGISTRY itself when the
    /// mirror cannot answer the manifest (a network error or a missing tag).
    std::string mirrors;
};

struct PushOptions {
    std::string env;
    std::string ref;  ///< REGISTRY/REPOSITORY[:TAG]; without a tag, `lock-<16 hex of the lock>`
    RegistryAccess access;
    /// The store's `.pyc` files of each wheel for each key the generation was compiled for, one
    /// layer per (wheel, key) (store/bytecode_layer.hpp); --no-bytecode: false.
    bool bytecode = true;
};

struct PushResult {
    std::string ref;                  ///< with its tag
    std::string manifest_digest;      ///< sha256:…
    std::size_t wheels = 0;           ///< wheel blobs the manifest names
    std::size_t uploaded = 0;         ///< blobs sent (wheels, the lock, the config)
    std::size_t present = 0;          ///< blobs the repository already had (HEAD)
    std::size_t mounted = 0;          ///< blobs mounted from another repository of the registry
    std::size_t resumed = 0;          ///< uploads continued where a killed push left them
    std::size_t refetched = 0;        ///< wheels fetched again by the lock's URL (then kept)
    std::size_t bytecode_layers = 0;  ///< bytecode layers the manifest names
    std::size_t pyc_files = 0;        ///< `.pyc` files in them
    std::uint64_t bytes_uploaded = 0;
    double seconds = 0;
};

/// Pushes ENV's current generation: its wheels (from the store's kept archives, else
/// cache/downloads, else fetched again by the lock's URL or path and checked against its
/// sha256, then kept), the lock and the empty config as blobs — each asked for with HEAD first
/// and skipped when present, else mounted from the repository this home last pushed to on that
/// registry, else uploaded (concurrently) — then the manifest. Nothing is tagged unless every
/// blob is in. Annotations name the environment, Python, platform and CUDA line.
PushResult push(const Context& ctx, const PushOptions& options);

/// What pull and unpack build, once the wheels are at hand.
struct ReceiveOptions {
    std::string env;  ///< where to build (the project's ENV; the current directory's without one)
    LinkMode link_mode = LinkMode::hardlink;
    std::optional<bool> compile;  ///< --no-compile: false
    /// `--lock FILE`: the reviewed lock the artifact's must equal, byte for byte (else the
    /// project's `manifests/pylock.ENV.toml` when it exists; docs/SECURITY.md, "Fleet").
    std::optional<std::filesystem::path> trusted_lock;
    /// `--update-lock`: take the artifact's lock over a different project lock (not over
    /// `--lock FILE`).
    bool update_lock = false;
    /// --ignore-bytecode: link none of the artifact's `.pyc` files; this node compiles its own
    /// (a node that runs no code the reviewed lock does not pin; docs/SECURITY.md).
    bool ignore_bytecode = false;
    /// --allow-cuda-change: the artifact's lock may move an existing environment to another
    /// CUDA line (CreateOptions::allow_cuda_change); `retry` is the command that says so.
    bool allow_cuda_change = false;
    std::string retry;
};

struct ReceiveResult {
    std::string env;
    std::filesystem::path lock_path;  ///< where the received lock was written
    std::size_t wheels = 0;
    std::size_t fetched = 0;  ///< wheels received (downloaded or unpacked)
    std::size_t present = 0;  ///< wheels the store already had (not fetched)
    std::uint64_t bytes = 0;  ///< bytes received
    std::string manifest_digest;
    std::string mirror;  ///< the mirror the artifact came through (pull); empty: the registry
    std::string mirror_failed;        ///< why the mirror was passed over, when it was
    std::size_t bytecode_layers = 0;  ///< bytecode layers the artifact carries
    std::size_t pyc_received = 0;     ///< `.pyc` files taken from them into the store
    std::size_t compiled = 0;         ///< modules this node compiled (0: none was missing)
    CreateResult create;
    double seconds = 0;
    /// Of `seconds`: the blobs fetched before create started (unpack; a pull's are fetched
    /// inside create's pool, 0 here).
    double receive_s = 0;
};

struct PullOptions {
    std::string ref;
    ReceiveOptions receive;  ///< env empty: the repository's last component
    RegistryAccess access;
};

/// Reads REF's manifest (refused unless it is envbox's artifact, exit 5; `REF@sha256:…` must
/// hash to that digest), its lock blob, which must be the reviewed lock's bytes when there is one
/// (`ReceiveOptions::trusted_lock`, else the project's lock: exit 5 naming both digests, before
/// any wheel is fetched, unless `update_lock`), then writes the lock as the project's
/// `manifests/pylock.ENV.toml` and runs `create --frozen --offline` on it, which downloads
/// (in its pool, beside the ingest, resumable) every blob the store lacks, each checked against
/// its digest and the lock's sha256 and size; the lock is written only once the environment
/// is built, so a failed or interrupted pull leaves the project's lock as it was. A blob that
/// is not its digest is removed and nothing is published (objects already ingested are named
/// by no file list, for gc). The artifact rule: every wheel installed is one of the artifact's
/// layers or already in the store (by sha256); a lock naming another, by a path or a URL, is
/// refused (exit 5, naming the package) before anything is stored, and that path or URL is never
/// read.
ReceiveResult pull(const Context& ctx, const PullOptions& options);

/// `pack --format`: envbox's own tar (the default), or an OCI image layout holding the manifest
/// and blobs `push` sends, as a tar (skopeo's `oci-archive:`) or a folder (`oci:`).
enum class PackFormat { envbox, oci, oci_dir };

struct PackOptions {
    std::string env;
    std::filesystem::path output;
    PackFormat format = PackFormat::envbox;
    /// zstd-compressed: true, false, or nullopt: by the file name (`.zst`, `.tzst`).
    std::optional<bool> zstd;
    bool bytecode = true;  ///< as `PushOptions::bytecode`: members bytecode/<wheel sha256>.<key>
};

struct PackResult {
    std::filesystem::path output;
    std::size_t wheels = 0;
    std::size_t refetched = 0;
    std::size_t bytecode_layers = 0, pyc_files = 0;  ///< as `PushResult`'s
    std::uint64_t bytes = 0;                         ///< the file's size
    double seconds = 0;
};

/// Writes ENV's current generation as one tar (libarchive, ustar/pax, zstd or not):
/// `pylock.toml` first, then `wheels/<file name>` for each wheel, sourced as `push` sources
/// them. Written to a temporary name and renamed: no half archive under the name.
PackResult pack(const Context& ctx, const PackOptions& options);

struct UnpackOptions {
    std::filesystem::path archive;
    ReceiveOptions receive;  ///< env empty: the archive's name up to its first `.`
};

/// Reads an archive `pack` wrote and builds the environment from it offline. Refused, before
/// anything is stored (exit 5, naming the member): a member that is not a regular file (links,
/// devices), an absolute name or one with `..`, a name other than `pylock.toml` first and then
/// `wheels/<a file name the lock has>`, a duplicate, a member larger than the lock says (or
/// than 64 MiB for the lock), a wheel whose bytes are not the lock's sha256; and, as `pull`
/// refuses it, a lock that installs a wheel the archive does not carry and the store lacks.
ReceiveResult unpack(const Context& ctx, const UnpackOptions& options);

}  // namespace envbox::ops
