#include "envbox/util/printable.hpp"

#include <cstdio>
#include <utility>

namespace envbox {
namespace {

// The escape `printable` writes for the byte or code point at `s[at]`, and how many bytes it
// covers; an empty escape when the character is shown as it is.
std::pair<std::string, std::size_t> escape_at(std::string_view s, std::size_t at) {
    const auto byte = static_cast<unsigned char>(s[at]);
    char buf[16];
    if (byte < 0x80) {
        if (!is_hidden_code_point(byte)) return {"", 1};
        if (byte == '\t') return {"\\t", 1};
        if (byte == '\n') return {"\\n", 1};
        if (byte == '\r') return {"\\r", 1};
        std::snprintf(buf, sizeof buf, "\\x%02x", byte);
        return {buf, 1};
    }
    auto c = decode_utf8(s, at);
    if (!c) {
        std::snprintf(buf, sizeof buf, "\\x%02x", byte);
        return {buf, 1};
    }
    if (!is_hidden_code_point(c->code_point)) return {"", c->length};
    std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c->code_point));
    return {buf, c->length};
}

}  // namespace

bool is_hidden_code_point(char32_t c) {
    return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x061c || (c >= 0x200b && c <= 0x200f) ||
           (c >= 0x2028 && c <= 0x202e) || (c >= 0x2060 && c <= 0x2069) || c == 0xfeff;
}

std::optional<Utf8Char> decode_utf8(std::string_view s, std::size_t at) {
    const auto b0 = static_cast<unsigned char>(s[at]);
    if (b0 < 0x80) return Utf8Char{b0, 1};
    std::size_t n;
    char32_t c, min;
    if (b0 >= 0xc2 && b0 <= 0xdf)
        n = 2, c = b0 & 0x1f, min = 0x80;
    else if (b0 >= 0xe0 && b0 <= 0xef)
        n = 3, c = b0 & 0x0f, min = 0x800;
    else if (b0 >= 0xf0 && b0 <= 0xf4)
        n = 4, c = b0 & 0x07, min = 0x10000;
    else
        return std::nullopt;
    if (at + n > s.size()) return std::nullopt;
    for (std::size_t k = 1; k < n; ++k) {
        const auto b = static_cast<unsigned char>(s[at + k]);
        if ((b & 0xc0) != 0x80) return std::nullopt;
        c = (c << 6) | (b & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return std::nullopt;
    return Utf8Char{c, n};
}

std::optional<std::string> first_hidden(std::string_view s) {
    for (std::size_t i = 0; i < s.size();) {
        auto [escape, length] = escape_at(s, i);
        if (!escape.empty()) return escape;
        i += length;
    }
    return std::nullopt;
}

std::string printable(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) {
        auto [escape, length] = escape_at(s, i);
        if (escape.empty())
            out.append(s.substr(i, length));
        else
            out += escape;
        i += length;
    }
    return out;
}

std::string printable_lines(std::string_view s) {
    std::string out;
    for (std::size_t start = 0;;) {
        const std::size_t end = s.find('\n', start);
        out += printable(s.substr(start, end == std::string_view::npos ? s.npos : end - start));
        if (end == std::string_view::npos) return out;
        out += '\n';
        start = end + 1;
    }
}

}  // namespace envbox
