#pragma once
/// A remote wheel's METADATA without downloading the wheel: HTTP range requests on the zip's
/// end-of-central-directory, its central directory and the one member (as pip's lazy wheel and
/// uv do when an index offers no PEP 658 metadata file — download.pytorch.org, whose torch
/// wheels are gigabytes).

#include <cstdint>
#include <optional>
#include <string>

#include "envbox/index/http.hpp"

namespace envbox::index {

/// The content of the wheel's top-level `*.dist-info/<leaf>`; nullopt when the server does not
/// honour ranges or the member is missing (the caller then downloads the wheel). Throws `Error`
/// (integrity) for a damaged archive.
/// Every answer is bounded: a range's 206 by its length, a member or central directory by
/// `kMaxMetadataBytes` / `kMaxPageBytes` (integrity error past them), and a whole wheel sent
/// for a range by `kMaxPageBytes` (past it nothing is kept and nullopt is returned).
/// When the server ignores ranges and sends the whole wheel, that wheel goes to `whole` (when
/// given) so the caller need not fetch it again. `size` (when given) receives the wheel's byte
/// count when an answer told it (the total of the first range response's `Content-Range`, or
/// the length of a whole file), for locks of indexes whose pages give no sizes.
std::optional<std::string> read_remote_dist_info(HttpClient& http, const HttpRequest& wheel,
                                                 const std::string& leaf,
                                                 std::string* whole = nullptr,
                                                 std::optional<std::uint64_t>* size = nullptr);

/// The same over bytes already in memory (a whole wheel), for servers that ignore ranges.
std::optional<std::string> read_dist_info_from_zip(const std::string& archive,
                                                   const std::string& leaf);

}  // namespace envbox::index
