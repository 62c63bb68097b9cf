#include "envbox/lock/pylock.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "envbox/pep/digest.hpp"
#include "envbox/pep/name.hpp"
#include "envbox/util/printable.hpp"
#include "lock/toml_reader.hpp"

namespace envbox::lock {
namespace {

using pep::canonicalize_name;

// Reads one lock document, throwing located errors; `Pylock::parse` turns them into a Result.
// `kStrict` (`DigestCheck::strict`): values are checked as envbox uses them: hash values are
// digests, and the values envbox acts on or writes for other programs (an index, a URL, a path,
// a marker, a VCS reference: what `create` fetches and `export` writes for pip) hold no line
// break, control or invisible character (`has_hidden`). Free text nothing parses
// (`created-by`, `upload-time`, `attestation-identities`, `[tool]`) is read as written;
// printers escape it.
template <bool kStrict>
class LockReader {
  public:
    LockReader(std::string_view source) : r_(source) {}

    Pylock read(const toml::table& doc) {
        Pylock lock;
        auto lv = r_.opt_string(doc, "lock-version", "");
        if (!lv) r_.fail(nullptr, 1, "Missing required value", "lock-version");
        auto version = pep::Version::try_parse(*lv);
        if (!version)
            r_.fail(doc.get("lock-version"), 1, "Invalid version: '" + *lv + "'", "lock-version");
        if (version->release().front() != kLockVersionMajor)
            r_.fail(doc.get("lock-version"), 1, "pylock version " + *lv + " is not supported",
                    "lock-version");
        lock.lock_version = *version;

        if (const auto* envs = r_.opt_array(doc, "environments", "")) {
            lock.environments.emplace();
            for (std::size_t k = 0; k < envs->size(); ++k) {
                const toml::node& n = *envs->get(k);
                std::string path = TomlReader::index("environments", k);
                if (!n.is_string()) r_.wrong_type(n, "str", path);
                if constexpr (kStrict) check_text(&n, n.as_string()->get(), 0, path);
                auto m = pep::Marker::parse(n.as_string()->get());
                if (!m) r_.fail(&n, 0, m.error().message(), path);
                lock.environments->push_back(std::move(*m));
            }
        }
        lock.requires_python = specifiers(doc, "requires-python", "");
        lock.extras = names(doc, "extras");
        lock.dependency_groups = names(doc, "dependency-groups");
        lock.default_groups = names(doc, "default-groups");
        lock.created_by = r_.req_string(doc, "created-by", "", 1);
        r_.opt_table(doc, "tool", "");

        const auto* packages = r_.opt_array(doc, "packages", "");
        if (!packages) r_.fail(nullptr, 1, "Missing required value", "packages");
        for (std::size_t k = 0; k < packages->size(); ++k) {
            const toml::node& n = *packages->get(k);
            std::string path = TomlReader::index("packages", k);
            if (!n.is_table()) r_.wrong_type(n, "Mapping", path);
            lock.packages.push_back(package(*n.as_table(), path));
        }
        link_dependencies(lock);
        return lock;
    }

  private:
    TomlReader r_;
    std::size_t tags_ = 0;  // of every wheel file name read so far

    // `key` of `t`, a string value programs read (see kStrict), when present.
    std::optional<std::string> opt_text(const toml::table& t, std::string_view key,
                                        std::string_view parent, int line) {
        auto v = r_.opt_string(t, key, parent);
        if constexpr (kStrict)
            if (v) check_text(t.get(key), *v, line, TomlReader::join(parent, key));
        return v;
    }
    std::string req_text(const toml::table& t, std::string_view key, std::string_view parent,
                         int line) {
        auto v = opt_text(t, key, parent, line);
        if (!v) r_.fail(nullptr, line, "Missing required value", TomlReader::join(parent, key));
        return *v;
    }
    void check_text(const toml::node* at, std::string_view value, int line,
                    const std::string& path) {
        if (auto c = first_hidden(value))
            r_.fail(at, line,
                    "Invalid character " + *c + " (a line break, control or invisible character)",
                    path);
    }

