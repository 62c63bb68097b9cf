// The HTTP client's retry decision: which outcomes are tried again, how often, and how long
// it waits (index/retry.hpp).
#include <curl/curl.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "envbox/index/retry.hpp"

using namespace envbox::index;
using Action = RetryDecision::Action;
using std::chrono::milliseconds;

TEST_CASE("retry: transport errors worth another attempt", "[index][retry]") {
    for (CURLcode rc :
         {CURLE_COULDNT_CONNECT, CURLE_OPERATION_TIMEDOUT, CURLE_RECV_ERROR, CURLE_SEND_ERROR,
          CURLE_PARTIAL_FILE, CURLE_GOT_NOTHING, CURLE_HTTP2, CURLE_HTTP2_STREAM}) {
        INFO(curl_easy_strerror(rc));
        CHECK(is_transient_curl_error(rc));
        auto d = decide_retry({.curl_code = rc, .curl_error = "Timeout was reached"});
        CHECK(d.action == Action::retry);
        CHECK(d.error == "Timeout was reached");
    }
    // Not mended by trying again: a bad certificate, an unknown host, a refused redirect to
    // http (an https request's protocols), too many redirects, a write the client stopped.
    for (CURLcode rc : {CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE,
                        CURLE_COULDNT_RESOLVE_HOST, CURLE_UNSUPPORTED_PROTOCOL,
                        CURLE_TOO_MANY_REDIRECTS, CURLE_WRITE_ERROR, CURLE_URL_MALFORMAT}) {
        INFO(curl_easy_strerror(rc));
        CHECK(!is_transient_curl_error(rc));
        auto d = decide_retry({.curl_code = rc, .curl_error = "why", .status = 0});
        CHECK(d.action == Action::fail);
        CHECK(d.error == "why");
    }
}

TEST_CASE("retry: statuses", "[index][retry]") {
    struct Case {
        long status;
        Action action;
    };
    for (const auto& c : std::vector<Case>{{200, Action::accept},
                                           {206, Action::accept},
                                           {304, Action::accept},
                                           {401, Action::accept},
                                           {403, Action::accept},
                                           {404, Action::accept},
                                           {410, Action::accept},
                                           {416, Action::accept},  // not a resumed download
                                           {408, Action::retry},
                                           {429, Action::retry},
                                           {500, Action::retry},
                                           {502, Action::retry},
                                           {503, Action::retry},
                                           {504, Action::retry},
                                           {599, Action::retry}}) {
        INFO("HTTP " << c.status);
        CHECK(is_transient_status(c.status) == (c.action == Action::retry));
        auto d = decide_retry({.status = c.status});
        CHECK(d.action == c.action);
        if (c.action == Action::retry) CHECK(d.error == "HTTP " + std::to_string(c.status));
        CHECK(d.retry_after_s == -1);
    }
    CHECK(decide_retry({.status = 503, .retry_after = "7"}).retry_after_s == 7);
    CHECK(decide_retry({.status = 429, .retry_after = "120"}).retry_after_s == 120);
    // An HTTP-date reads as 0 seconds, as std::atoll reads it.
    CHECK(decide_retry({.status = 503, .retry_after = "Wed, 21 Oct 2026 07:28:00 GMT"})
              .retry_after_s == 0);
    CHECK(decide_retry({.status = 404, .retry_after = "7"}).retry_after_s == -1);
}

TEST_CASE("retry: a resumed download", "[index][retry]") {
    // 416: nothing left to send. Complete when the server's total is what is on disk.
    CHECK(decide_retry({.status = 416, .resumed_from = 5000, .content_range = "bytes */5000"})
              .action == Action::complete);
    auto other =
        decide_retry({.status = 416, .resumed_from = 5000, .content_range = "bytes */6000"});
    CHECK(other.action == Action::restart);
    CHECK(other.error == "HTTP 416 for a resumed download; starting over");
    CHECK(decide_retry({.status = 416, .resumed_from = 5000}).action == Action::restart);
    // 206: only the rest asked for may be appended.
    CHECK(decide_retry(
              {.status = 206, .resumed_from = 5000, .content_range = "bytes 5000-9999/10000"})
              .action == Action::accept);
    auto wrong =
        decide_retry({.status = 206, .resumed_from = 5000, .content_range = "bytes 0-9999/10000"});
    CHECK(wrong.action == Action::restart);
    CHECK(wrong.error == "HTTP 206 with an unexpected range (bytes 0-9999/10000); starting over");
    CHECK(decide_retry(
              {.status = 206, .resumed_from = 5000, .content_range = "bytes 50000-59999/60000"})
              .action == Action::restart);
    // A 200 to a resumed request is the whole file again: taken (the body callback restarted
    // the file).
    CHECK(decide_retry({.status = 200, .resumed_from = 5000}).action == Action::accept);
    // A transport error wins over the status.
    CHECK(
        decide_retry({.curl_code = CURLE_RECV_ERROR, .status = 416, .resumed_from = 5000}).action ==
        Action::retry);
}

TEST_CASE("retry: attempts and waits", "[index][retry]") {
    CHECK(kMaxAttempts == 5);
    // Exponential backoff from 200 ms, plus the jitter drawn by the client.
    CHECK(retry_delay(1, -1, 0) == milliseconds(200));
    CHECK(retry_delay(2, -1, 0) == milliseconds(400));
    CHECK(retry_delay(4, -1, 100) == milliseconds(1700));
    // Retry-After, capped at 30 s.
    CHECK(retry_delay(1, 0, 50) == milliseconds(0));
    CHECK(retry_delay(3, 7, 50) == milliseconds(7000));
    CHECK(retry_delay(1, 3600, 0) == milliseconds(30000));
}
