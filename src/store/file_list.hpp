#pragma once
// The store's per-wheel file list (`store-v1/wheels/<sha256>/files`), private to the store.
//
//   envbox-wheel-files 1
//   wheel NAME.whl / name N / version V / dist-info D / root-is-purelib 0|1 / files COUNT
//   <object sha256> x|- <size> <member path>        one line per member, the path last
//
// Line-based, with the member path as the last field: `serialise_file_list` refuses any value
// that would add a line or a field, and `parse_file_list` refuses a list whose digests, name
// or shape are not what an ingest writes, so a planted or damaged list never names a path.

#include <optional>
#include <string>
#include <string_view>

#include "envbox/store/store.hpp"

namespace envbox::store {

/// Throws (`invalid_input`, naming `what`) unless `digest` is 64 lowercase hex digits: called
/// on every digest before a path is built from it.
void require_digest(std::string_view digest, std::string_view what);

/// The list's text. Throws (`integrity`, naming the wheel) for an empty value, a line break in
/// any value, a blank in a header value, or an object digest that is not 64 hex digits.
std::string serialise_file_list(const WheelFiles& w);

/// The list of wheel `sha`, or nullopt when `text` is not exactly what `serialise_file_list`
/// writes (wrong header or count, a digest that is not hex, an invalid project name, a
/// .dist-info name with a '/').
std::optional<WheelFiles> parse_file_list(const std::string& text, std::string_view sha);

}  // namespace envbox::store
