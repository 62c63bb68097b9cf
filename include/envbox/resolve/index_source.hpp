#pragma once
/// The resolver's package source over real package indexes, with the index policy of
/// docs/ARCHITECTURE.md: a package pinned in `[sources]` comes only from its index; any other
/// package from the first non-explicit index that has it (no merging across indexes: a stale
/// `requests` on the PyTorch index can never shadow PyPI's). Pages and metadata are fetched in
/// parallel ahead of the solver.

#include <filesystem>
#include <atomic>
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

class IndexSource : public PackageSource {
public:
    IndexSource(index::HttpClient& http, std::vector<IndexConfig> indexes, std::map<std::string, std::string> pins,
                const pep::TargetTags& tags, std::string python_full_version, std::filesystem::path tmp_dir);
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
    std::pair<std::string, std::optional<std::uint64_t>> digest_and_size(const std::string& name,
                                                                         const pep::Version& version);

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

    std::shared_future<std::shared_ptr<Project>> project_future(const std::string& name);
    /// Moves a whole wheel fetched while locking (from `url`) to where `create` finds it
    /// (cache/downloads), and remembers its digest and size for `digest_and_size`.
    void keep_download(const std::filesystem::path& file, const std::string& digest, const std::string& url,
                       std::uint64_t size);
    std::shared_ptr<Project> fetch_project(const std::string& name);
    /// The metadata of name==version, fetched once (started on the first call).
    std::shared_future<Dependencies> metadata_future(const std::string& name, const pep::Version& version);
    /// The size of a wheel whose sha256 the index gave but whose size it did not.
    std::optional<std::uint64_t> known_size(const ChosenWheel& c, const std::string& sha256);
    /// Remembers `size` for `url` (and on disk beside the cached METADATA of `sha256`, when known).
    void remember_size(const std::string& url, const std::optional<std::string>& sha256, std::uint64_t size);
    Dependencies fetch_dependencies(const std::string& name, const VersionInfo& v, const Project& p);
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
    /// Wheels fetched whole while locking: url → (sha256, size).
    std::map<std::string, std::pair<std::string, std::optional<std::uint64_t>>> fetched_whole_;
    /// Sizes learnt from range answers (url → bytes), for pages that give none.
    std::map<std::string, std::uint64_t> sizes_;
    std::counting_semaphore<64> slots_{32};  ///< requests in flight at once
    std::atomic<bool> cancelled_{false};     ///< set when the source goes: queued prefetches stop
};

}  // namespace envbox::resolve
