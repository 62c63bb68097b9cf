#pragma once
/// `envbox cache clean` and `envbox cache prune`: the home's `cache/` (as `uv cache clean` and
/// `uv cache prune`). Nothing in `cache/` is needed for correctness — every entry is fetched or
/// computed again on demand — except that a torch compile cache (`cache/compile/<key>.<ENV>`)
/// costs minutes to rebuild, so `clean` keeps those unless told.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "envbox/ops/context.hpp"

namespace envbox::ops {

struct CacheOptions {
    bool dry_run = false;  ///< remove nothing; report what would go
    /// `clean` only: the compile caches of existing environments too.
    bool all = false;
};

/// One folder of the cache and what was removed from it.
struct CacheBucketResult {
    std::string name;         ///< "http", "metadata", "downloads", "interpreters", "compile",
                              ///< "other" (anything else `clean` found in cache/)
    std::size_t entries = 0;  ///< files (compile: whole environment caches) removed
    std::uint64_t bytes = 0;  ///< their sizes (st_blocks, what the disk gets back)
};

struct CacheResult {
    std::vector<CacheBucketResult> buckets;  ///< every bucket, in the order above
    std::vector<std::string> busy;           ///< entries skipped: a download is writing them
    std::size_t entries() const;
    std::uint64_t bytes() const;
};

/// Removes everything under `home.cache()` except `cache/compile/` (unless `all`), and any
/// other file or folder a later envbox may put there. A wheel a running download is writing
/// (its `<sha256>.whl.lock` held) is skipped and listed in `busy`. Holds `locks/store.lock`
/// exclusively, as gc's sweep does, so no create is between looking for a download and
/// ingesting it.
CacheResult clean_cache(const Context& ctx, const CacheOptions& options);

/// Removes only what is stale or unused, under the same lock:
///   downloads     a `.part` no download is writing, a `.lock` without its part, a wheel whose
///                 file list is already in the store (`wheels/<sha256>/files`);
///   http          entries past their max-age (they would be revalidated anyway) or damaged;
///   metadata      nothing (keyed by a wheel's sha256, an entry never goes stale);
///   interpreters  probes whose interpreter is gone or changed (path, size, mtime);
///   compile       `cache/compile/<key>.<ENV>` when `envs/<key>/<ENV>` no longer exists.
CacheResult prune_cache(const Context& ctx, const CacheOptions& options);

}  // namespace envbox::ops
