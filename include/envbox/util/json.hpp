#pragma once
/// JSON output helpers (envbox writes JSON reports by hand; it never parses them here).

#include <string>
#include <string_view>

namespace envbox {

/// A JSON string literal for `s`: quotes, backslashes and control characters escaped.
std::string json_quote(std::string_view s);

}  // namespace envbox
