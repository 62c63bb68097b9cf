#include "envbox/pep/name.hpp"

namespace envbox::pep {
namespace {
bool is_alnum(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_sep(char c) {
    return c == '-' || c == '_' || c == '.';
}
}  // namespace

std::string ascii_lower(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

bool is_valid_name(std::string_view name) {
    if (name.empty() || !is_alnum(name.front()) || !is_alnum(name.back())) return false;
    for (char c : name)
        if (!is_alnum(c) && !is_sep(c)) return false;
    return true;
}

std::string canonicalize_name(std::string_view name) {
    std::string out;
    out.reserve(name.size());
    bool in_sep = false;
    for (char c : name) {
        if (is_sep(c)) {
            if (!in_sep) out += '-';
            in_sep = true;
        } else {
            out += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
            in_sep = false;
        }
    }
    return out;
}

bool is_normalized_name(std::string_view name) {
    return is_valid_name(name) && canonicalize_name(name) == name;
}

std::string filename_safe_name(std::string_view name) {
    std::string out = canonicalize_name(name);
    for (char& c : out)
        if (c == '-') c = '_';
    return out;
}

}  // namespace envbox::pep
