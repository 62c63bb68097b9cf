#pragma once
/// The resolver's package source over real package indexes, with the index policy of
/// docs/ARCHITECTURE.md: a package pinned in `[sources]` comes only from its index; any other
/// package from the first non-explicit index that has it (no merging across indexes: a stale
/// `requests` on the PyTorch index can never shadow PyPI's). Pages and metadata are fetched in
/// parallel ahead of the solver, by a fixed pool of `kFetchWorkers` threads however many
/// packages a resolution names (what the solver waits for goes ahead of speculative fetches).
/// An index's credentials go only to the index's own origin (scheme, host, port); every body
/// is bounded (index::kMaxPageBytes for pages, kMaxMetadataBytes for metadata files, the
/// page's size for a whole wheel when it gives one).

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <semaphore>
#include <string>
#include <vector>

#include "envbox/index/http.hpp"
#include "envbox/index/simple.hpp"
#include "envbox/pep/tags.hpp"
#include "envbox/resolve/fetch_pool.hpp"
#include "envbox/resolve/resolver.hpp"
#include "envbox/store/home.hpp"

namespace envbox::resolve {

struct IndexConfig {
    std::string name;
    std::string url;  ///< simple API base, without the trailing slash
    bool explicit_ = false;
    std::optional<std::string> ca;
    std::optional<std::string> username, password;
    /// HTTP statuses that mean "this index does not have the project" besides 404 and 410
    /// (the manifest's `ignore-error-codes`, as uv has): the next index is asked. 403 is one by
    /// default for download.pytorch.org, which answers so for projects it does not serve.
    std::vector<int> ignore_error_codes;
    /// False: the lock's exclude-newer does not apply to this index's files.
    bool exclude_newer = true;
    /// Set when this machine's mirror variable (`mirror_variable`, ENVBOX_INDEX_<NAME>_URL)
    /// replaced the manifest's URL (`canonical`, without the trailing slash) by `url`: the lock
    /// names the canonical index and its files as it would serve them (index::rebase_url), so
    /// its bytes do not depend on the mirror; create fetches through the mirror first.
    std::string canonical, mirror_variable;
    /// " (through the mirror ENVBOX_INDEX_<NAME>_URL sets)", or "" without one: what every
    /// error about this index adds.
    std::string mirror_note() const {
        return mirror_variable.empty() ? "" : " (through the mirror " + mirror_variable + " sets)";
    }
};

/// The file the lock will name for one package version, and where it came from: its wheel
/// for the target, or (`sdist`) its source distribution where builds are allowed and no wheel
/// serves the target.
struct ChosenWheel {
    index::IndexFile file;
    std::string index_name;
    std::string index_url;
    bool sdist = false;
};

/// A source distribution whose core metadata the resolver needs (no wheel serves the target).
struct SdistRequest {
    std::string name;  ///< normalised
    pep::Version version;
    index::IndexFile file;
    std::string sha256;  ///< the file's, as the lock records it (the index's, else hashed)
    std::optional<std::uint64_t> size;
    const IndexConfig* index = nullptr;  ///< its index (CA, credentials), when known
};

/// Source builds as a lock allows them: `allowed(name)` says whether a package may be locked
/// from its sdist; `metadata` gives an sdist's core metadata (its PKG-INFO where that is
/// static, else what a build of it says), and is called once per sdist URL.
struct SdistBuilds {
    std::function<bool(const std::string&)> allowed;
    std::function<std::string(const SdistRequest&)> metadata;
};

/// What the sources of one lock's targets fetch once for all of them: index pages (each
/// target reads its own wheels from the same page) and the METADATA of a wheel (a pure wheel
/// is every target's). The first to ask fetches; the others wait for its answer, or its error.
/// Thread-safe.
class SharedFetches {
  public:
    using Page = std::optional<Result<index::ProjectPage>>;
    /// The page at `url`, from `fetch` the first time it is asked for.
    Page page(const std::string& url, const std::function<Page()>& fetch);
    /// The METADATA of the wheel at `url`, from `fetch` the first time.
    std::string metadata(const std::string& url, const std::function<std::string()>& fetch);

  private:
    template <class T>
    T once(std::map<std::string, std::shared_future<T>>& done, const std::string& key,
           const std::function<T()>& fetch);
    std::mutex mutex_;
    std::map<std::string, std::shared_future<Page>> pages_;
    std::map<std::string, std::shared_future<std::string>> metadata_;
};

class IndexSource : public PackageSource {
  public:
    /// Caches metadata under `home.metadata_cache()`, keeps wheels it fetches whole in
    /// `home.downloads()` (where `create` looks), stages files in `home.tmp()`. `shared`, when
    /// given, is shared with the sources of the lock's other targets.
    IndexSource(index::HttpClient& http, std::vector<IndexConfig> indexes,
                std::map<std::string, std::string> pins, const pep::TargetTags& tags,
                std::string python_full_version, const store::Home& home,
                std::shared_ptr<SharedFetches> shared = nullptr);
    ~IndexSource() override;

