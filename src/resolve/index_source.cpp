#include "envbox/resolve/index_source.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>

#include "envbox/index/fetch.hpp"
#include "envbox/index/lazy_wheel.hpp"
#include "envbox/pep/digest.hpp"
#include "envbox/pep/filename.hpp"
#include "envbox/pep/metadata.hpp"
#include "envbox/pep/name.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/sha256.hpp"

namespace fs = std::filesystem;

namespace envbox::resolve {
namespace {

constexpr const char* kAccept =
    "Accept: application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, "
    "text/html;q=0.01";

// One of the requests allowed in flight; none is started once the source is being torn down
// (a resolution that has finished leaves its speculative prefetches unsent).
struct Slot {
    std::counting_semaphore<64>& s;
    Slot(std::counting_semaphore<64>& sem, const std::atomic<bool>& cancelled) : s(sem) {
        s.acquire();
        if (cancelled) {
            s.release();
            throw Error(ErrorCode::generic, "prefetch cancelled: the resolution has finished");
        }
    }
    ~Slot() { s.release(); }
};

// A sha256 from an index page names cache files: only 64 hex digits are taken as one.
bool is_hex_digest(const std::string& s) {
    return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// The host of an absolute URL, lowercased ("download.pytorch.org").
std::string host_of(const std::string& url) {
    auto start = url.find("://");
    if (start == std::string::npos) return "";
    start += 3;
    auto end = url.find_first_of("/?#", start);
    std::string authority =
        url.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (auto at = authority.rfind('@'); at != std::string::npos) authority.erase(0, at + 1);
    if (auto colon = authority.find(':'); colon != std::string::npos) authority.erase(colon);
    for (auto& ch : authority)
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return authority;
}

// Whether a page's status says "this index does not have the project", so the next is asked.
bool means_not_here(const IndexConfig& ix, long status) {
    if (status == 404 || status == 410) return true;
    if (std::find(ix.ignore_error_codes.begin(), ix.ignore_error_codes.end(), status) !=
        ix.ignore_error_codes.end())
        return true;
    // The PyTorch indexes answer 403 for every project they do not serve.
    return status == 403 && host_of(ix.url) == "download.pytorch.org";
}

// Where the METADATA of the wheel with this sha256 is cached; `<it>.size` beside it holds the
// wheel's byte count once known. Both never change for a given sha256.
fs::path metadata_cache(const fs::path& tmp_dir, const std::string& sha256) {
    return tmp_dir.parent_path() / "cache" / "metadata" / sha256.substr(0, 2) /
           (sha256.substr(2) + ".METADATA");
}

fs::path size_cache(const fs::path& tmp_dir, const std::string& sha256) {
    fs::path p = metadata_cache(tmp_dir, sha256);
    p.replace_extension(".size");
    return p;
}

}  // namespace

FetchPool::FetchPool(unsigned workers) {
    for (unsigned i = 0; i < workers; ++i)
        threads_.emplace_back([this] { work(); });
}

FetchPool::~FetchPool() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_)
        t.join();
}

void FetchPool::push(std::shared_ptr<Job> job, bool urgent) {
    {
        std::lock_guard lock(mutex_);
        if (urgent)
            queue_.push_front(std::move(job));
        else
            queue_.push_back(std::move(job));
    }
    wake_.notify_one();
}

void FetchPool::promote(const std::shared_ptr<Job>& job) {
    // Queued once more at the front; whichever copy a worker reaches first runs it.
    if (job && !job->taken) push(job, true);
}

void FetchPool::work() {
    for (;;) {
        std::shared_ptr<Job> job;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
            if (queue_.empty()) return;  // stopping, and nothing left
            job = std::move(queue_.front());
            queue_.pop_front();
        }
        if (!job->taken.exchange(true)) job->run();
    }
}

index::HttpRequest IndexSource::request_for(const IndexConfig* ix, std::string url) {
    index::HttpRequest r;
    r.url = std::move(url);
    if (!ix) return r;
    r.ca_file = ix->ca;
    r.username = ix->username;
    r.password = ix->password;
    r.credential_origin = index::url_origin(ix->url);
    return r;
}

