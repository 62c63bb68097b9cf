#include "envbox/util/time.hpp"

#include <cstdio>

namespace envbox {
namespace {

constexpr std::int64_t kMicrosPerSecond = 1'000'000;
constexpr std::int64_t kSecondsPerDay = 86'400;

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const auto yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

// Its inverse: the date of a day count.
void civil_from_days(std::int64_t z, std::int64_t& y, unsigned& m, unsigned& d) {
    z += 719468;
    const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const auto doe = static_cast<unsigned>(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    d = doy - (153 * mp + 2) / 5 + 1;
    m = mp < 10 ? mp + 3 : mp - 9;
    y = static_cast<std::int64_t>(yoe) + era * 400 + (m <= 2);
}

unsigned days_in_month(std::int64_t y, unsigned m) {
    static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : kDays[m - 1];
}

// Reads exactly `n` decimal digits at `at`, moving past them.
bool digits(std::string_view s, std::size_t& at, int n, int& out) {
    if (at + static_cast<std::size_t>(n) > s.size()) return false;
    out = 0;
    for (int i = 0; i < n; ++i) {
        const char c = s[at++];
        if (c < '0' || c > '9') return false;
        out = out * 10 + (c - '0');
    }
    return true;
}

bool expect(std::string_view s, std::size_t& at, std::string_view one_of) {
    if (at >= s.size() || one_of.find(s[at]) == std::string_view::npos) return false;
    ++at;
    return true;
}

}  // namespace

std::optional<std::int64_t> parse_rfc3339(std::string_view s) {
    std::size_t at = 0;
    int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
    if (!digits(s, at, 4, year) || !expect(s, at, "-") || !digits(s, at, 2, month) ||
        !expect(s, at, "-") || !digits(s, at, 2, day) || !expect(s, at, "Tt ") ||
        !digits(s, at, 2, hour) || !expect(s, at, ":") || !digits(s, at, 2, minute) ||
        !expect(s, at, ":") || !digits(s, at, 2, second))
        return std::nullopt;
    if (year < 1 || month < 1 || month > 12 || day < 1 ||
        static_cast<unsigned>(day) > days_in_month(year, static_cast<unsigned>(month)) ||
        hour > 23 || minute > 59 || second > 60)  // 60: a leap second
        return std::nullopt;
    std::int64_t micros = 0;
    if (at < s.size() && s[at] == '.') {
        ++at;
        int n = 0;
        for (; at < s.size() && s[at] >= '0' && s[at] <= '9'; ++at, ++n) {
            if (n >= 9) return std::nullopt;
            if (n < 6) micros = micros * 10 + (s[at] - '0');
        }
        if (n == 0) return std::nullopt;
        for (int k = n; k < 6; ++k)
            micros *= 10;
    }
    std::int64_t offset = 0;  // seconds east of UTC
    if (expect(s, at, "Zz")) {
    } else if (at < s.size() && (s[at] == '+' || s[at] == '-')) {
        const int sign = s[at++] == '-' ? -1 : 1;
        int oh = 0, om = 0;
        if (!digits(s, at, 2, oh) || !expect(s, at, ":") || !digits(s, at, 2, om) || oh > 23 ||
            om > 59)
            return std::nullopt;
        offset = sign * (oh * 3600 + om * 60);
    } else {
        return std::nullopt;
    }
    if (at != s.size()) return std::nullopt;
    const std::int64_t seconds =
        days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day)) *
            kSecondsPerDay +
        hour * 3600 + minute * 60 + second - offset;
    // In UTC too the year is 0001-9999: an offset may not carry it out (TOML and Python's
    // datetime, which read the lock, have no other years).
    static const std::int64_t kFirst = days_from_civil(1, 1, 1) * kSecondsPerDay,
                              kEnd = days_from_civil(10000, 1, 1) * kSecondsPerDay;
    if (seconds < kFirst || seconds >= kEnd) return std::nullopt;
    return seconds * kMicrosPerSecond + micros;
}

std::string format_rfc3339(std::int64_t micros) {
    std::int64_t seconds = micros / kMicrosPerSecond;
    std::int64_t fraction = micros % kMicrosPerSecond;
    if (fraction < 0) fraction += kMicrosPerSecond, --seconds;
    std::int64_t days = seconds / kSecondsPerDay;
    std::int64_t in_day = seconds % kSecondsPerDay;
    if (in_day < 0) in_day += kSecondsPerDay, --days;
    std::int64_t y = 0;
    unsigned m = 0, d = 0;
    civil_from_days(days, y, m, d);
    char out[40];
    int n = std::snprintf(out, sizeof out, "%04lld-%02u-%02uT%02lld:%02lld:%02lld",
                          static_cast<long long>(y), m, d, static_cast<long long>(in_day / 3600),
                          static_cast<long long>(in_day / 60 % 60),
                          static_cast<long long>(in_day % 60));
    std::string text(out, static_cast<std::size_t>(n));
    if (fraction) {
        std::snprintf(out, sizeof out, ".%06lld", static_cast<long long>(fraction));
        text += out;
    }
    return text + "Z";
}

}  // namespace envbox
