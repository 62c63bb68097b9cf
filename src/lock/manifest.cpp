#include "envbox/lock/manifest.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>

#include "envbox/lock/direct_reference.hpp"
#include "envbox/pep/name.hpp"
#include "envbox/util/time.hpp"
#include "lock/manifest_build.hpp"
#include "lock/toml_reader.hpp"

namespace envbox::lock {
namespace {

// "3.12" → (3, 12); false when not two dot-separated numbers.
bool parse_major_minor(std::string_view s, int& major, int& minor) {
    auto dot = s.find('.');
    if (dot == std::string_view::npos || dot == 0 || dot + 1 >= s.size()) return false;
    try {
        std::size_t used = 0;
        major = std::stoi(std::string(s.substr(0, dot)), &used);
        if (used != dot) return false;
        minor = std::stoi(std::string(s.substr(dot + 1)), &used);
        return used == s.size() - dot - 1;
    } catch (const std::exception&) {
        return false;
    }
}

class ManifestReader {
  public:
    explicit ManifestReader(std::string_view source, const ProjectFile* project = nullptr)
        : r_(source), project_(project) {}

    Manifest read(const toml::table& doc) {
        // Every key envbox reads, table by table: a typo (`explict`) must not pass for a
        // setting that was never applied. [sources] and [run.env] take any name.
        r_.require_known_keys(
            doc, {"environment", "index", "sources", "run", "install", "build", "tool"}, "",
            kToolHint);
        if (const toml::node* tool = doc.get("tool"); tool && !tool->is_table())
            r_.wrong_type(*tool, "Mapping", "tool");
        Manifest m;
        read_environment(m, doc);
        std::set<std::string> names = read_indexes(m, doc);
        if (project_) {  // the project's shared settings, under the manifest's own
            for (const auto& i : project_->indexes)
                if (names.insert(i.name).second) m.indexes.push_back(i);
            m.sources = project_->sources;
            for (const auto& [name, local] : project_->local_sources)  // a requirement's URL wins
                m.local_sources.emplace(name, local);
            for (const auto& [name, local] : m.local_sources)
                m.sources.erase(name);
            m.run_env = project_->run_env;
            if (!m.prerelease) m.prerelease = project_->prerelease;
            if (!m.overrides) m.overrides = project_->overrides;
            if (!m.constraints) m.constraints = project_->constraints;
            if (!m.exclude_newer) m.exclude_newer = project_->exclude_newer;
        }
        read_sources(m, doc, names);
        read_run(m, doc);
        if (const auto* install = r_.opt_table(doc, "install", "")) {
            r_.require_known_keys(*install, {"prefer", "compile", "allow-unlinked"}, "install",
                                  kToolHint);
            m.install_prefer = read_packages(*install, "prefer");
            m.install_allow_unlinked = read_packages(*install, "allow-unlinked");
            m.install_compile = r_.opt_bool(*install, "compile", "install");
        }
        m.package_builds = read_build_tables(r_, doc);
        return m;
    }

    // `envbox.toml`: `default-env`, and the tables a manifest has that environments share.
    ProjectFile read_project(const toml::table& doc) {
        r_.require_known_keys(
            doc, {"default-env", "environment", "index", "sources", "run", "tool"}, "", kToolHint);
        if (const toml::node* tool = doc.get("tool"); tool && !tool->is_table())
            r_.wrong_type(*tool, "Mapping", "tool");
        Manifest m;
        const std::set<std::string> names = read_indexes(m, doc);
        read_sources(m, doc, names);
        read_run(m, doc);
        ProjectFile p;
        if (const auto* env = r_.opt_table(doc, "environment", "")) {
            // Only what environments may share: their targets and requirements are their own.
            r_.require_known_keys(*env, {"prerelease", "overrides", "constraints", "exclude-newer"},
                                  "environment",
                                  "python, platform, cuda and requirements belong in each "
                                  "manifest");
            p.prerelease = read_prerelease(*env);
            p.overrides = read_resolution_list(*env, "overrides");
            p.constraints = read_resolution_list(*env, "constraints");
            p.exclude_newer = read_exclude_newer(*env);
        }
        p.default_env = r_.opt_string(doc, "default-env", "");
        p.indexes = std::move(m.indexes);
        p.sources = std::move(m.sources);
        p.local_sources = std::move(m.local_sources);
        for (auto& [name, local] : p.local_sources)
            local.from_project = true;
        p.run_env = std::move(m.run_env);
        return p;
    }

