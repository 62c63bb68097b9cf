#include "envbox/index/retry.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cstdlib>

namespace envbox::index {

bool is_transient_curl_error(int code) {
    switch (static_cast<CURLcode>(code)) {
        case CURLE_COULDNT_CONNECT:
        case CURLE_OPERATION_TIMEDOUT:
        case CURLE_RECV_ERROR:
        case CURLE_SEND_ERROR:
        case CURLE_PARTIAL_FILE:
        case CURLE_GOT_NOTHING:
        case CURLE_HTTP2:
        case CURLE_HTTP2_STREAM:
            return true;
        default:
            return false;
    }
}

bool is_transient_status(long status) {
    return status >= 500 || status == 429 || status == 408;
}

RetryDecision decide_retry(const AttemptResult& a) {
    using Action = RetryDecision::Action;
    if (a.curl_code != CURLE_OK)
        return {is_transient_curl_error(a.curl_code) ? Action::retry : Action::fail, a.curl_error};
    if (a.resumed_from > 0 && a.status == 416) {
        // Nothing left to send: the file is complete when the size the server gives is what is
        // on disk; otherwise start over.
        auto slash = a.content_range.find('/');
        if (slash != std::string::npos &&
            std::strtoull(a.content_range.c_str() + slash + 1, nullptr, 10) == a.resumed_from)
            return {Action::complete};
        return {Action::restart, "HTTP 416 for a resumed download; starting over"};
    }
    if (a.resumed_from > 0 && a.status == 206 &&
        !a.content_range.starts_with("bytes " + std::to_string(a.resumed_from) + "-"))
        // Not the range asked for: those bytes cannot be appended.
        return {Action::restart,
                "HTTP 206 with an unexpected range (" + a.content_range + "); starting over"};
    if (is_transient_status(a.status))
        return {Action::retry, "HTTP " + std::to_string(a.status),
                a.retry_after ? std::atoll(a.retry_after->c_str()) : -1};
    return {Action::accept};
}

std::chrono::milliseconds retry_delay(int attempt, long long retry_after_s, int jitter_ms) {
    if (retry_after_s >= 0)
        return std::chrono::milliseconds(std::min<long long>(retry_after_s, 30) * 1000);
    return std::chrono::milliseconds((100LL << attempt) + jitter_ms);
}

}  // namespace envbox::index