    std::optional<pep::SpecifierSet> specifiers(const toml::table& t, std::string_view key,
                                                std::string_view parent) {
        auto text = opt_text(t, key, parent, 0);
        if (!text) return std::nullopt;
        auto set = pep::SpecifierSet::parse(*text);
        if (!set) r_.fail(t.get(key), 0, set.error().message(), TomlReader::join(parent, key));
        return std::move(*set);
    }

    std::vector<std::string> names(const toml::table& t, std::string_view key) {
        std::vector<std::string> out;
        const auto* arr = r_.opt_array(t, key, "");
        if (!arr) return out;
        for (std::size_t k = 0; k < arr->size(); ++k) {
            const toml::node& n = *arr->get(k);
            std::string path = TomlReader::index(key, k);
            if (!n.is_string()) r_.wrong_type(n, "str", path);
            std::string name(n.as_string()->get());
            if (!pep::is_normalized_name(name))
                r_.fail(&n, 0, "Name '" + name + "' is not normalized", path);
            out.push_back(std::move(name));
        }
        return out;
    }

    FileRef file(const toml::table& t, const std::string& path, bool archive) {
        FileRef f;
        f.line = TomlReader::line_of(t);
        f.name = opt_text(t, "name", path, f.line);
        f.url = opt_text(t, "url", path, f.line);
        f.path = opt_text(t, "path", path, f.line);
        f.upload_time = r_.opt_datetime(t, "upload-time", path);
        if (auto size = r_.opt_int(t, "size", path)) {
            if (*size < 0)
                r_.fail(t.get("size"), f.line, "Size must not be negative", path + ".size");
            f.size = static_cast<std::uint64_t>(*size);
        }
        if (archive) f.subdirectory = opt_text(t, "subdirectory", path, f.line);
        const toml::node* hashes = t.get("hashes");
        if (!hashes) r_.fail(nullptr, f.line, "Missing required value", path + ".hashes");
        if (!hashes->is_table()) r_.wrong_type(*hashes, "Mapping", path + ".hashes");
        for (const auto& [algo, value] : *hashes->as_table()) {
            if (!value.is_string())
                r_.fail(&value, f.line, "Hash values must be strings", path + ".hashes");
            std::string key = pep::ascii_lower(algo.str()),
                        digest = pep::ascii_lower(value.as_string()->get());
            if constexpr (kStrict)
                check_digest(value, key, digest, f.line, path + ".hashes." + key);
            f.hashes.emplace(std::move(key), std::move(digest));
        }
        if (f.hashes.empty())
            r_.fail(hashes, f.line, "At least one hash must be provided", path + ".hashes");
        if (!f.url && !f.path) r_.fail(&t, f.line, "path or url must be provided", path);
        return f;
    }

    // A digest becomes part of file names (the store, the download cache, staging): only hex
    // digits, and exactly 64 of them for sha256, so no value can name a path ("../../x").
    void check_digest(const toml::node& at, const std::string& algo, const std::string& digest,
                      int line, const std::string& path) {
        const std::string shown = digest.size() > 80 ? digest.substr(0, 80) + "…" : digest;
        if (algo == "sha256" && !pep::is_sha256_hex(digest))
            r_.fail(&at, line,
                    "Invalid sha256 digest '" + shown + "' (expected 64 hexadecimal digits)", path);
        if (!pep::is_lower_hex(digest))
            r_.fail(&at, line,
                    "Invalid " + algo + " digest '" + shown + "' (expected hexadecimal digits)",
                    path);
    }

