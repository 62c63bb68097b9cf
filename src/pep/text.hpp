#pragma once
// Small ASCII text helpers shared by the pep parsers. Python's `str.isdigit`, `\s` and
// case-folding are Unicode-aware; the standards these parsers implement are ASCII-only, so
// these are too (`1.0+İ` and Arabic-Indic digits are invalid versions).

#include <cstdint>
#include <string>
#include <string_view>

namespace envbox::pep {

inline bool is_ascii_digit(char c) {
    return c >= '0' && c <= '9';
}
inline bool is_ascii_alpha(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
inline bool is_ascii_alnum(char c) {
    return is_ascii_digit(c) || is_ascii_alpha(c);
}
inline bool is_ascii_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
inline char lower(char c) {
    return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

/// `s` as an error message quotes it: hostile input can be megabytes, so past 200 bytes its
/// start, "…" and its length.
inline std::string quoted_for_error(std::string_view s) {
    constexpr std::size_t kShown = 200;
    if (s.size() <= kShown) return std::string(s);
    return std::string(s.substr(0, kShown)) + "… (" + std::to_string(s.size()) + " bytes)";
}

inline std::string_view strip_ascii_space(std::string_view s) {
    while (!s.empty() && is_ascii_space(s.front()))
        s.remove_prefix(1);
    while (!s.empty() && is_ascii_space(s.back()))
        s.remove_suffix(1);
    return s;
}

/// Length of the Unicode whitespace character (as Python's `str.isspace`) that `s` starts with
/// (UTF-8), or 0.
inline std::size_t leading_unicode_space(std::string_view s) {
    if (s.empty()) return 0;
    auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    if (is_ascii_space(s[0]) || (b(0) >= 0x1c && b(0) <= 0x1f)) return 1;
    if (s.size() >= 2 && b(0) == 0xc2 && (b(1) == 0x85 || b(1) == 0xa0)) return 2;
    if (s.size() >= 3) {
        unsigned cp = ((b(0) & 0x0fu) << 12) | ((b(1) & 0x3fu) << 6) | (b(2) & 0x3fu);
        if ((b(0) & 0xf0) == 0xe0 &&
            (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
             cp == 0x202f || cp == 0x205f || cp == 0x3000))
            return 3;
    }
    return 0;
}

/// Strips Unicode whitespace (UTF-8) from both ends, as Python's `str.strip()`.
inline std::string_view strip_unicode_space(std::string_view s) {
    while (std::size_t n = leading_unicode_space(s))
        s.remove_prefix(n);
    for (;;) {
        std::size_t n = 0;
        for (std::size_t len : {1u, 2u, 3u})
            if (s.size() >= len && leading_unicode_space(s.substr(s.size() - len)) == len) n = len;
        if (n == 0) return s;
        s.remove_suffix(n);
    }
}

/// Parses ASCII digits at `s[i]` into `out`, advancing `i`; false (i unchanged) when there are
/// none or the value overflows 64 bits.
inline bool parse_u64(std::string_view s, std::size_t& i, std::uint64_t& out) {
    std::size_t j = i;
    std::uint64_t v = 0;
    while (j < s.size() && is_ascii_digit(s[j])) {
        std::uint64_t d = static_cast<std::uint64_t>(s[j] - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
        ++j;
    }
    if (j == i) return false;
    i = j;
    out = v;
    return true;
}

}  // namespace envbox::pep