  private:
    // `[environment]`, required: the CPython version, the platform, the optional CUDA line and
    // the requirements.
    void read_environment(Manifest& m, const toml::table& doc) {
        const auto* env = r_.opt_table(doc, "environment", "");
        if (!env) r_.fail(nullptr, 1, "Missing required table", "environment");
        r_.require_known_keys(
            *env,
            {"python", "platform", "platforms", "cuda", "prerelease", "overrides", "constraints",
             "exclude-newer", "build", "requirements", "dependency-groups"},
            "environment", kToolHint);
        m.prerelease = read_prerelease(*env);
        m.build = read_build_policy(*env);
        m.overrides = read_resolution_list(*env, "overrides");
        m.constraints = read_resolution_list(*env, "constraints");
        m.exclude_newer = read_exclude_newer(*env);
        const int line = TomlReader::line_of(*env);
        m.python = r_.req_string(*env, "python", "environment", line);
        if (!parse_major_minor(m.python, m.python_major, m.python_minor) || m.python_major != 3)
            r_.fail(env->get("python"), line, "Expected a CPython version such as \"3.12\"",
                    "environment.python");
        read_platforms(m, *env, line);
        m.cuda = r_.opt_string(*env, "cuda", "environment");
        int cmaj = 0, cmin = 0;
        if (m.cuda && !parse_major_minor(*m.cuda, cmaj, cmin))
            r_.fail(env->get("cuda"), line, "Expected a CUDA line such as \"12.8\"",
                    "environment.cuda");
        if (const auto* groups = r_.opt_array(*env, "dependency-groups", "environment"))
            for (std::size_t k = 0; k < groups->size(); ++k) {
                const toml::node& n = *groups->get(k);
                const std::string at = TomlReader::index("environment.dependency-groups", k);
                if (!n.is_string()) r_.wrong_type(n, "str", at);
                const std::string group(n.as_string()->get());
                if (!pep::is_valid_name(group)) r_.fail(&n, 0, "Invalid group name", at);
                m.dependency_groups.push_back(pep::canonicalize_name(group));
            }
        const auto* reqs = r_.opt_array(*env, "requirements", "environment");
        if (!reqs) r_.fail(nullptr, line, "Missing required value", "environment.requirements");
        for (std::size_t k = 0; k < reqs->size(); ++k) {
            const toml::node& n = *reqs->get(k);
            std::string path = TomlReader::index("environment.requirements", k);
            if (!n.is_string()) r_.wrong_type(n, "str", path);
            auto req = pep::Requirement::parse(n.as_string()->get());
            if (!req) r_.fail(&n, 0, req.error().message(), path);
            // A folder or a git URL is a local source; any other direct reference must be a
            // wheel envbox can lock (lock/direct_reference.hpp).
            if (req->url) {
                if (auto local = local_source_of(r_, n, *req, path)) {
                    m.local_sources[req->canonical_name()] = std::move(*local);
                    req->url.reset();
                } else if (auto ref = DirectReference::parse(*req); !ref) {
                    r_.fail(&n, 0, ref.error().message(), path);
                }
            }
            m.requirements.push_back(std::move(*req));
        }
    }

    // `overrides` / `constraints`: PEP 508 requirements of index packages (markers allowed, no
    // direct reference: they change what is chosen, not where it comes from), each package once.
    std::optional<std::vector<pep::Requirement>> read_resolution_list(const toml::table& env,
                                                                      const char* key) {
        const auto* list = r_.opt_array(env, key, "environment");
        if (!list) return std::nullopt;
        std::vector<pep::Requirement> out;
        std::set<std::string> seen;
        for (std::size_t k = 0; k < list->size(); ++k) {
            const toml::node& n = *list->get(k);
            const std::string path = TomlReader::index(std::string("environment.") + key, k);
            if (!n.is_string()) r_.wrong_type(n, "str", path);
            auto req = pep::Requirement::parse(n.as_string()->get());
            if (!req) r_.fail(&n, 0, req.error().message(), path);
            if (req->url)
                r_.fail(&n, 0, "Expected a requirement on an index package, not a URL", path);
            if (!req->marker && !seen.insert(pep::canonicalize_name(req->name)).second)
                r_.fail(&n, 0, "'" + req->name + "' is given twice without a marker", path);
            out.push_back(std::move(*req));
        }
        return out;
    }

    // `build = "allow" | "never"` under [environment].
    std::optional<std::string> read_build_policy(const toml::table& t) {
        auto value = r_.opt_string(t, "build", "environment");
        if (value && *value != "allow" && *value != "never")
            r_.fail(t.get("build"), TomlReader::line_of(t), "Expected \"allow\" or \"never\"",
                    "environment.build");
        return value;
    }