IndexSource::IndexSource(index::HttpClient& http, std::vector<IndexConfig> indexes,
                         std::map<std::string, std::string> pins, const pep::TargetTags& tags,
                         std::string python_full_version, fs::path tmp_dir)
    : http_(http),
      indexes_(std::move(indexes)),
      pins_(std::move(pins)),
      tags_(tags),
      python_full_(std::move(python_full_version)),
      python_version_(pep::Version::parse(python_full_).value()),
      tmp_dir_(std::move(tmp_dir)) {}

IndexSource::~IndexSource() {
    // Speculative prefetches still queued send nothing; wait for those in flight (they use
    // this object).
    cancelled_ = true;
    std::vector<std::shared_future<std::shared_ptr<Project>>> p;
    std::vector<std::shared_future<Dependencies>> m;
    {
        std::lock_guard lock(mutex_);
        for (auto& [_, f] : projects_)
            p.push_back(f);
        for (auto& [_, f] : metadata_)
            m.push_back(f);
    }
    for (auto& f : p)
        f.wait();
    for (auto& f : m)
        f.wait();
}

std::shared_future<std::shared_ptr<IndexSource::Project>> IndexSource::project_future(
    const std::string& name, bool urgent) {
    std::lock_guard lock(mutex_);
    auto it = projects_.find(name);
    if (it != projects_.end()) {
        if (urgent) pool_.promote(project_jobs_[name]);
        return it->second;
    }
    auto [f, job] = pool_.submit<std::shared_ptr<Project>>(
        [this, name] { return fetch_project(name); }, urgent);
    projects_.emplace(name, f);
    project_jobs_[name] = job;
    return f;
}

void IndexSource::prefetch_versions(const std::vector<std::string>& names) {
    for (const auto& n : names)
        project_future(n, /*urgent=*/false);
}

void IndexSource::start_metadata(const std::string& key, const std::string& name,
                                 const VersionInfo& v, const Project& p, bool urgent) {
    auto [f, job] = pool_.submit<Dependencies>(
        [this, name, v, p] { return fetch_dependencies(name, v, p); }, urgent);
    metadata_[key] = f;
    metadata_jobs_[key] = job;
}

