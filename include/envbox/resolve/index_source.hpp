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
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <semaphore>
#include <string>
#include <thread>
#include <vector>

#include "envbox/index/http.hpp"
#include "envbox/index/simple.hpp"
#include "envbox/pep/tags.hpp"
#include "envbox/resolve/resolver.hpp"

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
};

/// The file the lock will name for one package version, and where it came from.
struct ChosenWheel {
    index::IndexFile file;
    std::string index_name;
    std::string index_url;
};

/// Threads fetching pages and metadata at once.
inline constexpr unsigned kFetchWorkers = 32;

/// A fixed set of worker threads running queued jobs in order; a job can be moved to the front
/// (the solver waits for it). The destructor runs what is queued, then joins.
class FetchPool {
  public:
    struct Job {
        std::function<void()> run;
        std::atomic<bool> taken{false};
    };
    explicit FetchPool(unsigned workers);
    ~FetchPool();
    FetchPool(const FetchPool&) = delete;
    FetchPool& operator=(const FetchPool&) = delete;

    /// Queues `f` (at the front when `urgent`); its result or exception comes by the future.
    template <class T>
    std::pair<std::shared_future<T>, std::shared_ptr<Job>> submit(std::function<T()> f,
                                                                  bool urgent) {
        auto task = std::make_shared<std::packaged_task<T()>>(std::move(f));
        auto future = task->get_future().share();
        auto job = std::make_shared<Job>();
        job->run = [task] { (*task)(); };
        push(job, urgent);
        return {future, job};
    }
    /// Moves a queued job to the front (nothing when it has started).
    void promote(const std::shared_ptr<Job>& job);

  private:
    void push(std::shared_ptr<Job> job, bool urgent);
    void work();
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::shared_ptr<Job>> queue_;
    bool stop_ = false;
    std::vector<std::thread> threads_;
};

class IndexSource : public PackageSource {
  public:
    IndexSource(index::HttpClient& http, std::vector<IndexConfig> indexes,
                std::map<std::string, std::string> pins, const pep::TargetTags& tags,
                std::string python_full_version, std::filesystem::path tmp_dir);
    ~IndexSource() override;

    std::vector<Candidate> versions(const std::string& name) override;
    Dependencies dependencies(const std::string& name, const pep::Version& version) override;
    void prefetch_versions(const std::vector<std::string>& names) override;
    /// Starts fetching the metadata of these versions (of packages whose pages are known).
    void prefetch(const std::vector<std::pair<std::string, pep::Version>>& wanted) override;
    /// Once the resolution is done: speculative prefetches not yet sent are dropped (what
    /// `chosen` and `digest_and_size` need was fetched during the resolution).
    void stop_prefetching() { cancelled_ = true; }

    /// The wheel chosen for name==version (after `versions(name)`).
    ChosenWheel chosen(const std::string& name, const pep::Version& version);
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
        bool any_wheel = false, any_sdist = false, all_yanked = true;
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
    /// Moves a whole wheel fetched while locking (from `url`) to where `create` finds it
    /// (cache/downloads), and remembers its digest and size for `digest_and_size`.
    void keep_download(const std::filesystem::path& file, const std::string& digest,
                       const std::string& url, std::uint64_t size);
    std::shared_ptr<Project> fetch_project(const std::string& name);
    /// The metadata of name==version, fetched once (started on the first call).
    std::shared_future<Dependencies> metadata_future(const std::string& name,
                                                     const pep::Version& version,
                                                     bool urgent = true);
    /// Queues the metadata fetch of `key` (under `mutex_`).
    void start_metadata(const std::string& key, const std::string& name, const VersionInfo& v,
                        const Project& p, bool urgent);
    /// The size of a wheel whose sha256 the index gave but whose size it did not.
    std::optional<std::uint64_t> known_size(const ChosenWheel& c, const std::string& sha256);
    /// Remembers `size` for `url` (and on disk beside the cached METADATA of `sha256`, when known).
    void remember_size(const std::string& url, const std::optional<std::string>& sha256,
                       std::uint64_t size);
    Dependencies fetch_dependencies(const std::string& name, const VersionInfo& v,
                                    const Project& p);
    const VersionInfo& version_info(const std::string& name, const pep::Version& version);

    index::HttpClient& http_;
    std::vector<IndexConfig> indexes_;
    std::map<std::string, std::string> pins_;
    const pep::TargetTags& tags_;
    std::string python_full_;
    pep::Version python_version_;
    std::filesystem::path tmp_dir_;
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
