#include "settings.hpp"

#include <cctype>
#include <cstdlib>

#include "envbox/store/home.hpp"

namespace envbox::ops {

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

env::InterpreterSearch interpreter_search(const Settings& settings) {
    return {settings.python, settings.path, settings.user_home, settings.pyenv_root,
            settings.uv_python_install_dir};
}

std::string index_variable_name(const std::string& name, const char* field) {
    std::string var = "ENVBOX_INDEX_";
    for (char c : name)
        var += std::isalnum(static_cast<unsigned char>(c))
                   ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
                   : '_';
    return var + "_" + field;
}

std::string index_variable(const Settings& settings, const std::string& name, const char* field) {
    auto it = settings.index_variables.find(index_variable_name(name, field));
    return it == settings.index_variables.end() ? "" : it->second;
}

}  // namespace envbox::ops
