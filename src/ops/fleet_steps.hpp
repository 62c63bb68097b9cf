#pragma once
// What push, pull, pack and unpack share (private to ops): the environment being sent (its
// current generation's lock and wheels, and where each wheel's bytes are), and the receiving
// side's last step (the lock written into the project, then `create --frozen --offline`).

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "envbox/env/generation.hpp"
#include "envbox/index/oci.hpp"
#include "envbox/install/built.hpp"
#include "envbox/install/transaction.hpp"
#include "envbox/lock/pylock.hpp"
#include "envbox/ops/fleet.hpp"
#include "envbox/resolve/index_source.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/own_tree.hpp"

namespace envbox::ops::fleet {

/// One wheel of the environment being sent.
struct BundleWheel {
    std::string name, version, filename, sha256;
    std::uint64_t size = 0;
    const lock::FileRef* file = nullptr;  ///< the lock's entry (for a refetch)
    std::filesystem::path path;           ///< its verified bytes, once `locate_wheels` ran
    bool refetched = false;
    /// A wheel built here from the lock's sdist: that sdist's sha256 and the build's key text
    /// (its provenance, sent with it); empty for a wheel the lock names.
    std::string built_from, build_key;
};

/// One bytecode layer of the environment being sent: a wheel's `.pyc` files for one key
/// (store/bytecode_layer.hpp), written from the store.
struct BundleBytecode {
    std::string wheel_sha256, key, filename;  ///< key: its name; filename: the wheel's
    std::filesystem::path path;               ///< the layer, in `BytecodeLayers::dir`
    std::string sha256;
    std::uint64_t size = 0;
    std::size_t files = 0;  ///< `.pyc` files in it
};

/// ENV's current generation as it is sent: the lock it was built from, one entry per wheel it
/// installed (in the generation's order), and the target for the manifest's annotations.
struct Bundle {
    std::string env;
    env::Generation generation;
    std::string lock_text;
    std::string lock_sha256;
    lock::Pylock pylock;
    std::vector<BundleWheel> wheels;
    std::string python, platform, cuda;  ///< cuda: the lock's line, "none" for a CPU stack
};

/// Reads ENV's current generation (an environment never created is exit 1) and its lock; each
/// installed wheel is matched to the lock's entry of that sha256 (its size, URL or path), or,
/// for a package the lock builds from its sdist, to the store's record of that build.
Bundle current_bundle(const Context& ctx, const std::string& env);

// ---- the team's own code (fleet_local.cpp) --------------------------------------------------

/// The manifest's indexes (for the credentials and CA of a refetch or a build), when the project
/// has one.
std::vector<resolve::IndexConfig> project_indexes(const Context& ctx, const std::string& env);

/// The packages of `pylock` built from a folder or a git commit, by name.
std::map<std::string, const lock::Package*> local_packages(const lock::Pylock& pylock);

/// What is shipped of each editable package of `local` (the checkout itself, never shipped as
/// such): a regular wheel of its tree as it is now, built by an install::Transaction of the
/// generation `gen` of `env` (its lock `lock_text`, read where it was made, beside its build
/// locks), by package name. None when no package is editable.
std::map<std::string, install::ShippedWheel> shipped_editables(
    const Context& ctx, const std::string& env, const env::Generation& gen,
    const std::string& lock_text, const std::map<std::string, const lock::Package*>& local);

/// `w`, the wheel local package `p` installs, as sent: built from the record's source (`built`,
/// the store's build records by wheel sha256), the record's key with where the source came from
/// as its provenance: the git source and commit, or the folder and the commit of the checkout it
/// is part of. A folder that changed since the build, or a checkout with changes not committed,
/// is refused (invalid_input, naming the package and the folder): what is shipped is a reviewed
/// commit's code.
// shape: the context, the environment and its package, the store's records, the lock, the wheel.
void sent_as_built(const Context& ctx, const std::string& env, const lock::Package& p,
                   const std::map<std::string, install::BuiltRecord>& built,
                   const std::filesystem::path& lock_path, BundleWheel& w);

/// Sets each wheel's `path` to bytes that are its sha256 (`install::locate_wheels`: the store's
/// kept archive, cache/downloads/, the lock's path, or its URL again with the manifest's index
/// credentials), under the store lock held shared (gc's sweep waits).
void locate_wheels(const Context& ctx, Bundle& bundle, unsigned jobs);

/// The layers of every wheel of `bundle` for every key its generation was compiled for, written
/// into a folder of the store's tmp/ that goes with this object; none unless `send`
/// (--no-bytecode). A list the store lacks is passed over (that module set then compiles on the
/// node).
class BytecodeLayers {
  public:
    BytecodeLayers(const Context& ctx, const Bundle& bundle, bool send, unsigned jobs);
    ~BytecodeLayers();
    BytecodeLayers(const BytecodeLayers&) = delete;
    BytecodeLayers& operator=(const BytecodeLayers&) = delete;
    std::vector<BundleBytecode> layers;

