#pragma once
/// RFC 3339 timestamps, as PEP 700's `upload-time` and the manifest's `exclude-newer` give
/// them, as microseconds since the Unix epoch (UTC). Pure, no time-zone database: an offset is
/// part of the text.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace envbox {

/// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)` (`t`, `z` and a space for `T` as RFC 3339
/// allows): the instant, in microseconds since 1970-01-01T00:00:00Z (a fraction past six
/// digits is cut, at most nine are read). Anything else, a day the month does not have
/// included, gives nullopt. Years 0001–9999, in the text and once in UTC.
std::optional<std::int64_t> parse_rfc3339(std::string_view text);

/// The instant as RFC 3339 in UTC: `2026-11-01T09:30:00Z`, with `.ffffff` when it has
/// microseconds.
std::string format_rfc3339(std::int64_t micros);

}  // namespace envbox
