#pragma once
/// Text from a lock, an index or a wheel as it may be shown to a person or handed to a program
/// that splits lines: the characters that end a line, move the cursor, start a terminal escape
/// sequence, reorder the text around them or cannot be seen at all are found (`has_hidden`)
/// and written as visible escapes (`printable`). One rule for every printer and every reader
/// that refuses such values, so what a review shows is what a program reads.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace envbox {

/// True for a code point a terminal or a line-splitting reader does not show as itself: the C0
/// controls (tab and every separator Python's `str.splitlines` honours among them), DEL, the C1
/// controls (NEL, U+0085, included), U+2028 and U+2029, the bidirectional controls (U+061C,
/// U+200E, U+200F, U+202A–U+202E, U+2066–U+2069) and the invisible ones (U+200B–U+200D,
/// U+2060–U+2065, U+FEFF).
bool is_hidden_code_point(char32_t c);

/// The UTF-8 sequence at `s[at]`: its code point and length, or nullopt for a byte that does
/// not start a well-formed sequence (a stray continuation byte, an overlong form, a surrogate,
/// past U+10FFFF, or cut short).
struct Utf8Char {
    char32_t code_point;
    std::size_t length;
};
std::optional<Utf8Char> decode_utf8(std::string_view s, std::size_t at);

/// The first character of `s` that `printable` would escape (as `printable` writes it, e.g.
/// `\x0b`, `\u2028`), or nullopt when `s` can be shown as it is.
std::optional<std::string> first_hidden(std::string_view s);

/// True when `s` holds a character `printable` escapes.
inline bool has_hidden(std::string_view s) {
    return first_hidden(s).has_value();
}

/// `s` with every hidden code point and every byte that is not well-formed UTF-8 escaped:
/// `\t`, `\n`, `\r` as such, another byte below 0x80 or a malformed byte as `\xNN`, a code point
/// as `\uNNNN`. Every other character, `\` included, is copied, so the ordinary text of a name,
/// version, URL or path prints unchanged.
std::string printable(std::string_view s);

/// `s` made printable line by line: its `\n`s kept as line breaks (a message's "while …"
/// context, a report's rows), every other hidden character escaped.
std::string printable_lines(std::string_view s);

}  // namespace envbox