std::shared_ptr<IndexSource::Project> IndexSource::fetch_project(const std::string& name) {
    auto project = std::make_shared<Project>();
    std::vector<const IndexConfig*> order;
    if (auto pin = pins_.find(name); pin != pins_.end()) {
        for (const auto& i : indexes_)
            if (i.name == pin->second) order.push_back(&i);
    } else {
        for (const auto& i : indexes_)
            if (!i.explicit_) order.push_back(&i);
    }
    for (const IndexConfig* ix : order) {
        std::string page_url = ix->url + "/" + name + "/";
        Result<index::ProjectPage> page = index::ProjectPage{};
        if (page_url.starts_with("file:")) {
            // A file:// index is a simple-API tree (<name>/index.html) or, like pip's
            // --find-links, a flat directory of wheels and sdists.
            fs::path root = index::file_url_path(ix->url + "/");
            fs::path dir = index::file_url_path(page_url);
            std::error_code ec;
            if (fs::exists(dir / "index.html", ec)) {
                page = index::parse_html_page(read_file(dir / "index.html"), page_url);
            } else if (fs::is_directory(root, ec)) {
                index::ProjectPage flat;
                for (const auto& e : fs::directory_iterator(root, ec)) {
                    std::string fn = e.path().filename().string();
                    std::optional<std::string> owner;
                    if (fn.ends_with(".whl")) {
                        if (auto w = pep::WheelFilename::parse(fn)) owner = w->canonical_name;
                    } else if (auto sd = pep::SdistFilename::parse(fn)) {
                        owner = sd->canonical_name;
                    }
                    if (owner != name) continue;
                    index::IndexFile f;
                    f.filename = fn;
                    f.url = "file://" + e.path().string();
                    flat.files.push_back(std::move(f));
                }
                if (flat.files.empty()) continue;
                std::sort(flat.files.begin(), flat.files.end(),
                          [](const index::IndexFile& a, const index::IndexFile& b) {
                              return a.filename < b.filename;
                          });
                page = std::move(flat);
            } else {
                continue;
            }
        } else {
            index::HttpResponse r;
            {
                Slot slot(slots_, cancelled_);
                index::HttpRequest req = request_for(ix, page_url);
                req.headers = {kAccept};
                req.cache = true;
                req.max_bytes_what = "an index page";
                r = http_.get(req);
            }
            if (means_not_here(*ix, r.status)) continue;
            if (r.status != 200)
                throw Error(ErrorCode::network,
                            "index " + ix->name + " answered HTTP " + std::to_string(r.status) +
                                " for " + index::redact_url(page_url) +
                                (r.status == 401 || r.status == 403
                                     ? " (if it answers so for projects it does not have, give it "
                                       "ignore-error-codes = [" +
                                           std::to_string(r.status) + "] in the manifest)"
                                     : ""));
            // The content type decides; a JSON page served as text/plain is still JSON.
            std::string_view body = r.body;
            while (!body.empty() && std::isspace(static_cast<unsigned char>(body.front())))
                body.remove_prefix(1);
            bool json = r.content_type.find("json") != std::string::npos ||
                        (r.content_type.find("html") == std::string::npos && body.starts_with("{"));
            page = json ? index::parse_json_page(r.body, r.effective_url)
                        : index::parse_html_page(r.body, r.effective_url);
        }
        if (!page) throw page.error();
        project->found = true;
        project->index_name = ix->name;
        project->index_url = ix->url;
        std::map<std::string, VersionInfo> by_version;  // normalised version text
        std::map<std::string, std::size_t> best_rank;
        for (auto& f : page->files) {
            std::optional<pep::Version> v;
            bool is_wheel = f.filename.ends_with(".whl");
            std::optional<std::size_t> rank;
            if (is_wheel) {
                auto w = pep::WheelFilename::parse(f.filename);
                if (!w || w->canonical_name != name) continue;
                v = w->version;
                for (const auto& t : w->tags)
                    if (auto r = tags_.rank(t); r && (!rank || *r < *rank)) rank = r;
            } else {
                auto sd = pep::SdistFilename::parse(f.filename);
                if (!sd || sd->canonical_name != name) continue;
                v = sd->version;
            }
            std::string key = v->str();
            auto [it, fresh] = by_version.try_emplace(key);
            VersionInfo& info = it->second;
            if (fresh) info.version = *v;
            info.all_yanked = info.all_yanked && f.yanked;
            if (is_wheel)
                info.any_wheel = true;
            else
                info.any_sdist = true;
            if (rank && (!best_rank.count(key) || *rank < best_rank[key])) {
                best_rank[key] = *rank;
                info.requires_python = f.requires_python;
                info.wheel = std::move(f);
            }
        }
        for (auto& [_, info] : by_version)
            project->versions.push_back(std::move(info));
        break;
    }
    // Start on the metadata of the version the solver will most likely pick: the newest usable
    // stable one.
    if (project->found) {
        const VersionInfo* likely = nullptr;
        for (const auto& v : project->versions) {
            if (!v.wheel || v.all_yanked || v.version.is_prerelease()) continue;
            if (v.requires_python) {
                auto spec = pep::SpecifierSet::parse(*v.requires_python);
                if (spec && !spec->contains(python_version_, true)) continue;
            }
            if (!likely || likely->version < v.version) likely = &v;
        }
        if (likely) {
            std::string key = name + "==" + likely->version.str();
            std::lock_guard lock(mutex_);
            if (!metadata_.count(key))
                start_metadata(key, name, *likely, *project, /*urgent=*/false);
        }
    }
    return project;
}

std::vector<Candidate> IndexSource::versions(const std::string& name) {
    auto project = project_future(name).get();
    std::vector<Candidate> out;
    for (const auto& v : project->versions) {
        Candidate c;
        c.version = v.version;
        c.yanked = v.all_yanked;
        if (!v.wheel) {
            c.unusable = v.any_wheel ? "has no wheel for the target (CPython " + python_full_ +
                                           ", " + tags_.tags().front().str() + ")"
                                     : "has only a source distribution (envbox installs wheels)";
        } else if (v.requires_python) {
            auto spec = pep::SpecifierSet::parse(*v.requires_python);
            if (spec && !spec->contains(python_version_, true))
                c.unusable = "requires Python " + *v.requires_python + " (the target is " +
                             python_full_ + ")";
        }
        out.push_back(std::move(c));
    }
    return out;
}