  private:
    std::optional<FileLock> lock_;  // the store lock, shared: declared first, released last
    std::optional<RemoveOwnTree> dir_;
};

/// The manifest `push` sends and `pack --format oci` writes for `bundle`: the empty config, the
/// lock, one layer per wheel (a built one annotated with its sdist and build key), one per
/// bytecode layer; annotations naming the environment, Python, platform and CUDA line.
index::oci::ArtifactManifest artifact_manifest(const Bundle& bundle,
                                               const std::vector<BundleBytecode>& bytecode);

/// What an artifact may carry as bytecode, at most: layers per wheel (a builder sends one
/// interpreter's levels: 0 and PYTHONOPTIMIZE's), and bytes in all (the torch stack's are
/// ~0.4 GB).
inline constexpr std::size_t kMaxBytecodeKeysPerWheel = 4;
inline constexpr std::uint64_t kMaxArtifactBytecodeBytes = 8ull << 30;

/// The receiving side's check of a bytecode layer's names, where it enters: the wheel is one the
/// artifact carries (`carried`) and the key a bytecode key's name. Returns the key of the layer in
/// `install::Received::bytecode`; refuses (integrity, naming `what`) anything else, a second layer
/// of one (wheel, key), or a wheel's layer past `kMaxBytecodeKeysPerWheel`.
std::string accept_bytecode_layer(const std::set<std::string>& carried, const std::string& wheel,
                                  const std::string& key, const std::string& what,
                                  const std::map<std::string, std::filesystem::path>& taken);

/// Where a received bytecode layer waits for create: cache/downloads/<layer sha256>.pyc-layer.
std::filesystem::path bytecode_download(const std::filesystem::path& downloads,
                                        const std::string& sha256);

/// The mirror `spec` (RegistryAccess::mirrors) names for `registry`: its host and whether it
/// speaks plain http; nullopt when none. A malformed spec is a usage error naming
/// ENVBOX_REGISTRY_MIRROR and the entry.
struct Mirror {
    std::string host;
    bool plain_http = false;
};
std::optional<Mirror> mirror_for(const std::string& spec, const std::string& registry);

/// What a received lock lists: each file's sha256 → (file name, size).
struct LockedFile {
    std::string filename;
    std::optional<std::uint64_t> size;
};
std::map<std::string, LockedFile> locked_files(const lock::Pylock& pylock);

/// The trust rule of the receiving side (docs/SECURITY.md, "Fleet"): the reviewed lock is
/// `options.trusted_lock` when given, else the project's `manifests/pylock.ENV.toml` when it
/// exists (the current directory is the project when there is none), else there is none and
/// the artifact's lock is taken. An artifact lock whose bytes differ from the reviewed one is
/// refused (integrity, exit 5, naming `what`, both sha256 digests and what to do), unless
/// `options.update_lock` and the reviewed lock is the project's. Call it as soon as the
/// artifact's lock is read, before any wheel is fetched or stored.
void require_reviewed_lock(const Context& ctx, const ReceiveOptions& options,
                           const std::string& lock_text, const std::string& what);

/// A blob of an artifact and the file it is to be written to.
struct BlobTo {
    const index::oci::Descriptor* blob = nullptr;
    std::filesystem::path to;
};

/// Where an artifact's blobs come from: a registry (pull) or an OCI image layout (unpack). Each
/// blob's bytes are checked against its descriptor (sha256 and size) by the source.
class BlobSource {
  public:
    virtual ~BlobSource() = default;
    /// A small blob (the lock, at most index::kMaxPageBytes) into memory.
    virtual std::string read(const index::oci::Descriptor& blob) = 0;
    /// Each blob into its file (concurrently where the source can, starting them in the order
    /// given: `receive_artifact` puts the biggest first), advancing the progress by one per blob.
    virtual void fetch(const std::vector<BlobTo>& blobs) = 0;
    /// Whether `fetch_one` may be called from many threads while create runs (a registry's
    /// downloads overlap the ingest); else every blob is fetched first.
    virtual bool streams() const { return false; }
    virtual void fetch_one(const BlobTo& blob) { fetch({blob}); }
};

/// The receiving side of an artifact whose manifest `m` was read (and parsed) from `what`: its
/// lock read and held to the reviewed one (`require_reviewed_lock`), every layer checked (a
/// wheel layer a file of the lock of its size or a wheel built from one of its sdists; a
/// bytecode layer the bytecode of a wheel it carries), the wheels the store lacks and the
/// bytecode layers this node takes fetched from `source` into cache/downloads/, then the
/// environment built (`build_received`). Fills `result`'s counts.
void receive_artifact(const Context& ctx, const ReceiveOptions& options,
                      const index::oci::ArtifactManifest& m, const std::string& what,
                      BlobSource& source, ReceiveResult& result);

/// Runs `create --frozen --offline` on the received lock as the project's
/// `manifests/pylock.ENV.toml` (the current directory becomes the project when there is none),
/// with the wheels the store lacks in cache/downloads/ or streamed (`install::Received::streamed`),
/// and then writes that lock there; a failure (or an interruption) leaves the project's lock as it
/// was, removes the layers, and rethrows. Fills `result.lock_path`, `env`, `create`,
/// `pyc_received` and `compiled`.
void build_received(const Context& ctx, const ReceiveOptions& options, const Received& received,
                    ReceiveResult& result);

/// A wheel the artifact carries that its lock does not name, checked where it enters: a wheel
/// built from the sdist `built_from` of a package the lock installs from its sdist, with a key
/// of a build of that sdist (`install::is_build_key_text`) and a plain wheel file name. Adds it
/// to `builds`; refuses (integrity, naming `what`) anything else or a second wheel of one sdist.
void accept_built_wheel(const lock::Pylock& pylock, const std::string& what,
                        const std::string& built_from, const install::BuiltRecord& wheel,
                        std::map<std::string, install::BuiltRecord>& builds);

/// The client options for `registry`: TLS and chunking as given, the credentials given, else
/// the docker config's entry for that registry.
index::oci::RegistryOptions registry_options(const RegistryAccess& access,
                                             const std::string& registry);

/// The environment a received artifact becomes when the user names none: `fallback` cleaned to
/// an environment name (checked by `check_env_name`).
std::string received_env_name(const std::string& given, const std::string& fallback);

}  // namespace envbox::ops::fleet
