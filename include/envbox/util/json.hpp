#pragma once
/// The one JSON writer of envbox's `--json` reports and `diff --format json`. A report is built
/// as a `Json` value (nlohmann's `ordered_json`: members keep the order they were set in, which
/// is the order docs/ documents) and written by `json_line`. envbox never parses JSON here.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace envbox {

/// A JSON value whose object members keep their insertion order.
using Json = nlohmann::ordered_json;

/// A JSON string literal for `s`: `"` and `\` escaped, `\n` `\r` `\t` as such, other control
/// characters and DEL as `\u00XX`, the other code points `printable` hides (NEL, U+2028, bidi
/// overrides…) as `\uXXXX`; every other byte (UTF-8 or not) is copied unchanged.
std::string json_quote(std::string_view s);

/// `value` on one line, without a newline, as every report prints it: `", "` between members
/// and elements, `": "` after a key, strings as `json_quote` writes them (so a path that is not
/// UTF-8 is written, never refused), floating-point numbers with `decimals` digits after the
/// point (`%.*f`: seconds are reported to the millisecond).
std::string json_line(const Json& value, int decimals = 3);

}  // namespace envbox
