#pragma once
// The zip format's constants and the checks its readers share (private to util: zip.cpp reads
// members, zip_directory.cpp the central directory). Every failure is an integrity error.

#include <cstdint>
#include <string>
#include <string_view>

#include "envbox/util/error.hpp"
#include "envbox/util/zip.hpp"

namespace envbox::zip::detail {

inline constexpr std::uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50,
                               kEndSig = 0x06054b50, kEnd64LocatorSig = 0x07064b50,
                               kEnd64Sig = 0x06064b50;
inline constexpr std::size_t kChunk = 1 << 18;

[[noreturn]] inline void bad(const std::string& what) {
    throw Error(ErrorCode::integrity, what);
}

inline std::uint64_t le(std::string_view b, std::size_t at, int n) {
    if (at + static_cast<std::size_t>(n) > b.size()) bad("truncated zip structure");
    std::uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i)
        v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<std::size_t>(i)]);
    return v;
}

inline std::string quoted(const Member& m) {
    return "member '" + m.name + "'";
}

/// True when `s` is well-formed UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF).
bool valid_utf8(std::string_view s);

/// An Info-ZIP Unicode Path field (0x7075) renames the member in the readers that honour it
/// (libarchive, CPython 3.12) and not in the others: refused unless it names the same file.
void refuse_unicode_path(const Member& m, std::string_view field);

}  // namespace envbox::zip::detail