    void check_consistent(const Package& p, const std::string& filename, const std::string& name,
                          const pep::Version& version, const std::string& path, int line) {
        if (name != p.name)
            r_.fail(
                nullptr, line,
                "Name in '" + filename + "' is not consistent with package name '" + p.name + "'",
                path);
        if (p.version && version != *p.version)
            r_.fail(nullptr, line,
                    "Version in '" + filename + "' is not consistent with package version '" +
                        p.version->str() + "'",
                    path);
    }

    // The package's own keys, before its sources: name, version, marker, requires-python, index,
    // and the keys only checked for shape (dependencies, attestation-identities, tool).
    void read_package_keys(Package& p, const toml::table& t, const std::string& path) {
        std::string name = r_.req_string(t, "name", path, p.line);
        if (!pep::is_valid_name(name))
            r_.fail(t.get("name"), p.line, "Invalid package name '" + name + "'", path + ".name");
        p.name = canonicalize_name(name);
        if (auto v = r_.opt_string(t, "version", path)) {
            auto parsed = pep::Version::try_parse(*v);
            if (!parsed)
                r_.fail(t.get("version"), p.line, "Invalid version: '" + *v + "'",
                        path + ".version");
            p.version = std::move(*parsed);
        }
        if (auto m = opt_text(t, "marker", path, p.line)) {
            auto parsed = pep::Marker::parse(*m);
            if (!parsed)
                r_.fail(t.get("marker"), p.line, parsed.error().message(), path + ".marker");
            p.marker = std::move(*parsed);
        }
        p.requires_python = specifiers(t, "requires-python", path);
        p.index = opt_text(t, "index", path, p.line);
        if (const auto* deps = r_.opt_array(t, "dependencies", path))
            p.dependencies = dependencies(*deps, path + ".dependencies", p.line);
        if (const auto* ids = r_.opt_array(t, "attestation-identities", path)) {
            for (std::size_t k = 0; k < ids->size(); ++k) {
                std::string ipath = TomlReader::index(path + ".attestation-identities", k);
                const toml::node& n = *ids->get(k);
                if (!n.is_table()) r_.wrong_type(n, "Mapping", ipath);
                r_.req_string(*n.as_table(), "kind", ipath, TomlReader::line_of(n));
            }
        }
        r_.opt_table(t, "tool", path);
    }

    // A package's `dependencies` (at `dpath`): tables naming other entries by `name` and, where
    // the name is ambiguous, `version` (other keys a tool may add to disambiguate are tolerated
    // and not compared). Which entries they name is settled once every package is read.
    std::vector<DependencyRef> dependencies(const toml::array& deps, const std::string& dpath,
                                            int line) {
        if (deps.size() > kMaxDependencies)
            r_.fail(&deps, line,
                    "More than " + std::to_string(kMaxDependencies) + " dependencies (" +
                        std::to_string(deps.size()) + ")",
                    dpath);
        std::vector<DependencyRef> out;
        std::set<std::pair<std::string, std::string>> seen;  // name, version ("" for none)
        for (std::size_t k = 0; k < deps.size(); ++k) {
            std::string epath = TomlReader::index(dpath, k);
            const toml::node& n = *deps.get(k);
            if (!n.is_table()) r_.wrong_type(n, "Mapping", epath);
            DependencyRef d;
            d.line = TomlReader::line_of(n) ? TomlReader::line_of(n) : line;
            std::string name = r_.req_string(*n.as_table(), "name", epath, d.line);
            if (!pep::is_valid_name(name))
                r_.fail(n.as_table()->get("name"), d.line, "Invalid package name '" + name + "'",
                        epath + ".name");
            d.name = canonicalize_name(name);
            if (auto v = r_.opt_string(*n.as_table(), "version", epath)) {
                auto parsed = pep::Version::try_parse(*v);
                if (!parsed)
                    r_.fail(n.as_table()->get("version"), d.line, "Invalid version: '" + *v + "'",
                            epath + ".version");
                d.version = std::move(*parsed);
            }
            if (!seen.emplace(d.name, d.version ? d.version->str() : "").second)
                r_.fail(&n, d.line, "Dependency '" + d.name + "' is listed twice", epath);
            out.push_back(std::move(d));
        }
        return out;
    }

