#pragma once
/// Digests as locks, index pages and the store spell them. Pure, no I/O.
///
/// A digest names files (the store's objects and wheel table, the download and metadata
/// caches, staging directories), so every digest that comes from outside envbox — a lock's or a
/// page's `sha256`, a file list, a generation record — is checked with `is_sha256_hex` where it
/// enters, before any path is built from it: `../../x` must never become a file name.

#include <string_view>

namespace envbox::pep {

/// Length of a sha256 digest in hex.
inline constexpr std::size_t kSha256HexLength = 64;

/// True when `text` is exactly 64 lowercase hexadecimal digits (`[0-9a-f]{64}`).
constexpr bool is_sha256_hex(std::string_view text) {
    if (text.size() != kSha256HexLength) return false;
    for (char c : text)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

/// True when `text` is one or more lowercase hexadecimal digits (any algorithm's digest).
constexpr bool is_lower_hex(std::string_view text) {
    if (text.empty()) return false;
    for (char c : text)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

}  // namespace envbox::pep
