#include "envbox/lock/build_system.hpp"

#include <cctype>

#include "lock/toml_reader.hpp"

namespace envbox::lock {
namespace {

Error bad(std::string_view source, const toml::node* at, const std::string& what) {
    const auto line = at ? at->source().begin.line : 0;
    return Error(ErrorCode::invalid_input, std::string(source) +
                                               (line ? ":" + std::to_string(line) : "") +
                                               ": [build-system] " + what);
}

bool identifier(std::string_view s) {
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
    for (char c : s)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
    return true;
}

// `module.sub` or `module.sub:object.attr`, each part a Python identifier.
bool backend_name(std::string_view s) {
    const auto colon = s.find(':');
    const auto dotted = [](std::string_view d) {
        std::size_t at = 0;
        for (;;) {
            const auto dot = d.find('.', at);
            if (!identifier(d.substr(at, dot - at))) return false;
            if (dot == std::string_view::npos) return true;
            at = dot + 1;
        }
    };
    return dotted(s.substr(0, colon)) &&
           (colon == std::string_view::npos || dotted(s.substr(colon + 1)));
}

bool inside_tree(std::string_view p) {
    if (p.empty() || p.front() == '/') return false;
    std::size_t at = 0;
    while (at <= p.size()) {
        std::size_t slash = p.find('/', at);
        if (slash == std::string_view::npos) slash = p.size();
        if (p.substr(at, slash - at) == "..") return false;
        at = slash + 1;
    }
    return true;
}

BuildSystem legacy() {
    BuildSystem b;
    b.requires_.push_back(pep::Requirement::parse("setuptools>=40.8.0").value());
    b.backend = "setuptools.build_meta:__legacy__";
    b.legacy = true;
    return b;
}

}  // namespace

Result<BuildSystem> read_build_system(const std::optional<std::string>& text,
                                      std::string_view source) {
    if (!text) return legacy();
    auto doc = parse_toml(*text, source);
    if (!doc) return doc.error();
    const toml::node* node = doc->get("build-system");
    if (!node) return legacy();
    const toml::table* t = node->as_table();
    if (!t) return bad(source, node, "is not a table");
    BuildSystem out;
    const toml::node* req = t->get("requires");
    // PEP 518: a [build-system] without `requires` is an error; pip refuses it too.
    if (!req || !req->as_array())
        return bad(source, req ? req : node, "needs `requires`, an array of strings");
    for (const auto& e : *req->as_array()) {
        const auto s = e.value<std::string>();
        if (!s) return bad(source, &e, "`requires` holds a value that is not a string");
        auto r = pep::Requirement::parse(*s);
        if (!r) return bad(source, &e, "requirement '" + *s + "': " + r.error().message());
        out.requires_.push_back(std::move(*r));
    }
    if (const toml::node* b = t->get("build-backend")) {
        const auto s = b->value<std::string>();
        if (!s || !backend_name(*s))
            return bad(source, b, "`build-backend` is not `module[:object]` of Python names");
        out.backend = *s;
    } else {
        out.backend = "setuptools.build_meta:__legacy__";
        out.legacy = true;
    }
    if (const toml::node* p = t->get("backend-path")) {
        const toml::array* a = p->as_array();
        if (!a) return bad(source, p, "`backend-path` is not an array of strings");
        for (const auto& e : *a) {
            const auto s = e.value<std::string>();
            if (!s || !inside_tree(*s))
                return bad(source, &e, "`backend-path` entries must be folders inside the tree");
            out.backend_path.push_back(*s);
        }
    }
    return out;
}

}  // namespace envbox::lock