    std::vector<Candidate> versions(const std::string& name) override;
    Dependencies dependencies(const std::string& name, const pep::Version& version) override;
    void prefetch_versions(const std::vector<std::string>& names) override;
    /// The index `name`'s versions came from, or for a package no index has, the ones asked.
    Origin origin(const std::string& name) override;
    /// Starts fetching the metadata of these versions (of packages whose pages are known).
    void prefetch(const std::vector<std::pair<std::string, pep::Version>>& wanted) override;
    /// Only files uploaded before `cutoff` (microseconds since the epoch, UTC) are candidates,
    /// by their PEP 700 `upload-time`; a file without one, on an index the setting applies to,
    /// is an error naming the index. Set before the first page is read.
    void exclude_newer(std::int64_t cutoff) { exclude_newer_ = cutoff; }
    /// Lets packages `builds.allowed` names be locked from their sdists (set before the first
    /// page is read); without it, a version with only an sdist is unusable, as it says.
    void allow_builds(SdistBuilds builds) { builds_ = std::move(builds); }
    /// Once the resolution is done: speculative prefetches not yet sent are dropped (what
    /// `chosen` and `digest_and_size` need was fetched during the resolution).
    void stop_prefetching() { cancelled_ = true; }

    /// The wheel chosen for name==version (after `versions(name)`).
    ChosenWheel chosen(const std::string& name, const pep::Version& version);
    /// The same as the lock names it: through a mirror, the canonical index's URL and the file's
    /// URL as that index would serve it (IndexConfig::canonical).
    ChosenWheel locked(const std::string& name, const pep::Version& version);
    /// Its sha256 and size, downloading the wheel when the index gave no sha256. The size is
    /// always known: from the index page, else from the range requests that read its
    /// METADATA (or what an earlier lock of the same sha256 learnt), else a HEAD, else the
    /// wheel itself, fetched whole and kept for `create`.
    std::pair<std::string, std::optional<std::uint64_t>> digest_and_size(
        const std::string& name, const pep::Version& version);

  private:
    struct VersionInfo {
        pep::Version version;
        std::optional<index::IndexFile> wheel;  ///< best-ranked compatible wheel
        std::optional<index::IndexFile> sdist;  ///< its sdist (a .tar.gz before a .zip)
        bool any_wheel = false, any_sdist = false, all_yanked = true;
        bool uploaded_after = false;  ///< it has files uploaded after exclude-newer
        /// The tags (`cp312-cp312-macosx_11_0_arm64`) of its wheels the target cannot use,
        /// each once, the first kMaxTagsShown: what "no wheel for the target" lists.
        std::vector<std::string> other_tags;
        std::size_t other_tag_count = 0;
        std::optional<std::string> requires_python;
    };
    struct Project {
        bool found = false;
        std::string index_name, index_url;
        std::vector<VersionInfo> versions;
    };

    /// The page of `name`, fetched once; `urgent`: the solver waits for it (ahead of prefetches).
    std::shared_future<std::shared_ptr<Project>> project_future(const std::string& name,
                                                                bool urgent = true);
    /// A request to `url` for index `ix` (may be null): its CA, and its credentials for its
    /// own origin only.
    static index::HttpRequest request_for(const IndexConfig* ix, std::string url);
    /// The index of that name (null when none is).
    const IndexConfig* index_named(const std::string& name) const;
    /// The indexes that may serve `name`, in the order they are asked (its pin, else every
    /// non-explicit one).
    std::vector<const IndexConfig*> index_order(const std::string& name) const;

    // ---- index_source.cpp: pages ---------------------------------------------------------
    /// The first index of `index_order` that has `name`, and its versions.
    std::shared_ptr<Project> fetch_project(const std::string& name);
    /// The page of `name` on `ix`; nothing when `ix` does not have it.
    std::optional<Result<index::ProjectPage>> read_page(const IndexConfig& ix,
                                                        const std::string& name);
    std::optional<Result<index::ProjectPage>> fetch_http_page(const IndexConfig& ix,
                                                              const std::string& name);
    /// The versions of `name` a page offers, each with its best-ranked wheel for the target.
    std::vector<VersionInfo> versions_on(index::ProjectPage& page, const std::string& name,
                                         const IndexConfig& ix) const;
    /// Whether exclude-newer leaves `f` out (its upload time is not before the cutoff).
    bool uploaded_after_cutoff(const index::IndexFile& f, const IndexConfig& ix,
                               const std::string& name) const;
    /// Starts on the metadata of the version the solver will most likely pick.
    void prefetch_likely(const std::string& name, const Project& project);
    const VersionInfo& version_info(const std::string& name, const pep::Version& version);
    /// Whether `name` may be locked from its sdist (`allow_builds`).
    bool may_build(const std::string& name) const;

