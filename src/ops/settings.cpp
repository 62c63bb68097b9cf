#include "settings.hpp"

#include <cctype>
#include <charconv>
#include <cstdlib>

#include "envbox/index/url.hpp"
#include "envbox/lock/manifest.hpp"
#include "envbox/ops/lock.hpp"
#include "envbox/store/home.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/printable.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {

std::vector<resolve::IndexConfig> index_configs(const lock::Manifest& m,
                                                const fs::path& manifest_path,
                                                const Settings& settings) {
    std::vector<resolve::IndexConfig> indexes;
    for (const auto& i : m.indexes) {
        resolve::IndexConfig c;
        c.name = i.name;
        // The URL is refused here, naming where it came from, rather than at its first fetch
        // (exit 4, as if the server had failed).
        auto check = [&](const std::string& url, const std::string& where) {
            if (auto problem = index_url_problem(url, i.name))
                throw Error(ErrorCode::invalid_input, where + *problem);
        };
        check(i.url, manifest_path.string() + ": index " + i.name);
        c.url = i.url;
        // A mirror for this machine (a cluster's proxy of PyPI, a copy of the PyTorch index)
        // replaces the URL without an edit to the manifest, which stays the reviewed record.
        if (auto mirror = index_variable(settings, i.name, "URL"); !mirror.empty()) {
            check(mirror,
                  index_variable_name(i.name, "URL") + " (the mirror of index " + i.name + ")");
            c.url = mirror;
            c.canonical = i.url;
            c.mirror_variable = index_variable_name(i.name, "URL");
        }
        for (auto* u : {&c.url, &c.canonical})
            while (!u->empty() && u->back() == '/')
                u->pop_back();
        if (c.canonical == c.url) c.canonical.clear(), c.mirror_variable.clear();
        c.explicit_ = i.explicit_;
        c.ignore_error_codes = i.ignore_error_codes;
        c.exclude_newer = i.exclude_newer;
        if (i.ca)
            c.ca = fs::path(*i.ca).is_absolute() ? *i.ca
                                                 : (manifest_path.parent_path() / *i.ca).string();
        if (auto u = index_variable(settings, i.name, "USERNAME"); !u.empty()) c.username = u;
        if (auto p = index_variable(settings, i.name, "PASSWORD"); !p.empty()) c.password = p;
        indexes.push_back(std::move(c));
    }
    return indexes;
}

index::HttpOptions http_options(const Context& ctx, bool offline) {
    index::HttpOptions o;
    o.cache_dir = store::Home(ctx.home).http_cache();
    o.offline = offline;
    const std::string& timeout = ctx.settings.http_timeout;
    long seconds = timeout.empty() ? 0 : std::atol(timeout.c_str());
    if (seconds > 0) o.timeout_s = seconds;
    o.ca_file = ctx.settings.ca_file;
    return o;
}

std::size_t resolve_max_steps(const Settings& settings) {
    const std::string& v = settings.resolve_max_steps;
    if (v.empty()) return resolve::Options::kMaxSteps;
    std::size_t steps = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), steps);
    if (ec != std::errc() || end != v.data() + v.size() || steps == 0 || steps > 100000000)
        throw Error(
            ErrorCode::usage,
            "ENVBOX_RESOLVE_MAX_STEPS must be a number of steps from 1 to 100000000, not '" + v +
                "'");
    return steps;
}

env::InterpreterSearch interpreter_search(const Settings& settings) {
    return {settings.python, settings.path, settings.user_home, settings.pyenv_root,
            settings.uv_python_install_dir};
}

std::string index_variable_name(const std::string& name, const char* field) {
    return lock::index_variable_name(name, field);  // the manifest reader names them too
}

std::optional<std::string> index_url_problem(const std::string& url, const std::string& name) {
    const bool file = url.starts_with("file://");
    if (!url.starts_with("https://") && !url.starts_with("http://") && !file)
        return ": expected an http(s):// or file:// URL, got '" +
               printable(index::redact_url(url)) + "'";
    if (index::strip_userinfo(url) != url)
        return " has credentials in its URL (" + printable(index::redact_url(url)) +
               "); give them in " + index_variable_name(name, "USERNAME") + " / " +
               index_variable_name(name, "PASSWORD") + " or ~/.netrc instead";
    // A local path may hold a blank or a quote; a URL sent to a server may not (RFC 3986,
    // section 2: they are percent-encoded), and a quote or a blank would end the value in a
    // requirements file or a shell line.
    if (has_hidden(url) ||
        (!file && (url.find_first_of(" \"<>\\^`{|}") != std::string::npos ||
                   index::url_origin(url).empty() || url[url.find("://") + 3] == '/')))
        return ": '" + printable(url) +
               "' is not a valid URL (no host, or a blank, a quote, a bracket, a control "
               "character or a port that cannot be read)";
    return std::nullopt;
}

std::string index_variable(const Settings& settings, const std::string& name, const char* field) {
    auto it = settings.index_variables.find(index_variable_name(name, field));
    return it == settings.index_variables.end() ? "" : it->second;
}

install::GitSettings git_settings(const Context& ctx) {
    return {store::Home(ctx.home).cache() / "git", ctx.settings.git_environment,
            ctx.settings.git_variables};
}

}  // namespace envbox::ops