    // Settles which entries each dependency names: an edge to a package the lock does not hold
    // is an error naming both. A name the lock holds many times, named by many edges without a
    // version, would multiply: the links are bounded in all.
    void link_dependencies(Pylock& lock) {
        std::size_t links = 0;
        std::multimap<std::string, std::size_t> by_name;
        for (std::size_t i = 0; i < lock.packages.size(); ++i)
            by_name.emplace(lock.packages[i].name, i);
        for (std::size_t i = 0; i < lock.packages.size(); ++i) {
            Package& p = lock.packages[i];
            if (!p.dependencies) continue;
            for (std::size_t k = 0; k < p.dependencies->size(); ++k) {
                DependencyRef& d = (*p.dependencies)[k];
                auto [first, last] = by_name.equal_range(d.name);
                for (auto it = first; it != last; ++it) {
                    const Package& target = lock.packages[it->second];
                    if (!d.version || (target.version && *target.version == *d.version)) {
                        if (++links > kMaxDependencyLinks)
                            r_.fail(nullptr, d.line,
                                    "More than " + std::to_string(kMaxDependencyLinks) +
                                        " dependency links in the lock",
                                    TomlReader::index(
                                        TomlReader::index("packages", i) + ".dependencies", k));
                        d.packages.push_back(it->second);
                    }
                }
                if (d.packages.empty())
                    r_.fail(
                        nullptr, d.line,
                        "'" + p.name + "' depends on '" + d.name +
                            (d.version ? " " + d.version->str() : std::string()) +
                            "', which is not a package of this lock",
                        TomlReader::index(TomlReader::index("packages", i) + ".dependencies", k));
            }
        }
    }

    // A `vcs` table (at `vpath`): a type, a url or path, and the commit it is pinned to.
    VcsRef vcs_ref(const toml::table& vcs, const std::string& vpath) {
        int line = TomlReader::line_of(vcs);
        VcsRef v;
        v.type = req_text(vcs, "type", vpath, line);
        v.url = opt_text(vcs, "url", vpath, line);
        v.path = opt_text(vcs, "path", vpath, line);
        if (!v.url && !v.path) r_.fail(&vcs, line, "path or url must be provided", vpath);
        v.requested_revision = opt_text(vcs, "requested-revision", vpath, line);
        v.commit_id = req_text(vcs, "commit-id", vpath, line);
        v.subdirectory = opt_text(vcs, "subdirectory", vpath, line);
        return v;
    }

    // A `directory` table (at `dpath`): a local source tree, maybe editable.
    DirectoryRef directory_ref(const toml::table& dir, const std::string& dpath) {
        DirectoryRef d;
        d.path = req_text(dir, "path", dpath, TomlReader::line_of(dir));
        d.editable = r_.opt_bool(dir, "editable", dpath).value_or(false);
        d.subdirectory = opt_text(dir, "subdirectory", dpath, TomlReader::line_of(dir));
        return d;
    }

