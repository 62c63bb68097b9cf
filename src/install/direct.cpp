#include "envbox/install/direct.hpp"

#include <unistd.h>

#include <atomic>

#include "envbox/index/fetch.hpp"
#include "envbox/index/url.hpp"
#include "envbox/pep/metadata.hpp"
#include "envbox/pep/name.hpp"
#include "envbox/store/store.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/sha256.hpp"

namespace fs = std::filesystem;

namespace envbox::install {
namespace {

// "flash-attn @ https://host/flash_attn-….whl", without credentials, for messages.
std::string label(const pep::Requirement& r) {
    return r.name + " @ " + index::redact_url(r.url.value_or(""));
}

std::string join_tags(const std::vector<pep::Tag>& tags) {
    std::string out;
    for (std::size_t i = 0; i < tags.size(); ++i)
        out += (i ? ", " : "") + tags[i].str();
    return out;
}

// A fresh name in the home's staging folder for a wheel being downloaded.
fs::path staging_path(const store::Home& home) {
    fs::create_directories(home.tmp());
    static std::atomic<unsigned> counter{0};
    return home.tmp() /
           ("direct-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".whl");
}

}  // namespace

std::string describe_target_tags(const Target& target) {
    const auto& tags = target.tags.tags();
    std::string out = "CPython " + std::to_string(target.python_major) + "." +
                      std::to_string(target.python_minor) + " on " + target.platform + " accepts ";
    const std::size_t shown = std::min<std::size_t>(tags.size(), 4);
    for (std::size_t i = 0; i < shown; ++i)
        out += (i ? ", " : "") + tags[i].str();
    if (tags.size() > shown) out += ", …, " + tags.back().str();
    return out + " (" + std::to_string(tags.size()) + " tags)";
}

DirectWheel check_direct_wheel(const pep::Requirement& r, const lock::DirectReference& ref,
                               const fs::path& file, const Target& target) {
    DirectWheel w;
    w.name = pep::canonicalize_name(r.name);
    w.reference = ref;
    if (!target.tags.best_rank(ref.wheel.tags))
        throw Error(ErrorCode::invalid_input,
                    label(r) + ": the wheel's tags (" + join_tags(ref.wheel.tags) +
                        ") do not fit the target: " + describe_target_tags(target));
    std::uint64_t size = 0;
    w.archive.sha256 = to_hex(sha256_file(file, &size));
    w.archive.size = size;
    if (ref.sha256 && *ref.sha256 != w.archive.sha256)
        throw Error(ErrorCode::integrity, label(r) + ": the wheel's sha256 is " + w.archive.sha256 +
                                              ", not the " + *ref.sha256 +
                                              " its #sha256= fragment gives");
    // Read bounded (the store's limit on METADATA), as for any wheel.
    auto text = store::read_dist_info_file(file, "METADATA", label(r));
    if (!text) throw Error(ErrorCode::integrity, label(r) + ": the wheel has no METADATA");
    auto meta = pep::CoreMetadata::parse(*text);
    if (!meta) {
        Error e = meta.error();
        e.add_context("reading the METADATA of " + ref.filename);
        throw e;
    }
    if (pep::canonicalize_name(meta->name) != w.name || !(meta->version == ref.wheel.version))
        throw Error(ErrorCode::invalid_input, label(r) + ": the wheel's METADATA names " +
                                                  meta->name + " " + meta->version.str() +
                                                  ", but its file name " + ref.filename);
    w.package.url = *r.url;
    w.package.version = ref.wheel.version;
    w.package.dependencies.requires_dist = meta->requires_dist;
    for (const auto& e : meta->provides_extra)
        w.package.dependencies.provides_extra.insert(pep::canonicalize_name(e));
    if (meta->requires_python && !meta->requires_python->contains(
                                     pep::Version::parse(target.python_full_version).value(), true))
        w.package.dependencies.unusable = "requires Python " + meta->requires_python->str() +
                                          " (the target is " + target.python_full_version + ")";
    return w;
}

namespace {

// The wheel of an http(s) reference: from the downloads when its #sha256 is there (checked
// against the fragment by the caller, like a download), else fetched into a staging file that
// `staged` removes unless kept.
fs::path fetch_http_wheel(const lock::DirectReference& ref, index::HttpClient& http,
                          const store::Home& home, std::optional<ScopedRemove>& staged) {
    const fs::path cached =
        ref.sha256 ? index::download_path(home.downloads(), *ref.sha256) : fs::path();
    std::error_code ec;
    if (!cached.empty() && fs::is_regular_file(cached, ec)) return cached;
    const fs::path local = staging_path(home);
    staged.emplace(local);
    index::HttpRequest req;
    req.url = ref.location;  // bounded by kMaxDownloadBytes: no size known
    http.download(req, local);
    return local;
}

// The wheel of a file: URL or a path (relative to the manifest, as the lock beside it writes
// it), which must be a regular file.
fs::path local_wheel(const lock::DirectReference& ref, const fs::path& manifest_path,
                     lock::LockedArchive& where) {
    fs::path local;
    if (ref.kind == lock::DirectReference::Kind::file_url) {
        where.url = ref.location;
        local = index::file_url_path(ref.location);
    } else {
        const fs::path written(ref.location);
        // The lock sits beside the manifest: a relative path means the same there.
        where.path = written.lexically_normal().string();
        local = written.is_absolute() ? written : manifest_path.parent_path() / written;
    }
    std::error_code ec;
    if (fs::is_directory(local, ec))
        throw Error(ErrorCode::invalid_input,
                    local.string() +
                        " is a directory; envbox installs wheels and never builds "
                        "one: give the path of a wheel (.whl)");
    if (!fs::is_regular_file(local, ec))
        throw Error(ErrorCode::invalid_input, "no wheel at " + local.string());
    return local;
}

// A fetched wheel goes where `create` looks for it by sha256: it is not fetched twice.
void keep_download(const store::Home& home, const fs::path& local, const std::string& sha256,
                   ScopedRemove& staged) {
    std::error_code ec;
    fs::create_directories(home.downloads(), ec);
    const fs::path dest = index::download_path(home.downloads(), sha256);
    if (!fs::exists(dest, ec)) {
        fs::rename(local, dest, ec);
        if (!ec) staged.release();
    }
}

}  // namespace

std::map<std::string, DirectWheel> direct_wheels(const lock::Manifest& manifest,
                                                 const fs::path& manifest_path,
                                                 const Target& target, index::HttpClient& http,
                                                 const store::Home& home) {
    std::map<std::string, DirectWheel> out;
    std::map<std::string, const pep::Requirement*> by_name;
    for (const pep::Requirement& r : manifest.requirements) {
        if (!r.url) continue;
        if (r.marker) {
            auto holds = r.marker->evaluate(target.markers, pep::MarkerContext::requirement);
            if (!holds || !*holds) continue;  // not for this target: not fetched
        }
        const std::string name = pep::canonicalize_name(r.name);
        if (auto seen = by_name.find(name); seen != by_name.end()) {
            if (*seen->second->url == *r.url) continue;  // the same reference, other extras
            throw Error(ErrorCode::invalid_input, manifest_path.string() + ": " + name +
                                                      " has two direct references: " +
                                                      label(*seen->second) + " and " + label(r));
        }
        by_name[name] = &r;
        auto ref = lock::DirectReference::parse(r);
        if (!ref) throw ref.error();  // Manifest::parse checked it already
        try {
            lock::LockedArchive where;
            std::optional<ScopedRemove> staged;
            fs::path local;
            if (ref->kind == lock::DirectReference::Kind::http) {
                where.url = ref->location;
                local = fetch_http_wheel(*ref, http, home, staged);
            } else {
                local = local_wheel(*ref, manifest_path, where);
            }
            DirectWheel w = check_direct_wheel(r, *ref, local, target);
            w.archive.url = where.url;
            w.archive.path = where.path;
            if (staged) keep_download(home, local, w.archive.sha256, *staged);
            out.emplace(w.name, std::move(w));
        } catch (Error& e) {
            e.add_context("reading the direct reference " + label(r) + " of " +
                          manifest_path.string());
            throw;
        }
    }
    return out;
}

}  // namespace envbox::install
