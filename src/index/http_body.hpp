#pragma once
// A response as it arrives (private to the index layer): the body into memory or into a
// download's file, the headers, and the caps on both, enforced as the bytes come (a body is
// counted as decoded, so a gzip bomb is stopped by what it inflates to).

#include <curl/curl.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace envbox::index {

struct DownloadHash;

/// Refuses (network) a URL with userinfo: credentials in a URL are never sent
/// (http_download.cpp).
void refuse_userinfo(const std::string& url);

/// A request body being sent: `memory`, else `length` bytes of `fd` from `offset`; `pos` is
/// how far libcurl has read (back to 0 for each attempt, or where it seeks on a rewind).
struct Upload {
    const std::string* memory = nullptr;
    int fd = -1;
    std::uint64_t offset = 0, length = 0, pos = 0;
    int read_errno = 0;  // a failed pread ends the transfer (CURL_READFUNC_ABORT)
};

/// One attempt's response; libcurl's callbacks write into it.
struct Collected {
    Upload upload;  // what the request sends, if anything
    std::string body;
    int fd = -1;  // a download's file (else the body is collected in memory)
    CURL* easy = nullptr;
    std::uint64_t offset = 0;  // bytes of the file already there (asked for the rest)
    std::uint64_t written = 0;
    bool decided = false;  // the first body byte of this response has been seen
    bool to_file = false;  // this response's body goes to the file
    bool write_failed = false;
    int write_errno = 0;  // errno of the failed write (ENOSPC, EDQUOT, EIO, …)
    const std::function<void(std::uint64_t)>* on_bytes = nullptr;
    DownloadHash* hash = nullptr;                // fed what reaches the file
    std::map<std::string, std::string> headers;  // lowercase names, last value
    // Limits: the body may hold `max_bytes` (a 206 only `range_length`), decided on its first byte.
    std::uint64_t max_bytes = 0;
    std::optional<std::uint64_t> range_length;
    std::uint64_t limit = 0;
    long status = 0;          // of the response whose body this is
    bool over_limit = false;  // stopped at the first byte past `limit`
    std::uint64_t header_bytes = 0;
    bool headers_over = false;
};

/// CURLOPT_WRITEFUNCTION with a `Collected` as its data: only a 200 or 206 body goes into a
/// download's file (a 200 to a resuming request starts the file over); an error page is kept
/// in memory (64 KiB of it) for the message. Stops at the first byte past the limit
/// (`over_limit`) or on a failed write (`write_failed`, its errno kept).
std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user);

/// CURLOPT_HEADERFUNCTION with a `Collected` as its data: the last response's headers, names
/// lowercased, values trimmed; stops past `kMaxHeaderBytes` (`headers_over`).
std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user);

/// CURLOPT_READFUNCTION with an `Upload` as its data: the next bytes of the body.
std::size_t on_upload(char* buffer, std::size_t size, std::size_t n, void* user);

/// CURLOPT_SEEKFUNCTION with an `Upload` as its data (libcurl rewinds a body it must send
/// again): only SEEK_SET within the body.
int on_upload_seek(void* user, curl_off_t offset, int origin);

/// "64 MiB" for a limit, "1234 bytes" for anything not a whole MiB.
std::string describe_bytes(std::uint64_t n);

/// The length a Range header value asks for ("bytes=-65536", "bytes=100-199"); nullopt for an
/// open range ("bytes=100-") or one that does not parse.
std::optional<std::uint64_t> range_length(const std::string& range);

}  // namespace envbox::index
