#include "index/http_loop.hpp"

#include <unordered_map>

namespace envbox::index {
namespace {

// Connections open at once to one host; more requests wait in curl's queue. An HTTP/2 index
// (PyPI, download.pytorch.org) multiplexes every request on one connection and never reaches
// it. An HTTP/1 server gets a browser's share: a burst of 30 new connections overflows the
// accept queue of a small server (Python's http.server listens with a backlog of 5), and each
// dropped SYN costs the kernel's one-second retransmit, which was most of a 2-second lock
// against a loopback index (bench/README.md).
constexpr long kMaxHostConnections = 6;

}  // namespace

HttpClient::Shared::Shared() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    share = curl_share_init();
    curl_share_setopt(share, CURLSHOPT_LOCKFUNC, &Shared::lock);
    curl_share_setopt(share, CURLSHOPT_UNLOCKFUNC, &Shared::unlock);
    curl_share_setopt(share, CURLSHOPT_USERDATA, this);
    curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, kMaxHostConnections);
}

HttpClient::Shared::~Shared() {
    {
        std::lock_guard guard(mutex);
        stop = true;
    }
    if (started) {
        curl_multi_wakeup(multi);
        loop.join();
    }
    curl_multi_cleanup(multi);
    curl_share_cleanup(share);
}

void HttpClient::Shared::lock(CURL*, curl_lock_data data, curl_lock_access, void* self) {
    static_cast<Shared*>(self)->share_locks[data].lock();
}

void HttpClient::Shared::unlock(CURL*, curl_lock_data data, void* self) {
    static_cast<Shared*>(self)->share_locks[data].unlock();
}

CURLcode HttpClient::Shared::perform(CURL* easy) {
    std::promise<CURLcode> done;
    auto result = done.get_future();
    {
        std::lock_guard guard(mutex);
        // The loop is ending (or gone): a transfer handed to it now would never be answered.
        if (stop) return CURLE_ABORTED_BY_CALLBACK;
        if (!started) {
            loop = std::thread([this] { run(); });
            started = true;
        }
        incoming.emplace_back(easy, &done);
    }
    curl_multi_wakeup(multi);
    return result.get();
}

void HttpClient::Shared::run() {
    std::unordered_map<CURL*, std::promise<CURLcode>*> running;
    for (;;) {
        {
            std::lock_guard guard(mutex);
            for (auto& [easy, promise] : incoming) {
                CURLMcode rc = curl_multi_add_handle(multi, easy);
                if (rc != CURLM_OK)
                    promise->set_value(CURLE_FAILED_INIT);
                else
                    running.emplace(easy, promise);
            }
            incoming.clear();
            if (stop && running.empty()) return;
        }
        int active = 0;
        curl_multi_perform(multi, &active);
        int queued = 0;
        while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
            if (msg->msg != CURLMSG_DONE) continue;
            CURL* easy = msg->easy_handle;
            CURLcode rc = msg->data.result;
            curl_multi_remove_handle(multi, easy);
            auto it = running.find(easy);
            if (it == running.end()) continue;
            auto* promise = it->second;
            running.erase(it);
            promise->set_value(rc);
        }
        curl_multi_poll(multi, nullptr, 0, 1000, nullptr);
    }
}

}  // namespace envbox::index
