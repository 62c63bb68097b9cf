#include <atomic>
#include <tuple>

#include "envbox/index/fetch.hpp"
#include "envbox/index/lazy_wheel.hpp"
#include "envbox/index/url.hpp"
#include "envbox/pep/digest.hpp"
#include "envbox/pep/metadata.hpp"
#include "envbox/pep/name.hpp"
#include "envbox/resolve/index_source.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/sha256.hpp"
#include "resolve/request_slot.hpp"

// IndexSource: each version's metadata (a PEP 658 metadata file, else range requests on the
// wheel, else the whole wheel), and the digest and size the lock records for its wheel.

namespace fs = std::filesystem;

namespace envbox::resolve {

fs::path IndexSource::metadata_cache(const std::string& sha256) const {
    return home_.metadata_cache() / sha256.substr(0, 2) / (sha256.substr(2) + ".METADATA");
}

fs::path IndexSource::size_cache(const std::string& sha256) const {
    fs::path p = metadata_cache(sha256);
    p.replace_extension(".size");
    return p;
}

fs::path IndexSource::staging_path(const char* prefix) const {
    fs::create_directories(home_.tmp());
    static std::atomic<unsigned> counter{0};
    return home_.tmp() / (std::string(prefix) + "-" + std::to_string(::getpid()) + "-" +
                          std::to_string(counter++) + ".whl");
}

void IndexSource::start_metadata(const std::string& key, const std::string& name,
                                 const VersionInfo& v, const Project& p, bool urgent) {
    auto [f, job] = pool_.submit<Dependencies>(
        [this, name, v, p] { return fetch_dependencies(name, v, p); }, urgent);
    metadata_[key] = f;
    metadata_jobs_[key] = job;
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
        if (version_info(name, version).wheel)  // an sdist's metadata may cost a build
            metadata_future(name, version, /*urgent=*/false);
}

Dependencies IndexSource::sdist_dependencies(const std::string& name, const VersionInfo& v,
                                             const Project& p) {
    SdistRequest request{name, v.version, *v.sdist, {}, {}, index_named(p.index_name)};
    auto fetch = [&] { return builds_.metadata(request); };
    std::string text;
    try {
        std::tie(request.sha256, request.size) = digest_and_size(name, v.version);
        text = shared_ ? shared_->metadata(v.sdist->url, fetch) : fetch();
    } catch (Error& e) {
        e.add_context("reading the metadata of " + name + " " + v.version.str() + " from " +
                      v.sdist->filename);
        throw;
    }
    return dependencies_from(text, v.sdist->filename);
}

Dependencies IndexSource::fetch_dependencies(const std::string& name, const VersionInfo& v,
                                             const Project& p) {
    if (!v.wheel && v.sdist && may_build(name)) return sdist_dependencies(name, v, p);
    if (!v.wheel)
        throw Error(ErrorCode::generic,
                    name + " " + v.version.str() + " has no wheel for the target");
    const index::IndexFile& wheel = *v.wheel;
    // Metadata of a wheel known by its sha256 never changes: kept on disk by that digest.
    std::optional<fs::path> cached;
    std::optional<std::string> sha;
    if (auto h = wheel.hashes.find("sha256");
        h != wheel.hashes.end() && pep::is_sha256_hex(h->second)) {
        sha = h->second;
        cached = metadata_cache(h->second);
    }
    std::string text;
    std::error_code ec;
    if (cached && fs::exists(*cached, ec)) {
        text = read_file(*cached);
    } else {
        try {
            auto fetch = [&] { return fetch_metadata(wheel, index_named(p.index_name), sha); };
            text = shared_ ? shared_->metadata(wheel.url, fetch) : fetch();
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
    }
    return dependencies_from(text, wheel.filename);
}

std::string IndexSource::fetch_metadata(const index::IndexFile& wheel, const IndexConfig* ix,
                                        const std::optional<std::string>& sha256) {
    if (wheel.has_metadata) return read_metadata_file(wheel, ix);
    std::string text;
    if (!wheel.url.starts_with("file:")) text = read_metadata_by_ranges(wheel, ix, sha256);
    // A local (file://) wheel, or a server without ranges: the whole wheel.
    if (text.empty()) text = read_metadata_from_wheel(wheel, ix);
    return text;
}

std::string IndexSource::read_metadata_file(const index::IndexFile& wheel, const IndexConfig* ix) {
    RequestSlot slot(slots_, cancelled_);
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
        throw Error(ErrorCode::integrity,
                    "metadata file of " + wheel.filename + " does not match its sha256");
    return std::move(r.body);
}

std::string IndexSource::read_metadata_by_ranges(const index::IndexFile& wheel,
                                                 const IndexConfig* ix,
                                                 const std::optional<std::string>& sha256) {
    // No metadata file: read METADATA out of the remote wheel with range requests.
    RequestSlot slot(slots_, cancelled_);
    std::string whole;
    std::optional<std::uint64_t> size;
    auto meta =
        index::read_remote_dist_info(http_, request_for(ix, wheel.url), "METADATA", &whole, &size);
    if (size) remember_size(wheel.url, sha256, *size);
    if (!whole.empty()) {
        // The server sent the whole wheel: kept for `digest_and_size` and for create.
        const std::string digest = to_hex(envbox::sha256(whole));
        if (auto h = wheel.hashes.find("sha256"); h != wheel.hashes.end() && digest != h->second)
            throw Error(ErrorCode::integrity,
                        wheel.filename + " does not match the sha256 its index gives");
        fs::path tmp = staging_path("whole");
        ScopedRemove remove(tmp);
        write_file_atomic(tmp, whole, 0644, Durability::none);
        keep_download(tmp, digest, wheel.url, whole.size());
    }
    return meta ? std::move(*meta) : std::string();
}

std::string IndexSource::read_metadata_from_wheel(const index::IndexFile& wheel,
                                                  const IndexConfig* ix) {
    // Named by its file name and URL: a download's path is only where it was put.
    const std::string shown = wheel.filename + " (" + index::redact_url(wheel.url) + ")";
    if (wheel.url.starts_with("file:")) {
        // Read in place: never a copy (a folder of torch wheels would be gigabytes per lock,
        // and fail on a home with less room than the largest wheel).
        const fs::path path = index::file_url_path(wheel.url);
        std::error_code ec;
        if (!fs::is_regular_file(path, ec))
            throw Error(ErrorCode::integrity, shown + " is not a regular file");
        if (auto h = wheel.hashes.find("sha256");
            h != wheel.hashes.end() && to_hex(sha256_file(path)) != h->second)
            throw Error(ErrorCode::integrity,
                        wheel.filename + " does not match the sha256 its index gives");
        auto meta = store::read_dist_info_file(path, "METADATA", shown);
        if (!meta) throw Error(ErrorCode::integrity, shown + " has no METADATA");
        return std::move(*meta);
    }
    fs::path tmp = staging_path("metadata");
    ScopedRemove remove(tmp);
    {
        RequestSlot slot(slots_, cancelled_);
        index::HttpRequest req = request_for(ix, wheel.url);
        if (wheel.size) {
            req.max_bytes = *wheel.size;
            req.max_bytes_what = "the index's size";
        }
        http_.download(req, tmp);
    }
    const std::string digest = to_hex(sha256_file(tmp));
    if (auto h = wheel.hashes.find("sha256"); h != wheel.hashes.end() && digest != h->second)
        throw Error(ErrorCode::integrity,
                    wheel.filename + " does not match the sha256 its index gives");
    auto meta = store::read_dist_info_file(tmp, "METADATA", shown);
    if (!meta) throw Error(ErrorCode::integrity, shown + " has no METADATA");
    keep_download(tmp, digest, wheel.url, fs::file_size(tmp));
    return std::move(*meta);
}

Dependencies IndexSource::dependencies_from(const std::string& metadata,
                                            const std::string& filename) const {
    auto meta = pep::CoreMetadata::parse(metadata);
    if (!meta) {
        Error e = meta.error();
        e.add_context("reading the metadata of " + filename);
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
    fs::path tmp = staging_path("digest");
    ScopedRemove remove(tmp);
    index::HttpRequest req = request_for(index_named(c.index_name), c.file.url);
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
    if (pep::is_sha256_hex(sha256)) {
        // Learnt by an earlier lock of the same file (its METADATA then came from the cache).
        fs::path p = size_cache(sha256);
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
    try {
        index::HttpRequest head = request_for(index_named(c.index_name), c.file.url);
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
    if (!sha256 || !pep::is_sha256_hex(*sha256)) return;
    fs::path p = size_cache(*sha256);
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
    fs::path dir = home_.downloads();
    fs::create_directories(dir, ec);
    fs::path dest = index::download_path(dir, digest);
    if (!fs::exists(dest, ec)) fs::rename(file, dest, ec);
}

}  // namespace envbox::resolve
