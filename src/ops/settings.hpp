#pragma once
// What the layers below take from `Context::settings` (the process environment as the cli
// read it), turned into each layer's own explicit options.

#include <cstddef>
#include <optional>
#include <string>

#include "envbox/env/interpreter.hpp"
#include "envbox/index/http.hpp"
#include "envbox/install/git.hpp"
#include "envbox/ops/context.hpp"
#include "envbox/resolve/resolver.hpp"

namespace envbox::ops {

/// The HTTP client's options: the home's page cache, `offline`, the timeout
/// (ENVBOX_HTTP_TIMEOUT when a positive number of seconds) and the CA bundle (SSL_CERT_FILE).
index::HttpOptions http_options(const Context& ctx, bool offline);

/// The resolver's step budget: ENVBOX_RESOLVE_MAX_STEPS when set (1 to 100 000 000, else a
/// usage error naming the variable), otherwise resolve::Options::kMaxSteps.
std::size_t resolve_max_steps(const Settings& settings);

/// Where interpreters are looked for (ENVBOX_PYTHON, PATH, HOME, PYENV_ROOT,
/// UV_PYTHON_INSTALL_DIR).
env::InterpreterSearch interpreter_search(const Settings& settings);

/// `ENVBOX_INDEX_<NAME>_<FIELD>` for the index `name` (letters and digits upper-cased, anything
/// else `_`).
std::string index_variable_name(const std::string& name, const char* field);

/// Why `url` cannot be the URL of the index `name`, or nullopt; the text follows the name of
/// where the URL came from ("manifests/x.toml: index pypi", "--default-index"). The one rule
/// of every command that takes an index URL (`lock`, `create`, `init`, a mirror variable): an
/// http(s):// or file:// URL; no userinfo (a password would be committed, printed and written
/// into locks: credentials go in ENVBOX_INDEX_<NAME>_USERNAME / _PASSWORD or ~/.netrc); no
/// control, line-break or invisible character; and for http(s) a host libcurl reads, with no
/// blank, quote or other character RFC 3986 never allows unescaped.
std::optional<std::string> index_url_problem(const std::string& url, const std::string& name);

/// What git sources are fetched with here: the home's cache/git, git's environment
/// (`Settings::git_environment`) and the ENVBOX_GIT_* variables (install::GitSettings::access).
install::GitSettings git_settings(const Context& ctx);

/// That variable's value as the cli read it, or "".
std::string index_variable(const Settings& settings, const std::string& name, const char* field);

}  // namespace envbox::ops