    // ---- index_metadata.cpp: metadata, digests and sizes --------------------------------
    /// The metadata of name==version, fetched once (started on the first call).
    std::shared_future<Dependencies> metadata_future(const std::string& name,
                                                     const pep::Version& version,
                                                     bool urgent = true);
    /// Queues the metadata fetch of `key` (under `mutex_`).
    void start_metadata(const std::string& key, const std::string& name, const VersionInfo& v,
                        const Project& p, bool urgent);
    /// The dependencies of v's chosen wheel: its METADATA from the cache by the wheel's sha256,
    /// else from the index (then cached).
    Dependencies fetch_dependencies(const std::string& name, const VersionInfo& v,
                                    const Project& p);
    /// The dependencies of v's sdist, from `builds_.metadata` (once per sdist URL).
    Dependencies sdist_dependencies(const std::string& name, const VersionInfo& v,
                                    const Project& p);
    /// METADATA from the index: its metadata file, else range requests on the wheel, else the
    /// whole wheel.
    std::string fetch_metadata(const index::IndexFile& wheel, const IndexConfig* ix,
                               const std::optional<std::string>& sha256);
    std::string read_metadata_file(const index::IndexFile& wheel, const IndexConfig* ix);
    std::string read_metadata_by_ranges(const index::IndexFile& wheel, const IndexConfig* ix,
                                        const std::optional<std::string>& sha256);
    std::string read_metadata_from_wheel(const index::IndexFile& wheel, const IndexConfig* ix);
    /// Requires-Dist, Provides-Extra, and whether Requires-Python rules the version out.
    Dependencies dependencies_from(const std::string& metadata, const std::string& filename) const;
    /// A new file name in the staging folder (created): `<prefix>-<pid>-<n>.whl`.
    std::filesystem::path staging_path(const char* prefix) const;
    /// Moves a whole wheel fetched while locking (from `url`) to where `create` finds it
    /// (cache/downloads), and remembers its digest and size for `digest_and_size`.
    void keep_download(const std::filesystem::path& file, const std::string& digest,
                       const std::string& url, std::uint64_t size);
    /// The size of a wheel whose sha256 the index gave but whose size it did not.
    std::optional<std::uint64_t> known_size(const ChosenWheel& c, const std::string& sha256);
    /// Remembers `size` for `url` (and on disk beside the cached METADATA of `sha256`, when known).
    void remember_size(const std::string& url, const std::optional<std::string>& sha256,
                       std::uint64_t size);
    /// Where the METADATA of the wheel with this sha256 (64 hex digits) is cached; `<it>.size`
    /// beside it holds the wheel's byte count once known. Both never change for a given sha256.
    std::filesystem::path metadata_cache(const std::string& sha256) const;
    std::filesystem::path size_cache(const std::string& sha256) const;

    index::HttpClient& http_;
    std::shared_ptr<SharedFetches> shared_;
    std::vector<IndexConfig> indexes_;
    std::map<std::string, std::string> pins_;
    const pep::TargetTags& tags_;
    std::string python_full_;
    pep::Version python_version_;
    std::optional<std::int64_t> exclude_newer_;  ///< the cutoff, when set
    SdistBuilds builds_;                         ///< none: sdists are never chosen
    store::Home home_;
    std::mutex mutex_;
    std::map<std::string, std::shared_future<std::shared_ptr<Project>>> projects_;
    std::map<std::string, std::shared_future<Dependencies>> metadata_;
    /// The pool's jobs of those futures, to move one ahead when the solver waits for it.
    std::map<std::string, std::shared_ptr<FetchPool::Job>> project_jobs_, metadata_jobs_;
    /// Wheels fetched whole while locking: url → (sha256, size).
    std::map<std::string, std::pair<std::string, std::optional<std::uint64_t>>> fetched_whole_;
    /// Sizes learnt from range answers (url → bytes), for pages that give none.
    std::map<std::string, std::uint64_t> sizes_;
    std::counting_semaphore<64> slots_{32};  ///< requests in flight at once
    std::atomic<bool> cancelled_{false};     ///< set when the source goes: queued prefetches stop
    FetchPool pool_{kFetchWorkers};          ///< last: its threads stop before the rest goes
};

}  // namespace envbox::resolve
