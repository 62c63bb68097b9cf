#pragma once
// The HTTP client's event loop (private to the index layer).
//
// Every transfer of a client runs on one libcurl multi handle, driven by one event-loop thread:
// connections are pooled and HTTP/2 streams multiplexed across all requests in flight, DNS
// answers and TLS sessions shared (CURLSH). Callers on any thread hand an easy handle to the loop
// and wait for its result; retries and backoff stay with the caller, so a sleeping retry never
// holds up other transfers.

#include <curl/curl.h>

#include <future>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "envbox/index/http.hpp"

namespace envbox::index {

struct HttpClient::Shared {
    CURLSH* share = nullptr;  // set on every easy handle of the client
    CURLM* multi = nullptr;
    std::mutex share_locks[CURL_LOCK_DATA_LAST];

    std::mutex mutex;  // guards incoming, stop, started
    std::vector<std::pair<CURL*, std::promise<CURLcode>*>> incoming;
    bool stop = false, started = false;
    std::thread loop;  // started by the first `perform`

    Shared();
    /// Lets the transfers in flight finish, then stops the loop.
    ~Shared();
    Shared(const Shared&) = delete;
    Shared& operator=(const Shared&) = delete;

    /// Runs `easy` to completion on the loop; returns its result. Thread-safe.
    CURLcode perform(CURL* easy);

  private:
    static void lock(CURL*, curl_lock_data data, curl_lock_access, void* self);
    static void unlock(CURL*, curl_lock_data data, void* self);
    void run();
};

}  // namespace envbox::index
