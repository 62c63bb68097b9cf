#pragma once
// Small ASCII text helpers shared by the pep parsers. Python's `str.isdigit`, `\s` and
// case-folding are Unicode-aware; the standards these parsers implement are ASCII-only, so
// these are too (`1.0+İ` and Arabic-Indic digits are invalid versions).

#include <cstdint>
#include <string_view>

namespace envbox::pep {

inline bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_ascii_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
inline bool is_ascii_alnum(char c) { return is_ascii_digit(c) || is_ascii_alpha(c); }
inline bool is_ascii_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
inline char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

inline std::string_view strip_ascii_space(std::string_view s) {
    while (!s.empty() && is_ascii_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_ascii_space(s.back())) s.remove_suffix(1);
    return s;
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