const IndexSource::VersionInfo& IndexSource::version_info(const std::string& name,
                                                          const pep::Version& version) {
    auto project = project_future(name).get();
    for (const auto& v : project->versions)
        if (v.version == version) return v;
    throw Error(ErrorCode::generic,
                "resolver asked for " + name + " " + version.str() + ", which no index offers");
}

std::shared_future<Dependencies> IndexSource::metadata_future(const std::string& name,
                                                              const pep::Version& version,
                                                              bool urgent) {
    std::string key = name + "==" + version.str();
    {
        std::lock_guard lock(mutex_);
        auto it = metadata_.find(key);
        if (it != metadata_.end()) {
            if (urgent) pool_.promote(metadata_jobs_[key]);
            return it->second;
        }
    }
    VersionInfo v = version_info(name, version);
    Project p = *project_future(name).get();
    std::lock_guard lock(mutex_);
    if (!metadata_.count(key)) start_metadata(key, name, v, p, urgent);
    return metadata_[key];
}

Dependencies IndexSource::dependencies(const std::string& name, const pep::Version& version) {
    return metadata_future(name, version).get();
}

void IndexSource::prefetch(const std::vector<std::pair<std::string, pep::Version>>& wanted) {
    for (const auto& [name, version] : wanted)
        metadata_future(name, version, /*urgent=*/false);
}

