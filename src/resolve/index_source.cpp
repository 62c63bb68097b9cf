#include "envbox/resolve/index_source.hpp"

#include <algorithm>
#include <cctype>

#include "envbox/index/fetch.hpp"
#include "envbox/index/url.hpp"
#include "envbox/pep/filename.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/printable.hpp"
#include "envbox/util/time.hpp"
#include "resolve/request_slot.hpp"

// IndexSource: the index policy, pages and versions. Metadata, digests and sizes are in
// index_metadata.cpp.

namespace fs = std::filesystem;

namespace envbox::resolve {
namespace {

constexpr std::size_t kMaxTagsShown = 6;

constexpr const char* kAccept =
    "Accept: application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, "
    "text/html;q=0.01";

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

// The page of `name` on a file:// index: a simple-API tree (<name>/index.html) or, like pip's
// --find-links, a flat directory of wheels and sdists. Nothing when it does not have `name`.
std::optional<Result<index::ProjectPage>> read_file_index(const IndexConfig& ix,
                                                          const std::string& name) {
    const std::string page_url = ix.url + "/" + name + "/";
    fs::path root = index::file_url_path(ix.url + "/");
    fs::path dir = index::file_url_path(page_url);
    std::error_code ec;
    if (fs::exists(dir / "index.html", ec))
        return index::parse_html_page(read_file(dir / "index.html"), page_url);
    if (!fs::is_directory(root, ec)) return std::nullopt;
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
    if (flat.files.empty()) return std::nullopt;
    std::sort(flat.files.begin(), flat.files.end(),
              [](const index::IndexFile& a, const index::IndexFile& b) {
                  return a.filename < b.filename;
              });
    return Result<index::ProjectPage>(std::move(flat));
}

}  // namespace

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

// shape: the collaborators of one target's view of the indexes, each kept as a member.
IndexSource::IndexSource(index::HttpClient& http, std::vector<IndexConfig> indexes,
                         std::map<std::string, std::string> pins, const pep::TargetTags& tags,
                         std::string python_full_version, const store::Home& home,
                         std::shared_ptr<SharedFetches> shared)
    : http_(http),
      shared_(std::move(shared)),
      indexes_(std::move(indexes)),
      pins_(std::move(pins)),
      tags_(tags),
      python_full_(std::move(python_full_version)),
      python_version_(pep::Version::parse(python_full_).value()),
      home_(home) {}

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

const IndexConfig* IndexSource::index_named(const std::string& name) const {
    const IndexConfig* ix = nullptr;
    for (const auto& i : indexes_)
        if (i.name == name) ix = &i;
    return ix;
}

std::vector<const IndexConfig*> IndexSource::index_order(const std::string& name) const {
    std::vector<const IndexConfig*> order;
    if (auto pin = pins_.find(name); pin != pins_.end()) {
        for (const auto& i : indexes_)
            if (i.name == pin->second) order.push_back(&i);
    } else {
        for (const auto& i : indexes_)
            if (!i.explicit_) order.push_back(&i);
    }
    return order;
}

std::shared_ptr<IndexSource::Project> IndexSource::fetch_project(const std::string& name) {
    auto project = std::make_shared<Project>();
    for (const IndexConfig* ix : index_order(name)) {
        auto page = read_page(*ix, name);
        if (!page) continue;
        if (!*page) throw page->error();
        project->found = true;
        project->index_name = ix->name;
        project->index_url = ix->url;
        project->versions = versions_on(**page, name, *ix);
        break;
    }
    if (project->found) prefetch_likely(name, *project);
    return project;
}

template <class T>
T SharedFetches::once(std::map<std::string, std::shared_future<T>>& done, const std::string& key,
                      const std::function<T()>& fetch) {
    std::promise<T> promise;
    std::shared_future<T> answer;
    bool first = false;
    {
        std::lock_guard lock(mutex_);
        auto it = done.find(key);
        first = it == done.end();
        if (first)
            answer = done.emplace(key, promise.get_future().share()).first->second;
        else
            answer = it->second;
    }
    if (!first) return answer.get();  // waits for the first asker's fetch, outside the lock
    try {
        T value = fetch();
        promise.set_value(value);
        return value;
    } catch (...) {
        promise.set_exception(std::current_exception());
        throw;
    }
}

SharedFetches::Page SharedFetches::page(const std::string& url,
                                        const std::function<Page()>& fetch) {
    return once(pages_, url, fetch);
}

std::string SharedFetches::metadata(const std::string& url,
                                    const std::function<std::string()>& fetch) {
    return once(metadata_, url, fetch);
}

std::optional<Result<index::ProjectPage>> IndexSource::read_page(const IndexConfig& ix,
                                                                 const std::string& name) {
    auto fetch = [&]() -> SharedFetches::Page {
        if (ix.url.starts_with("file:")) return read_file_index(ix, name);
        return fetch_http_page(ix, name);
    };
    if (!shared_) return fetch();
    return shared_->page(ix.url + "/" + name + "/", fetch);
}

std::optional<Result<index::ProjectPage>> IndexSource::fetch_http_page(const IndexConfig& ix,
                                                                       const std::string& name) {
    const std::string page_url = ix.url + "/" + name + "/";
    index::HttpResponse r;
    {
        RequestSlot slot(slots_, cancelled_);
        index::HttpRequest req = request_for(&ix, page_url);
        req.headers = {kAccept};
        req.cache = true;
        req.max_bytes_what = "an index page";
        try {
            r = http_.get(req);
        } catch (const Error& e) {  // which mirror was asked, when one was
            if (ix.mirror_variable.empty() || e.code() != ErrorCode::network) throw;
            throw Error(ErrorCode::network,
                        "index " + ix.name + ix.mirror_note() + ": " + e.what());
        }
    }
    if (means_not_here(ix, r.status)) return std::nullopt;
    if (r.status != 200)
        throw Error(ErrorCode::network,
                    "index " + ix.name + ix.mirror_note() + " answered HTTP " +
                        std::to_string(r.status) + " for " + index::redact_url(page_url) +
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
    return json ? index::parse_json_page(r.body, r.effective_url)
                : index::parse_html_page(r.body, r.effective_url);
}

bool IndexSource::uploaded_after_cutoff(const index::IndexFile& f, const IndexConfig& ix,
                                        const std::string& name) const {
    if (!exclude_newer_ || !ix.exclude_newer) return false;
    // The refusal, built only when a file is refused (this runs for every file of every page).
    auto refused = [&](const std::string& problem) {
        return Error(ErrorCode::invalid_input,
                     "index " + ix.name + " (" + index::redact_url(ix.url + "/" + name + "/") +
                         ") " + problem +
                         "; exempt the index with `exclude-newer = false` in its [[index]] "
                         "entry, or remove exclude-newer from [environment]");
    };
    if (!f.upload_time)
        throw refused("gives no upload time for " + printable(f.filename) +
                      ", and exclude-newer needs one for every file (PEP 700 `upload-time`, on "
                      "JSON pages)");
    const auto at = f.upload_time->size() <= 64 ? parse_rfc3339(*f.upload_time) : std::nullopt;
    if (!at)
        throw refused("gives upload-time '" + printable(f.upload_time->substr(0, 64)) + "' for " +
                      printable(f.filename) + ", which is not an RFC 3339 time");
    return *at >= *exclude_newer_;
}

std::vector<IndexSource::VersionInfo> IndexSource::versions_on(index::ProjectPage& page,
                                                               const std::string& name,
                                                               const IndexConfig& ix) const {
    std::map<std::string, VersionInfo> by_version;  // normalised version text
    std::map<std::string, std::size_t> best_rank;
    for (auto& f : page.files) {
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
        if (uploaded_after_cutoff(f, ix, name)) {
            info.uploaded_after = true;
            continue;
        }
        info.all_yanked = info.all_yanked && f.yanked;
        if (is_wheel) {
            info.any_wheel = true;
            if (!rank) {
                // The file name's tag part: name-version[-build]-PY-ABI-PLATFORM.whl.
                std::string_view tag(f.filename);
                tag.remove_suffix(4);
                std::size_t cut = tag.size();
                for (int dashes = 0; dashes < 3 && cut != std::string_view::npos; ++dashes)
                    cut = cut == 0 ? std::string_view::npos : tag.rfind('-', cut - 1);
                if (cut != std::string_view::npos) {
                    std::string t(tag.substr(cut + 1));
                    if (std::find(info.other_tags.begin(), info.other_tags.end(), t) ==
                        info.other_tags.end()) {
                        ++info.other_tag_count;
                        if (info.other_tags.size() < kMaxTagsShown)
                            info.other_tags.push_back(std::move(t));
                    }
                }
            }
        } else {
            info.any_sdist = true;
            // One sdist per version: a .tar.gz (PEP 625's form) before a legacy .zip.
            if (!info.sdist ||
                (info.sdist->filename.ends_with(".zip") && f.filename.ends_with(".tar.gz")))
                info.sdist = f;
        }
        if (rank && (!best_rank.count(key) || *rank < best_rank[key])) {
            best_rank[key] = *rank;
            info.requires_python = f.requires_python;
            info.wheel = std::move(f);
        }
    }
    std::vector<VersionInfo> versions;
    for (auto& [_, info] : by_version)
        versions.push_back(std::move(info));
    return versions;
}

void IndexSource::prefetch_likely(const std::string& name, const Project& project) {
    // The newest usable stable version.
    const VersionInfo* likely = nullptr;
    for (const auto& v : project.versions) {
        if (!v.wheel || v.all_yanked || v.version.is_prerelease()) continue;
        if (v.requires_python) {
            auto spec = pep::SpecifierSet::parse(*v.requires_python);
            if (spec && !spec->contains(python_version_, true)) continue;
        }
        if (!likely || likely->version < v.version) likely = &v;
    }
    if (!likely) return;
    std::string key = name + "==" + likely->version.str();
    std::lock_guard lock(mutex_);
    if (!metadata_.count(key)) start_metadata(key, name, *likely, project, /*urgent=*/false);
}

Origin IndexSource::origin(const std::string& name) {
    auto project = project_future(name).get();
    Origin o;
    const auto pin = pins_.find(name);
    o.pinned = pin != pins_.end();
    if (project->found) {
        o.where = "index " + project->index_name;
    } else if (o.pinned) {
        o.where = "index " + pin->second;
    } else {
        const auto order = index_order(name);
        for (const IndexConfig* ix : order)
            o.where += (o.where.empty() ? "" : ", ") + ix->name;
        if (!order.empty()) o.where = (order.size() == 1 ? "index " : "indexes ") + o.where;
    }
    return o;
}

std::vector<Candidate> IndexSource::versions(const std::string& name) {
    auto project = project_future(name).get();
    // "; its wheels are for cp311-cp311-macosx_11_0_arm64, …": what a version does offer.
    auto other_tags_text = [](const VersionInfo& v) {
        if (v.other_tags.empty()) return std::string();
        std::string out = "; its wheels are for ";  // inside the "(CPython …)" of the caller
        for (std::size_t i = 0; i < v.other_tags.size(); ++i)
            out += (i ? ", " : "") + v.other_tags[i];
        if (v.other_tag_count > v.other_tags.size())
            out += " and " + std::to_string(v.other_tag_count - v.other_tags.size()) + " more";
        return out;
    };
    std::vector<Candidate> out;
    for (const auto& v : project->versions) {
        Candidate c;
        c.version = v.version;
        c.yanked = v.all_yanked && (v.any_wheel || v.any_sdist);
        if (!v.any_wheel && !v.any_sdist) {  // every file came after the cutoff
            c.unusable =
                "was uploaded after exclude-newer (" + format_rfc3339(*exclude_newer_) + ")";
        } else if (!v.wheel && !(v.sdist && may_build(name))) {
            c.unusable = v.any_wheel
                             ? "has no wheel for the target (CPython " + python_full_ + ", " +
                                   tags_.tags().front().str() + other_tags_text(v) + ")"
                             : "has only a source distribution";
            if (v.sdist)
                c.unusable += ", and building it is not allowed (allow it with [build." + name +
                              "] build = \"allow\", or build = \"allow\" in [environment])";
        } else if (const auto& rp = v.wheel ? v.requires_python : v.sdist->requires_python) {
            auto spec = pep::SpecifierSet::parse(*rp);
            if (spec && !spec->contains(python_version_, true))
                c.unusable = "requires Python " + *rp + " (the target is " + python_full_ + ")";
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

ChosenWheel IndexSource::chosen(const std::string& name, const pep::Version& version) {
    const VersionInfo& v = version_info(name, version);
    auto p = project_future(name).get();
    if (!v.wheel) return {*v.sdist, p->index_name, p->index_url, /*sdist=*/true};
    return {*v.wheel, p->index_name, p->index_url};
}

ChosenWheel IndexSource::locked(const std::string& name, const pep::Version& version) {
    ChosenWheel c = chosen(name, version);
    if (const IndexConfig* ix = index_named(c.index_name); ix && !ix->canonical.empty()) {
        c.file.url = index::rebase_url(c.file.url, ix->url, ix->canonical);
        c.index_url = ix->canonical;
    }
    return c;
}

bool IndexSource::may_build(const std::string& name) const {
    return builds_.allowed && builds_.metadata && builds_.allowed(name);
}

}  // namespace envbox::resolve
