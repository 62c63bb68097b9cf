#pragma once
/// When the HTTP client tries a request again: the decision after each attempt, a pure function
/// of what the attempt came back with, so every rule is unit-tested without a server.
///
/// Retried (up to `kMaxAttempts` attempts in all, with exponential backoff and jitter, or the
/// server's Retry-After): connection failures, timeouts and stalls, resets, an empty or cut-off
/// answer, HTTP/2 stream errors; HTTP 5xx, 429 and 408. A resumed download whose server answers
/// 416 is complete when the total it states is what is on disk, else it starts over, as it does
/// for a 206 of another range than the one asked. Everything else is the answer (a 404 is
/// returned, not retried), or a transport error that retrying would not mend (a bad certificate,
/// a refused redirect to http, an unknown host).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace envbox::index {

/// Attempts of one request, the first included.
inline constexpr int kMaxAttempts = 5;

/// What one attempt came back with, as far as retrying is concerned.
struct AttemptResult {
    int curl_code = 0;               ///< the transfer's CURLcode (0: CURLE_OK)
    std::string curl_error = {};     ///< libcurl's words for it, for the message
    long status = 0;                 ///< HTTP status (0: none came)
    std::uint64_t resumed_from = 0;  ///< a download continued after this many bytes (0: none)
    std::string content_range = {};  ///< the Content-Range header, "" when absent
    std::optional<std::string> retry_after = std::nullopt;  ///< the Retry-After header
};

/// What the client does after an attempt.
struct RetryDecision {
    enum class Action {
        accept,    ///< the response is the answer (2xx, 304, a 4xx other than 408/429)
        complete,  ///< a resumed download's 416: the file on disk is already whole
        retry,     ///< transient: try again when attempts are left
        restart,   ///< the part on disk cannot be continued: empty it, then as `retry`
        fail,      ///< a transport error that retrying would not mend
    };
    Action action = Action::accept;
    /// For retry, restart and fail: the cause, as the final message names it ("HTTP 503").
    std::string error = {};
    /// Seconds the server asked to wait (Retry-After), -1 when it did not.
    long long retry_after_s = -1;
};

/// True for the CURLcodes worth another attempt (connect failure, timeout, send/receive error,
/// partial file, nothing received, HTTP/2 framing or stream errors).
bool is_transient_curl_error(int curl_code);

/// True for the HTTP statuses worth another attempt: 5xx, 429, 408.
bool is_transient_status(long status);

/// The decision after `attempt`.
RetryDecision decide_retry(const AttemptResult& attempt);

/// The wait before the attempt that follows attempt number `attempt` (1-based): the server's
/// Retry-After, capped at 30 s, when it sent one; else 100 ms << attempt plus `jitter_ms`
/// (the client draws it from 0..100).
std::chrono::milliseconds retry_delay(int attempt, long long retry_after_s, int jitter_ms);

}  // namespace envbox::index