Dependencies IndexSource::fetch_dependencies(const std::string& name, const VersionInfo& v,
                                             const Project& p) {
    if (!v.wheel)
        throw Error(ErrorCode::generic,
                    name + " " + v.version.str() + " has no wheel for the target");
    const index::IndexFile& wheel = *v.wheel;
    const IndexConfig* ix = nullptr;
    for (const auto& i : indexes_)
        if (i.name == p.index_name) ix = &i;
    std::string text;
    // Metadata of a wheel known by its sha256 never changes: kept on disk by that digest.
    std::optional<fs::path> cached;
    std::optional<std::string> sha;
    if (auto h = wheel.hashes.find("sha256"); h != wheel.hashes.end() && is_hex_digest(h->second)) {
        sha = h->second;
        cached = metadata_cache(tmp_dir_, h->second);
    }
    std::error_code ec;
    if (cached && fs::exists(*cached, ec)) {
        text = read_file(*cached);
    } else
        try {
            if (wheel.has_metadata) {
                Slot slot(slots_, cancelled_);
                index::HttpRequest req = request_for(ix, wheel.url + ".metadata");
                req.cache = true;
                req.max_bytes = index::kMaxMetadataBytes;
                req.max_bytes_what = "a metadata file";
                auto r = http_.get(req);
                if (r.status != 200)
                    throw Error(ErrorCode::network, "HTTP " + std::to_string(r.status) + " for " +
                                                        index::redact_url(wheel.url) + ".metadata");
                if (auto h = wheel.metadata_hashes.find("sha256");
                    h != wheel.metadata_hashes.end() && to_hex(sha256(r.body)) != h->second)
                    throw Error(ErrorCode::integrity, "metadata file of " + wheel.filename +
                                                          " does not match its sha256");
                text = std::move(r.body);
            } else if (!wheel.url.starts_with("file:")) {
                // No metadata file: read METADATA out of the remote wheel with range requests.
                Slot slot(slots_, cancelled_);
                std::string whole;
                std::optional<std::uint64_t> size;
                auto meta = index::read_remote_dist_info(http_, request_for(ix, wheel.url),
                                                         "METADATA", &whole, &size);
                if (size) remember_size(wheel.url, sha, *size);
                if (!whole.empty()) {
                    // The server sent the whole wheel: kept for `digest_and_size` and for create.
                    const std::string digest = to_hex(sha256(whole));
                    if (auto h = wheel.hashes.find("sha256");
                        h != wheel.hashes.end() && digest != h->second)
                        throw Error(ErrorCode::integrity,
                                    wheel.filename + " does not match the sha256 its index gives");
                    fs::create_directories(tmp_dir_);
                    static std::atomic<unsigned> counter{0};
                    fs::path tmp = tmp_dir_ / ("whole-" + std::to_string(::getpid()) + "-" +
                                               std::to_string(counter++) + ".whl");
                    ScopedRemove remove(tmp);
                    write_file_atomic(tmp, whole, 0644, Durability::none);
                    keep_download(tmp, digest, wheel.url, whole.size());
                }
                if (meta) text = std::move(*meta);
            }
            if (text.empty() && !wheel.has_metadata) {
                // A local (file://) wheel, or a server without ranges: the whole wheel.
                fs::create_directories(tmp_dir_);
                static std::atomic<unsigned> counter{0};
                fs::path tmp = tmp_dir_ / ("metadata-" + std::to_string(::getpid()) + "-" +
                                           std::to_string(counter++) + ".whl");
                ScopedRemove remove(tmp);
                if (wheel.url.starts_with("file:")) {
                    fs::copy_file(index::file_url_path(wheel.url), tmp);
                } else {
                    Slot slot(slots_, cancelled_);
                    index::HttpRequest req = request_for(ix, wheel.url);
                    if (wheel.size) {
                        req.max_bytes = *wheel.size;
                        req.max_bytes_what = "the index's size";
                    }
                    http_.download(req, tmp);
                }
                const std::string digest = to_hex(sha256_file(tmp));
                if (auto h = wheel.hashes.find("sha256");
                    h != wheel.hashes.end() && digest != h->second)
                    throw Error(ErrorCode::integrity,
                                wheel.filename + " does not match the sha256 its index gives");
                auto meta = store::read_dist_info_file(tmp, "METADATA");
                if (!meta) throw Error(ErrorCode::integrity, wheel.filename + " has no METADATA");
                text = std::move(*meta);
                if (!wheel.url.starts_with("file:"))
                    keep_download(tmp, digest, wheel.url, fs::file_size(tmp));
            }
            if (cached) {
                fs::create_directories(cached->parent_path(), ec);
                try {
                    write_file_atomic(*cached, text, 0644, Durability::none);
                } catch (const Error&) {
                    // an unwritable cache only costs a request next time
                }
            }
        } catch (Error& e) {
            e.add_context("reading the metadata of " + name + " " + v.version.str());
            throw;
        }
    auto meta = pep::CoreMetadata::parse(text);
    if (!meta) {
        Error e = meta.error();
        e.add_context("reading the metadata of " + wheel.filename);
        throw e;
    }
    Dependencies d;
    d.requires_dist = meta->requires_dist;
    for (const auto& e : meta->provides_extra)
        d.provides_extra.insert(e);
    // The metadata's Requires-Python binds even where the index page carries none (private
    // mirrors, flat directories, PyTorch-index pages).
    if (meta->requires_python && !meta->requires_python->contains(python_version_, true))
        d.unusable = "requires Python " + meta->requires_python->str() + " (the target is " +
                     python_full_ + ")";
    return d;
}

ChosenWheel IndexSource::chosen(const std::string& name, const pep::Version& version) {
    const VersionInfo& v = version_info(name, version);
    auto p = project_future(name).get();
    return {*v.wheel, p->index_name, p->index_url};
}