    // `prerelease`, one of uv's policy names.
    std::optional<std::string> read_prerelease(const toml::table& env) {
        auto value = r_.opt_string(env, "prerelease", "environment");
        static const std::set<std::string> names = {"if-necessary-or-explicit", "allow", "disallow",
                                                    "explicit", "if-necessary"};
        if (value && !names.count(*value))
            r_.fail(env.get("prerelease"), TomlReader::line_of(env),
                    "Expected one of \"if-necessary-or-explicit\", \"allow\", \"disallow\", "
                    "\"explicit\", \"if-necessary\"",
                    "environment.prerelease");
        return value;
    }

    // `exclude-newer`: an RFC 3339 time with its offset, or a date (midnight UTC), as a string
    // or a TOML offset date-time; kept as UTC (`2026-11-01T00:00:00Z`). A time without an
    // offset is refused: it would name another instant on a machine in another time zone.
    std::optional<std::string> read_exclude_newer(const toml::table& env) {
        const toml::node* n = env.get("exclude-newer");
        if (!n) return std::nullopt;
        std::string text;
        if (n->is_string()) {
            text = n->as_string()->get();
        } else if (n->is_date_time() && n->as_date_time()->get().offset) {
            std::ostringstream out;
            out << n->as_date_time()->get();
            text = out.str();
        } else if (n->is_date()) {
            std::ostringstream out;
            out << n->as_date()->get();
            text = out.str();
        }
        if (text.size() == 10) text += "T00:00:00Z";  // a date: from its first instant, UTC
        auto at = parse_rfc3339(text);
        if (!at)
            r_.fail(n, TomlReader::line_of(env),
                    "Expected an RFC 3339 time with its offset, such as \"2026-11-01T00:00:00Z\", "
                    "or a date, such as \"2026-11-01\"",
                    "environment.exclude-newer");
        return format_rfc3339(*at);
    }

    // `platform = "…"` or `platforms = ["…", …]` (not both): supported targets, each once, no
    // two of one machine, since the lock's markers select a target by `platform_machine`.
    void read_platforms(Manifest& m, const toml::table& env, int line) {
        const toml::node* list = env.get("platforms");
        if (!list) {
            m.platform = r_.req_string(env, "platform", "environment", line);
            if (auto p = pep::target_platforms(m.platform); !p)
                r_.fail(env.get("platform"), line, p.error().message(), "environment.platform");
            m.platforms = {m.platform};
            return;
        }
        if (env.get("platform"))
            r_.fail(env.get("platform"), line, "Give either 'platform' or 'platforms', not both",
                    "environment.platform");
        const auto* arr = r_.opt_array(env, "platforms", "environment");
        if (arr->empty())
            r_.fail(list, line, "Expected at least one platform", "environment.platforms");
        // Each platform is a resolution of its own; a real lock has one or two.
        constexpr std::size_t kMaxPlatforms = 16;
        if (arr->size() > kMaxPlatforms)
            r_.fail(list, line,
                    "More than " + std::to_string(kMaxPlatforms) + " platforms (" +
                        std::to_string(arr->size()) + ")",
                    "environment.platforms");
        std::map<std::string, std::string> by_machine;
        for (std::size_t k = 0; k < arr->size(); ++k) {
            const toml::node& n = *arr->get(k);
            const std::string path = TomlReader::index("environment.platforms", k);
            if (!n.is_string()) r_.wrong_type(n, "str", path);
            std::string platform(n.as_string()->get());
            if (auto p = pep::target_platforms(platform); !p)
                r_.fail(&n, line, p.error().message(), path);
            auto [other, fresh] = by_machine.try_emplace(machine_of(platform), platform);
            if (!fresh && other->second == platform)
                r_.fail(&n, line, "'" + platform + "' is listed twice", path);
            if (!fresh)
                r_.fail(&n, line,
                        "'" + platform + "' and '" + other->second + "' are both " + other->first +
                            ": a lock tells its targets apart by machine, so list one of them",
                        path);
            m.platforms.push_back(std::move(platform));
        }
        m.platform = m.platforms.front();
    }

    // The machine a platform tag ends with ("x86_64" of "manylinux_2_28_x86_64").
    static std::string machine_of(const std::string& platform) {
        for (const char* machine : {"x86_64", "aarch64", "ppc64le", "s390x", "armv7l", "i686"})
            if (platform.ends_with(machine)) return machine;
        return platform;
    }

