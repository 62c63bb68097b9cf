// `[build.NAME]` (manifest_build.hpp).
#include "lock/manifest_build.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

#include "envbox/pep/name.hpp"

namespace envbox::lock {
namespace {

// An array of strings at `t.key`, each checked by `check` (which fails located).
template <class Check>
void read_strings(const TomlReader& r, const toml::table& t, const char* key,
                  const std::string& path, Check check) {
    const auto* list = r.opt_array(t, key, path);
    if (!list) return;
    for (std::size_t k = 0; k < list->size(); ++k) {
        const toml::node& n = *list->get(k);
        const std::string at = TomlReader::index(TomlReader::join(path, key), k);
        if (!n.is_string()) r.wrong_type(n, "str", at);
        check(n, std::string(n.as_string()->get()), at);
    }
}

void read_variables(const TomlReader& r, const toml::table& t, const std::string& path,
                    PackageBuild& b) {
    if (const auto* vars = r.opt_table(t, "variables", path)) {
        for (const auto& [key, node] : *vars) {
            const std::string name(key.str()), at = path + ".variables." + name;
            if (!is_build_variable_name(name))
                r.fail(&node, 0, "Expected a variable name (letters, digits and _)", at);
            if (!node.is_string()) r.wrong_type(node, "str", at);
            const std::string value(node.as_string()->get());
            if (!is_build_variable_value(value))
                r.fail(&node, 0, "Expected a value of at most 4096 bytes without NUL", at);
            b.variables[name] = value;
        }
    }
    read_strings(r, t, "speed-variables", path,
                 [&](const toml::node& n, const std::string& name, const std::string& at) {
                     if (!b.variables.count(name))
                         r.fail(&n, 0, "'" + name + "' is not one of this table's variables", at);
                     b.speed_variables.insert(name);
                 });
}

PackageBuild read_one(const TomlReader& r, const toml::table& t, const std::string& path) {
    r.require_known_keys(t,
                         {"build", "dependencies", "variables", "speed-variables", "requires-dist"},
                         path, kToolHint);
    PackageBuild b;
    b.build = r.opt_string(t, "build", path);
    if (b.build && *b.build != "allow" && *b.build != "never")
        r.fail(t.get("build"), TomlReader::line_of(t), "Expected \"allow\" or \"never\"",
               path + ".build");
    std::set<std::string> seen;
    read_strings(r, t, "dependencies", path,
                 [&](const toml::node& n, const std::string& name, const std::string& at) {
                     if (!pep::is_valid_name(name)) r.fail(&n, 0, "Expected a package name", at);
                     if (!seen.insert(pep::canonicalize_name(name)).second)
                         r.fail(&n, 0, "'" + name + "' is given twice", at);
                     b.dependencies.push_back(pep::canonicalize_name(name));
                 });
    read_variables(r, t, path, b);
    if (t.get("requires-dist")) b.requires_dist.emplace();
    read_strings(r, t, "requires-dist", path,
                 [&](const toml::node& n, const std::string& text, const std::string& at) {
                     auto req = pep::Requirement::parse(text);
                     if (!req) r.fail(&n, 0, req.error().message(), at);
                     if (req->url) r.fail(&n, 0, "Expected a requirement, not a URL", at);
                     b.requires_dist->push_back(std::move(*req));
                 });
    return b;
}

}  // namespace

bool is_build_variable_name(std::string_view s) {
    if (s.empty() || s.size() > 128 || (s[0] >= '0' && s[0] <= '9')) return false;
    for (char c : s)
        if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9')))
            return false;
    return true;
}

bool is_build_variable_value(std::string_view s) {
    return s.size() <= 4096 && s.find('\0') == std::string_view::npos;
}

namespace {

bool plain_text(const std::string& s, std::size_t max) {
    return !s.empty() && s.size() <= max && std::none_of(s.begin(), s.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
}

// A git source's URL: a scheme git fetches over (never `ext::` or another helper), a host, and
// no password (it would be committed with the manifest and the lock).
std::optional<std::string> git_url_problem(const std::string& url) {
    static const std::vector<std::string> kSchemes = {"https://", "http://", "ssh://", "file://"};
    const auto scheme = std::find_if(kSchemes.begin(), kSchemes.end(),
                                     [&](const std::string& s) { return url.starts_with(s); });
    if (scheme == kSchemes.end())
        return "Expected an https://, http://, ssh:// or file:// URL of a git repository";
    const std::string rest = url.substr(scheme->size());
    const std::string authority = rest.substr(0, rest.find('/'));
    if (*scheme != "file://" && authority.empty()) return "Expected a host in the URL";
    const auto at = authority.find('@');
    if (at != std::string::npos &&
        (*scheme != "ssh://" || authority.substr(0, at).find(':') != std::string::npos))
        return "Expected a URL without credentials (they come from ENVBOX_GIT_<NAME>_USERNAME "
               "and _PASSWORD, or ~/.netrc)";
    return std::nullopt;
}

// A git source's URL, revision and subdirectory, as `[sources]` and `git+` requirements give
// them: what git is handed must never read as an option, a refspec or a path out of the tree.
void check_git_source(const TomlReader& r, const toml::node& at, const LocalSource& s,
                      const std::string& path) {
    if (auto bad = git_url_problem(s.git)) r.fail(&at, s.line, *bad, path + ".git");
    const auto& sub = s.subdirectory;
    if (sub && (sub->empty() || sub->front() == '/' || sub->front() == '-' ||
                ("/" + *sub + "/").find("/../") != std::string::npos))
        r.fail(&at, s.line, "Expected a folder inside the repository", path + ".subdirectory");
    const auto& rev = s.rev;
    if (rev && (rev->empty() || rev->front() == '-' || rev->front() == '+' ||
                rev->find("..") != std::string::npos ||
                rev->find_first_of(" :*^~?[\\") != std::string::npos))
        r.fail(&at, s.line, "Expected a branch, tag or commit", path + ".rev");
}

}  // namespace

LocalSource read_local_source(const TomlReader& r, const toml::table& t, const std::string& path) {
    r.require_known_keys(t, {"path", "editable", "git", "rev", "subdirectory"}, path,
                         "a source is an index name (\"pypi\"), { path = \"…\" } or "
                         "{ git = \"…\", rev = \"…\" }");
    LocalSource s;
    s.line = TomlReader::line_of(t);
    const auto given = [&](const char* key) {
        const auto v = r.opt_string(t, key, path);
        if (v && !plain_text(*v, 4096))
            r.fail(t.get(key), s.line, "Expected a value of at most 4096 bytes", path + "." + key);
        return v;
    };
    const auto local = given("path"), git = given("git");
    if (local.has_value() == git.has_value())
        r.fail(nullptr, s.line, "Expected exactly one of path and git", path);
    s.path = local.value_or("");
    s.git = git.value_or("");
    s.rev = given("rev");
    s.subdirectory = given("subdirectory");
    s.editable = r.opt_bool(t, "editable", path).value_or(false);
    if (local && (s.rev || s.subdirectory))
        r.fail(t.get(s.rev ? "rev" : "subdirectory"), s.line,
               "rev and subdirectory go with git (a path names the folder itself)", path);
    if (git && s.editable)
        r.fail(t.get("editable"), s.line, "A git source is built, never editable", path);
    if (git) check_git_source(r, t, s, path);
    return s;
}

std::optional<LocalSource> local_source_of(const TomlReader& r, const toml::node& at,
                                           const pep::Requirement& req, const std::string& path) {
    const std::string url = *req.url;
    LocalSource s;
    s.line = TomlReader::line_of(at);
    s.from_requirement = true;
    const std::string lower = pep::ascii_lower(url.substr(0, 8));
    if (lower.starts_with("git+")) {
        std::string rest = url.substr(4);
        if (const auto hash = rest.find('#'); hash != std::string::npos) {
            const std::string fragment = rest.substr(hash + 1);
            rest.resize(hash);
            for (std::size_t from = 0; from <= fragment.size();) {
                const std::size_t amp = std::min(fragment.find('&', from), fragment.size());
                const std::string part = fragment.substr(from, amp - from);
                if (part.starts_with("subdirectory="))
                    s.subdirectory = part.substr(13);
                else if (!part.empty() && !part.starts_with("egg="))
                    r.fail(&at, 0, "Unknown fragment '#" + part + "' (only subdirectory=)", path);
                from = amp + 1;
            }
        }
        // The revision follows the last '@' of the path (a branch may hold '/'); an '@' of
        // the authority (ssh://git@host) comes before the path.
        const auto scheme = rest.find("://");
        const auto path_at = rest.find('/', scheme == std::string::npos ? 0 : scheme + 3);
        if (const auto rev = rest.rfind('@');
            rev != std::string::npos && path_at != std::string::npos && rev > path_at) {
            s.rev = rest.substr(rev + 1);
            rest.resize(rev);
        }
        s.git = rest;
        check_git_source(r, at, s, path);
        return s;
    }
    const bool file_url = lower.starts_with("file:");
    if (!file_url && url.find("://") != std::string::npos) return std::nullopt;  // http(s)
    std::string where = file_url ? url.substr(url.starts_with("file://") ? 7 : 5) : url;
    const std::string bare = where.substr(0, where.find('#'));  // a wheel's #sha256=…
    const std::string name = bare.substr(bare.rfind('/') + 1);
    static constexpr std::string_view kFiles[] = {".whl",     ".tar.gz", ".tgz", ".zip",
                                                  ".tar.bz2", ".tar.xz", ".tar"};
    for (auto suffix : kFiles)
        if (pep::ascii_lower(name).ends_with(suffix)) return std::nullopt;  // a file
    if (where.find('#') != std::string::npos || !plain_text(where, 4096))
        r.fail(&at, 0, "Expected the path of a folder", path);
    s.path = where;
    return s;
}

std::map<std::string, PackageBuild> read_build_tables(const TomlReader& r, const toml::table& doc) {
    std::map<std::string, PackageBuild> out;
    const auto* builds = r.opt_table(doc, "build", "");
    if (!builds) return out;
    for (const auto& [key, node] : *builds) {
        const std::string name(key.str()), path = "build." + name;
        if (!node.is_table()) r.wrong_type(node, "Mapping", path);
        if (!pep::is_valid_name(name)) r.fail(&node, 0, "Expected a package name", path);
        out[pep::canonicalize_name(name)] = read_one(r, *node.as_table(), path);
    }
    return out;
}

}  // namespace envbox::lock
