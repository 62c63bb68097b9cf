#pragma once
/// Fetching an environment's wheels into the store: what the store lacks (or holds damaged) is
/// downloaded or read from a local path and ingested in one pool over all wheels, its modules
/// compiled in the same pool, then published. `create` runs it; `push` and `pack` ask it how to
/// fetch a lock's file again (`artifact_request`).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "envbox/env/interpreter.hpp"
#include "envbox/index/fetch.hpp"
#include "envbox/index/http.hpp"
#include "envbox/install/built.hpp"
#include "envbox/install/bytecode.hpp"
#include "envbox/install/item.hpp"
#include "envbox/resolve/index_source.hpp"
#include "envbox/store/bytecode.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/progress.hpp"

namespace envbox::install {

/// Loads each item's wheel from the store, and returns the items to fetch and ingest: those
/// the store lacks, and those with an object that was touched since ingest (checked by stat, or
/// with `hash` by content too), so nothing touched is ever linked into a new generation; their
/// ingest replaces the damaged objects. Every object is checked, on `jobs` threads.
std::vector<std::size_t> stored_or_missing(const store::Store& store, std::vector<Item>& items,
                                           bool hash, unsigned jobs, Progress& progress);

/// How to fetch the lock's file entry `file` (shown as `display`): its path or URL, `sha256`
/// and size, and, when `index` (its package's) is an index of the manifest (trailing slashes
/// aside), that index's CA and credentials. Create's fetch and push's refetch both ask it.
index::ArtifactRequest artifact_request(const std::string& display, const lock::FileRef& file,
                                        const std::string& sha256,
                                        const std::optional<std::string>& index,
                                        const std::vector<resolve::IndexConfig>& indexes);
/// The same for `item` (for a wheel built from its sdist: no location or size, the store's or a
/// received one).
index::ArtifactRequest artifact_request(const Item& item,
                                        const std::vector<resolve::IndexConfig>& indexes);

/// What an artifact brought (pull, unpack): the only source of what the store lacks, and of
/// every build (a node never builds).
struct Received {
    /// The sha256 of each wheel it carried, each at cache/downloads/<sha256>.whl: a wheel the
    /// store lacks is taken from there and nowhere else, never from the lock's `path` or `url`.
    std::set<std::string> wheels;
    /// The built wheels it carried, by the sha256 of the sdist each was built from ("local
    /// NAME" for a folder or a git commit), with the key of the build that made it.
    std::map<std::string, BuiltRecord> builds;
    /// Its bytecode layers on disk, "<wheel sha256>/<key name>" → file
    /// (`take_received_bytecode`): their lists are adopted, not compiled.
    std::map<std::string, std::filesystem::path> bytecode;
    /// --ignore-bytecode: a list the store took from an artifact counts as missing (compiled
    /// here, replacing it: `distrust_received_bytecode`).
    bool recompile_bytecode = false;
    /// The blobs (wheels and layers, by their file in cache/downloads) that are not there yet
    /// and are fetched inside the pool (`receive_blob`, thread-safe, checked against its
    /// digest), in a lane of their own beside the ingest of those already in, each wheel's layer
    /// right after the wheel: pull's downloads overlap the create.
    std::set<std::filesystem::path> streamed;
    std::function<void(const std::filesystem::path&)> receive_blob;
};

/// What the fetch needs besides the items.
struct FetchPlan {
    std::filesystem::path lock_dir;   ///< relative lock paths are found from here
    std::filesystem::path downloads;  ///< cache/downloads/<sha256>.whl, resumed when interrupted
    index::HttpOptions http;          ///< the page cache, offline, timeout, CA bundle
    std::vector<resolve::IndexConfig> indexes;  ///< the manifest's, for CA and credentials
    bool offline = false;
    /// What an artifact carried (pull, unpack): only it fills what the store lacks.
    const Received* received = nullptr;
    /// Whether `file` is one of the received blobs not fetched yet.
    bool streams(const std::filesystem::path& file) const {
        return received && received->streamed.count(file);
    }
    bool verify_by_content = false;  ///< --force: check stored objects by content
    unsigned jobs = 1;
    const env::Interpreter* interpreter = nullptr;  ///< compiles the bytecode
    std::vector<store::BytecodeKey> bytecode;       ///< `bytecode_keys`; empty: none
    /// Read each fetched wheel's ELF facts in the pool, beside the ingest and the compiling, and
    /// keep them (`Item::elf`): create's link check then reads nothing after the fetch.
    bool elf_facts = false;
};

/// What `fetch_into_store` did.
struct FetchReport {
    std::size_t fetched = 0;    ///< wheels that were not in the store (or were repaired)
    std::size_t repaired = 0;   ///< of those, wheels stored again because an object was touched
    store::IngestStats ingest;  ///< totals over fetched wheels
    BytecodeReport bytecode;
    unsigned jobs = 0;  ///< worker threads used
    /// Seconds: fetch + ingest + compile (one pool), then publish (syncfs + file lists).
    double ingest_s = 0, publish_s = 0;
    /// The wheels whose modules finished compiling last (at most 3, the last first), with
    /// the seconds into the fetch when each was stored and when its compiling ended: where a
    /// cold create's tail goes.
    struct Finished {
        std::string package;
        double stored_at = 0, compiled_at = 0;
    };
    std::vector<Finished> last_compiled;
    /// The wheels stored last (at most 3, the last first), with the seconds into the fetch
    /// when each was stored and when its received bytecode was adopted (`compiled_at`, 0 for
    /// none): where a pull's tail goes.
    std::vector<Finished> last_stored;
};

/// Fetches and ingests every item the store lacks (or holds damaged), in one pool over all
/// wheels, then publishes them; every item's `wheel` is set after. Returns what it did. With
/// `received`, an item the store lacks whose wheel the artifact did not carry (or did not leave in
/// `downloads`) is an error (integrity, exit 5, naming its package), and the others are read from
/// `downloads` only; otherwise with --offline, an item that would be downloaded is an error
/// (network, exit 4); both before anything is fetched. A download that proves bad is removed; one
/// never ingested stays for the next run.
FetchReport fetch_into_store(store::Store& store, std::vector<Item>& items, const FetchPlan& plan,
                             Progress& progress);

// ---- a wheel's bytes as a file (push, pack) ----------------------------------------------------

/// A wheel whose verified bytes are wanted as a file (push and pack send them).
struct WantedWheel {
    std::string filename, sha256;
    std::uint64_t size = 0;          ///< 0: the lock gives none (set once found)
    index::ArtifactRequest request;  ///< how to fetch it again (`artifact_request`)
    std::filesystem::path path;      ///< set by `locate_wheels`: its verified bytes
    bool refetched = false;          ///< downloaded again
};

/// Where `locate_wheels` looks and how it downloads.
struct LocateOptions {
    std::filesystem::path downloads;  ///< cache/downloads/
    std::filesystem::path lock_dir;   ///< the lock's directory: its relative paths start here
    index::HttpOptions http;
    std::string owner;  ///< the environment, for errors ("reading F of ENV")
    unsigned jobs = 1;
};

/// Sets each wheel's `path` to bytes that are its sha256: the store's kept archive; else
/// `downloads`/<sha256>.whl or the lock's local path, hashed; else downloaded again by the
/// lock's URL (with the request's index credentials), hashed. A downloaded or cached file is
/// then kept in the store. The caller holds the store lock shared (gc's sweep waits). A wheel
/// found nowhere, or downloaded with other bytes, is an integrity error naming it.
void locate_wheels(store::Store& store, std::span<WantedWheel> wheels, const LocateOptions& opt);

}  // namespace envbox::install
