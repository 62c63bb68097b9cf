#include "envbox/ops/cache.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <ctime>
#include <functional>
#include <optional>

#include "envbox/index/http_cache.hpp"
#include "envbox/ops/generations.hpp"
#include "envbox/store/home.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/own_tree.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {

std::size_t CacheResult::entries() const {
    std::size_t n = 0;
    for (const auto& b : buckets)
        n += b.entries;
    return n;
}

std::uint64_t CacheResult::bytes() const {
    std::uint64_t n = 0;
    for (const auto& b : buckets)
        n += b.bytes;
    return n;
}

namespace {

// Bytes a file or tree holds on disk (st_blocks), hard links counted once per call.
std::uint64_t disk_bytes(const fs::path& p) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return 0;
    std::uint64_t n = static_cast<std::uint64_t>(st.st_blocks) * 512;
    if (!S_ISDIR(st.st_mode)) return n;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(p, fs::directory_options::skip_permission_denied, ec),
         end;
         !ec && it != end; it.increment(ec)) {
        if (::lstat(it->path().c_str(), &st) == 0)
            n += static_cast<std::uint64_t>(st.st_blocks) * 512;
    }
    return n;
}

// Files directly or anywhere below `p` (a folder counts its files; a file counts one).
std::size_t file_count(const fs::path& p) {
    std::error_code ec;
    if (!fs::is_directory(fs::symlink_status(p, ec))) return 1;
    std::size_t n = 0;
    for (fs::recursive_directory_iterator it(p, fs::directory_options::skip_permission_denied, ec),
         end;
         !ec && it != end; it.increment(ec))
        if (!it->is_directory(ec)) ++n;
    return n;
}

class Remover {
  public:
    Remover(fs::path home, bool dry_run) : home_(std::move(home)), dry_run_(dry_run) {}

    /// Removes `p` (a file or a tree) and counts it into `bucket`: `entries` as its files, or
    /// as one when `as_one`.
    void remove(const fs::path& p, CacheBucketResult& bucket, bool as_one = false) {
        const std::uint64_t bytes = disk_bytes(p);
        const std::size_t entries = as_one ? 1 : file_count(p);
        // A link is removed itself, never what it points to (the link rule, docs/SECURITY.md).
        if (!dry_run_) remove_own_tree(home_, p);
        bucket.entries += entries;
        bucket.bytes += bytes;
    }

  private:
    fs::path home_;
    bool dry_run_;
};

// The entries of `dir`, a folder of the home's cache: a link where that folder should be is
// refused (exit 5), never listed through.
std::vector<fs::path> children(const store::Home& home, const fs::path& dir) {
    std::vector<fs::path> out;
    UniqueFd fd = open_own_dir_at_path(home.root(), dir);
    if (!fd) return out;
    for (const auto& e : list_own_dir(fd.get(), dir))
        out.push_back(dir / e.name);
    return out;
}

bool ends_with(const fs::path& p, std::string_view suffix) {
    return p.filename().string().ends_with(suffix);
}

// A download in progress holds `<sha256>.whl.lock` (index::HttpClient::download); the part and
// the lock of a wheel it is writing are left alone.
bool download_busy(const fs::path& downloads, const std::string& wheel_name) {
    std::error_code ec;
    const fs::path lock = downloads / (wheel_name + ".lock");
    if (!fs::exists(lock, ec)) return false;
    return !FileLock::try_lock(lock).held();
}

// "<sha256>.whl" of "<sha256>.whl.part" / ".whl.lock" / ".whl"; empty for anything else.
std::string wheel_name_of(const fs::path& p) {
    std::string n = p.filename().string();
    for (std::string_view s : {".part", ".lock"})
        if (n.ends_with(s)) return n.substr(0, n.size() - s.size());
    return n.ends_with(".whl") ? n : std::string();
}

void sweep_downloads(const store::Home& home, bool prune, Remover& rm, CacheBucketResult& b,
                     CacheResult& r) {
    const fs::path dir = home.downloads();
    std::error_code ec;
    for (const fs::path& p : children(home, dir)) {
        const std::string wheel = wheel_name_of(p);
        if (!wheel.empty() && (ends_with(p, ".part") || ends_with(p, ".lock")) &&
            download_busy(dir, wheel)) {
            if (ends_with(p, ".part")) r.busy.push_back(p.string());
            continue;
        }
        if (prune) {
            if (ends_with(p, ".whl")) {
                // Wanted only until it is ingested: then the store holds its files.
                const std::string sha = wheel.substr(0, wheel.size() - 4);
                if (!fs::exists(home.wheels() / sha / "files", ec)) continue;
            } else if (ends_with(p, ".lock")) {
                if (fs::exists(dir / (wheel + ".part"), ec)) continue;  // a part to resume
            } else if (!ends_with(p, ".part")) {
                continue;  // not envbox's
            }
        }
        rm.remove(p, b);
    }
}