    // `[[index]]` entries, names unique and URLs http(s):// or file:// (trailing '/' dropped);
    // returns the names, which `[sources]` must use.
    std::set<std::string> read_indexes(Manifest& m, const toml::table& doc) {
        std::set<std::string> names;
        const auto* idx = r_.opt_array(doc, "index", "");
        if (!idx) return names;
        for (std::size_t k = 0; k < idx->size(); ++k) {
            const toml::node& n = *idx->get(k);
            std::string path = TomlReader::index("index", k);
            if (!n.is_table()) r_.wrong_type(n, "Mapping", path);
            const auto& t = *n.as_table();
            r_.require_known_keys(
                t, {"name", "url", "explicit", "ca", "ignore-error-codes", "exclude-newer"}, path,
                kToolHint);
            IndexSpec spec;
            spec.name = r_.req_string(t, "name", path, TomlReader::line_of(n));
            spec.url = r_.req_string(t, "url", path, TomlReader::line_of(n));
            spec.explicit_ = r_.opt_bool(t, "explicit", path).value_or(false);
            spec.ca = r_.opt_string(t, "ca", path);
            spec.ignore_error_codes = read_status_codes(t, path);
            spec.exclude_newer = r_.opt_bool(t, "exclude-newer", path).value_or(true);
            if (!names.insert(spec.name).second)
                r_.fail(t.get("name"), 0, "Duplicate index name '" + spec.name + "'",
                        path + ".name");
            if (spec.url.rfind("https://", 0) != 0 && spec.url.rfind("http://", 0) != 0 &&
                spec.url.rfind("file://", 0) != 0)
                r_.fail(t.get("url"), 0, "Expected an http(s):// or file:// URL", path + ".url");
            // A password here would be committed, printed, and sent in clear over http; the
            // URL itself is not repeated in the message.
            if (const auto host = spec.url.find("://") + 3;
                spec.url.substr(host, spec.url.find_first_of("/?#", host) - host).find('@') !=
                std::string::npos)
                r_.fail(t.get("url"), 0,
                        "Expected a URL without credentials (user:password@); give them in " +
                            index_variable_name(spec.name, "USERNAME") + " / " +
                            index_variable_name(spec.name, "PASSWORD") + " or ~/.netrc instead",
                        path + ".url");
            // Said before the trailing slashes go, which would leave "https:" of "https://".
            if (const auto host = spec.url.find("://") + 3;
                spec.url.rfind("file://", 0) != 0 &&
                spec.url.find_first_not_of('/', host) == std::string::npos)
                r_.fail(t.get("url"), 0,
                        "Expected a host after '" + spec.url.substr(0, host) + "' in '" + spec.url +
                            "'",
                        path + ".url");
            while (!spec.url.empty() && spec.url.back() == '/')
                spec.url.pop_back();
            m.indexes.push_back(std::move(spec));
        }
        return names;
    }

    // `[sources]`: package name → the name of one of the `[[index]]` entries (`names`), or a
    // table naming a local source tree (manifest_build.hpp's read_local_source).
    void read_sources(Manifest& m, const toml::table& doc, const std::set<std::string>& names) {
        const auto* sources = r_.opt_table(doc, "sources", "");
        if (!sources) return;
        for (const auto& [pkg, node] : *sources) {
            std::string path = "sources." + std::string(pkg.str());
            if (!pep::is_valid_name(pkg.str()))
                r_.fail(&node, 0, "Invalid package name '" + std::string(pkg.str()) + "'", path);
            const std::string name = pep::canonicalize_name(pkg.str());
            if (auto l = m.local_sources.find(name);
                l != m.local_sources.end() && l->second.from_requirement)
                r_.fail(&node, 0,
                        "'" + name + "' is named by a direct reference in requirements (line " +
                            std::to_string(l->second.line) + ") too: give it in one place",
                        path);
            if (node.is_table()) {
                m.local_sources[name] = read_local_source(r_, *node.as_table(), path);
                m.sources.erase(name);
                continue;
            }
            if (!node.is_string()) r_.wrong_type(node, "str or Mapping", path);
            std::string index(node.as_string()->get());
            if (!names.count(index)) {
                std::vector<std::string_view> known(names.begin(), names.end());
                auto near = closest_spelling(index, known);
                r_.fail(&node, 0,
                        "No [[index]] is named '" + index + "'" +
                            (near ? " (did you mean '" + *near + "'?)" : ""),
                        path);
            }
            m.sources[name] = index;
            m.local_sources.erase(name);
        }
    }