std::pair<std::string, std::optional<std::uint64_t>> IndexSource::digest_and_size(
    const std::string& name, const pep::Version& version) {
    ChosenWheel c = chosen(name, version);
    std::optional<std::string> given;
    if (auto h = c.file.hashes.find("sha256"); h != c.file.hashes.end())
        given = pep::ascii_lower(h->second);
    if (given && !pep::is_sha256_hex(*given))  // it would be written into the lock, and name files
        throw Error(ErrorCode::network,
                    "the index gives " + c.file.filename + " a sha256 that is not 64 hex digits");
    if (given && c.file.size) return {*given, c.file.size};
    if (given)
        if (auto size = known_size(c, *given)) return {*given, size};
    // An index that gives no hash, or no way to learn the size: the wheel itself is hashed (a
    // local one in place).
    if (c.file.url.starts_with("file:")) {
        fs::path local = index::file_url_path(c.file.url);
        return {to_hex(sha256_file(local)), fs::file_size(local)};
    }
    {
        std::lock_guard lock(mutex_);
        if (auto it = fetched_whole_.find(c.file.url); it != fetched_whole_.end())
            return it->second;
    }
    const IndexConfig* ix = nullptr;
    for (const auto& i : indexes_)
        if (i.name == c.index_name) ix = &i;
    fs::create_directories(tmp_dir_);
    static std::atomic<unsigned> counter{0};
    fs::path tmp = tmp_dir_ / ("digest-" + std::to_string(::getpid()) + "-" +
                               std::to_string(counter++) + ".whl");
    ScopedRemove remove(tmp);
    index::HttpRequest req = request_for(ix, c.file.url);
    if (c.file.size) {
        req.max_bytes = *c.file.size;
        req.max_bytes_what = "the index's size";
    }
    http_.download(req, tmp);
    std::string digest = to_hex(sha256_file(tmp));
    if (given && digest != *given)
        throw Error(ErrorCode::integrity,
                    c.file.filename + " does not match the sha256 its index gives");
    std::uint64_t size = fs::file_size(tmp);
    keep_download(tmp, digest, c.file.url, size);
    return {digest, size};
}

std::optional<std::uint64_t> IndexSource::known_size(const ChosenWheel& c,
                                                     const std::string& sha256) {
    std::error_code ec;
    if (c.file.url.starts_with("file:")) {
        auto size = fs::file_size(index::file_url_path(c.file.url), ec);
        return ec ? std::nullopt : std::optional<std::uint64_t>(size);
    }
    {
        std::lock_guard lock(mutex_);
        if (auto it = sizes_.find(c.file.url); it != sizes_.end()) return it->second;
        if (auto it = fetched_whole_.find(c.file.url); it != fetched_whole_.end())
            return it->second.second;
    }
    if (is_hex_digest(sha256)) {
        // Learnt by an earlier lock of the same file (its METADATA then came from the cache).
        fs::path p = size_cache(tmp_dir_, sha256);
        if (fs::exists(p, ec)) {
            try {
                std::string text = read_file(p);
                if (!text.empty() && text.size() < 20 &&
                    text.find_first_not_of("0123456789") == std::string::npos)
                    return std::strtoull(text.c_str(), nullptr, 10);
            } catch (const Error&) {
                // unreadable: asked again below
            }
        }
    }
    const IndexConfig* ix = nullptr;
    for (const auto& i : indexes_)
        if (i.name == c.index_name) ix = &i;
    try {
        index::HttpRequest head = request_for(ix, c.file.url);
        head.head = true;
        auto r = http_.get(head);
        if (r.status == 200 && r.content_length && *r.content_length > 0) {
            remember_size(c.file.url, sha256, *r.content_length);
            return r.content_length;
        }
    } catch (const Error&) {
        // no HEAD (offline, a server that refuses it): the caller fetches the wheel
    }
    return std::nullopt;
}

void IndexSource::remember_size(const std::string& url, const std::optional<std::string>& sha256,
                                std::uint64_t size) {
    {
        std::lock_guard lock(mutex_);
        sizes_[url] = size;
    }
    if (!sha256 || !is_hex_digest(*sha256)) return;
    fs::path p = size_cache(tmp_dir_, *sha256);
    std::error_code ec;
    fs::create_directories(p.parent_path(), ec);
    try {
        write_file_atomic(p, std::to_string(size), 0644, Durability::none);
    } catch (const Error&) {
        // an unwritable cache only costs a HEAD next time
    }
}

void IndexSource::keep_download(const fs::path& file, const std::string& digest,
                                const std::string& url, std::uint64_t size) {
    {
        std::lock_guard lock(mutex_);
        fetched_whole_[url] = {digest, size};
    }
    // Where `create` looks before downloading (index::download_path): the wheel is not fetched
    // twice.
    std::error_code ec;
    fs::path dir = tmp_dir_.parent_path() / "cache" / "downloads";
    fs::create_directories(dir, ec);
    fs::path dest = index::download_path(dir, digest);
    if (!fs::exists(dest, ec)) fs::rename(file, dest, ec);
}

}  // namespace envbox::resolve