void sweep_http(const store::Home& home, bool prune, Remover& rm, CacheBucketResult& b) {
    const long long now = static_cast<long long>(std::time(nullptr));
    std::error_code ec;
    std::vector<fs::path> files;
    require_no_link_below(home.root(), home.http_cache());
    for (fs::recursive_directory_iterator it(home.http_cache(), ec), end; !ec && it != end;
         it.increment(ec))
        if (it->is_regular_file(ec)) files.push_back(it->path());
    std::sort(files.begin(), files.end());
    if (!prune) {
        for (const auto& p : children(home, home.http_cache()))
            rm.remove(p, b);
        return;
    }
    for (const auto& p : files) {
        auto page = index::read_cached_page(p);
        if (page && index::is_fresh(*page, now)) continue;
        rm.remove(p, b);
    }
}

// The key a probe was written under (env/interpreter.cpp): "path P", "size N", "mtime S.NS"
// lines after the format line. A probe is stale when that file is gone or changed.
bool probe_stale(const fs::path& probe) {
    std::string text;
    try {
        text = read_file(probe);
    } catch (const Error&) {
        return true;
    }
    std::string path, size, mtime;
    std::size_t pos = text.find('\n');
    for (int i = 0; i < 3 && pos != std::string::npos; ++i) {
        const std::size_t end = text.find('\n', pos + 1);
        if (end == std::string::npos) return true;
        const std::string line = text.substr(pos + 1, end - pos - 1);
        if (line.starts_with("path "))
            path = line.substr(5);
        else if (line.starts_with("size "))
            size = line.substr(5);
        else if (line.starts_with("mtime "))
            mtime = line.substr(6);
        pos = end;
    }
    struct stat st {};
    if (path.empty() || ::stat(path.c_str(), &st) != 0) return true;
    return size != std::to_string(st.st_size) ||
           mtime != std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

void sweep_interpreters(const store::Home& home, bool prune, Remover& rm, CacheBucketResult& b) {
    for (const auto& p : children(home, home.interpreters()))
        if (!prune || probe_stale(p)) rm.remove(p, b);
}

// `cache/compile/`: the folder of every `Home::compile_cache`.
fs::path compile_root(const store::Home& home) {
    return home.compile_cache("key", "env").parent_path();
}

// `cache/compile/<key>.<ENV>` of every environment under envs/.
std::vector<std::string> live_compile_names(const store::Home& home) {
    std::vector<std::string> names;
    for (const auto& e : environment_dirs(home.root()))
        names.push_back(home.compile_cache(e.project_key, e.env).filename().string());
    return names;
}

void sweep_compile(const store::Home& home, bool prune, Remover& rm, CacheBucketResult& b) {
    const fs::path dir = compile_root(home);
    const std::vector<std::string> live =
        prune ? live_compile_names(home) : std::vector<std::string>{};
    for (const auto& p : children(home, dir)) {
        const std::string name = p.filename().string();
        if (prune && std::find(live.begin(), live.end(), name) != live.end()) continue;
        rm.remove(p, b, /*as_one=*/true);
    }
}

CacheResult sweep(const Context& ctx, const CacheOptions& opt, bool prune) {
    const store::Home home(ctx.home);
    std::error_code ec;
    fs::create_directories(home.locks(), ec);
    // As gc's sweep: no create is between finding a download and ingesting it.
    FileLock store_lock(store_lock_path(ctx),
                        [&] { ctx.progress->note("waiting for a running create to finish"); });
    Remover rm(ctx.home, opt.dry_run);
    CacheResult r;
    for (const char* name : {"http", "metadata", "downloads", "interpreters", "compile", "other"})
        r.buckets.push_back({name, 0, 0});
    sweep_http(home, prune, rm, r.buckets[0]);
    if (!prune)
        for (const auto& p : children(home, home.metadata_cache()))
            rm.remove(p, r.buckets[1]);
    sweep_downloads(home, prune, rm, r.buckets[2], r);
    sweep_interpreters(home, prune, rm, r.buckets[3]);
    if (prune || opt.all) sweep_compile(home, prune, rm, r.buckets[4]);
    if (!prune) {
        // Whatever else is in cache/ (a folder a later envbox uses) goes too.
        for (const auto& p : children(home, home.cache())) {
            if (p == home.http_cache() || p == home.metadata_cache() || p == home.downloads() ||
                p == home.interpreters() || p == compile_root(home))
                continue;
            rm.remove(p, r.buckets[5]);
        }
    }
    return r;
}

}  // namespace

CacheResult clean_cache(const Context& ctx, const CacheOptions& options) {
    return sweep(ctx, options, /*prune=*/false);
}

CacheResult prune_cache(const Context& ctx, const CacheOptions& options) {
    if (options.all) throw Error(ErrorCode::usage, "--all is an option of `envbox cache clean`");
    return sweep(ctx, options, /*prune=*/true);
}

}  // namespace envbox::ops