    // `[run]`: `env`, variables (string values) set for commands run in the environment.
    void read_run(Manifest& m, const toml::table& doc) {
        const auto* run = r_.opt_table(doc, "run", "");
        if (!run) return;
        r_.require_known_keys(*run, {"env"}, "run", kToolHint);
        if (const auto* env_vars = r_.opt_table(*run, "env", "run")) {
            for (const auto& [key, node] : *env_vars) {
                if (!node.is_string())
                    r_.wrong_type(node, "str", "run.env." + std::string(key.str()));
                m.run_env[std::string(key.str())] = std::string(node.as_string()->get());
            }
        }
    }

    // `ignore-error-codes = [403]`: HTTP error statuses (400-599), each once.
    std::vector<int> read_status_codes(const toml::table& t, const std::string& parent) {
        std::vector<int> codes;
        const std::string path = TomlReader::join(parent, "ignore-error-codes");
        const auto* list = r_.opt_array(t, "ignore-error-codes", parent);
        if (!list) return codes;
        for (std::size_t k = 0; k < list->size(); ++k) {
            const toml::node& n = *list->get(k);
            if (!n.is_integer()) r_.wrong_type(n, "int", TomlReader::index(path, k));
            std::int64_t code = n.as_integer()->get();
            if (code < 400 || code > 599)
                r_.fail(&n, 0,
                        "Expected an HTTP error status (400-599), not " + std::to_string(code),
                        TomlReader::index(path, k));
            if (std::find(codes.begin(), codes.end(), code) == codes.end())
                codes.push_back(static_cast<int>(code));
        }
        return codes;
    }

    // `prefer = ["opencv-python-headless"]` (or `allow-unlinked`): valid package names, each once.
    std::vector<PreferredPackage> read_packages(const toml::table& install, const char* key) {
        std::vector<PreferredPackage> out;
        std::set<std::string> seen;
        const auto* list = r_.opt_array(install, key, "install");
        if (!list) return out;
        for (std::size_t k = 0; k < list->size(); ++k) {
            const toml::node& n = *list->get(k);
            std::string path = TomlReader::index(std::string("install.") + key, k);
            if (!n.is_string()) r_.wrong_type(n, "str", path);
            std::string name(n.as_string()->get());
            if (!pep::is_valid_name(name))
                r_.fail(&n, 0, "Invalid package name '" + name + "'", path);
            PreferredPackage p{pep::canonicalize_name(name), TomlReader::line_of(n)};
            if (!seen.insert(p.name).second) r_.fail(&n, 0, "'" + name + "' is listed twice", path);
            out.push_back(std::move(p));
        }
        return out;
    }

    TomlReader r_;
    const ProjectFile* project_ = nullptr;
};

struct ProjectReader {
    explicit ProjectReader(std::string_view source) : reader(source) {}
    ProjectFile read(const toml::table& doc) { return reader.read_project(doc); }
    ManifestReader reader;
};

}  // namespace

std::string index_variable_name(std::string_view name, std::string_view field) {
    std::string var = "ENVBOX_INDEX_";
    for (char c : name)
        var += std::isalnum(static_cast<unsigned char>(c))
                   ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
                   : '_';
    return var + "_" + std::string(field);
}

Result<Manifest> Manifest::parse(std::string_view text, std::string_view source,
                                 const ProjectFile* project) {
    auto doc = parse_toml(text, source);
    if (!doc) return doc.error();
    try {
        return ManifestReader(source, project).read(*doc);
    } catch (Error& e) {
        return std::move(e);
    }
}

Result<ProjectFile> ProjectFile::parse(std::string_view text, std::string_view source) {
    return read_document<ProjectReader>(text, source);
}

bool Manifest::may_build(const std::string& name) const {
    if (auto it = package_builds.find(name); it != package_builds.end() && it->second.build)
        return *it->second.build == "allow";
    return build.value_or("never") == "allow";
}

std::optional<Error> Manifest::check_prefer(const std::vector<std::string>& lock_names,
                                            std::string_view source) const {
    const std::set<std::string_view> names(lock_names.begin(), lock_names.end());
    for (const auto& p : install_prefer)
        if (!names.count(p.name))
            return Error(ErrorCode::invalid_input,
                         std::string(source) + ":" + std::to_string(p.line) + ": '" + p.name +
                             "' is not a package of the lock in 'install.prefer'");
    return std::nullopt;
}

Result<pep::TargetTags> Manifest::target_tags() const {
    return pep::TargetTags::cpython(python_major, python_minor, platform);
}

}  // namespace envbox::lock