    // The package's `sdist` and `wheels`, each file name parsed and consistent with the package's
    // name and version.
    void read_dists(Package& p, const toml::table& t, const std::string& path) {
        if (const auto* sdist = r_.opt_table(t, "sdist", path)) {
            std::string spath = path + ".sdist";
            p.sdist = file(*sdist, spath, false);
            std::string fname = p.sdist->filename();
            auto parsed = pep::SdistFilename::parse(fname);
            if (!parsed)
                r_.fail(nullptr, p.sdist->line, "Invalid sdist filename '" + fname + "'", spath);
            check_consistent(p, fname, parsed->canonical_name, parsed->version, spath,
                             p.sdist->line);
        }
        if (const auto* wheels = r_.opt_array(t, "wheels", path)) {
            for (std::size_t k = 0; k < wheels->size(); ++k) {
                std::string wpath = TomlReader::index(path + ".wheels", k);
                const toml::node& n = *wheels->get(k);
                if (!n.is_table()) r_.wrong_type(n, "Mapping", wpath);
                WheelRef w;
                static_cast<FileRef&>(w) = file(*n.as_table(), wpath, false);
                std::string fname = w.filename();
                auto parsed = pep::WheelFilename::parse(fname);
                if (!parsed)
                    r_.fail(nullptr, w.line, "Invalid wheel filename '" + fname + "'", wpath);
                tags_ += parsed->tags.size();
                if (tags_ > kMaxWheelTagsInAll)
                    r_.fail(&n, w.line,
                            "More than " + std::to_string(kMaxWheelTagsInAll) +
                                " wheel tags in all (each wheel's file name expands to its own)",
                            wpath);
                w.parsed = std::move(*parsed);
                check_consistent(p, fname, w.parsed.canonical_name, w.parsed.version, wpath,
                                 w.line);
                p.wheels.push_back(std::move(w));
            }
        }
    }

    // The spec's rule on sources: distributions (sdist, wheels) exclude vcs, directory and
    // archive; without distributions exactly one of those three is set.
    void check_one_source(const Package& p, const std::string& path) {
        const bool dists = p.sdist || !p.wheels.empty();
        const int others =
            int(p.vcs.has_value()) + int(p.directory.has_value()) + int(p.archive.has_value());
        if (dists && others > 0)
            r_.fail(nullptr, p.line,
                    "None of vcs, directory, archive must be set if sdist or wheels are set", path);
        if (!dists && others != 1)
            r_.fail(nullptr, p.line,
                    "Exactly one of vcs, directory, archive must be set if sdist and wheels are "
                    "not set",
                    path);
    }

    Package package(const toml::table& t, const std::string& path) {
        Package p;
        p.line = TomlReader::line_of(t);
        read_package_keys(p, t, path);
        if (const auto* v = r_.opt_table(t, "vcs", path)) p.vcs = vcs_ref(*v, path + ".vcs");
        if (const auto* d = r_.opt_table(t, "directory", path))
            p.directory = directory_ref(*d, path + ".directory");
        if (const auto* archive = r_.opt_table(t, "archive", path))
            p.archive = file(*archive, path + ".archive", true);
        read_dists(p, t, path);
        check_one_source(p, path);
        return p;
    }
};

}  // namespace

bool is_lock_file_name(std::string_view n) {
    if (n == "pylock.toml") return true;
    constexpr std::string_view prefix = "pylock.", suffix = ".toml";
    if (n.size() <= prefix.size() + suffix.size() || n.substr(0, prefix.size()) != prefix ||
        n.substr(n.size() - suffix.size()) != suffix)
        return false;
    std::string_view middle = n.substr(prefix.size(), n.size() - prefix.size() - suffix.size());
    return !middle.empty() && middle.find('.') == std::string_view::npos;
}

std::string FileRef::filename() const {
    if (name) return *name;
    if (path) {
        std::string p = *path;
        std::replace(p.begin(), p.end(), '\\', '/');
        return pep::filename_from_url(p);
    }
    if (url) return pep::filename_from_url(*url);
    return {};
}

std::optional<std::string> FileRef::sha256() const {
    auto it = hashes.find("sha256");
    if (it == hashes.end()) return std::nullopt;
    return it->second;
}

bool Pylock::has_dependency_graph() const {
    return std::all_of(packages.begin(), packages.end(),
                       [](const Package& p) { return p.dependencies.has_value(); });
}

Result<Pylock> Pylock::parse(std::string_view text, std::string_view source, DigestCheck digests) {
    if (digests == DigestCheck::spec) return read_document<LockReader<false>>(text, source);
    return read_document<LockReader<true>>(text, source);
}

}  // namespace envbox::lock
